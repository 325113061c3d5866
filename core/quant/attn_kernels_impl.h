// Private to core/quant: prefill attention of a block of queries over one cache head, flash-style
// (Dao et al. 2022, online softmax): keys and values pass in blocks of BK slots, each block's
// scores live only in a [rows, BK] tile, and a running maximum and sum per query row rescale the
// output accumulated so far. Never a [T, S] score matrix. Written once over the SIMD traits V of
// qkernels_impl.h and instantiated by each qkernels_<path>.cpp. No threads (qkernels.cpp splits
// the work), no allocation (the caller passes the scratch), no validation.
//
// Arithmetic per score in transformers' order: (q . k) * scale, soft-cap, mask, softmax in float32.
// The softmax is the same function as the reference's; the sums are taken in another order (per
// block, rescaled), so results agree up to float32 summation order.
//
// Dimensions: g = query heads per cache head, tq = query tokens in the block, R = g * tq rows
// (in block(), row r = t * g + j: token t, group head j; a register tile's rows then span the
// fewest tokens, and so the fewest slots some of its rows mask), D = head_dim, BK = slots per key
// block.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/quant/qkernels_impl.h"

namespace snapkv::quant_detail {
namespace {

template <class V>
struct AttnKernels {
    using vec = typename V::vec;
    using K = Kernels<V>;
    static constexpr int N = V::N;
    static constexpr int BK = static_cast<int>(kAttnKeyBlock);  // slots per key block (a multiple of every N)
    static constexpr int KLD = static_cast<int>(kAttnKeyLd);    // floats between a transposed key block's rows
    static constexpr int CW = N == 8 ? 2 : 4;                   // score tile: 4 rows x CW vectors of slots
    static constexpr int DV = N == 8 ? 2 : 4;                   // value tile: 4 rows x DV vectors of head dims
    static constexpr int RB = 6;  // rows per register tile: 12 (AVX2) or 24 (AVX-512) accumulators

    // This path's attention entries of a kernel table.
    static void fill(KernelTable& t) {
        t.attn_block = block;
        t.attn_scratch = scratch_floats;
        t.attn_transpose = transpose_block;
        t.attn_h2o = h2o_block;
        t.attn_row_scores = row_scores;
        t.attn_row_scratch = row_scores_scratch;
    }
    // Floats of scratch block() and h2o_block() need for `rows` query rows (g heads x tokens).
    static int64_t scratch_floats(int64_t rows, int64_t D) { return 2 * rows * D + 2 * rows * BK + 4 * rows; }

    // AttnTransposeFn (and row_scores' float32 keys): whole 8 x 8 tiles by V::transpose8 where the
    // path has one, the rest eight slots at a time, one value at a time (their eight rows' cache
    // lines serve 16 columns d in a row and each column's eight values are written side by side).
    template <class T, class = void>
    struct HasTranspose8 : std::false_type {};
    template <class T>
    struct HasTranspose8<T, std::void_t<decltype(&T::transpose8)>> : std::true_type {};
    static void transpose_block(const float* k, int64_t n, int64_t D, float* dst) {
        int64_t s = 0;
        if constexpr (HasTranspose8<V>::value)
            for (const int64_t D8 = D / 8 * 8; s + 8 <= n; s += 8) {
                for (int64_t d = 0; d < D8; d += 8) V::transpose8(k + s * D + d, D, dst + d * KLD + s, KLD);
                for (int64_t d = D8; d < D; ++d)
                    for (int64_t j = 0; j < 8; ++j) dst[d * KLD + s + j] = k[(s + j) * D + d];
            }
        for (; s < n; s += 8) {
            const int64_t m = n - s < 8 ? n - s : 8;
            for (int64_t d = 0; d < D; ++d)
                for (int64_t j = 0; j < m; ++j) dst[d * KLD + s + j] = k[(s + j) * D + d];
        }
        for (int64_t d = 0; d < D; ++d)
            for (int64_t j = n; j < KLD; ++j) dst[d * KLD + j] = 0.0f;
    }

