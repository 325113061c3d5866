// PlotHits: mouse positions to rows (see evaluate_hits.h).
#include "app/gui/views/evaluate_hits.h"

#include <qcustomplot.h>

#include <cmath>

#include "app/gui/state/eval_results.h"

namespace studio {

namespace {
constexpr double kPickPixels = 14.0;  // how near a curve point a click must land
}  // namespace

void PlotHits::clear() {
    panels.clear();
    points.clear();
    bands.clear();
}

const PlotHits::CurvePoint* PlotHits::pointAt(const QPointF& pos) const {
    if (panels.empty()) return nullptr;
    QCPAxisRect* rect = panels.front().rect;
    double best = kPickPixels;
    const CurvePoint* hit = nullptr;
    for (const auto& cp : points) {
        const double px = rect->axis(QCPAxis::atBottom)->coordToPixel(cp.x);
        const double py = rect->axis(QCPAxis::atLeft)->coordToPixel(cp.y);
        const double dist = std::hypot(px - pos.x(), py - pos.y());
        if (dist < best) best = dist, hit = &cp;
    }
    return hit;
}

const nlohmann::json* PlotHits::rowAt(const QPointF& pos, const EvalResults& results) const {
    if (results.task() == "needle") {
        const auto nd = static_cast<int64_t>(results.depths().size());
        const auto nl = static_cast<int64_t>(results.lengths().size());
        for (const auto& p : panels) {
            if (!p.rect->rect().contains(pos.toPoint())) continue;
            const auto d = static_cast<int64_t>(std::lround(p.rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
            const auto l = static_cast<int64_t>(std::lround(p.rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
            if (d < 0 || d >= nd || l < 0 || l >= nl) return nullptr;
            return results.row(l * nd + d, p.config);
        }
        return nullptr;
    }
    const CurvePoint* hit = pointAt(pos);
    return hit ? results.row(hit->cell, hit->config) : nullptr;
}

}  // namespace studio
