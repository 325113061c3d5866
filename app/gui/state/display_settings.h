// How the views draw what they are given: colour map, scale, normalisation, colour range, sink
// hiding and the statistic of the overview grid. A plain value with JSON round-trip; the widget
// that edits it is panels/display_panel.h.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace studio {

enum class ColorMapKind { Viridis, Cividis, Greys };
enum class OverviewStat { KeptMass, HitRate, VoteEntropy, SinkMass, Overlap };
enum class DocumentMode { HeadSelection, HeadVotes, LayerKeptShare, AllKeptShare };

struct DisplaySettings {
    ColorMapKind colorMap = ColorMapKind::Viridis;
    bool logScale = false;
    bool rowNormalise = false;  // each window query's row divided by its maximum
    bool fixedRange = false;    // colour range from rangeMin..rangeMax instead of the data
    double rangeMin = 0.0;
    double rangeMax = 1.0;
    int hideSinks = 0;  // hide the first k keys and renormalise rows over the rest
    OverviewStat overviewStat = OverviewStat::KeptMass;
    QString overlapPolicy = "h2o";  // the other policy for OverviewStat::Overlap
    DocumentMode documentMode = DocumentMode::HeadSelection;

    QJsonObject toJson() const;
    static DisplaySettings fromJson(const QJsonObject& o);
    bool operator==(const DisplaySettings& o) const;
    bool operator!=(const DisplaySettings& o) const { return !(*this == o); }
};

QStringList colorMapNames();
QStringList overviewStatNames();
QStringList documentModeNames();

}  // namespace studio
