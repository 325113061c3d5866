// Perceptually uniform colour maps defined by their stops: viridis (matplotlib's default since 2.0)
// and cividis (Nunez et al. 2018, readable with red-green colour blindness), plus greys. QCustomPlot
// ships neither, so the stops live here; plot_style.h turns them into a QCPColorGradient.
// Deliberately Qt-Gui only (no QCustomPlot) so the document view can colour text with them.
#pragma once

#include <QColor>
#include <QList>
#include <QPair>

#include "app/gui/state/display_settings.h"

namespace studio {

QList<QPair<double, QColor>> colorStops(ColorMapKind kind);
// Linear interpolation between the stops, t clamped to [0, 1].
QColor colorAt(ColorMapKind kind, double t);
// Black or white, whichever reads better on `background`.
QColor textColorOn(const QColor& background);

}  // namespace studio
