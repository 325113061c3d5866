// Compressed cache building: a Selection turned into the caches compressed generation decodes from.
// The per-layer slot lists (kept positions plus the window, sliding-window layers cut to what the
// next token can see), the gathered compressed KvCache, the per-query-head masks of what it kept
// (for the hit rate), and the full cache trimmed as a sliding-window runtime holds it (the honest
// baseline of the compressed one). Not here: the gather itself (core/kv gather_cache, CUDA through
// core/ops), choosing positions (selector.h), decoding (core/compare).
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = n_tokens, W = window, P = prefix length L - W.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "core/io/model_config.h"
#include "core/kv/kv_cache.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// First position the next token (at n_tokens) can see in a layer with this sliding window; 0 for
// a layer without one (sliding_window <= 0).
int64_t first_visible(int64_t sliding_window, int64_t n_tokens);

// Per-layer slot lists for gather_cache: kept prefix positions + the window, per cache head.
// Sliding-window layers keep only the positions the next token (at n_tokens) can see, whether
// compressed or not (one list per KV head); an empty list keeps a layer whole.
std::vector<LayerKeep> keep_lists(const Selection& sel, int64_t n_tokens, int64_t n_head_kv);

// The selection applied to a fresh prefill's cache (slot i holds position i): its first
// sel.n_tokens positions (all of them, or the context of a query-agnostic selection) gathered by
// keep_lists, with room for extra_capacity more tokens.
KvCache compressed_cache(const KvCache& prefill, const Selection& sel, int64_t n_head_kv, int64_t extra_capacity);

// Per layer [H, P] bool, on device: which prefix positions the selection kept for each query head
// (a KV head's list stands for every query head of its group); undefined for a layer kept whole.
std::vector<at::Tensor> kept_masks(const Selection& sel, int64_t n_head, at::Device device = at::kCPU);

// The full cache as a sliding-window runtime holds it: sliding layers trimmed to the positions the
// next token (at n_tokens) can see, the others whole; room for extra_capacity more tokens.
KvCache window_trimmed_cache(const KvCache& cache, const ModelConfig& config, int64_t n_tokens, int64_t extra_capacity);

}  // namespace snapkv
