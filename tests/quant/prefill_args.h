// The PrefillAttention arguments of tests/quant's prefill attention test and benchmark: queries
// [H, T, D] (rows of D contiguous), keys and values [Hc, S, D], key positions [Hc, S], the output in
// [T, H, D] order (what the model's output projection reads). Scale, soft-cap, window and the
// order of the positions are the caller's.
#pragma once

#include <cstdint>

#include "core/quant/qkernels.h"

namespace snapkv::test {

inline PrefillAttention prefill_args(const float* q, const float* k, const float* v, const int64_t* kpos,
                                     const int64_t* qpos, int64_t Hc, int64_t g, int64_t T, int64_t S, int64_t D,
                                     float* out) {
    PrefillAttention a;
    a.q = q;
    a.q_head_stride = T * D;
    a.q_tok_stride = D;
    a.k = k;
    a.v = v;
    a.kv_head_stride = S * D;
    a.kpos = kpos;
    a.kpos_head_stride = S;
    a.qpos = qpos;
    a.Hc = Hc;
    a.g = g;
    a.T = T;
    a.S = S;
    a.D = D;
    a.out = out;
    a.out_head_stride = D;
    a.out_tok_stride = Hc * g * D;
    return a;
}

}  // namespace snapkv::test