    // s[r, c0 .. c0 + W N) = (q[r] . kt[:, c]) * scale for R rows: q [R, D] (rows D apart), kt
    // [D, ld]; mx[r] takes the lane-wise maximum of the row's scaled scores. Each score is its own
    // sum over d in order, so the tile's width changes no bit of it.
    template <int R, int W = CW>
    static inline void score_tile(const float* q, const float* kt, int64_t ld, int64_t D, int c0, vec scale, float* s,
                                  vec* mx) {
        vec acc[R][W];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < W; ++c) acc[r][c] = V::zero();
        for (int64_t d = 0; d < D; ++d) {
            vec kv[W];
            for (int c = 0; c < W; ++c) kv[c] = V::load(kt + d * ld + c0 + c * N);
            for (int r = 0; r < R; ++r) {
                const vec qb = V::set1(q[r * D + d]);
                for (int c = 0; c < W; ++c) acc[r][c] = V::fmadd(qb, kv[c], acc[r][c]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < W; ++c) {
                const vec x = V::mul(acc[r][c], scale);
                V::store(s + r * BK + c0 + c * N, x);
                mx[r] = V::max(mx[r], x);
            }
    }
    // Scaled scores of R rows over ncols slots (a multiple of N): tiles of CW vectors, then single
    // vectors; rmax[r] = the row's largest (padding included).
    template <int R>
    static inline void score_rows(const float* q, const float* kt, int64_t ld, int64_t D, int ncols, vec scale,
                                  float* s, float* rmax) {
        vec mx[R];
        for (int r = 0; r < R; ++r) mx[r] = V::set1(-__builtin_inff());
        int c0 = 0;
        for (; c0 + CW * N <= ncols; c0 += CW * N) score_tile<R>(q, kt, ld, D, c0, scale, s, mx);
        for (; c0 < ncols; c0 += N) score_tile<R, 1>(q, kt, ld, D, c0, scale, s, mx);
        for (int r = 0; r < R; ++r) rmax[r] = V::hmax(mx[r]);
    }

    // o[r, d0 .. d0 + W N) = o[r, ..] * alpha[r] + sum_j p[r, j] v[j, d0 ..] for R rows and nb
    // slots: p [R, BK], v rows D apart, o [R, D] (the online softmax's rescale folded into the load).
    template <int R, int W>
    static inline void value_tile(const float* p, const float* v, int64_t D, int nb, int64_t d0, const float* alpha,
                                  float* o) {
        vec acc[R][W];
        for (int r = 0; r < R; ++r) {
            const vec a = V::set1(alpha[r]);
            for (int k = 0; k < W; ++k) acc[r][k] = V::mul(V::load(o + r * D + d0 + k * N), a);
        }
        for (int j = 0; j < nb; ++j) {
            vec vv[W];
            for (int k = 0; k < W; ++k) vv[k] = V::load(v + j * D + d0 + k * N);
            for (int r = 0; r < R; ++r) {
                const vec w = V::set1(p[r * BK + j]);
                for (int k = 0; k < W; ++k) acc[r][k] = V::fmadd(w, vv[k], acc[r][k]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int k = 0; k < W; ++k) V::store(o + r * D + d0 + k * N, acc[r][k]);
    }
    template <int R>
    static inline void value_rows(const float* p, const float* v, int64_t D, int nb, const float* alpha, float* o) {
        int64_t d = 0;
        for (; d + DV * N <= D; d += DV * N) value_tile<R, DV>(p, v, D, nb, d, alpha, o);
        for (; d + N <= D; d += N) value_tile<R, 1>(p, v, D, nb, d, alpha, o);
        for (; d < D; ++d)
            for (int r = 0; r < R; ++r) {
                float acc = o[r * D + d] * alpha[r];
                for (int j = 0; j < nb; ++j) acc += p[r * BK + j] * v[j * D + d];
                o[r * D + d] = acc;
            }
    }

    // An alpha of 1 for every row of a register tile: value rows that keep o as it is.
    static constexpr struct Ones {
        float v[RB];
        constexpr Ones() : v{} {
            for (float& x : v) x = 1.0f;
        }
    } kOnes{};
    // Whether the bits of any of the n floats at x satisfy hit (no branch per float).
    template <class Hit>
    static inline bool any_bits(const float* x, int64_t n, Hit hit) {
        uint32_t any = 0;
        for (int64_t i = 0; i < n; ++i) {
            uint32_t b;
            __builtin_memcpy(&b, x + i, 4);
            any |= static_cast<uint32_t>(hit(b));
        }
        return any != 0;
    }
    // The first j in [lo, hi) with kp[j] > x (hi if none), kp ascending.
    static inline int first_above(const int64_t* kp, int lo, int hi, int64_t x) {
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (kp[mid] > x) hi = mid;
            else lo = mid + 1;
        }
        return lo;
    }

    // s[j] = -inf for each of the nb slots at positions kp the query at qp may not see: later ones,
    // and with a window those at or before qp - window. Ascending positions hide a prefix and a
    // suffix, found by binary search.
    static inline void mask_row(const PrefillAttention& a, const int64_t* kp, int nb, int64_t qp, float* s) {
        constexpr float ninf = -__builtin_inff();
        if (!a.kpos_ascending) {
            for (int j = 0; j < nb; ++j)
                if (kp[j] > qp || (a.window > 0 && kp[j] <= qp - a.window)) s[j] = ninf;
            return;
        }
        const int end = first_above(kp, 0, nb, qp), begin = a.window > 0 ? first_above(kp, 0, nb, qp - a.window) : 0;
        for (int j = 0; j < begin; ++j) s[j] = ninf;
        for (int j = end > begin ? end : begin; j < nb; ++j) s[j] = ninf;
    }

    // Queries [t0, t1) of every head of cache head h's group over slots [s0, s1), written to out.
    // kt: cache head h's keys transposed per key block, [S / BK, D, BK] (slot s at block s / BK,
    // column s % BK; zeros past the last slot), shared by every query block of the head. s0 is a
    // multiple of BK.
    static void block(const PrefillAttention& a, int64_t h, int64_t t0, int64_t t1, int64_t s0, int64_t s1,
                      const float* kt, float* scratch) {
        constexpr float ninf = -__builtin_inff();
        const int64_t g = a.g, D = a.D, tq = t1 - t0, R = g * tq;
        float* qb = scratch;     // [R, D]
        float* ob = qb + R * D;  // [R, D]
        float* sb = ob + R * D;  // [R, BK]
        float* m = sb + R * BK;  // [R] running maximum
        float* l = m + R;        // [R] running sum
        float* bm = l + R;       // [R] this key block's row maximum (scaled scores, padding included)
        float* alpha = bm + R;   // [R] this key block's rescale of the output so far
        for (int64_t j = 0; j < g; ++j)
            for (int64_t t = 0; t < tq; ++t) {
                const float* src = a.q + (h * g + j) * a.q_head_stride + (t0 + t) * a.q_tok_stride;
                float* dst = qb + (t * g + j) * D;
                for (int64_t d = 0; d < D; ++d) dst[d] = src[d];
            }
        for (int64_t i = 0; i < R * D; ++i) ob[i] = 0.0f;
        for (int64_t r = 0; r < R; ++r) {
            m[r] = ninf;
            l[r] = 0.0f;
        }
        const int64_t* qpos = a.qpos + t0;
        int64_t qmin = qpos[0], qmax = qpos[0];
        for (int64_t t = 1; t < tq; ++t) {
            qmin = qpos[t] < qmin ? qpos[t] : qmin;
            qmax = qpos[t] > qmax ? qpos[t] : qmax;
        }
        const float* vh = a.v + h * a.kv_head_stride;
        const int64_t* ph = a.kpos + h * a.kpos_head_stride;
        const vec vscale = V::set1(a.scale);
        for (int64_t b0 = s0; b0 < s1; b0 += BK) {
            const int nb = static_cast<int>(s1 - b0 < BK ? s1 - b0 : BK);
            // Slots scored: whole vectors. The softmax's row maximum ran over whole tiles (-inf
            // padding to ncols_tiles), which softmax_row keeps in effect.
            const int ncols = (nb + N - 1) / N * N;
            const int ncols_tiles = (nb + CW * N - 1) / (CW * N) * (CW * N);
            int64_t kmin = ph[b0], kmax = ph[b0];
            for (int j = 1; j < nb; ++j) {
                kmin = ph[b0 + j] < kmin ? ph[b0 + j] : kmin;
                kmax = ph[b0 + j] > kmax ? ph[b0 + j] : kmax;
            }
            // Every query of the block masks every slot of this block: nothing to add.
            if (kmin > qmax || (a.window > 0 && kmax <= qmin - a.window)) continue;
            const bool need_mask = !(kmax <= qmin && (a.window <= 0 || kmin > qmax - a.window));
            // The tiles' row maximum is the block's when no score changes after scaling: no mask,
            // no soft-cap, no padding columns.
            const bool tile_max = !need_mask && !(a.softcap > 0.0f) && ncols_tiles == nb;
            const float* kb = kt + (b0 / BK) * D * KLD;  // [D, KLD], 36 KB at D 64
            const float* vb = vh + b0 * D;
            // Rows [r0, r0 + n)'s block, row by row: exp(s - new max) in place, its sum into l,
            // the output's rescale. Only the first cols columns are scored (the rest are later
            // slots every row of its group masks); their probabilities are stored as the +0 the
            // full pass would give. One call per row group rather than per row: the per-call set-up
            // (the closure's loads, exp's constants) was ~1.5 % of a 512-token call on AVX2.
            auto softmax_rows = [&](int64_t r0, int n, int cols) {
                for (int64_t r = r0; r < r0 + n; ++r) {
                    float* s = sb + r * BK;
                    float mx = bm[r];
                    if (!tile_max) {
                        if (a.softcap > 0.0f)
                            for (int j = 0; j < nb; ++j) s[j] = a.softcap * std::tanh(s[j] / a.softcap);
                        if (need_mask) mask_row(a, ph + b0, nb, qpos[r / g], s);
                        for (int j = nb; j < cols; ++j) s[j] = ninf;
                        vec vm = V::set1(ninf);
                        for (int c = 0; c < cols; c += N) vm = V::max(vm, V::load(s + c));
                        // The -inf columns up to ncols_tiles it no longer reads, in one step: max
                        // takes its second operand where either is NaN, so a NaN lane becomes -inf.
                        if (cols < ncols_tiles) vm = V::max(vm, V::set1(ninf));
                        mx = V::hmax(vm);
                    }
                    for (int c = cols; c < ncols; c += N) V::store(s + c, V::zero());
                    const float mnew = mx > m[r] ? mx : m[r];
                    alpha[r] = 1.0f;
                    if (mnew == ninf) {  // nothing visible yet: the block adds zeros
                        for (int c = 0; c < cols; c += N) V::store(s + c, V::zero());
                        continue;
                    }
                    alpha[r] = m[r] == ninf ? 0.0f : m[r] == mnew ? 1.0f : std::exp(m[r] - mnew);  // exp(0) is 1
                    const vec sub = V::set1(mnew);
                    vec acc = V::zero();
                    for (int c = 0; c < cols; c += N) {
                        const vec e = K::exp_nonpos_v(V::sub(V::load(s + c), sub));
                        acc = V::add(acc, e);
                        V::store(s + c, e);
                    }
                    l[r] = l[r] * alpha[r] + V::hsum(acc);
                    m[r] = mnew;
                }
            };
            // Slots [end, nb) of this block are later than every query of rows [r, r + n): with
            // ascending positions, the largest first_above over the rows' positions. Their scores
            // are masked to -inf, their probabilities are +0: leaving them out of the row maximum
            // (softmax_row keeps their effect on a NaN lane) and of the sums of exps (lanes of
            // non-negative terms) changes no bit.
            auto visible_end = [&](int64_t r, int n) {
                if (!need_mask || !a.kpos_ascending) return nb;
                int end = 0;
                for (int i = 0; i < n; ++i) end = first_above(ph + b0, end, nb, qpos[(r + i) / g]);
                return end;
            };
            // Values: the +0 probabilities of slots [end, nb) add +-0 to each output lane, which
            // changes it only where the lane is -0 (it becomes +0 unless the slot's value is
            // negative) or the value is not finite. Such a group (rare: an exact -0 needs every
            // product so far to underflow) takes those slots too, in the same order as before.
            int v_finite = -1;  // whether the block's values are all finite, found when a group first asks
            // A group of rows runs scores, softmax and values back to back while its scores sit in L1.
            auto group = [&](auto rows, int64_t r) {
                constexpr int n = decltype(rows)::value;
                const int end = visible_end(r, n);
                const int cols = (end + N - 1) / N * N;
                score_rows<n>(qb + r * D, kb, KLD, D, cols, vscale, sb + r * BK, bm + r);
                softmax_rows(r, n, cols);
                value_rows<n>(sb + r * BK, vb, D, end, alpha + r, ob + r * D);
                if (end == nb) return;
                if (v_finite < 0)
                    v_finite = !any_bits(vb, int64_t{nb} * D,
                                         [](uint32_t b) { return (b & 0x7f800000u) == 0x7f800000u; });
                if (!v_finite || any_bits(ob + r * D, n * D, [](uint32_t b) { return b == 0x80000000u; }))
                    value_rows<n>(sb + r * BK + end, vb + int64_t{end} * D, D, nb - end, kOnes.v, ob + r * D);
            };
            int64_t r = 0;
            for (; r + RB <= R; r += RB) group(std::integral_constant<int, RB>(), r);
            for (; r + 2 <= R; r += 2) group(std::integral_constant<int, 2>(), r);
            for (; r < R; ++r) group(std::integral_constant<int, 1>(), r);
        }
        if (a.row_max != nullptr)
            for (int64_t j = 0; j < g; ++j)
                for (int64_t t = 0; t < tq; ++t) {
                    a.row_max[(h * g + j) * a.T + t0 + t] = m[t * g + j];
                    a.row_sum[(h * g + j) * a.T + t0 + t] = l[t * g + j];
                }
        for (int64_t j = 0; j < g; ++j)
            for (int64_t t = 0; t < tq; ++t) {
                const int64_t row = t * g + j;
                const float sum = l[row];
                const float* src = ob + row * D;
                float* dst = a.out + (h * g + j) * a.out_head_stride + (t0 + t) * a.out_tok_stride;
                for (int64_t d = 0; d < D; ++d) dst[d] = src[d] / sum;
            }
    }

    // Raw scores q[j] . k[s] of g rows (q [g, D], rows D apart) over the key block at slot b0
    // (min(BK, S - b0) slots of k, rows D apart) into scores[j * S + s]. The block's keys are
    // transposed into scratch once; then per tile of CW vectors of slots (its D x CW N floats stay
    // in L1) every row group's products are summed over d in registers, as score_tile does, and
    // stored to a [g, LD] buffer that is copied out per row. Rows of the transposed block and of
    // the buffer are LD = BK + 16 floats apart: at BK floats (512 bytes) a tile's D rows would
    // fall into an eighth of L1's sets and evict each other for D above 64.
    // scratch: row_scores_scratch(g, D) floats, 64-byte aligned.
    static constexpr int LD = BK + 16;
    static int64_t row_scores_scratch(int64_t g, int64_t D) { return (D + g) * LD + D; }
    template <int R>
    static inline void raw_tile(const float* q, const float* kt, int64_t D, int c0, float* s) {
        vec acc[R][CW];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < CW; ++c) acc[r][c] = V::zero();
        for (int64_t d = 0; d < D; ++d) {
            vec kv[CW];
            for (int c = 0; c < CW; ++c) kv[c] = V::load(kt + d * LD + c0 + c * N);
            for (int r = 0; r < R; ++r) {
                const vec qb = V::set1(q[r * D + d]);
                for (int c = 0; c < CW; ++c) acc[r][c] = V::fmadd(qb, kv[c], acc[r][c]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < CW; ++c) V::store(s + r * LD + c0 + c * N, acc[r][c]);
    }
    // k_format: 0 float32, 1 f16, 2 bf16 rows (16-bit rows are widened exactly as they are read).
    static void row_scores(const float* q, const void* k, int k_format, int64_t g, int64_t S, int64_t D, int64_t b0,
                           float* scores, float* scratch) {
        const int nb = static_cast<int>(S - b0 < BK ? S - b0 : BK);
        const int ncols = (nb + CW * N - 1) / (CW * N) * (CW * N);
        float* kt = scratch;        // [D, LD]
        float* sb = kt + D * LD;    // [g, LD]
        float* wide = sb + g * LD;  // [D] one 16-bit row as float32
        static_assert(LD == KLD, "row_scores transposes keys as attn_block's blocks");
        if (k_format == 0) {
            transpose_block(static_cast<const float*>(k) + b0 * D, nb, D, kt);
        } else {  // 16-bit rows widened one at a time
            const auto* bytes = static_cast<const uint8_t*>(k);
            for (int j = 0; j < nb; ++j) {
                if (k_format == 1) K::deq_f16(bytes + (b0 + j) * D * 2, D, wide);
                else K::deq_bf16(bytes + (b0 + j) * D * 2, D, wide);
                for (int64_t d = 0; d < D; ++d) kt[d * LD + j] = wide[d];
            }
            for (int64_t d = 0; d < D; ++d)
                for (int j = nb; j < ncols; ++j) kt[d * LD + j] = 0.0f;
        }
        for (int c0 = 0; c0 < ncols; c0 += CW * N) {
            int64_t r = 0;
            for (; r + RB <= g; r += RB) raw_tile<RB>(q + r * D, kt, D, c0, sb + r * LD);
            for (; r + 2 <= g; r += 2) raw_tile<2>(q + r * D, kt, D, c0, sb + r * LD);
            for (; r < g; ++r) raw_tile<1>(q + r * D, kt, D, c0, sb + r * LD);
        }
        for (int64_t r = 0; r < g; ++r) {
            const float* src = sb + r * LD;
            float* dst = scores + r * S + b0;
            for (int j = 0; j < nb; ++j) dst[j] = src[j];
        }
    }

    // H2O's second pass: the probabilities exp(s - max) / sum that block() used (its final row
    // maximum and sum, a.row_max / a.row_sum), recomputed for the key block at slot b0 of cache
    // head h and summed over every query of this call, per query head, into a.h2o [H, S]. One item
    // owns its columns, so the sums need no locks and add up in the same order on every run.
    static void h2o_block(const PrefillAttention& a, int64_t h, int64_t b0, int64_t bq, const float* kt,
                          float* scratch) {
        constexpr float ninf = -__builtin_inff();
        const int64_t g = a.g, D = a.D, T = a.T, S = a.S;
        const int nb = static_cast<int>(S - b0 < BK ? S - b0 : BK);
        const int ncols = (nb + CW * N - 1) / (CW * N) * (CW * N);
        const float* kb = kt + (b0 / BK) * D * KLD;
        const int64_t* ph = a.kpos + h * a.kpos_head_stride;
        int64_t kmin = ph[b0], kmax = ph[b0];
        for (int j = 1; j < nb; ++j) {
            kmin = ph[b0 + j] < kmin ? ph[b0 + j] : kmin;
            kmax = ph[b0 + j] > kmax ? ph[b0 + j] : kmax;
        }
        float* qb = scratch;           // [g * bq, D]
        float* sb = qb + g * bq * D;   // [g * bq, BK]
        float* cs = sb + g * bq * BK;  // [g, BK] column sums
        for (int64_t i = 0; i < g * BK; ++i) cs[i] = 0.0f;
        const vec vscale = V::set1(a.scale);
        // A key block of this call's own slots (the last T) is in the future of every query before
        // its first token: start at that token's query block.
        const int64_t first_t = b0 > S - T ? b0 - (S - T) : 0;
        for (int64_t t0 = first_t / bq * bq; t0 < T; t0 += bq) {
            const int64_t t1 = t0 + bq < T ? t0 + bq : T, tq = t1 - t0, R = g * tq;
            const int64_t* qpos = a.qpos + t0;
            int64_t qmin = qpos[0], qmax = qpos[0];
            for (int64_t t = 1; t < tq; ++t) {
                qmin = qpos[t] < qmin ? qpos[t] : qmin;
                qmax = qpos[t] > qmax ? qpos[t] : qmax;
            }
            if (kmin > qmax || (a.window > 0 && kmax <= qmin - a.window)) continue;
            const bool need_mask = !(kmax <= qmin && (a.window <= 0 || kmin > qmax - a.window));
            for (int64_t j = 0; j < g; ++j)
                for (int64_t t = 0; t < tq; ++t) {
                    const float* src = a.q + (h * g + j) * a.q_head_stride + (t0 + t) * a.q_tok_stride;
                    float* dst = qb + (j * tq + t) * D;
                    for (int64_t d = 0; d < D; ++d) dst[d] = src[d];
                }
            int64_t r = 0;
            float unused[RB];
            for (; r + RB <= R; r += RB) score_rows<RB>(qb + r * D, kb, KLD, D, ncols, vscale, sb + r * BK, unused);
            for (; r + 2 <= R; r += 2) score_rows<2>(qb + r * D, kb, KLD, D, ncols, vscale, sb + r * BK, unused);
            for (; r < R; ++r) score_rows<1>(qb + r * D, kb, KLD, D, ncols, vscale, sb + r * BK, unused);
            for (r = 0; r < R; ++r) {
                const int64_t j = r / tq, t = r % tq, row = (h * g + j) * T + t0 + t;
                float* sr = sb + r * BK;
                if (a.softcap > 0.0f)
                    for (int c = 0; c < nb; ++c) sr[c] = a.softcap * std::tanh(sr[c] / a.softcap);
                if (need_mask) mask_row(a, ph + b0, nb, qpos[t], sr);
                for (int c = nb; c < ncols; ++c) sr[c] = ninf;
                const vec mx = V::set1(a.row_max[row]), sum = V::set1(a.row_sum[row]);
                float* col = cs + j * BK;
                for (int c = 0; c < ncols; c += N)
                    V::store(col + c,
                             V::add(V::load(col + c), V::div(K::exp_nonpos_v(V::sub(V::load(sr + c), mx)), sum)));
            }
        }
        for (int64_t j = 0; j < g; ++j) {
            float* dst = a.h2o + (h * g + j) * S + b0;
            for (int c = 0; c < nb; ++c) dst[c] += cs[j * BK + c];
        }
    }
};

}  // namespace
}  // namespace snapkv::quant_detail
