// The per-head steps of the eviction policies as plain loops over CPU arrays: 1-D pooling,
// deterministic top-k, StreamingLLM, seeded random, AdaKV's shared budget, PyramidKV's per-layer
// budgets. No LibTorch ops (so selector.cpp can run them for many layers in one parallel region)
// and no parameter validation (selector.h validates first).
//
// Dimensions: Hs = heads selected (H in QueryHead mode, Hkv in KvHead mode), P = prefix length
// L - W, k = prefix positions kept per head.
#pragma once

#include <cstdint>
#include <vector>

#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// One row of SnapKV's clustering, stride 1, K odd, padding K / 2 (F.max_pool1d / F.avg_pool1d as
// FasterDecoding/SnapKV calls them): max ignores the padding (a NaN in the window gives NaN, as
// torch does); avg counts the zero padding and divides by K (count_include_pad=True), summing in
// double; none copies. x, out: P floats, distinct.
void pool_row(const float* x, int64_t n_prefix, int64_t kernel, Pooling pooling, float* out);

// The k best of scores[0..P) written to out[0..k) in increasing position order. Ties: on equal
// scores the earlier (TieBreak::Earlier) or the later (TieBreak::Later) position wins, exactly, so
// results never depend on the sort implementation (torch.topk documents no order; it kept the
// later ones in every tied case compared); NaN ranks below every number. k >= P keeps all P.
void top_k_positions(const float* scores, int64_t n_prefix, int64_t k, TieBreak tie, int64_t* out);

// StreamingLLM (Xiao et al. 2023; kvpress streaming_llm_press.py): the n_sink first prefix
// positions and the k - n_sink most recent ones. Requires 0 <= n_sink <= k <= P.
void streaming_positions(int64_t n_prefix, int64_t k, int64_t n_sink, int64_t* out);

// k distinct positions drawn uniformly from [0, P) (Floyd's algorithm over a splitmix64 stream),
// in increasing order. Same seed, same positions, on every platform (no std:: distributions).
void random_positions(int64_t n_prefix, int64_t k, uint64_t seed, int64_t* out);
// The seed of one head's stream: params.seed mixed with the layer and head index.
uint64_t random_stream_seed(uint64_t seed, int64_t layer, int64_t head);

// AdaKV (Feng et al. 2024, arXiv 2407.11550), the split of FFY0/AdaKV's early
// adaptive_snapkv/monkeypatch/snapkv_utils.py (AdaptiveSnapKVCluster.update_kv), which NVIDIA
// kvpress adakv_press.py keeps as its "alpha_safeguard": of the Hs * k slots of a layer every head
// first keeps its top floor(alpha * k) positions (floor_capacity = int(base_capacity * floor)),
// then the remaining Hs * (k - floor) slots go to one top-k over all heads' remaining scores.
// Ties as top_k_positions; across heads by the flattened [Hs, P] index (the reference's flattened
// order): Earlier prefers the lower head, Later the higher head, then the later position.
// scores: [Hs, P] row-major. Returns Hs sorted position lists; their sizes sum to Hs * k.
std::vector<std::vector<int64_t>> adakv_positions(const float* scores, int64_t n_heads, int64_t n_prefix, int64_t k,
                                                  double alpha, TieBreak tie);
// floor(alpha * k) as the reference computes it: Python int() of a non-negative float.
int64_t adakv_floor(int64_t k, double alpha);

// PyramidKV per-layer budgets (window included), exactly as KVCache-Factory
// pyramidkv/pyramidkv_utils.py PyramidKVCluster.update_kv (Zefan-Cai/KVCache-Factory 5fb995d):
//   min_num = (C - W) // beta;  max_num = (C - W) * 2 - min_num
//   if max_num >= L - W: max_num = L - W; min_num = (C - W) * 2 - max_num
//   steps = (max_num - min_num) // (n_layer - 1);  layer l keeps max_num - l * steps prefix tokens
// and its branches: L < C -> not compressed (every layer reports C); L < 2 * (C - W) -> plain
// SnapKV with C - W prefix tokens in every layer; otherwise the pyramid. n_layer == 1 (a division
// by zero in the reference) gives steps = 0. Needs C > W, L > W, beta >= 1.
std::vector<int64_t> pyramid_layer_budgets(int64_t budget, int64_t window, int64_t n_tokens, int64_t n_layer,
                                           int64_t beta);
// True when pyramid_layer_budgets takes its pyramid branch (L >= C and L >= 2 * (C - W)).
bool pyramid_is_graded(int64_t budget, int64_t window, int64_t n_tokens);

}  // namespace snapkv
