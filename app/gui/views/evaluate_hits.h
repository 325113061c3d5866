// What the Evaluate tab's plot shows, kept for hit tests: the axis rects of the needle heatmaps,
// the points of the curves (each with the row of its worst item) and the band graphs of each curve.
// The drawing functions (evaluate_plots.h) fill it; the view asks it which row lies under the mouse.
// It draws nothing and holds no rows: rows are looked up in the EvalResults it is given.
#pragma once

#include <QPointF>
#include <QString>

#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

class QCPAbstractPlottable;
class QCPAxisRect;

namespace studio {

class EvalResults;

struct PlotHits {
    struct HeatPanel {
        int64_t config = 0;  // -1: the one rect of a curve plot
        QCPAxisRect* rect = nullptr;
    };
    struct CurvePoint {
        double x = 0, y = 0;             // plot coordinates
        int64_t cell = -1, config = -1;  // the row a click opens (the worst item of the point)
        QString tip;
    };
    std::vector<HeatPanel> panels;
    std::vector<CurvePoint> points;
    std::map<QCPAbstractPlottable*, std::vector<QCPAbstractPlottable*>> bands;  // mean line -> its band graphs

    void clear();
    // The curve point within a few pixels of pos (the nearest), or null; needs a curve plot.
    const CurvePoint* pointAt(const QPointF& pos) const;
    // The row under pos: the heatmap cell of a needle plot, or the worst item of the nearest curve
    // point. Null when nothing is there.
    const nlohmann::json* rowAt(const QPointF& pos, const EvalResults& results) const;
};

}  // namespace studio
