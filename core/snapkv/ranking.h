// The ranking maths the policies share, as plain loops over CPU arrays: SnapKV's 1-D pooling of a
// row of votes, the deterministic top-k with its tie rule, and the marking of the k best among the
// unmarked entries that AdaKV's shared budget runs twice. No LibTorch ops (selector.cpp runs them
// for many layers in one parallel region), no parameter validation (check_params runs first), no
// policy of its own (each policy's choice is in its policy_<name>.cpp).
//
// Dimensions: P = prefix length L - W, k = prefix positions kept per head, n = entries ranked.
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

// Among the i in [0, n) with mark[i] == 0, sets mark[i] = 1 for the k best: higher score first, NaN
// below every number, on equal scores the lower index (Earlier) or the higher one (Later); for
// flat [Hs, P] indices that is the lower / higher head, then the earlier / later position. scores,
// mark: n entries. O(n); the tie rule holds exactly whatever std::nth_element does.
void mark_best(const float* scores, int64_t n, int64_t k, TieBreak tie, uint8_t* mark);

}  // namespace snapkv
