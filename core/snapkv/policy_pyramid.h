// PyramidKV's per-layer budgets (policy_pyramid.cpp), declared for its tests: integer arithmetic
// only, no validation. Dimensions: C = budget, W = window, L = prompt tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace snapkv {

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
