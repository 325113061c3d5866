// ParamState: conversion to core's SelectionParams, JSON round-trip and the presets.
#include "app/gui/param_state.h"

#include <QJsonValue>

namespace studio {

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
    o["n_sink"] = static_cast<qint64>(sel.n_sink);
    o["seed"] = QString::number(sel.seed);
    o["pyramid_beta"] = static_cast<qint64>(sel.pyramid_beta);
    o["adakv_alpha"] = sel.adakv_alpha;
    o["query_agnostic"] = queryAgnostic;
    o["hit_threshold"] = hitThreshold;
    return o;
}

ParamState ParamState::fromJson(const QJsonObject& o) {
    ParamState s;
    // parse_* throw snapkv::InputError naming the allowed values; the caller reports it.
    if (o.contains("policy")) s.sel.policy = snapkv::parse_policy(o["policy"].toString().toStdString());
    if (o.contains("pooling")) s.sel.pooling = snapkv::parse_pooling(o["pooling"].toString().toStdString());
    if (o.contains("gqa")) s.sel.gqa = snapkv::parse_gqa_mode(o["gqa"].toString().toStdString());
    s.sel.window = o["window"].toInteger(s.sel.window);
    s.sel.kernel = o["kernel"].toInteger(s.sel.kernel);
    s.sel.budget = o["budget"].toInteger(s.sel.budget);
    s.sel.n_sink = o["n_sink"].toInteger(s.sel.n_sink);
    if (o.contains("seed")) s.sel.seed = o["seed"].toString().toULongLong();
    s.sel.pyramid_beta = o["pyramid_beta"].toInteger(s.sel.pyramid_beta);
    s.sel.adakv_alpha = o["adakv_alpha"].toDouble(s.sel.adakv_alpha);
    s.useRatio = o["use_ratio"].toBool(s.useRatio);
    s.ratio = o["ratio"].toDouble(s.ratio);
    s.queryAgnostic = o["query_agnostic"].toBool(s.queryAgnostic);
    s.hitThreshold = o["hit_threshold"].toDouble(s.hitThreshold);
    return s;
}

bool ParamState::operator==(const ParamState& o) const {
    const auto& a = sel;
    const auto& b = o.sel;
    return a.policy == b.policy && a.window == b.window && a.kernel == b.kernel && a.pooling == b.pooling &&
           a.budget == b.budget && a.gqa == b.gqa && a.n_sink == b.n_sink && a.seed == b.seed &&
           a.pyramid_beta == b.pyramid_beta && a.adakv_alpha == b.adakv_alpha && useRatio == o.useRatio &&
           ratio == o.ratio && queryAgnostic == o.queryAgnostic && hitThreshold == o.hitThreshold;
}

QString ParamState::summary() const {
    QString s = QString("%1 W%2 K%3 %4 ")
                    .arg(QString::fromStdString(snapkv::policy_name(sel.policy)))
                    .arg(sel.window)
                    .arg(sel.kernel)
                    .arg(QString::fromStdString(snapkv::pooling_name(sel.pooling)));
    s += useRatio ? QString("ratio %1").arg(ratio, 0, 'f', 2) : QString("C%1").arg(sel.budget);
    if (sel.gqa == snapkv::GqaMode::KvHead) s += " kv-head";
    if (queryAgnostic) s += " q-agnostic";
    return s;
}

QList<Preset> presets() {
    QList<Preset> out;
    for (int c : {1024, 2048, 4096}) {
        Preset p;
        p.name = QString("Official SnapKV, C %1").arg(c);
        p.tip = "FasterDecoding/SnapKV defaults: window 32, kernel 7, max pooling, one selection per query head";
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
