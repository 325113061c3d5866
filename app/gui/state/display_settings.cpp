// DisplaySettings: names for the choosers and the JSON round-trip used by sessions and QSettings.
#include "app/gui/state/display_settings.h"

#include <QJsonValue>

namespace studio {

namespace {

template <typename E>
E enumFrom(const QJsonObject& o, const char* key, const QStringList& names, E fallback) {
    const int i = names.indexOf(o[key].toString());
    return i < 0 ? fallback : static_cast<E>(i);
}

// Stable keys for files (sessions, settings); the names above are for people and may change.
const QStringList kOverviewKeys = {"kept_mass", "hit_rate", "vote_entropy", "sink_mass", "overlap"};
const QStringList kDocumentKeys = {"head_selection", "head_votes", "layer_kept_share", "all_kept_share"};

}  // namespace

QStringList colorMapNames() { return {"viridis", "cividis", "greys"}; }
QStringList overviewStatNames() {
    return {"kept attention mass", "hit rate", "vote entropy", "sink mass", "overlap with policy"};
}
QStringList documentModeNames() {
    return {"selected head: kept / evicted", "selected head: votes", "layer: share of heads keeping",
            "all layers: share of heads keeping"};
}

QJsonObject DisplaySettings::toJson() const {
    QJsonObject o;
    o["color_map"] = colorMapNames().at(static_cast<int>(colorMap));
    o["log_scale"] = logScale;
    o["row_normalise"] = rowNormalise;
    o["fixed_range"] = fixedRange;
    o["range_min"] = rangeMin;
    o["range_max"] = rangeMax;
    o["hide_sinks"] = hideSinks;
    o["overview_stat"] = kOverviewKeys.at(static_cast<int>(overviewStat));
    o["overlap_policy"] = overlapPolicy;
    o["document_mode"] = kDocumentKeys.at(static_cast<int>(documentMode));
    return o;
}

DisplaySettings DisplaySettings::fromJson(const QJsonObject& o) {
    DisplaySettings d;
    d.colorMap = enumFrom(o, "color_map", colorMapNames(), d.colorMap);
    d.logScale = o["log_scale"].toBool(d.logScale);
    d.rowNormalise = o["row_normalise"].toBool(d.rowNormalise);
    d.fixedRange = o["fixed_range"].toBool(d.fixedRange);
    d.rangeMin = o["range_min"].toDouble(d.rangeMin);
    d.rangeMax = o["range_max"].toDouble(d.rangeMax);
    d.hideSinks = o["hide_sinks"].toInt(d.hideSinks);
    d.overviewStat = enumFrom(o, "overview_stat", kOverviewKeys, d.overviewStat);
    d.overlapPolicy = o["overlap_policy"].toString(d.overlapPolicy);
    d.documentMode = enumFrom(o, "document_mode", kDocumentKeys, d.documentMode);
    return d;
}

bool DisplaySettings::operator==(const DisplaySettings& o) const {
    return colorMap == o.colorMap && logScale == o.logScale && rowNormalise == o.rowNormalise &&
           fixedRange == o.fixedRange && rangeMin == o.rangeMin && rangeMax == o.rangeMax && hideSinks == o.hideSinks &&
           overviewStat == o.overviewStat && overlapPolicy == o.overlapPolicy && documentMode == o.documentMode;
}

}  // namespace studio
