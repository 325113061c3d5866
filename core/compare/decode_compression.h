// Compression during generation, with kvpress DecodingPress's semantics (decoding_press.py;
// tests/data/reference/decoding_press/README.md has what it does, read from its source): every
// `interval` decoding steps, once the step's token is in the cache, the policy of the selection
// chooses again over everything the cache holds (the prompt positions still kept and the generated
// tokens) down to `budget` tokens per head. The last W fed tokens are the observation window of the
// policies that read one (their post-RoPE queries, ForwardOptions::last_queries), kept like the
// prefill's window; TOVA reads the current token; Knorm and KeyDiff read the keys alone. The same
// GQA modes, tie rules, pooling and sinks as prefill compression (one select() per layer over the
// layer's slots: slot order is position order, the gather keeps it). An event that finds no layer
// over the budget changes nothing.
//
// Where we differ from DecodingPress: sink tokens (StreamingLLM's n_sink) stay first in slot order,
// so they stay sinks after an event (kvpress keeps topk order); sliding-window layers (Gemma 2/3's
// local layers) are not scored: an event keeps, per head, the positions the next token can still
// see and of those the `budget` most recent; PyramidKV plans its per-layer budgets from `budget`.
// Policies that cannot score during generation are refused: H2O (its scores sum every query's
// attention, prompt included), AdaKV (heads of different lengths) and ExpectedAttention (query
// statistics of the prompt; kvpress's own semantics are still changing).
//
// Dimensions: H = n_head, Hc = heads in the cache, S = slots of a layer, W = window, D = head_dim.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/compare/compare_types.h"
#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"
#include "core/snapkv/selector.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// decode_policy_refusal and check_decode_settings: compare_types.h (the apps check with them).

// The longest head of any layer: the tokens per head a cache holds.
int64_t cache_tokens(const KvCache& cache);
// [layer][cache head] the positions a cache holds (padding left out), in slot order.
std::vector<std::vector<std::vector<int64_t>>> kept_positions_of(const KvCache& cache);

class DecodeCompressor {
public:
    // p: the policy and its settings (budget and ratio are ignored: d.budget is the budget).
    // Throws InputError with check_decode_settings's sentence.
    DecodeCompressor(const LlamaModel& model, const SelectionParams& p, const DecodeCompressionSettings& d);

    // Whether the policy reads window queries: pass ForwardOptions::last_queries to each step then.
    bool wants_queries() const { return m_window > 0; }
    const DecodeCompressionSettings& settings() const { return m_settings; }
    int64_t window() const { return m_window; }

    // After one decoding step fed one token into `cache` (its K/V appended): queries are that
    // forward's last_queries (per layer [1, H, D]; ignored unless wants_queries()). Every
    // interval-th call runs an event; returns true when it compressed (events() has it).
    bool after_step(KvCache& cache, const std::vector<at::Tensor>& queries);
    // The buffering half of after_step alone (a caller that schedules events itself).
    void observe(const std::vector<at::Tensor>& queries);

    // What an event on this cache would keep, without changing it: per layer the slots of each
    // result head (empty for a layer kept whole), from the queries buffered so far. scored: when
    // set, per layer the selection over its slots with scores (empty for layers not scored).
    std::vector<LayerKeep> choose(const KvCache& cache, std::vector<Selection>* scored = nullptr) const;
    // Gathers `keep` (choose()'s form) and records the event at step `step`.
    void apply(KvCache& cache, const std::vector<LayerKeep>& keep, int64_t step);

    const std::vector<DecodeCompressionEvent>& events() const { return m_events; }
    int64_t steps() const { return m_steps; }

private:
    const LlamaModel& m_model;
    SelectionParams m_params;
    DecodeCompressionSettings m_settings;
    int64_t m_window = 0;                           // W of the policy (0: reads no queries)
    int64_t m_steps = 0;                            // decoding steps seen
    int64_t m_since = 0;                            // steps since the last event (or since prefill)
    std::vector<std::deque<at::Tensor>> m_queries;  // per layer the last W queries [H, D]
    std::vector<DecodeCompressionEvent> m_events;
};

}  // namespace snapkv
