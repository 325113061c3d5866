// Full-cache and compressed-cache decoding in lockstep from the same prompt: per step both tokens,
// KL(full || compressed) of the next-token distributions, top-1 agreement, the rank of the full
// run's token under the compressed run, the first divergence, decode speed, and the paper's hit
// rate (§4) measured on the full run's attention. Each run feeds back its own tokens.
//
// Dimensions: H = n_head, P = prefix length (prompt tokens before the window), V = n_vocab.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include <ATen/ATen.h>

#include "core/compare/compare_types.h"
#include "core/compare/decode_compression.h"
#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"

namespace snapkv {

class Tokenizer;

struct LockstepRun {
    KvCache cache;      // after the prompt
    at::Tensor logits;  // [1, V] next-token logits after the prompt
};

struct HitRateSpec {
    // Per layer [H, P] bool: which prefix positions the selection kept for each QUERY head;
    // undefined for a layer that was not compressed (every position kept).
    std::vector<at::Tensor> kept;
    int64_t prefix = 0;       // P
    double threshold = 0.05;  // θ: attention above it marks an important position
};

// Which prefix positions [0, prefix) the probed query attended above threshold: [H, prefix] bool.
// probs [H, S] is over the slots of the full run's cache layer kv; a cache trimmed to a sliding
// window holds positions from its window's start on, so slots are mapped to their positions
// (positions the cache no longer holds were not attended).
at::Tensor prefix_important(const at::Tensor& probs, const LayerKv& kv, int64_t prefix, double threshold);

// Returns steps, both runs' ids/text/pieces/decode timing, first divergence and hit rates
// ([layer][query head], -1 where no position ever exceeded θ). kv_bytes are left to the caller.
// decode: when set, the compressed run also compresses while it generates (decode_compression.h):
// each fed-back token's queries go to it, and the result gets cache_tokens per step, the events
// and the settings. The hit rate stays the prefill selection's. record_timeline: also
// CompareResult::start_kept and step_attention (what the app's Timeline view draws).
CompareResult run_lockstep(const LlamaModel& model, const Tokenizer& tok, LockstepRun full, LockstepRun comp,
                           const GenerationSettings& gen, const HitRateSpec& hits,
                           const std::function<void(int64_t, int64_t)>& progress = {},
                           const std::atomic<bool>* cancel = nullptr, DecodeCompressor* decode = nullptr,
                           bool record_timeline = false);

// The probed token's attention over the positions of the full cache (0 .. n_past - 1), per layer
// and KV head (the largest over its query heads), as round(255 * sqrt(p)), flattened
// [layer][kv head][position] (CompareResult::step_attention).
std::vector<uint8_t> attention_by_position(const AttentionProbe& probe, const KvCache& full, int64_t n_head_kv);

// KL(p || q) for p = softmax(full), q = softmax(comp), in double. logits: [V].
double kl_divergence(const at::Tensor& full_logits, const at::Tensor& comp_logits);
// Tokens whose compressed logit is strictly greater than that of `token` (0 = top-1).
int64_t token_rank(const at::Tensor& logits, int32_t token);

}  // namespace snapkv
