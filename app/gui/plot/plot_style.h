// Shared QCustomPlot styling for the views: colour gradients from colormaps.h, readable fonts,
// colour-scale ranges honouring the display settings. Include only from .cpp files that draw plots
// (qcustomplot.h is large).
#pragma once

#include <qcustomplot.h>

#include <cstdint>
#include <vector>

#include "app/gui/state/display_settings.h"

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

// Sizes a colour map (tight boundary off) to nKeys x nValues cells of one unit each, cell (i, j)
// covering [i - 0.5, i + 0.5] x [j - 0.5, j + 0.5], for any count including one. QCustomPlot puts
// the cell centres from range.lower to range.upper and widens the image by half a cell on each side
// only when an axis has more than one cell; a single cell fills the range itself, so its range must
// be the cell's edges, not its centre (0..1 drew a lone column as half a cell right of its tick).
void setUnitCells(QCPColorMap* map, int nKeys, int nValues);
// Every how many cells an axis gets a label: 1, 2, 5, 10, 20, 50, ..., the first step at which
// labels labelPixels tall (or wide) fit in cells cellPixels tall (wide); 1 before the plot is laid out.
int labelStep(double cellPixels, double labelPixels);
// Labels cell i of a heatmap axis (centred on i, as setUnitCells puts it) with labels[i]: every
// cell while the axis is long enough in pixels, otherwise every labelStep-th one, evenly. Uses the
// axis rect's size from the last layout: call it again after a layout (QCustomPlot::afterLayout).
// True when the ticks changed (then replot).
bool setCellLabels(QCPAxis* axis, const QStringList& labels);
// The layer-axis labels of the overview and the hit-rate map, one per layer: "N", or "N sw" for a
// sliding-window layer. slidingWindows: [n_layer], the layer's window or 0 for a global layer.
QStringList layerLabels(const std::vector<int64_t>& slidingWindows);
// "0" .. "n-1".
QStringList indexLabels(int n);
// The span of the keys (or values) axis the cells of `data` cover as QCustomPlot draws them with
// tight boundary off: from the first cell's lower edge to the last cell's upper edge.
QCPRange cellExtent(const QCPColorMapData& data, bool keys);

}  // namespace studio
