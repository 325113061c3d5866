// The needle grid as heatmaps (see evaluate_plots.h). Colour = the chosen
// metric of each (length, depth) cell; cells not run yet are light grey.
#include <QFont>

#include <algorithm>
#include <limits>

#include "app/gui/plot/plot_style.h"
#include "app/gui/state/eval_results.h"
#include "app/gui/views/evaluate_hits.h"
#include "app/gui/views/evaluate_plots.h"

namespace studio {

namespace {
QString fmtNumber(double v) { return QString::number(v, 'g', 6); }
}  // namespace

QString drawNeedleHeatmaps(QCustomPlot* plot, const EvalResults& results, const QString& key, PlotHits* hits) {
    const std::vector<int64_t> lengths = results.lengths();
    const std::vector<double> depths = results.depths();
    const QStringList labels = results.configLabels();
    EvalMetric info{key, key, true};
    for (const auto& m : needleMetrics())
        if (m.key == key) info = m;
    const auto nl = static_cast<int>(lengths.size()), nd = static_cast<int>(depths.size());
    const QString family = plot->font().family();

    auto* title = new QCPTextElement(
        plot,
        QString("Needle in a haystack · %1 · model %2")
            .arg(info.label)
            .arg(QString::fromStdString(results.settings()["model"].value("file", std::string()))),
        QFont(family, 11, QFont::Bold));
    plot->plotLayout()->addElement(0, 0, title);
    auto* panels = new QCPLayoutGrid;
    plot->plotLayout()->addElement(1, 0, panels);
    plot->plotLayout()->setRowStretchFactor(0, 0.01);
    auto* scale = new QCPColorScale(plot);
    scale->setBarWidth(14);
    scale->axis()->setLabel(info.label);
    QCPColorGradient g = makeGradient(ColorMapKind::Viridis);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(QColor(232, 232, 232));  // not run yet
    scale->setGradient(g);
    auto* group = new QCPMarginGroup(plot);
    double lo = 0, hi = 1;
    if (!info.bounded01) {
        hi = 0;
        for (const auto& r : results.rows())
            if (auto v = metricValue(r, key)) hi = std::max(hi, *v);
        if (hi <= 0) hi = 1;
    }
    QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText), yt(new QCPAxisTickerText);
    for (int d = 0; d < nd; ++d) xt->addTick(d, fmtNumber(depths[static_cast<size_t>(d)]));
    for (int l = 0; l < nl; ++l) yt->addTick(l, QString::number(lengths[static_cast<size_t>(l)]));
    for (int k = 0; k < labels.size(); ++k) {
        auto* head = new QCPTextElement(plot);
        const auto [found, n] = results.foundCount(k);
        head->setText(QString("%1\nfound %2 / %3").arg(labels[k]).arg(found).arg(n));
        head->setFont(QFont(family, 10, k == 0 ? QFont::Bold : QFont::Normal));
        panels->addElement(0, k, head);
        auto* rect = new QCPAxisRect(plot);
        panels->addElement(1, k, rect);
        rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
        for (QCPAxis* a : rect->axes()) styleAxis(a);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        x->setTicker(xt);
        y->setTicker(yt);
        x->setLabel("needle depth (%)");
        if (k == 0) y->setLabel("prompt length (tokens)");
        x->setTickLabelRotation(nd > 6 ? 60 : 0);
        x->grid()->setVisible(false);
        y->grid()->setVisible(false);
        auto* map = new QCPColorMap(x, y);
        map->setInterpolate(false);
        setUnitCells(map, nd, nl);  // whole cells also for a single depth or length
        for (int l = 0; l < nl; ++l)
            for (int d = 0; d < nd; ++d) {
                const auto v = results.value(int64_t(l) * nd + d, k, key);
                map->data()->setCell(d, l, v ? *v : std::numeric_limits<double>::quiet_NaN());
            }
        map->setGradient(g);
        map->setDataRange(QCPRange(lo, hi));
        map->setColorScale(scale);
        x->setRange(-0.5, nd - 0.5);
        y->setRange(-0.5, nl - 0.5);
        hits->panels.push_back({k, rect});
    }
    panels->addElement(1, static_cast<int>(labels.size()), scale);
    scale->setDataRange(QCPRange(lo, hi));
    scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    styleAxis(scale->axis());
    panels->setRowStretchFactor(0, 0.01);
    return "Hover a cell for its answer; click it to open the document with the needle marked.";
}

}  // namespace studio
