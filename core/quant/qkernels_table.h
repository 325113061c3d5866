// Private to core/quant: the per-CPU-path kernel table that qkernels.cpp dispatches through. One
// table per path, each built in its own translation unit with that path's compiler flags
// (qkernels_scalar.cpp, qkernels_avx2.cpp, qkernels_avx512.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant/qkernels.h"

namespace snapkv::quant_detail {

// Formats with a kernel, in table order.
enum Format : int {
    kF32,
    kF16,
    kBF16,
    kQ8_0,
    kQ4_0,
    kQ4_1,
    kQ5_0,
    kQ5_1,
    kQ2_K,
    kQ3_K,
    kQ4_K,
    kQ5_K,
    kQ6_K,
    kIQ4_NL,
    kIQ4_XS,
    kFormatCount
};

// y[i] = row i . x for n_rows rows of n_cols values, row_bytes apart.
// xs: for the formats that store a per-block minimum or offset, the sums of x over each 32-value
// block (n_cols / 32 of them) followed by the sums over each 16-value block (n_cols / 16, for
// Q2_K's minimums per 16 values); may be null for the other formats.
using MatvecFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x,
                          const float* xs, float* y);
// matvec for nx inputs at once: x [nx, n_cols] row-major, input j's block sums at xs + j *
// xs_stride (as matvec's xs), row i's result for input j into y[j * y_stride + i]; each equals
// matvec's bit for bit. Null for the formats without one (the caller loops over matvec).
using MatvecBatchFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x,
                               int64_t nx, const float* xs, int64_t xs_stride, float* y, int64_t y_stride);
// An input quantized to 8 bits for the 8-bit-activation products (qkernels.h, Activations::Q8), in
// two forms computed once per call: per 256 values (the K-quants': one scale per super-block, so
// their sub-block sums stay integers) and per 32 values (the 32-value formats'). Each block's scale
// d is max|x| / 127 and q = round(x / d) in [-127, 127] (never -128: the sign trick of the x86
// kernels needs |q| <= 127).
struct Q8Input {
    const int8_t* qk = nullptr;   // [C] per-256 quantized values
    const float* dk = nullptr;    // [C / 256] their scales
    const int16_t* bk = nullptr;  // [C / 16] sums of qk over each 16 values
    const int8_t* q32 = nullptr;  // [C] per-32 quantized values
    const float* d32 = nullptr;   // [C / 32] their scales
    const float* m32 = nullptr;   // [C / 32] d32 * (sum of q32 over the block): the minimum terms
};
// y[i] = row i . x with x quantized (the 8-bit products): the products of the integers are summed
// exactly; the float steps and their order are each format's generic ones in qkernels_q8_impl.h,
// which every path keeps (its results equal the scalar path's bit for bit).
using Q8MatvecFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const Q8Input& x,
                            float* y);

// out[i * n_cols + c] = W[i, c] as float32, for n_rows rows.
using DequantFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, float* out);

// Single-query attention over cache slots [s0, s1) of one cache head, for the g queries of its
// group: scores[j * S + s] = q[j] . k[s] (k rows D values apart), and out[j] += sum_s
// p[j * S + s] * v[s] (D values per row). Rows in format 0 float32, 1 f16, 2 bf16 or 3 q8_0 (k / v
// then point at a Q8Rows) (RowFormat).
using AttnScoresFn = void (*)(const float* q, const void* k, int k_format, int64_t g, int64_t S, int64_t D, int64_t s0,
                              int64_t s1, float* scores);
using AttnValuesFn = void (*)(const float* p, const void* v, int v_format, int64_t g, int64_t S, int64_t D, int64_t s0,
                              int64_t s1, float* out);

// In place: each of rows rows of n values -> exp(x - max) / sum (softmax; -inf gives 0).
using SoftmaxFn = void (*)(float* x, int64_t rows, int64_t n);
// In place: gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i] (SwiGLU), or gelu_tanh(gate[i]) * up[i]
// (GeGLU).
using SiluMulFn = void (*)(float* gate, const float* up, int64_t n);
// In place on rows [r0, r1) of scores [rows, S] (row r reads cache head r / g, whose slot s has
// position pos[(r / g) * pos_head_stride + s]): each score times scale, -inf where its position is
// above hi or at or below lo, then the row's softmax as SoftmaxFn's.
using AttnSoftmaxFn = void (*)(float* scores, int64_t r0, int64_t r1, int64_t g, int64_t S, const int64_t* pos,
                               int64_t pos_head_stride, int64_t hi, int64_t lo, float scale);
