// The tunable state of a selection as the parameter panel edits it: core's SelectionParams plus the
// choices that live beside them (budget given as tokens or as a ratio, query-aware or agnostic,
// the hit-rate threshold). Presets and JSON round-trip. No widgets, no session calls.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include "core/snapkv/snapkv_params.h"

namespace studio {

struct ParamState {
    snapkv::SelectionParams sel;     // sel.ratio is ignored here; see useRatio/ratio
    bool useRatio = false;           // budget as a compression ratio (kvpress) instead of tokens
    double ratio = 0.5;              // share of tokens evicted when useRatio
    bool queryAgnostic = false;      // compress the context alone (question not seen)
    double hitThreshold = 0.05;      // theta for hit rates (paper section 4)

    // The parameters core expects (ratio set or cleared according to useRatio).
    snapkv::SelectionParams toSelectionParams() const;
    QJsonObject toJson() const;
    static ParamState fromJson(const QJsonObject& o);   // missing keys keep their defaults
    bool operator==(const ParamState& o) const;
    bool operator!=(const ParamState& o) const { return !(*this == o); }
    QString summary() const;         // "snapkv W32 K7 max C1024"
};

struct Preset {
    QString name;
    QString tip;
    ParamState state;
};

// Official SnapKV (W 32, K 7, max pooling, C 1024/2048/4096, one selection per query head) and
// kvpress's SnapKVPress (W 64, K 5, average pooling, ratio, pooled scores averaged per KV group).
QList<Preset> presets();

QStringList policyNames();          // in Policy enum order
QStringList poolingNames();         // in Pooling enum order

}  // namespace studio

#include <QMetaType>
Q_DECLARE_METATYPE(studio::ParamState)
