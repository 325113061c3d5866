// ParamState: conversion to core's SelectionParams, JSON round-trip with checked types, the checks
// that need no prompt, and the presets.
#include "app/gui/param_state.h"

#include <QJsonValue>

#include <cmath>
#include <limits>

#include "app/gui/json_fields.h"
#include "core/session/session.h"

namespace studio {

snapkv::SelectionParams defaultSelectionParams() {
    snapkv::SelectionParams p;
    p.policy = snapkv::Policy::SnapKV;
    p.window = 32;
    p.kernel = 7;
    p.pooling = snapkv::Pooling::Max;
    p.budget = 1024;
    p.gqa = snapkv::GqaMode::KvHead;
    p.tie_break = snapkv::TieBreak::Later;
    return p;
}

int64_t appMaxWindow() { return snapkv::PrefillSettings{}.max_window; }

snapkv::SelectionParams ParamState::toSelectionParams() const {
    snapkv::SelectionParams p = sel;
    p.ratio = useRatio ? ratio : -1.0;
    return p;
}

QJsonObject ParamState::toJson() const {
    QJsonObject o;
    o["policy"] = QString::fromStdString(snapkv::policy_name(sel.policy));
    o["window"] = static_cast<qint64>(sel.window);
    o["kernel"] = static_cast<qint64>(sel.kernel);
    o["pooling"] = QString::fromStdString(snapkv::pooling_name(sel.pooling));
    o["budget"] = static_cast<qint64>(sel.budget);
    o["use_ratio"] = useRatio;
    o["ratio"] = ratio;
    o["gqa"] = QString::fromStdString(snapkv::gqa_mode_name(sel.gqa));
    o["tie_break"] = QString::fromStdString(snapkv::tie_break_name(sel.tie_break));
    o["n_sink"] = static_cast<qint64>(sel.n_sink);
    o["seed"] = QString::number(sel.seed);
    o["pyramid_beta"] = static_cast<qint64>(sel.pyramid_beta);
    o["adakv_alpha"] = sel.adakv_alpha;
    o["query_agnostic"] = queryAgnostic;
    o["hit_threshold"] = hitThreshold;
    return o;
}

ParamState ParamState::fromJson(const QJsonObject& o, const QString& prefix) {
    ParamState s;
    const JsonFields f(o, prefix);
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    // parse_* throw snapkv::InputError naming the allowed values; prefixed with the key here.
    auto named = [&](const char* key, auto parse, auto fallback) {
        if (!f.has(key)) return fallback;
        const QString v = f.string(key, QString());
        try {
            return parse(v.toStdString());
        } catch (const snapkv::Error& e) {
            f.fail(key, QString("is not allowed (%1)").arg(QString::fromUtf8(e.what())));
        }
    };
    s.sel.policy = named("policy", snapkv::parse_policy, s.sel.policy);
    s.sel.pooling = named("pooling", snapkv::parse_pooling, s.sel.pooling);
    s.sel.gqa = named("gqa", snapkv::parse_gqa_mode, s.sel.gqa);
    s.sel.tie_break = named("tie_break", snapkv::parse_tie_break, s.sel.tie_break);
    s.sel.window = f.integer("window", s.sel.window, -kMax, kMax);
    s.sel.kernel = f.integer("kernel", s.sel.kernel, -kMax, kMax);
    s.sel.budget = f.integer("budget", s.sel.budget, -kMax, kMax);
    s.sel.n_sink = f.integer("n_sink", s.sel.n_sink, -kMax, kMax);
    if (f.has("seed")) {
        bool ok = false;
        s.sel.seed = f.string("seed", QString()).toULongLong(&ok);
        if (!ok) f.fail("seed", "is not a whole number in a string (64-bit seeds do not fit a JSON number)");
    }
    s.sel.pyramid_beta = f.integer("pyramid_beta", s.sel.pyramid_beta, -kMax, kMax);
    s.sel.adakv_alpha = f.number("adakv_alpha", s.sel.adakv_alpha);
    s.useRatio = f.boolean("use_ratio", s.useRatio);
    s.ratio = f.number("ratio", s.ratio);
    s.queryAgnostic = f.boolean("query_agnostic", s.queryAgnostic);
    s.hitThreshold = f.number("hit_threshold", s.hitThreshold);
    if (const QString problem = s.check(); !problem.isEmpty())
        throw snapkv::InputError(((prefix.isEmpty() ? QString() : prefix + ".") + problem).toStdString());
    return s;
}

QString ParamState::check() const {
    const int64_t wmax = appMaxWindow();
    if (sel.window < 1 || sel.window > wmax)
        return QString("window: %1 is out of range; allowed 1..%2 (the app captures the queries of the last %2 "
                       "prompt tokens)")
            .arg(sel.window)
            .arg(wmax);
    if (sel.kernel < 1 || sel.kernel % 2 == 0)
        return QString("kernel: %1 is not allowed; the pooling kernel must be odd and at least 1").arg(sel.kernel);
    if (sel.budget < 2)
        return QString("budget: %1 is out of range; allowed >= 2 (and larger than the window)").arg(sel.budget);
    if (!useRatio && sel.budget <= sel.window)
        return QString("budget: %1 must be larger than the window %2 (the budget counts the window)")
            .arg(sel.budget)
            .arg(sel.window);
    if (!(ratio >= 0.0 && ratio < 1.0))
        return QString("ratio: %1 is out of range; allowed 0 <= ratio < 1").arg(ratio);
    if (!(hitThreshold > 0.0 && hitThreshold <= 1.0))
        return QString("hit_threshold: %1 is out of range; allowed 0 < theta <= 1").arg(hitThreshold);
    if (sel.n_sink < 0) return QString("n_sink: %1 is out of range; allowed >= 0").arg(sel.n_sink);
    if (sel.pyramid_beta < 1)
        return QString("pyramid_beta: %1 is out of range; allowed >= 1").arg(sel.pyramid_beta);
    if (!(sel.adakv_alpha >= 0.0 && sel.adakv_alpha <= 1.0))
        return QString("adakv_alpha: %1 is out of range; allowed 0 <= alpha <= 1").arg(sel.adakv_alpha);
    return {};
}

bool ParamState::operator==(const ParamState& o) const {
    const auto& a = sel;
    const auto& b = o.sel;
    return a.policy == b.policy && a.window == b.window && a.kernel == b.kernel && a.pooling == b.pooling &&
           a.budget == b.budget && a.gqa == b.gqa && a.n_sink == b.n_sink && a.seed == b.seed &&
           a.pyramid_beta == b.pyramid_beta && a.adakv_alpha == b.adakv_alpha && a.tie_break == b.tie_break &&
           useRatio == o.useRatio &&
           ratio == o.ratio && queryAgnostic == o.queryAgnostic && hitThreshold == o.hitThreshold;
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
    def.tip = "Window 32, kernel 7, max pooling, C 1024, one selection per KV head (the votes of the query "
              "heads sharing it averaged, as kvpress does): on a grouped-query model the cache really shrinks";
    def.state.sel = defaultSelectionParams();
    out.push_back(def);
    for (int c : {1024, 2048, 4096}) {
        Preset p;
        p.name = QString("Official SnapKV, C %1").arg(c);
        p.tip = "FasterDecoding/SnapKV defaults: window 32, kernel 7, max pooling, one selection per query head. "
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
    kv.tip = "NVIDIA kvpress defaults: window 64, kernel 5, average pooling, half the cache evicted, "
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
    using snapkv::Policy;
    QStringList l;
    for (Policy p : {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid, Policy::AdaKV})
        l << QString::fromStdString(snapkv::policy_name(p));
    return l;
}

QStringList poolingNames() {
    using snapkv::Pooling;
    QStringList l;
    for (Pooling p : {Pooling::Max, Pooling::Avg, Pooling::None}) l << QString::fromStdString(snapkv::pooling_name(p));
    return l;
}

}  // namespace studio