// In place on `blocks` blocks of n floats (n a power of two >= 2): the fast Walsh-Hadamard transform
// of a rotated q8_0 cache (core/kv's kv_rotate_rows), scale by 1 / sqrt(n), then butterflies (u + v,
// u - v) of span 1, 2, ..., n / 2.
using FwhtFn = void (*)(float* x, int64_t blocks, int64_t n);

// Prefill attention (attn_kernels_impl.h): queries [t0, t1) of the g heads of cache head h over
// slots [s0, s1) (s0 a multiple of kAttnKeyBlock), into a.out; kt: the head's keys transposed per
// block of kAttnKeyBlock slots, [blocks, D, kAttnKeyLd] (slot s of a block in column s; zeros past
// the last slot and in the 16 padding columns); scratch holds attn_scratch(g * (t1 - t0), D) floats.
// The padding: rows 512 bytes apart would put a block's D rows into an eighth of L1's sets, where
// a score tile's lines (one per row) evict each other at D 64 and above.
constexpr int64_t kAttnKeyBlock = 128;
constexpr int64_t kAttnKeyLd = kAttnKeyBlock + 16;
using AttnBlockFn = void (*)(const PrefillAttention& a, int64_t h, int64_t t0, int64_t t1, int64_t s0, int64_t s1,
                             const float* kt, float* scratch);
using AttnScratchFn = int64_t (*)(int64_t rows, int64_t D);
// One key block for attn_block: n <= kAttnKeyBlock rows of D floats (k, rows D apart) transposed
// into dst [D, kAttnKeyLd] (row s of k in column s), zeros in columns [n, kAttnKeyLd). Moves only.
using AttnTransposeFn = void (*)(const float* k, int64_t n, int64_t D, float* dst);
// H2O's second pass (attn_kernels_impl.h): the key block at slot b0 of cache head h against every
// query of the call in blocks of bq tokens, into a.h2o; scratch holds attn_scratch(g * bq, D).
using AttnH2oFn = void (*)(const PrefillAttention& a, int64_t h, int64_t b0, int64_t bq, const float* kt,
                           float* scratch);

// Raw scores of g query rows against the key block at slot b0 of one cache head
// (attn_kernels_impl.h: row_scores), into scores [g, S]; scratch holds attn_row_scratch(g, D).
using AttnRowScoresFn = void (*)(const float* q, const void* k, int k_format, int64_t g, int64_t S, int64_t D,
                                 int64_t b0, float* scores, float* scratch);
using AttnRowScratchFn = int64_t (*)(int64_t g, int64_t D);

struct KernelTable {
    MatvecFn matvec[kFormatCount];
    MatvecBatchFn matvec_batch[kFormatCount];
    Q8MatvecFn q8_matvec[kFormatCount];  // null: no 8-bit product for the format (float is used)
    DequantFn dequant[kFormatCount];
    AttnScoresFn attn_scores;
    AttnValuesFn attn_values;
    SoftmaxFn softmax_rows;
    AttnSoftmaxFn attn_softmax;
    SiluMulFn silu_mul;
    SiluMulFn gelu_tanh_mul;
    FwhtFn fwht;
    AttnBlockFn attn_block;
    AttnScratchFn attn_scratch;
    AttnTransposeFn attn_transpose;
    AttnH2oFn attn_h2o;
    AttnRowScoresFn attn_row_scores;
    AttnRowScratchFn attn_row_scratch;
};

const KernelTable& scalar_kernels();
#if defined(SNAPKV_QUANT_X86)
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();
// The 8-bit-input products built for AVX-512 VNNI + BW + VL (qkernels_q8_vnni.cpp), into t.
void fill_q8_vnni(KernelTable& t);
#endif

}  // namespace snapkv::quant_detail
