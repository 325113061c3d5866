// ParamState: conversion to core's SelectionParams, JSON round-trip through core's reader and
// writer, core's checks that need no prompt plus the app's own, and the presets.
#include "app/gui/state/param_state.h"

#include <QJsonValue>

#include <cmath>
#include <limits>

#include "app/gui/state/json_fields.h"
#include "core/session/session.h"
#include "core/snapkv/params_json.h"

namespace studio {

snapkv::SelectionParams defaultSelectionParams() { return snapkv::default_params(); }

int64_t appMaxWindow() { return snapkv::PrefillSettings{}.max_window; }

snapkv::SelectionParams ParamState::toSelectionParams() const {
    snapkv::SelectionParams p = sel;
    p.ratio = useRatio ? ratio : -1.0;
    return p;
}

QJsonObject ParamState::toJson() const {
    // Core's one parameter JSON (the CLI writes the same), plus what only the app keeps.
    QJsonObject o = toQtJson(snapkv::params_to_json(toSelectionParams(), queryAgnostic));
    o["hit_threshold"] = hitThreshold;
    o["decode_budget"] = static_cast<qint64>(decodeBudget);
    o["decode_interval"] = static_cast<qint64>(decodeInterval);
    o["prefill_compression"] = compressPrefill;
    return o;
}

ParamState ParamState::fromJson(const QJsonObject& o, const QString& prefix) {
    ParamState s;
    // Core's reader names "<prefix>.<key>", the value and what is allowed.
    const snapkv::ParamsFromJson r = snapkv::params_from_json(fromQtJson(o), prefix.toStdString(), s.sel);
    s.sel = r.params;
    s.queryAgnostic = r.query_agnostic;
    s.useRatio = s.sel.ratio >= 0.0;
    if (s.useRatio) s.ratio = s.sel.ratio;
    s.sel.ratio = -1.0;  // the state keeps the ratio in useRatio / ratio
    const JsonFields f(o, prefix);
    // Older files kept the ratio beside a switch, remembered while the budget was in tokens.
    if (f.has("use_ratio")) {
        s.useRatio = f.boolean("use_ratio", s.useRatio);
        s.ratio = f.number("ratio", s.ratio);
    }
    s.hitThreshold = f.number("hit_threshold", s.hitThreshold);
    s.decodeBudget = static_cast<int64_t>(f.number("decode_budget", static_cast<double>(s.decodeBudget)));
    s.decodeInterval = static_cast<int64_t>(f.number("decode_interval", static_cast<double>(s.decodeInterval)));
    s.compressPrefill = f.boolean("prefill_compression", s.compressPrefill);
    if (const QString problem = s.check(); !problem.isEmpty())
        throw snapkv::InputError(((prefix.isEmpty() ? QString() : prefix + ".") + problem).toStdString());
    return s;
}

QString ParamState::check() const {
    // Core's check without a prompt (the window against the app's capture), then what only the app
    // has: the ratio kept while the budget is in tokens, theta, and the widgets' int ranges.
    if (const auto bad = snapkv::check_params(toSelectionParams(), {0, appMaxWindow()}))
        return QString::fromStdString(bad->text());
    if (!(ratio >= 0.0 && ratio < 1.0)) return QString("ratio: %1 is out of range; allowed 0 <= ratio < 1").arg(ratio);
    if (!(hitThreshold > 0.0 && hitThreshold <= 1.0))
        return QString("hit_threshold: %1 is out of range; allowed 0 < theta <= 1").arg(hitThreshold);
    if (decodeBudget < 0) return QString("decode_budget: %1 is negative; 0 turns it off").arg(decodeBudget);
    if (decodeInterval < 1) return QString("decode_interval: %1 must be at least 1").arg(decodeInterval);
    if (const std::string d = snapkv::check_decode_settings(toSelectionParams(), decodeSettings()); !d.empty())
        return "decode_budget: " + QString::fromStdString(d);
    if (!compressPrefill && decodeBudget == 0)
        return "prefill_compression: off needs a decoding budget (else both runs are the full cache)";
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    for (const auto& [name, v] : {std::pair{"kernel", sel.kernel}, std::pair{"budget", sel.budget},
                                  std::pair{"n_sink", sel.n_sink}, std::pair{"pyramid_beta", sel.pyramid_beta}})
        if (v < -kMax || v > kMax)
            return QString("%1: %2 is out of range; allowed up to %3").arg(name).arg(v).arg(kMax);
    return {};
}

bool ParamState::operator==(const ParamState& o) const {
    const auto& a = sel;
    const auto& b = o.sel;
    return a.policy == b.policy && a.window == b.window && a.kernel == b.kernel && a.pooling == b.pooling &&
           a.budget == b.budget && a.gqa == b.gqa && a.n_sink == b.n_sink && a.seed == b.seed &&
           a.pyramid_beta == b.pyramid_beta && a.adakv_alpha == b.adakv_alpha && a.tie_break == b.tie_break &&
           useRatio == o.useRatio && ratio == o.ratio && queryAgnostic == o.queryAgnostic &&
           hitThreshold == o.hitThreshold && decodeBudget == o.decodeBudget && decodeInterval == o.decodeInterval &&
           compressPrefill == o.compressPrefill;
}

QString ParamState::summary() const {
    QString s = QString("%1 W%2 K%3 %4 ")
                    .arg(QString::fromStdString(snapkv::policy_name(sel.policy)))
                    .arg(sel.window)
                    .arg(sel.kernel)
                    .arg(QString::fromStdString(snapkv::pooling_name(sel.pooling)));
    s += useRatio ? QString("ratio %1").arg(ratio, 0, 'f', 2) : QString("C%1").arg(sel.budget);
    s += sel.gqa == snapkv::GqaMode::KvHead ? " per KV head" : " per query head";
    if (sel.tie_break == snapkv::TieBreak::Earlier) s += " ties-earlier";
    if (queryAgnostic) s += " q-agnostic";
    return s;
}

QList<Preset> presets() {
    QList<Preset> out;
    Preset def;
    def.name = "SnapKV per KV head, C 1024 (default)";
    def.tip =
        "Window 32, kernel 7, max pooling, C 1024, one selection per KV head (the votes of the query "
        "heads sharing it averaged, as kvpress does): on a grouped-query model the cache really shrinks";
    def.state.sel = defaultSelectionParams();
    out.push_back(def);
    for (int c : {1024, 2048, 4096}) {
        Preset p;
        p.name = QString("Official SnapKV, C %1").arg(c);
        p.tip =
            "FasterDecoding/SnapKV defaults: window 32, kernel 7, max pooling, one selection per query head. "
            "On a grouped-query model each query head stores its own kept tokens, so the cache can end up "
            "larger than the full one";
        p.state.sel.window = 32;
        p.state.sel.kernel = 7;
        p.state.sel.pooling = snapkv::Pooling::Max;
        p.state.sel.budget = c;
        p.state.sel.gqa = snapkv::GqaMode::QueryHead;
        out.push_back(p);
    }
    Preset kv;
    kv.name = "kvpress SnapKVPress, ratio 0.5";
    kv.tip =
        "NVIDIA kvpress defaults: window 64, kernel 5, average pooling, half the cache evicted, "
        "scores averaged over each KV group";
    kv.state.sel.window = 64;
    kv.state.sel.kernel = 5;
    kv.state.sel.pooling = snapkv::Pooling::Avg;
    kv.state.sel.gqa = snapkv::GqaMode::KvHead;
    kv.state.useRatio = true;
    kv.state.ratio = 0.5;
    out.push_back(kv);
    return out;
}

QStringList policyNames() {
    QStringList l;
    for (const auto& name : snapkv::policy_names()) l << QString::fromStdString(name);
    return l;
}

QStringList poolingNames() {
    using snapkv::Pooling;
    QStringList l;
    for (Pooling p : {Pooling::Max, Pooling::Avg, Pooling::None}) l << QString::fromStdString(snapkv::pooling_name(p));
    return l;
}

}  // namespace studio
