// Colour-map stops. Viridis: 11 evenly spaced samples of matplotlib's map (the same values as
// R viridisLite::viridis(11)). Cividis: 6 evenly spaced samples of the published map.
#include "app/gui/plot/colormaps.h"

#include <algorithm>

namespace studio {

namespace {

QList<QPair<double, QColor>> even(const std::initializer_list<const char*>& hex) {
    QList<QPair<double, QColor>> out;
    const int n = static_cast<int>(hex.size());
    int i = 0;
    for (const char* h : hex) {
        out.append({n > 1 ? double(i) / (n - 1) : 0.0, QColor(h)});
        ++i;
    }
    return out;
}

}  // namespace

QList<QPair<double, QColor>> colorStops(ColorMapKind kind) {
    switch (kind) {
    case ColorMapKind::Viridis:
        return even({"#440154", "#482576", "#414487", "#35608d", "#2a788e", "#21908c", "#22a884", "#43bf71", "#7ad151",
                     "#bbdf27", "#fde725"});
    case ColorMapKind::Cividis: return even({"#00224e", "#35456c", "#666970", "#948e77", "#c8b866", "#fee838"});
    case ColorMapKind::Greys: return even({"#ffffff", "#000000"});
    }
    return {};
}

QColor colorAt(ColorMapKind kind, double t) {
    const auto stops = colorStops(kind);
    if (stops.isEmpty()) return Qt::black;
    t = std::clamp(t, 0.0, 1.0);
    for (int i = 1; i < stops.size(); ++i) {
        if (t <= stops[i].first) {
            const double a = stops[i - 1].first;
            const double b = stops[i].first;
            const double f = b > a ? (t - a) / (b - a) : 0.0;
            const QColor& c0 = stops[i - 1].second;
            const QColor& c1 = stops[i].second;
            return QColor::fromRgbF(c0.redF() + f * (c1.redF() - c0.redF()),
                                    c0.greenF() + f * (c1.greenF() - c0.greenF()),
                                    c0.blueF() + f * (c1.blueF() - c0.blueF()));
        }
    }
    return stops.last().second;
}

QColor textColorOn(const QColor& background) {
    // Relative luminance (ITU-R BT.709 weights) on the gamma-encoded values is enough here.
    const double y = 0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return y > 0.5 ? QColor(Qt::black) : QColor(Qt::white);
}

}  // namespace studio
