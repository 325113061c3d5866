// Fused CPU float32 operations for the multi-token (prefill) step of the decoder: each is one
// pass of plain loops spread over core/quant's kernel threads, in place of the chains of ATen
// element-wise operations (each a full pass over [T, F] floats through memory) that RMSNorm,
// RoPE and the gated activations were. The arithmetic is decode_ops.h's (the single-token step),
// so prefill and decode share it: RMSNorm as ggml (double sum of squares), RoPE angles rounded
// as transformers' float32 rotary embedding. Only for contiguous float32 CPU tensors; callers
// keep the ATen forms for CUDA and other dtypes.
//
// Dimensions: T = tokens, E = row length, h = heads, D = head_dim, F = feed-forward width.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

#include "core/model/model_ops.h"

namespace snapkv::prefill_ops {

// True when x can take these paths: a contiguous float32 CPU tensor.
bool applicable(const at::Tensor& x);

// y = x * (1 / sqrt(mean(x^2) + eps)) * w per row: x [T, E], w [E] float32 -> [T, E] (new tensor).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps);

// cos and sin of pos[t] * inv_freq[i] (times the table's attn_factor) for every token, computed
// by the same float32 tensor operations as model_ops::apply_rope. Built once per forward pass and
// shared by every layer that uses the table.
struct RopeTableRows {
    at::Tensor cos, sin;  // [T, n_rot / 2] float32 contiguous
};
RopeTableRows rope_rows_for(const at::Tensor& pos, const model_ops::RopeTable& t);  // pos [T] int64

// RoPE of x [T, h, D] (each token's h * D values contiguous, tokens any stride apart, as a
// projection's output rows) into a new [h, T, D] tensor: the head-major layout that attention and
// the KV cache read. x's token t takes row row0 + t of r (a chunk of the pass's tokens).
at::Tensor rope_to_heads(const at::Tensor& x, const RopeTableRows& r, const model_ops::RopeTable& t, int64_t row0 = 0);

// In place over [T, F]: gate = silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (GeGLU).
void silu_mul(at::Tensor& gate, const at::Tensor& up);
void gelu_tanh_mul(at::Tensor& gate, const at::Tensor& up);

}  // namespace snapkv::prefill_ops
