// Products and conversions over weight matrices kept in their stored ggml format (every type
// core/io/dequant.h can read: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_NL, IQ4_XS): a matrix-vector product that dequantizes blocks in
// registers and accumulates in float32 (activations are never quantized), spread over output rows
// on the kernel thread pool, and a row dequantizer to float32 for the multi-token (BLAS) path
// whose output is bit-identical to core/io/dequant.h. Each runs on the CPU path of
// cpu_features.h (AVX-512, AVX2 or scalar). No LibTorch, no file I/O, no ownership of the bytes.
//
// Dimensions: R = rows (outputs), C = columns (inputs) of a matrix.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/io/dequant.h"
#include "core/quant/cpu_features.h"

namespace snapkv {

// A view of R x C weights in a ggml type: row r occupies row_bytes bytes at data + r * row_bytes.
struct BlockMatrix {
    const GgmlType* type = nullptr;
    const uint8_t* data = nullptr;
    int64_t n_rows = 0;   // R
    int64_t n_cols = 0;   // C, a multiple of type->block_size
    size_t row_bytes = 0; // (C / block_size) * block_bytes
};

// Whether the kernels handle this type (the readable ggml types listed above).
bool kernel_supports(const GgmlType& type);
// A view over n_rows rows of n_cols values stored back to back. InputError when the type has no
// kernel or n_cols is not a whole number of blocks.
BlockMatrix block_matrix(const GgmlType& type, const uint8_t* data, int64_t n_rows, int64_t n_cols);

// y[r] = sum_c W[r, c] * x[c] for every row r of w, on the active CPU path, rows spread over the
// kernel threads. x [C], y [R]. x must not alias y.
void matvec(const BlockMatrix& w, const float* x, float* y);
// The same for several matrices of the same C sharing one input, in one pass over the threads
// (q/k/v, gate/up): ys[i] receives ws[i].n_rows values.
void matvec_many(const BlockMatrix* ws, float* const* ys, int count, const float* x);

// Rows [row0, row0 + n) of w as float32 into out [n, C], on the active path, over the threads.
void dequantize(const BlockMatrix& w, int64_t row0, int64_t n, float* out);

// Single-threaded forms on an explicit path, for tests and benchmarks: rows [row0, row1) of w,
// y[r - row0] for matvec, out[(r - row0) * C + c] for dequantize.
void matvec_on(CpuPath path, const BlockMatrix& w, const float* x, float* y, int64_t row0,
               int64_t row1);
void dequantize_on(CpuPath path, const BlockMatrix& w, float* out, int64_t row0, int64_t row1);

// Attention of one new token over a KV cache, for Hc cache heads of g queries each (grouped-query
// attention), spread over the kernel threads by slot ranges:
// scores[h, j, s] = q[h, j, :] . k[h, s, :] and out[h, j, :] = sum_s p[h, j, s] * v[h, s, :].
// q [Hc, g, D], scores / p [Hc, g, S], out [Hc, g, D] contiguous; cache head h's row s is at
// k + h * k_head_stride + s * D (likewise v). Slots with p = 0 are skipped (masked).
void attention_scores(const float* q, const float* k, int64_t k_head_stride, int64_t Hc, int64_t g, int64_t S,
                      int64_t D, float* scores);
void attention_values(const float* p, const float* v, int64_t v_head_stride, int64_t Hc, int64_t g, int64_t S,
                      int64_t D, float* out);
// Single-threaded forms on an explicit path (tests).
void attention_scores_on(CpuPath path, const float* q, const float* k, int64_t k_head_stride, int64_t Hc,
                         int64_t g, int64_t S, int64_t D, float* scores);
void attention_values_on(CpuPath path, const float* p, const float* v, int64_t v_head_stride, int64_t Hc,
                         int64_t g, int64_t S, int64_t D, float* out);

// Single-token helpers on the caller's thread, on the active path (the _on forms: an explicit
// one). exp is a vector polynomial within ~1 ulp of expf (0 below -87.3, no subnormals).
// In place: each of rows rows of n values becomes exp(x - max) / sum (softmax; -inf gives 0).
void softmax_rows(float* x, int64_t rows, int64_t n);
void softmax_rows_on(CpuPath path, float* x, int64_t rows, int64_t n);
// In place: gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i] (SwiGLU); gate and up [n].
void silu_mul(float* gate, const float* up, int64_t n);
void silu_mul_on(CpuPath path, float* gate, const float* up, int64_t n);
// In place: gate[i] = gelu_tanh(gate[i]) * up[i] (GeGLU, the tanh approximation of GELU as
// transformers' gelu_pytorch_tanh), computed as gate / (1 + exp(-2u)) * up; gate and up [n].
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
void gelu_tanh_mul_on(CpuPath path, float* gate, const float* up, int64_t n);

// Threads the kernels use (the caller's thread included); 1 runs everything on the caller.
// Default: the number of cores. Set once at start-up (init_runtime does, from SNAPKV_THREADS).
void set_kernel_threads(int n);
int kernel_threads();

}  // namespace snapkv
