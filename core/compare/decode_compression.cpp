// See decode_compression.h.
#include "core/compare/decode_compression.h"

#include <algorithm>

#include "core/common/errors.h"
#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

// The window a policy reads at an event: W for a policy that reads one, its fixed window (TOVA's
// current token) otherwise; a query-free policy still gets one query, for the scorer's votes.
int64_t ring_window(const SelectionParams& p) {
    const PolicyInfo& info = policy_info(p.policy);
    return std::max<int64_t>(1, info.window_of(p.window));
}

// Slots [0, S) of a layer whose position is real and >= first, per head, in slot order.
std::vector<std::vector<int64_t>> slots_from(const LayerKv& kv, int64_t first) {
    const at::Tensor pos = kv.positions().cpu().contiguous();  // [Hc, S]
    const int64_t hc = pos.size(0), s = pos.size(1);
    const auto* p = pos.data_ptr<int64_t>();
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(hc));
    for (int64_t h = 0; h < hc; ++h)
        for (int64_t i = 0; i < s; ++i) {
            const int64_t v = p[h * s + i];
            if (v >= first && v < kPadPosition) out[static_cast<size_t>(h)].push_back(i);
        }
    return out;
}

}  // namespace

std::string decode_policy_refusal(Policy policy) {
    switch (policy) {
    case Policy::H2O:
        return "h2o cannot compress during generation: its scores sum the attention of every query, the prompt's "
               "included, which a decoding step does not have";
    case Policy::AdaKV:
        return "adakv cannot compress during generation: it keeps a different number of tokens per head, and the "
               "decoding events need heads of one length";
    case Policy::ExpectedAttention:
        return "expected_attention cannot compress during generation: it scores with the prompt's query "
               "statistics (kvpress's own decoding semantics for it are still changing)";
    default: return "";
    }
}

std::string check_decode_settings(const SelectionParams& p, const DecodeCompressionSettings& d) {
    if (!d.enabled()) return "";
    const std::string why = decode_policy_refusal(p.policy);
    if (!why.empty()) return why;
    if (d.budget < 1) return "the decoding budget " + std::to_string(d.budget) + " must be at least 1";
    if (d.interval < 1) return "the decoding interval " + std::to_string(d.interval) + " must be at least 1";
    const PolicyInfo& info = policy_info(p.policy);
    const int64_t w = info.window_of(p.window);
    if (d.budget <= w)
        return "the decoding budget " + std::to_string(d.budget) + " must be larger than the window " +
               std::to_string(w) + " (the budget counts the window)";
    if (info.reads_param(kReadsWindow) && w > d.interval)
        return "the window " + std::to_string(w) + " must not be longer than the decoding interval " +
               std::to_string(d.interval) + " (the window is the tokens generated since the last event)";
    if (info.pools() && p.pooling != Pooling::None && p.kernel > d.budget - w)
        return "the pooling kernel " + std::to_string(p.kernel) +
               " must be at most the decoding budget minus the window (" + std::to_string(d.budget - w) + ")";
    if (info.reads_param(kReadsSink) && p.n_sink > d.budget - w)
        return "the sink tokens " + std::to_string(p.n_sink) + " must fit in the decoding budget minus the window (" +
               std::to_string(d.budget - w) + ")";
    return "";
}

std::vector<std::vector<std::vector<int64_t>>> kept_positions_of(const KvCache& cache) {
    std::vector<std::vector<std::vector<int64_t>>> out(static_cast<size_t>(cache.n_layer()));
    for (int64_t l = 0; l < cache.n_layer(); ++l) {
        const at::Tensor pos = cache.layer(l).positions().cpu().contiguous();  // [Hc, S]
        const auto* p = pos.data_ptr<int64_t>();
        auto& heads = out[static_cast<size_t>(l)];
        heads.resize(static_cast<size_t>(pos.size(0)));
        for (int64_t h = 0; h < pos.size(0); ++h)
            for (int64_t i = 0; i < pos.size(1); ++i)
                if (p[h * pos.size(1) + i] < kPadPosition)
                    heads[static_cast<size_t>(h)].push_back(p[h * pos.size(1) + i]);
    }
    return out;
}

int64_t cache_tokens(const KvCache& cache) {
    int64_t n = 0;
    for (int64_t l = 0; l < cache.n_layer(); ++l) n = std::max(n, cache.layer(l).size());
    return n;
}

DecodeCompressor::DecodeCompressor(const LlamaModel& model, const SelectionParams& p,
                                   const DecodeCompressionSettings& d)
    : m_model(model), m_params(p), m_settings(d) {
    if (!d.enabled()) throw InputError("decoding compression: the decoding budget is 0 (off)");
    const std::string problem = check_decode_settings(p, d);
    if (!problem.empty()) throw InputError("decoding compression: " + problem);
    m_params.ratio = -1.0;
    m_params.budget = d.budget;
    m_window = ring_window(p);
    // A query-free policy's window only sizes the votes no one reads here.
    if (!policy_info(p.policy).reads_param(kReadsWindow)) m_params.window = m_window;
    m_queries.resize(static_cast<size_t>(model.config().n_layer));
}

