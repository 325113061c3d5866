// RULER's leaderboard (see evaluate_plots.h): score against the compression ratio, one line per
// policy with its +-1 s.d. band, the full cache dashed across; each point remembers its worst sample.
#include <QFont>

#include <algorithm>
#include <limits>

#include "app/gui/plot/plot_style.h"
#include "app/gui/state/eval_results.h"
#include "app/gui/state/eval_ruler.h"
#include "app/gui/views/evaluate_hits.h"
#include "app/gui/views/evaluate_plots.h"

namespace studio {

using json = nlohmann::json;

namespace {

QString sizeText(const QString& axis, double x) {
    return axis == "ratio" ? QString("r%1").arg(x, 0, 'g', 6) : QString("C%1").arg(x, 0, 'g', 10);
}

}  // namespace

QString drawRulerLeaderboard(QCustomPlot* plot, const EvalResults& results, int64_t length, const QString& axis,
                             const QString& key, PlotHits* hits) {
    EvalMetric info{key, key, true};
    for (const auto& m : rulerMetrics())
        if (m.key == key) info = m;
    const RulerBoard board = rulerBoard(results, length, axis, key);
    const json& st = results.settings();
    const QStringList tasks = rulerTasks(results);
    const QString family = plot->font().family();
    const bool ratio = axis == "ratio";

    auto* title = new QCPTextElement(plot,
                                     QString("RULER at %1 tokens · %2 task%3 x %4 samples · model %5")
                                         .arg(length)
                                         .arg(tasks.size())
                                         .arg(tasks.size() == 1 ? "" : "s")
                                         .arg(st["ruler"].value("samples", int64_t(0)))
                                         .arg(QString::fromStdString(st["model"].value("file", std::string()))),
                                     QFont(family, 11, QFont::Bold));
    // What the lines and bands are, under the title: on the y axis it would not fit a short plot.
    auto* subtitle = new QCPTextElement(plot, "line: mean over tasks · band: ±1 s.d. over samples · dashed: full cache",
                                        QFont(family, 9));
    subtitle->setTextColor(QColor(90, 90, 90));
    QCPAxisRect* rect = addLegendLayout(plot, {title, subtitle});
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    // Ticks at the sizes that were run (and 0, the full cache, on the ratio axis).
    QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
    if (ratio) ticks->addTick(0, "0");
    for (double v : rulerSizes(results, axis)) ticks->addTick(v, QString::number(v, 'g', 6));
    x->setTicker(ticks);
    if (ratio) {
        x->setLabel("compression ratio: share of the KV cache removed (kvpress)");
    } else {
        x->setScaleType(QCPAxis::stLogarithmic);
        x->setLabel("budget C: tokens kept per head (log scale)");
    }
    y->setLabel(info.label);

    double xmin = std::numeric_limits<double>::max(), xmax = 0;
    for (const auto& s : board.series)
        for (const auto& p : s.points) xmin = std::min(xmin, p.x), xmax = std::max(xmax, p.x);
    if (xmax <= 0 && xmin > xmax) xmin = ratio ? 0.0 : 1.0, xmax = ratio ? 0.9 : 2.0;
    const double lo = ratio ? -0.03 : xmin / 1.4;
    const double hi = ratio ? std::max(xmax, 0.5) + 0.05 : xmax * 1.4;
    x->setRange(lo, hi);
    y->setRange(0, 105);

    // The full cache first, in the legend and as a dashed line across the plot.
    if (board.full) {
        QCPGraph* ref = plot->addGraph(x, y);
        ref->setData(QVector<double>{lo, hi}, QVector<double>{board.full->mean, board.full->mean}, true);
        ref->setName(QString("full cache (%1)").arg(board.full->mean, 0, 'f', 1));
        ref->setPen(QPen(Qt::black, 1.6, Qt::DashLine));
    }
    int ci = 0;
    for (const auto& s : board.series) {
        const QColor c = seriesColor(ci++);
        QVector<double> px, mean, bandLo, bandHi;
        for (const auto& p : s.points) {
            px << p.x;
            mean << p.stat.mean;
            bandLo << std::max(0.0, p.stat.mean - p.stat.sd);
            bandHi << std::min(100.0, p.stat.mean + p.stat.sd);
            QString worst;
            if (const json* w = results.row(p.stat.worstCell, p.stat.worstConfig))
                worst = QString("%1 #%2 (%3)")
                            .arg(QString::fromStdString(w->value("ruler_task", std::string())))
                            .arg(w->value("sample", int64_t(0)))
                            .arg(100.0 * metricValue(*w, key).value_or(0.0), 0, 'f', 0);
            hits->points.push_back({p.x, p.stat.mean, p.stat.worstCell, p.stat.worstConfig,
                                    QString("%1 %2: %3 = %4 ± %5 (mean over tasks; s.d. over %6 samples)\n"
                                            "worst sample: %7. Click to open it.")
                                        .arg(s.label, sizeText(axis, p.x), key)
                                        .arg(p.stat.mean, 0, 'f', 1)
                                        .arg(p.stat.sd, 0, 'f', 1)
                                        .arg(p.stat.n)
                                        .arg(worst)});
        }
        addBandLine(plot, x, y, px, bandLo, bandHi, mean, c, s.label, 32, 2.4, 8, hits);
    }
    hits->panels.push_back({-1, rect});
    return "Click a legend entry to hide a policy; hover a point for its score; click a point or a table cell to open "
           "the sample that scored worst there, with its needles marked.";
}

}  // namespace studio
