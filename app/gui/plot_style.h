// Shared QCustomPlot styling for the views: colour gradients from colormaps.h, readable fonts,
// colour-scale ranges honouring the display settings. Include only from .cpp files that draw plots
// (qcustomplot.h is large).
#pragma once

#include <qcustomplot.h>

#include "app/gui/display_settings.h"

namespace studio {

QCPColorGradient makeGradient(ColorMapKind kind);
// White background, 9 pt tick labels, 10 pt axis labels, light grid.
void stylePlot(QCustomPlot* plot);
void styleAxis(QCPAxis* axis);
// The colour range for data spanning [dataMin, dataMax] under the settings. In log scale the lower
// end is positive: dataMax * 1e-4 unless fixed (values below it are clamped by the caller).
QCPRange colorRange(const DisplaySettings& d, double dataMin, double dataMax);
// Apply gradient, scale type and range to a colour map and its legend.
void applyColorSettings(QCPColorMap* map, QCPColorScale* scale, const DisplaySettings& d, double dataMin,
                        double dataMax);

}  // namespace studio
