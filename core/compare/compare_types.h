// Plain result types of the full-vs-compressed comparison (no LibTorch), shared by core/compare,
// core/session and the apps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapkv/snapkv_params.h"

namespace snapkv {

struct GenerationSettings {
    int64_t max_tokens = 128;
    bool greedy = true;
    float temperature = 0.8f;  // <= 0: greedy, as llama.cpp (its sampler takes the argmax then)
    // Every run reads this, never `greedy` alone, so temperature 0 means the same everywhere.
    bool is_greedy() const { return greedy || temperature <= 0.0f; }
    int64_t top_k = 40;
    float top_p = 0.95f;
    uint64_t seed = 42;
    bool stop_at_eog = true;
};

struct RunOutput {
    std::vector<int32_t> ids;
    std::string text;
    std::vector<std::string> pieces;
    int64_t kv_bytes = 0;  // right after prefill (and compression)
    double decode_ms = 0;
    double decode_tok_s = 0;
    int64_t batch = 1;  // runs decoded together (decode_ms is this run's share of their steps)
};

// Compression during generation (kvpress DecodingPress: compression_interval, target_size): every
// `interval` decoding steps the selection's policy chooses again over the whole cache (the prompt
// positions still kept plus the generated tokens) down to `budget` tokens per head, the last W
// generated tokens as its observation window (core/compare/decode_compression.h). budget 0: off.
struct DecodeCompressionSettings {
    int64_t budget = 0;    // C: tokens per head after an event (window included); 0 = off
    int64_t interval = 0;  // N: decoding steps (tokens fed back) between events, >= 1 when on
    bool enabled() const { return budget > 0; }
};

// Empty when `policy` can compress during generation, else the reason it cannot
// (decode_compression.cpp).
std::string decode_policy_refusal(Policy policy);

// The first problem with decoding compression settings for this selection, or "" when they are
// off or fine: budget and interval >= 1, a policy that can, the window inside the budget and no
// longer than the interval, the pooling kernel within budget - window, the sinks within the budget.
std::string check_decode_settings(const SelectionParams& p, const DecodeCompressionSettings& d);

// One compression event of a run: after decoding step `step` (1-based: the step-th token fed back
// is in the cache), the cache went from positions_before to positions_after tokens per head.
struct DecodeCompressionEvent {
    int64_t step = 0;
    int64_t positions_before = 0;  // the longest head of any layer, before
    int64_t positions_after = 0;   // the longest head of any layer, after
    int64_t evicted = 0;           // entries removed, summed over layers and heads
    // [layer][cache head] the absolute positions each head holds after the event, sorted.
    std::vector<std::vector<std::vector<int64_t>>> kept;
};

struct CompareStep {
    double kl = 0;  // KL(full || compressed) of the next-token distributions
    bool top1_agree = true;
    int64_t rank = 0;  // rank of the full run's token under the compressed run (0 = top)
};

struct CompareResult {
    SelectionParams params;
    bool query_agnostic = false;
    double prefill_ms = 0;
    RunOutput full;
    RunOutput compressed;
    std::vector<CompareStep> steps;
    int64_t first_divergence = -1;              // step index, -1 if none
    std::vector<std::vector<double>> hit_rate;  // [layer][query head], NaN-free: -1 when undefined
    std::string note;
    // Decoding-time compression of the compressed run (settings off: none happened).
    DecodeCompressionSettings decode;
    bool compress_prefill = true;       // false: the compressed run started from the full cache
    std::vector<int64_t> cache_tokens;  // per step: tokens per head in the compressed cache after it
    std::vector<DecodeCompressionEvent> decode_events;
    // With CompareSettings::record_timeline (the app's Timeline view): [layer][cache head] the
    // positions the compressed cache held before the first generated token (after prefill
    // compression), and per fed-back token i (step_attention[i], i = 0 .. steps - 2) the full run's
    // attention of that token over positions 0 .. L + i, per layer and KV head (the largest over
    // the head's query heads), as round(255 * sqrt(p)): [layer][kv head][position] flattened.
    std::vector<std::vector<std::vector<int64_t>>> start_kept;
    std::vector<std::vector<uint8_t>> step_attention;
    int64_t prompt_tokens = 0;  // L
};

}  // namespace snapkv
