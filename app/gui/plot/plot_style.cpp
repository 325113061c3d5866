// Plot styling helpers (see plot_style.h).
#include "app/gui/plot/plot_style.h"

#include <algorithm>
#include <cmath>

#include "app/gui/plot/colormaps.h"

namespace studio {

QCPColorGradient makeGradient(ColorMapKind kind) {
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto& stop : colorStops(kind)) g.setColorStopAt(stop.first, stop.second);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setLevelCount(256);
    g.setNanHandling(QCPColorGradient::nhTransparent);
    return g;
}

void styleAxis(QCPAxis* axis) {
    QFont tick = axis->tickLabelFont();
    tick.setPointSizeF(9);
    axis->setTickLabelFont(tick);
    QFont label = axis->labelFont();
    label.setPointSizeF(10);
    axis->setLabelFont(label);
    axis->grid()->setPen(QPen(QColor(0, 0, 0, 28), 0, Qt::DotLine));
    axis->grid()->setSubGridVisible(false);
}

void stylePlot(QCustomPlot* plot) {
    plot->setBackground(Qt::white);
    plot->setNoAntialiasingOnDrag(true);
    plot->setPlottingHint(QCP::phCacheLabels, true);
    for (QCPAxis* a : plot->axisRect()->axes()) styleAxis(a);
}

QCPRange colorRange(const DisplaySettings& d, double dataMin, double dataMax) {
    if (!std::isfinite(dataMin)) dataMin = 0;
    if (!std::isfinite(dataMax)) dataMax = 1;
    double lo = d.fixedRange ? d.rangeMin : dataMin;
    double hi = d.fixedRange ? d.rangeMax : dataMax;
    if (d.logScale) {
        if (hi <= 0) hi = 1;
        if (lo <= 0 || !d.fixedRange) lo = hi * 1e-4;
        if (d.fixedRange && d.rangeMin > 0) lo = d.rangeMin;
    } else if (!d.fixedRange) {
        lo = std::min(0.0, dataMin);
    }
    if (hi <= lo) hi = lo + (d.logScale ? lo * 10 : 1.0);
    return QCPRange(lo, hi);
}

void applyColorSettings(QCPColorMap* map, QCPColorScale* scale, const DisplaySettings& d, double dataMin,
                        double dataMax) {
    const QCPColorGradient g = makeGradient(d.colorMap);
    const auto type = d.logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear;
    map->setGradient(g);
    map->setDataScaleType(type);
    map->setDataRange(colorRange(d, dataMin, dataMax));
    if (scale) {
        scale->setGradient(g);
        scale->setDataScaleType(type);
        scale->setDataRange(map->dataRange());
        if (d.logScale) {
            scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
            scale->axis()->setNumberFormat("eb");
            scale->axis()->setNumberPrecision(0);
        } else {
            scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
            scale->axis()->setNumberFormat("gb");
            scale->axis()->setNumberPrecision(3);
        }
        styleAxis(scale->axis());
    }
}

void setUnitCells(QCPColorMap* map, int nKeys, int nValues) {
    auto centres = [](int n) { return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, std::max(n - 1, 0)); };
    map->setTightBoundary(false);
    map->data()->setSize(nKeys, nValues);
    map->data()->setRange(centres(nKeys), centres(nValues));
}

int labelStep(double cellPixels, double labelPixels) {
    if (!(cellPixels > 0)) return 1;  // not laid out yet: label everything, the layout corrects it
    for (int step = 1;; step *= 10)
        for (int m : {1, 2, 5})
            if (m * step * cellPixels >= labelPixels || m * step >= (1 << 20)) return m * step;
}

bool setCellLabels(QCPAxis* axis, const QStringList& labels) {
    const bool vertical = axis->orientation() == Qt::Vertical;
    const QFontMetrics fm(axis->tickLabelFont());
    double labelPx = fm.height();
    if (!vertical) {
        double widest = 0;
        for (const QString& l : labels) widest = std::max<double>(widest, fm.horizontalAdvance(l));
        labelPx = widest + 8;
    }
    const double length = vertical ? axis->axisRect()->height() : axis->axisRect()->width();
    const int n = static_cast<int>(labels.size());
    const int step = n > 0 ? labelStep(length / n, labelPx) : 1;
    QMap<double, QString> ticks;
    for (int i = 0; i < n; i += step) ticks.insert(i, labels[i]);
    const auto current = axis->ticker().dynamicCast<QCPAxisTickerText>();
    if (current && current->ticks() == ticks) return false;
    QSharedPointer<QCPAxisTickerText> t(new QCPAxisTickerText);
    t->setTicks(ticks);
    axis->setTicker(t);
    return true;
}

QStringList layerLabels(const std::vector<int64_t>& slidingWindows) {
    QStringList labels;
    for (size_t l = 0; l < slidingWindows.size(); ++l)
        labels << (slidingWindows[l] > 0 ? QString("%1 sw").arg(l) : QString::number(l));
    return labels;
}

QStringList indexLabels(int n) {
    QStringList labels;
    for (int i = 0; i < n; ++i) labels << QString::number(i);
    return labels;
}

QCPRange cellExtent(const QCPColorMapData& data, bool keys) {
    const QCPRange r = keys ? data.keyRange() : data.valueRange();
    const int n = keys ? data.keySize() : data.valueSize();
    const double half = n > 1 ? 0.5 * r.size() / (n - 1) : 0.0;
    return QCPRange(r.lower - half, r.upper + half);
}

}  // namespace studio
