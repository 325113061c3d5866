// The budget sweep as curves (see evaluate_plots.h): mean of the metric per policy against a log
// budget axis, a translucent +-1 s.d. band, the full cache as a dashed line across the plot.
#include <QFont>

#include <algorithm>
#include <limits>

#include "app/gui/plot/plot_style.h"
#include "app/gui/state/eval_results.h"
#include "app/gui/views/evaluate_hits.h"
#include "app/gui/views/evaluate_plots.h"

namespace studio {

QString drawSweepCurves(QCustomPlot* plot, const EvalResults& results, const QString& key, PlotHits* hits) {
    EvalMetric info{key, key, true};
    for (const auto& m : sweepMetrics())
        if (m.key == key) info = m;
    std::optional<double> full;
    const std::vector<SweepSeries> series = results.curves(key, &full);
    const QString family = plot->font().family();

    auto* title = new QCPTextElement(
        plot,
        QString("Budget sweep · %1 items · model %2")
            .arg(results.settings()["sweep"]["set"].value("items", 0))
            .arg(QString::fromStdString(results.settings()["model"].value("file", std::string()))),
        QFont(family, 11, QFont::Bold));
    QCPAxisRect* rect = addLegendLayout(plot, {title});
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setScaleType(QCPAxis::stLogarithmic);
    // Ticks at the budgets that were run (a log ticker would label only the powers of two).
    QSharedPointer<QCPAxisTickerText> bt(new QCPAxisTickerText);
    for (const auto& s : series)
        for (const auto& p : s.points) bt->addTick(p.budget, QString::number(p.budget));
    x->setTicker(bt);
    x->setLabel("budget C: tokens kept per head (log scale)");
    y->setLabel(info.label + "  (line: mean; band: ±1 s.d. over items)");

    double xmin = std::numeric_limits<double>::max(), xmax = 0, ymax = info.bounded01 ? 1.0 : 0.0;
    // The full cache first, in the legend and as a dashed reference across the plot.
    if (full) {
        QCPGraph* ref = plot->addGraph(x, y);
        ref->setName(QString("full cache (%1)").arg(*full, 0, 'f', 3));
        ref->setPen(QPen(Qt::black, 1.6, Qt::DashLine));
        ymax = std::max(ymax, *full);
    }
    int ci = 0;
    for (const auto& s : series) {
        const QColor c = seriesColor(ci++);
        QVector<double> bx, mean, lo, hi;
        for (const auto& p : s.points) {
            bx << p.budget;
            mean << p.mean;
            lo << p.lo;
            hi << p.hi;
            xmin = std::min(xmin, p.budget);
            xmax = std::max(xmax, p.budget);
            ymax = std::max(ymax, p.hi);
            hits->points.push_back({p.budget, p.mean, p.worstCell, p.worstConfig,
                                    QString("%1 C%2: %3 = %4 ± %5 over %6 items\nworst: %7. Click to open it.")
                                        .arg(s.label)
                                        .arg(p.budget)
                                        .arg(key)
                                        .arg(p.mean, 0, 'f', 3)
                                        .arg(p.sd, 0, 'f', 3)
                                        .arg(p.n)
                                        .arg(p.worstId)});
        }
        addBandLine(plot, x, y, bx, lo, hi, mean, c, s.label, 28, 2.2, 7, hits);
    }
    if (xmax <= 0) xmin = 1, xmax = 2;
    x->setRange(xmin / 1.4, xmax * 1.4);
    y->setRange(0, ymax > 0 ? ymax * 1.08 : 1);
    if (full) {
        auto* line = new QCPItemStraightLine(plot);
        line->setClipAxisRect(rect);
        line->point1->setAxes(x, y);
        line->point2->setAxes(x, y);
        line->point1->setCoords(xmin / 1.4, *full);
        line->point2->setCoords(xmax * 1.4, *full);
        line->setPen(QPen(Qt::black, 1.6, Qt::DashLine));
    }
    hits->panels.push_back({-1, rect});
    return "Click a legend entry to hide a policy; hover a point for its values; click it to open the "
           "item that scored worst there.";
}

}  // namespace studio
