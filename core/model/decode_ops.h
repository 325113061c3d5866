// Fused CPU float32 operations for the single-token (decode) step of the decoder: at one token a
// layer does little arithmetic, and LibTorch's fixed cost per operation (dispatch, allocation,
// TensorIterator set-up) outweighed it when the same work took a dozen small ATen calls. Each
// function here is one pass of plain loops doing what llama_model's general path does, in the
// same float operations where it matters (RMSNorm as ggml: a double sum of squares; RoPE
// angles and products as in the ATen path), so decode follows the same math. Not for CUDA tensors or other
// dtypes: callers use these only for float32 CPU tensors.
//
// Dimensions: n = rows, E = row length, h = heads, D = head_dim, S = cache slots, Hc = cache heads,
// g = query heads per cache head.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace snapkv::decode_ops {

// y = x * (1 / sqrt(mean(x^2) + eps)) * w per row, as ggml_rms_norm then ggml_mul:
// x [n, E] float32, w [E] float32 -> [n, E].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps);
// The same on buffers: x, y [n, E] (may be the same buffer), w [E].
void rms_norm_rows(const float* x, const float* w, int64_t n, int64_t E, float eps, float* y);

// cos and sin of pos * inv_freq[i], times attn_factor, for one position, computed exactly as
// model_ops::apply_rope computes them (float32).
struct RopeAngles {
    std::vector<float> cos, sin;  // [n_rot / 2]
};
// The reference stays valid until the thread's next call.
const RopeAngles& rope_angles(int64_t pos, const at::Tensor& inv_freq, double attn_factor);  // inv_freq [n_rot/2]

// Rotates the first n_rot dims of each of the rows of x in place: x [rows, D] contiguous float32
// (a token's heads). neox: pairs (i, i + n_rot/2), else adjacent pairs (2i, 2i + 1).
void rope_inplace(at::Tensor& x, const RopeAngles& a, int64_t n_rot, bool neox);
void rope_rows(float* x, int64_t rows, int64_t D, const RopeAngles& a, int64_t n_rot, bool neox);

// In place on scores [Hc, g, S] float32 contiguous, in transformers' order: multiply by scale,
// soft-cap (softcap > 0: softcap * tanh(s / softcap)), then -inf where the slot's position
// (positions [Hc, S] int64, any strides) is above q_pos (later tokens, padding) or, with a
// sliding window (window > 0), at or below q_pos - window.
void scale_mask(at::Tensor& scores, const at::Tensor& positions, int64_t q_pos, double scale, double softcap,
                int64_t window);
// The same on buffers: scores [Hc, g, S]; slot s of cache head h at positions[h * head_stride +
// s * slot_stride].
void scale_mask_rows(float* scores, int64_t Hc, int64_t g, int64_t S, const int64_t* positions, int64_t head_stride,
                     int64_t slot_stride, int64_t q_pos, double scale, double softcap, int64_t window);

// gate[i] = silu(gate[i]) * up[i] in place (SwiGLU): gate, up [1, F] float32 contiguous; the
// exp of core/quant's silu_mul.
void silu_mul_inplace(at::Tensor& gate, const at::Tensor& up);

}  // namespace snapkv::decode_ops
