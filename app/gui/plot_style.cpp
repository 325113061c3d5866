// Plot styling helpers (see plot_style.h).
#include "app/gui/plot_style.h"

#include <algorithm>
#include <cmath>

#include "app/gui/colormaps.h"

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

}  // namespace studio
