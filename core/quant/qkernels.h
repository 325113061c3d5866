// Products and conversions over weight matrices kept in their stored ggml format (every type
// core/io/dequant.h can read: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_NL, IQ4_XS): a matrix-vector product that dequantizes blocks in registers and
// accumulates in float32 (the input stays float32 unless a matrix asks for 8-bit inputs:
// Activations below), spread over output rows on the kernel thread pool, and a row dequantizer to
// float32 for the multi-token (BLAS) path whose output is bit-identical to core/io/dequant.h. Each
// runs on the CPU path of cpu_features.h (AVX-512, AVX2 or scalar). No LibTorch, no file I/O, no
// ownership of the bytes.
//
// Dimensions: R = rows (outputs), C = columns (inputs) of a matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

#include "core/io/dequant.h"
#include "core/quant/cpu_features.h"

namespace snapkv {

// What the single-token products (matvec, matvec_many, matvec_many_batch) do with their input.
// F32 (the default): multiply it as it is, in float32 (every result the reference checks hold).
// Q8: first quantize it to 8 bits per block, as llama.cpp's CPU products do (a scale max|x| / 127
// per 256 values for the K-quants, per 32 for the 32-value formats), so that weights and input meet
// in integer multiply-adds, exact per block: faster, and the results differ from F32's by the
// input's rounding (about 0.4 % of a block's largest value per value). F32, F16 and BF16 matrices
// (no 8-bit product: q8_supported) keep F32 inputs. Results are the same on every CPU path.
enum class Activations { F32 = 0, Q8 = 1 };

// x [n] (n a multiple of block) as 8-bit blocks of `block` values: d[b] = max|x| / 127 and q =
// x * (127 / max|x|) rounded to nearest even, in [-127, 127] (ggml's quantize_row_q8_0 with a float
// scale); an all-zero block gives d = 0 and q = 0, a block holding inf or NaN d = NaN and q = 0 (so
// its products are NaN, as float32 ones would be). The inputs of Activations::Q8; the KV cache's
// q8_0 rows (which keep d as f16).
void quantize_q8_blocks(const float* x, int64_t n, int block, int8_t* q, float* d);

// A view of R x C weights in a ggml type: row r occupies row_bytes bytes at data + r * row_bytes.
struct BlockMatrix {
    const GgmlType* type = nullptr;
    const uint8_t* data = nullptr;
    int64_t n_rows = 0;    // R
    int64_t n_cols = 0;    // C, a multiple of type->block_size
    size_t row_bytes = 0;  // (C / block_size) * block_bytes
    Activations activations = Activations::F32;
};

// Whether the kernels handle this type (the readable ggml types listed above).
bool kernel_supports(const GgmlType& type);
// Whether the type has 8-bit-activation products (Activations::Q8): every block format (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS); not F32, F16 or BF16.
bool q8_supported(const GgmlType& type);
// A view over n_rows rows of n_cols values stored back to back. InputError when the type has no
// kernel or n_cols is not a whole number of blocks.
BlockMatrix block_matrix(const GgmlType& type, const uint8_t* data, int64_t n_rows, int64_t n_cols);

// y[r] = sum_c W[r, c] * x[c] for every row r of w, on the active CPU path, rows spread over the
// kernel threads. x [C], y [R]. x must not alias y.
void matvec(const BlockMatrix& w, const float* x, float* y);
// The same for several matrices of the same C sharing one input, in one pass over the threads
// (q/k/v, gate/up): ys[i] receives ws[i].n_rows values.
void matvec_many(const BlockMatrix* ws, float* const* ys, int count, const float* x);

// The same products for n inputs at once: x [n, C] row by row, ys[i] [n, R_i] (input j's outputs
// at ys[i] + j * R_i). Each input's result equals matvec_many's with that input alone, bit for
// bit: the same kernels run on the same rows, but over a tile of rows small enough to stay in the
// L1 cache while every input passes over it, so the weights stream from memory once for all n
// (the decode of many compressed caches of one prompt in lockstep).
void matvec_many_batch(const BlockMatrix* ws, float* const* ys, int count, const float* x, int64_t n);

// Rows [row0, row0 + n) of w as float32 into out [n, C], on the active path, over the threads.
void dequantize(const BlockMatrix& w, int64_t row0, int64_t n, float* out);

// Single-threaded forms on an explicit path, for tests and benchmarks: rows [row0, row1) of w,
// y[r - row0] for matvec, out[(r - row0) * C + c] for dequantize.
void matvec_on(CpuPath path, const BlockMatrix& w, const float* x, float* y, int64_t row0, int64_t row1);
void dequantize_on(CpuPath path, const BlockMatrix& w, float* out, int64_t row0, int64_t row1);

// Attention of one new token over a KV cache, for Hc cache heads of g queries each (grouped-query
// attention), spread over the kernel threads by slot ranges:
// scores[h, j, s] = q[h, j, :] . k[h, s, :] and out[h, j, :] = sum_s p[h, j, s] * v[h, s, :].
// q [Hc, g, D], scores / p [Hc, g, S], out [Hc, g, D] contiguous; cache head h's row s is at
// k + h * k_head_stride + s * D (likewise v), in elements of the rows' format: float32, a 16-bit KV
// cache's own f16 / bf16 rows, widened exactly as they are read, or (RowFormat::Q8_0, these two
// functions only) a q8_0 cache's: k points at a Q8Rows, the value at element i of a head's quants
// being q[i] x its block's scale d[i / 32] in float32. The same results as on the rows' float32
// copy. Slots with p = 0 are skipped (masked).
enum class RowFormat { F32 = 0, F16 = 1, BF16 = 2, Q8_0 = 3 };
struct Q8Rows {
    const int8_t* q;    // [Hc, capacity, D] quants
    const uint16_t* d;  // [Hc, capacity, D / 32] f16 scales
};
void attention_scores(const float* q, const void* k, RowFormat k_format, int64_t k_head_stride, int64_t Hc, int64_t g,
                      int64_t S, int64_t D, float* scores);
void attention_values(const float* p, const void* v, RowFormat v_format, int64_t v_head_stride, int64_t Hc, int64_t g,
                      int64_t S, int64_t D, float* out);
// Single-threaded forms on an explicit path (tests).
void attention_scores_on(CpuPath path, const float* q, const void* k, RowFormat k_format, int64_t k_head_stride,
                         int64_t Hc, int64_t g, int64_t S, int64_t D, float* scores);
void attention_values_on(CpuPath path, const float* p, const void* v, RowFormat v_format, int64_t v_head_stride,
                         int64_t Hc, int64_t g, int64_t S, int64_t D, float* out);

// Raw scores of many query rows per cache head (LayerScorer's window rows; attention_scores serves
// decode's few): scores[h, j, s] = q[h, j, :] . k[h, s, :] for Hc cache heads of g rows each over
// S slots. Each key block is transposed once per item and scored in the prefill's register tiles;
// items are (head, key blocks) pairs over the kernel threads. q [Hc, g, D] and scores [Hc, g, S]
// contiguous float32; cache head h's row s at k + (h * k_head_stride + s * D) elements of
// k_format, F32, F16 or BF16 (16-bit keys, a 16-bit KV cache's own rows, are widened exactly as
// they are read).
void attention_score_rows(const float* q, const void* k, RowFormat k_format, int64_t k_head_stride, int64_t Hc,
                          int64_t g, int64_t S, int64_t D, float* scores);
// Single-threaded on an explicit path (tests).
void attention_score_rows_on(CpuPath path, const float* q, const void* k, RowFormat k_format, int64_t k_head_stride,
                             int64_t Hc, int64_t g, int64_t S, int64_t D, float* scores);

// Attention of T new queries (prefill) over a KV cache whose last T slots hold their own keys in
// order, for Hc cache heads of g query heads each: out[hq, t] = softmax_s(mask((q[hq, t] . k[h, s])
// * scale, soft-capped)) . v[h, s] with h = hq / g, in float32 (attn_kernels_impl.h: key blocks
// with an online softmax, never a [T, S] score matrix). A slot is masked for a query when its
// position is above the query's (the future, padding) or, with window > 0, at or below the query's
// position minus window. Rows are D contiguous floats; the strides place them.
struct PrefillAttention {
    const float* q = nullptr;  // query head hq, token t at q + hq * q_head_stride + t * q_tok_stride
    int64_t q_head_stride = 0, q_tok_stride = 0;
    const float* k = nullptr;  // slot s of cache head h at k + h * kv_head_stride + s * D (v alike)
    const float* v = nullptr;
    int64_t kv_head_stride = 0;
    const int64_t* kpos = nullptr;  // slot s of cache head h at kpos[h * kpos_head_stride + s]
    int64_t kpos_head_stride = 0;
    bool kpos_ascending = false;    // every head's positions never decrease: slots older than a
                                    // block's window are skipped without reading them, and a
                                    // query's mask within a key block is found by binary search
    const int64_t* qpos = nullptr;  // [T] query positions
    int64_t Hc = 0, g = 0, T = 0, S = 0, D = 0;
    float scale = 1.0f, softcap = 0.0f;
    int64_t window = 0;    // 0: none
    float* out = nullptr;  // query head hq, token t at out + hq * out_head_stride + t * out_tok_stride
    int64_t out_head_stride = 0, out_tok_stride = 0;
    // When set, [H, S]: each slot's attention probability summed over the T queries is added to it
    // (H2O's score), per query head, from a second pass over the keys with each row's final
    // softmax maximum and sum; the pass costs about half the attention again.
    float* h2o = nullptr;
    // Filled by attention_prefill for that pass ([H, T] each); callers leave them null.
    float* row_max = nullptr;
    float* row_sum = nullptr;
};
// Spread over the kernel threads in (cache head, query block) items.
void attention_prefill(const PrefillAttention& a);
// The key layout attention_prefill scores from, one key block on an explicit path (tests): n
// rows of D floats (k, rows D apart) into dst [D, ld], row s of k in column s and +0 in columns
// [n, ld). Returns {ld, the most rows a block holds} ({144, 128}); InputError for n above that.
std::pair<int64_t, int64_t> transpose_key_block_on(CpuPath path, const float* k, int64_t n, int64_t D, float* dst);
// Single-threaded on an explicit path (tests).
void attention_prefill_on(CpuPath path, const PrefillAttention& a);

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

// The single-token attention's probabilities, in place: scores [Hc, g, S] (query head h * g + j's
// row over cache head h's S slots, whose positions are pos[h * pos_head_stride + s]) become
// softmax over s of score * scale, or of -inf where the position is above q_pos or, with window
// > 0, at or below q_pos - window. Rows are shared by the kernel threads; each row is
// decode_ops::scale_mask_rows (without soft-cap) then softmax_rows, bit for bit.
void attention_softmax(float* scores, int64_t Hc, int64_t g, int64_t S, const int64_t* pos, int64_t pos_head_stride,
                       int64_t q_pos, float scale, int64_t window);
void attention_softmax_on(CpuPath path, float* scores, int64_t Hc, int64_t g, int64_t S, const int64_t* pos,
                          int64_t pos_head_stride, int64_t q_pos, float scale, int64_t window);

// In place on `blocks` blocks of n floats (n a power of two >= 2): scale by 1 / sqrt(n), then
// butterflies (u + v, u - v) of span 1, 2, ..., n / 2, in that order (ggml's fwht, the rotation of
// a q8_0 cache: core/kv's kv_rotate_rows). The same bits on every path. Throws InputError for
// another n.
void fwht_blocks(float* x, int64_t blocks, int64_t n);
void fwht_blocks_on(CpuPath path, float* x, int64_t blocks, int64_t n);

// body(begin, end) over [0, n) in chunks of `grain` taken from a shared counter by the kernel
// threads (on the caller alone when n <= grain). body must not throw. For the row-wise steps of
// a prefill, which then share the threads of the kernels above instead of waking LibTorch's.
void kernel_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// Threads the kernels use (the caller's thread included); 1 runs everything on the caller.
// Default: the number of cores. Set once at start-up (init_runtime does, from SNAPKV_THREADS).
void set_kernel_threads(int n);
int kernel_threads();

}  // namespace snapkv
