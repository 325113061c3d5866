// AdaKV's budget shared across heads (policy_adakv.cpp), declared for its tests: plain loops
// over CPU rows, no validation. Dimensions: Hs = heads selected, P = prefix length L - W, k = prefix
// positions kept per head.
#pragma once

#include <cstdint>
#include <vector>

#include "core/snapkv/snapkv_params.h"

namespace snapkv {

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

}  // namespace snapkv