void DecodeCompressor::observe(const std::vector<at::Tensor>& queries) {
    if (queries.size() != m_queries.size())
        throw InputError("decoding compression: the step's queries cover " + std::to_string(queries.size()) +
                         " layers of " + std::to_string(m_queries.size()) + " (pass ForwardOptions::last_queries)");
    for (size_t l = 0; l < queries.size(); ++l) {
        auto& ring = m_queries[l];
        ring.push_back(queries[l].select(0, queries[l].size(0) - 1));  // [H, D]
        while (static_cast<int64_t>(ring.size()) > m_window) ring.pop_front();
    }
}

bool DecodeCompressor::after_step(KvCache& cache, const std::vector<at::Tensor>& queries) {
    observe(queries);
    ++m_steps;
    if (++m_since < m_settings.interval) return false;
    m_since = 0;
    if (cache_tokens(cache) <= m_settings.budget) return false;
    apply(cache, choose(cache), m_steps);
    return true;
}

std::vector<LayerKeep> DecodeCompressor::choose(const KvCache& cache, std::vector<Selection>* scored) const {
    c10::InferenceMode guard;
    const ModelConfig& c = m_model.config();
    const int64_t n_layer = cache.n_layer(), C = m_settings.budget;
    const PolicyInfo& info = policy_info(m_params.policy);
    std::vector<LayerKeep> keep(static_cast<size_t>(n_layer));
    if (scored) scored->assign(static_cast<size_t>(n_layer), Selection{});
    // One plan of per-layer budgets for the event (PyramidKV's), from the longest layer.
    const std::vector<int64_t> budgets = info.rule().layer_budgets(m_params, C, cache_tokens(cache), n_layer);
    for (int64_t l = 0; l < n_layer; ++l) {
        const LayerKv& kv = cache.layer(l);
        const int64_t S = kv.size();
        const int64_t sw = c.layers[static_cast<size_t>(l)].sliding_window;
        if (sw > 0) {
            // A sliding-window layer: what the next token can see, of it the C most recent.
            const int64_t first = std::max<int64_t>(0, cache.n_past() - sw + 1);
            auto lists = slots_from(kv, first);
            bool whole = true;
            for (auto& list : lists) {
                if (static_cast<int64_t>(list.size()) > C) list.erase(list.begin(), list.end() - C);
                whole = whole && static_cast<int64_t>(list.size()) == S;
            }
            if (!whole) keep[static_cast<size_t>(l)] = std::move(lists);
            continue;
        }
        const int64_t budget = budgets[static_cast<size_t>(l)];
        if (S <= budget) continue;
        if (kv.has_padding())
            throw InputError("decoding compression: layer " + std::to_string(l) +
                             " holds heads of different lengths (an AdaKV selection); decoding events need heads of "
                             "one length");
        const auto& ring = m_queries[static_cast<size_t>(l)];
        if (static_cast<int64_t>(ring.size()) < m_window)
            throw InputError("decoding compression: " + std::to_string(ring.size()) +
                             " generated tokens for a window of " + std::to_string(m_window));
        LayerCapture cap;
        cap.scale = c.attn_scale;
        cap.softcap = c.attn_softcap;
        cap.keys = kv.keys().to(at::kFloat).contiguous();  // [Hc, S, D], the stored values
        cap.window_queries = at::stack(std::vector<at::Tensor>(ring.begin(), ring.end()), 1)
                                 .to(cap.keys.device())
                                 .contiguous();  // [H, W, D]
        std::vector<LayerScorer> one;
        one.emplace_back(std::move(cap));
        SelectionParams p = m_params;
        p.budget = budget;
        if (p.policy == Policy::Pyramid) p.policy = Policy::SnapKV;  // its budget is this layer's already
        Selection sel = select(one, p, scored != nullptr);
        const int64_t w = sel.window, prefix = S - w;
        LayerKeep heads;
        for (const HeadSelection& hs : sel.layers.front().heads) {
            std::vector<int64_t> list = hs.kept;
            for (int64_t i = prefix; i < S; ++i) list.push_back(i);
            heads.push_back(std::move(list));
        }
        keep[static_cast<size_t>(l)] = std::move(heads);
        if (scored) (*scored)[static_cast<size_t>(l)] = std::move(sel);
    }
    return keep;
}

void DecodeCompressor::apply(KvCache& cache, const std::vector<LayerKeep>& keep, int64_t step) {
    DecodeCompressionEvent ev;
    ev.step = step;
    ev.positions_before = cache_tokens(cache);
    int64_t before = 0;
    for (int64_t l = 0; l < cache.n_layer(); ++l) before += cache.layer(l).used_slots();
    cache = gather_cache(cache, keep, m_settings.interval + 1);
    ev.positions_after = cache_tokens(cache);
    int64_t after = 0;
    for (int64_t l = 0; l < cache.n_layer(); ++l) after += cache.layer(l).used_slots();
    ev.kept = kept_positions_of(cache);
    ev.evicted = before - after;
    m_events.push_back(std::move(ev));
}

}  // namespace snapkv
