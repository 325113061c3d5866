// The tunable state of a selection as the parameter panel edits it: core's SelectionParams plus the
// choices that live beside them (budget given as tokens or as a ratio, query-aware or agnostic,
// the hit-rate threshold). Presets and JSON round-trip. No widgets, no session calls.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include "core/compare/compare_types.h"
#include "core/snapkv/snapkv_params.h"

namespace studio {

// The app's default selection: core's default_params() (SnapKV, W 32, K 7, max pooling, C 1024,
// one selection per KV head so that on a GQA model the cache really shrinks: per query head it
// would keep n_head / n_head_kv times more than the full cache holds, e.g. 1.46x on SmolLM2 with
// the bundled 2.1K-token essay). The CLI and the evaluation grid start from the same value.
snapkv::SelectionParams defaultSelectionParams();

// The largest window the app can select with: its prefill captures the queries of the last 128
// prompt tokens (snapkv::PrefillSettings' default).
int64_t appMaxWindow();

struct ParamState {
    snapkv::SelectionParams sel = defaultSelectionParams();  // sel.ratio is ignored; see useRatio/ratio
    bool useRatio = false;       // budget as a compression ratio (kvpress) instead of tokens
    double ratio = 0.5;          // share of tokens evicted when useRatio
    bool queryAgnostic = false;  // compress the context alone (question not seen)
    double hitThreshold = 0.05;  // theta for hit rates (paper section 4)
    // Compression while generating (core/compare/decode_compression.h), with sel's policy: the
    // tokens kept per head at each event (0: off) and the generated tokens between events.
    int64_t decodeBudget = 0;
    int64_t decodeInterval = 32;
    bool compressPrefill = true;  // false: the compressed run starts from the full cache

    snapkv::DecodeCompressionSettings decodeSettings() const {
        return decodeBudget > 0 ? snapkv::DecodeCompressionSettings{decodeBudget, decodeInterval}
                                : snapkv::DecodeCompressionSettings{};
    }

    // The parameters core expects (ratio set or cleared according to useRatio).
    snapkv::SelectionParams toSelectionParams() const;
    // Core's parameter JSON (params_json.h, the CLI's too) plus "hit_threshold", "decode_budget",
    // "decode_interval" and "prefill_compression".
    QJsonObject toJson() const;
    // Missing keys keep their defaults; a key of the wrong type, an unknown name or a value that is
    // never valid (check()) throws snapkv::InputError naming "<prefix>.<key>", the value and what is
    // allowed. Reads the older files' "use_ratio" and "n_sink" too.
    static ParamState fromJson(const QJsonObject& o, const QString& prefix = "params");
    // The first value that no prompt can make valid, as "<name>: <value> ...; allowed ...", or "":
    // core's check_params without a prompt (window outside 1..appMaxWindow(), C <= W, an even
    // kernel for a policy that pools, ...), then the ratio kept for the ratio form outside [0, 1) and
    // theta outside (0, 1]. Limits that depend on the prompt (W < L, K <= L - W) wait for core's
    // validate_params.
    QString check() const;
    bool operator==(const ParamState& o) const;
    bool operator!=(const ParamState& o) const { return !(*this == o); }
    QString summary() const;  // "snapkv W32 K7 max C1024"
};

struct Preset {
    QString name;
    QString tip;
    ParamState state;
};

// The app's default (SnapKV per KV head, C 1024), official SnapKV (W 32, K 7, max pooling,
// C 1024/2048/4096, one selection per query head) and kvpress's SnapKVPress (W 64, K 5, average
// pooling, ratio, pooled scores averaged per KV group).
QList<Preset> presets();

QStringList policyNames();   // in the policy table's order (= Policy enum order)
QStringList poolingNames();  // in Pooling enum order

}  // namespace studio

#include <QMetaType>
Q_DECLARE_METATYPE(studio::ParamState)
