// The Evaluate tab's plots, each drawn from an EvalResults into a cleared QCustomPlot: the needle
// heatmaps (evaluate_needle_plot.cpp), the budget-sweep curves (evaluate_sweep_plot.cpp), RULER's
// leaderboard (evaluate_ruler_plot.cpp) and the empty state. Each records what it drew in a
// PlotHits for the mouse and returns the hint line the tab shows under its form. They read rows
// and settings only: no worker, no files, no form.
#pragma once

#include <QColor>
#include <QString>
#include <QVector>

#include <cstdint>

#include <initializer_list>

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPLayoutElement;

namespace studio {

class EvalResults;
struct PlotHits;

// Okabe & Ito's colour-blind-safe qualitative palette (Color Universal Design, 2008): the colour of
// the i-th series of a curve plot (repeats after 8).
QColor seriesColor(int i);

QString drawEmptyPlot(QCustomPlot* plot, const QString& text);

// The layout of the curve plots (sweep, RULER): the header elements (title, subtitle) stacked on
// top, then the plot's legend (entries in columns, no border, entries clickable to hide a series),
// then one axis rect in the house style, which is returned. Rows above the rect take no stretch.
QCPAxisRect* addLegendLayout(QCustomPlot* plot, std::initializer_list<QCPLayoutElement*> headers);

// A series' mean line over a +-1 s.d. band (translucent fill between two dotted edges, kept out of
// the legend), registered in hits so that toggling the legend entry hides the band too. Returns the
// line. fill_alpha, width and marker size let each plot keep its own look.
void addBandLine(QCustomPlot* plot, QCPAxis* x, QCPAxis* y, const QVector<double>& px, const QVector<double>& lo,
                 const QVector<double>& hi, const QVector<double>& mean, const QColor& c, const QString& label,
                 int fill_alpha, double width, double marker, PlotHits* hits);
// One length x depth heatmap per configuration (full cache first), one colour scale; hover shows a
// cell's answer, a click opens it.
QString drawNeedleHeatmaps(QCustomPlot* plot, const EvalResults& results, const QString& metric, PlotHits* hits);
// The metric against a log budget axis, one line per policy with a +-1 s.d. band, the full cache
// dashed; legend entries toggle a policy.
QString drawSweepCurves(QCustomPlot* plot, const EvalResults& results, const QString& metric, PlotHits* hits);
// RULER's leaderboard at one length, as kvpress plots it: the metric (0-100) against the
// compression ratio ("ratio") or the budget ("budget", log axis), one line per policy with a +-1 s.d.
// band over samples, the full cache as a dashed horizontal line; a click on a point opens its worst
// sample. Series i has seriesColor(i), as the table's columns.
QString drawRulerLeaderboard(QCustomPlot* plot, const EvalResults& results, int64_t length, const QString& axis,
                             const QString& metric, PlotHits* hits);

}  // namespace studio
