// Export of the current plot (PNG, SVG, PDF) and of the current data (CSV for the focused head,
// JSON for everything: parameters, votes, pooled scores, kept positions per head, both generations
// and the comparison metrics). Reads AnalysisState; writes files atomically (saveBytes); nothing else.
#pragma once

#include <QJsonObject>
#include <QString>

class QCustomPlot;
class QWidget;

namespace studio {

class AnalysisState;

// By suffix: .png, .svg, .pdf. width/height 0 = the plot's current size.
bool exportPlot(QCustomPlot* plot, const QString& path, QString* error, int width = 0, int height = 0);
// Widgets that are not plots (the document view): rendered as they look on screen.
bool exportWidget(QWidget* widget, const QString& path, QString* error);
// By suffix: .csv (focused head, one row per prompt token) or .json (everything).
bool exportData(const AnalysisState& state, const QString& path, QString* error);
QString focusedHeadCsv(const AnalysisState& state);
QJsonObject analysisJson(const AnalysisState& state);

}  // namespace studio
