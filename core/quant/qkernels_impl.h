// Private to core/quant: every format's matrix-vector product and row dequantizer, written once
// over a SIMD traits type V and instantiated by each qkernels_<path>.cpp under its own compiler
// flags. Everything here has internal linkage so that each translation unit keeps the copy built
// for its own instruction set (a shared inline copy could be one compiled for AVX-512).
//
// V provides: N (float lanes; a divisor of 16), vec, zero, set1, load, load_unaligned, store, add,
// sub, mul, div, fmadd(a, b, c) = a * b + c, max(a, b) / min(a, b) (b when either is NaN), round
// (to nearest even), ldexp(p, n) (p * 2^n rounded once, for integral n in [-126, 127]; any value in
// other lanes), zero_below(x, b, y) (+0 where x < b, else y; y where x is NaN), above(x, b, t, f)
// (t where x > b, else f), bfly(a, len) (len a power of two below N: lane i gets a[i] + a[i ^ len]
// where bit len of i is clear, else a[i ^ len] - a[i]), shown_mask, shown_positions(p, hi, lo)
// (which lanes' int64 p[i] are above lo and not above hi), shown_or_ninf(mask, s) (s there, else
// -inf), hsum, hmax, from_f16 / from_bf16 / from_i8 (N stored values to floats), h2f (one half to
// float); and q16, 16 bytes held as one value, with load16, lo4 / hi4 (low / high nibbles), bits(v,
// s, mask) = (v >> s) & mask, shl4 (of values below 16), shl(v, s) (of values below 2^(8 - s)),
// or_, sub8(v, k) = v - k, bits16(m) (byte j = bit j of m), lut16(v, table) (table[v] for bytes
// below 16) and to_f32 (the 16 values as signed int8 to 16 / N float vectors). Optionally
// transpose8(src, src_ld, dst, dst_ld): dst row c, columns 0..7 = src rows 0..7, column c (an 8 x 8
// block of floats; without it blocks move a value at a time).
//
// Block layouts as in core/io/dequant.cpp (from ggml-common.h). The products factor each block's
// scale out of its sum: d * sum(q * x) (+ min * sum(x) with the per-32 or per-16 sums xs of x),
// so only small integers are converted per value. The dequantizers keep dequant.cpp's exact arithmetic
// (the same float operations in the same order; the files are built with -ffp-contract=off), so
// their output equals it bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/quant/qkernels_table.h"

namespace snapkv::quant_detail {
namespace {

inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block.
inline void k_scale_min(int j, const uint8_t* s, int* scale, int* min) {
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// The G sums of a tile kernel (one per row or per input) and their minimum terms, zeroed.
template <int G, class Vec>
inline void clear_sums(Vec (&acc)[G], float (&mins)[G], Vec zero) {
    for (int j = 0; j < G; ++j) {
        acc[j] = zero;
        mins[j] = 0.0f;
    }
}

inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);  // little-endian files on little-endian CPUs
    return v;
}

// Scale i (0..15) of a Q3_K super-block's 12 scale bytes s, as in core/io/dequant.cpp: low nibble
// from bytes 0..7, two high bits from bytes 8..11, minus 32.
inline int q3_k_scale(const uint8_t* s, int i) {
    const int low = i < 8 ? (s[i] & 0x0F) : (s[i - 8] >> 4);
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// The 6-bit scale of sub-block ib of an IQ4_XS super-block p, minus 32.
inline int iq4_xs_scale(const uint8_t* p, int ib) {
    const int low = (p[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
    const int high = (load_u16(p + 2) >> (2 * ib)) & 3;
    return (low | (high << 4)) - 32;
}

// The 16 non-linear levels of IQ4_NL and IQ4_XS (ggml-common.h kvalues_iq4nl).
alignas(16) constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

// Weights stream from memory once per product: each row asks for the bytes kPrefetchBytes past
// its own start (a row's worth), so several cache lines are in flight while a row is multiplied.
// Measured on a Xeon VM (tests/quant/bench: Q8_0, AVX-512, matrices larger than the caches):
// 0.167 -> 0.129 ns per weight at 2 KiB; 1 and 4 KiB gained less.
constexpr size_t kPrefetchBytes = 2048;
inline void prefetch_ahead(const uint8_t* row, size_t row_bytes) {
    for (size_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(row + kPrefetchBytes + o);
}

template <class V>
struct Kernels {
    using vec = typename V::vec;
    using q16 = typename V::q16;
    static constexpr int N = V::N;
    static constexpr int P = 16 / N;  // vectors per 16 values

    // acc + lanes of sum_i q[i] * x[i] over the 16 values of q.
    static inline vec fma16(q16 q, const float* x, vec acc) {
        vec f[P];
        V::to_f32(q, f);
        for (int k = 0; k < P; ++k) acc = V::fmadd(f[k], V::load(x + k * N), acc);
        return acc;
    }
    // out[i] = a * q[i] (+ b / - b), the dequantizers' arithmetic.
    static inline void scale16(q16 q, float a, float* out) {
        vec f[P];
        V::to_f32(q, f);
        for (int k = 0; k < P; ++k) V::store(out + k * N, V::mul(V::set1(a), f[k]));
    }
    static inline void scale_add16(q16 q, float a, float b, float* out) {
        vec f[P];
        V::to_f32(q, f);
        for (int k = 0; k < P; ++k) V::store(out + k * N, V::add(V::mul(V::set1(a), f[k]), V::set1(b)));
    }
    static inline void scale_sub16(q16 q, float a, float b, float* out) {
        vec f[P];
        V::to_f32(q, f);
        for (int k = 0; k < P; ++k) V::store(out + k * N, V::sub(V::mul(V::set1(a), f[k]), V::set1(b)));
    }

    // ---- unpacking: 16 values at a time, in registers ----

    // Q4_0 / Q4_1: the 16 nibble bytes at p give values 0..15 (low nibbles) and 16..31 (high).
    static inline void q4_block(const uint8_t* p, int sub, q16* lo, q16* hi) {
        const q16 raw = V::load16(p);
        *lo = V::sub8(V::lo4(raw), sub);
        *hi = V::sub8(V::hi4(raw), sub);
    }
    // Q4_K / Q5_K: values 64k + 16j + [0, 16) (j = 0, 1: low nibbles of bytes 16j..) and
    // 64k + 32 + 16j + [0, 16) (high nibbles), with the fifth bits of Q5_K when qh is given.
    static inline void k_quad(const uint8_t* qs, const uint8_t* qh, int k, q16 v[4]) {
        for (int j = 0; j < 2; ++j) {
            const q16 raw = V::load16(qs + 32 * k + 16 * j);
            v[j] = V::lo4(raw);
            v[2 + j] = V::hi4(raw);
            if (qh != nullptr) {
                const q16 h = V::load16(qh + 16 * j);
                v[j] = V::or_(v[j], V::shl4(V::bits(h, 2 * k, 1)));
                v[2 + j] = V::or_(v[2 + j], V::shl4(V::bits(h, 2 * k + 1, 1)));
            }
        }
    }
    // Q6_K: from one 128-value half (ql[64], qh[32]) the four 16-value groups starting at
    // i, 32 + i, 64 + i, 96 + i (i = 0 or 16), as q - 32.
    static inline void q6_quad(const uint8_t* ql, const uint8_t* qh, int i, q16 v[4]) {
        const q16 a = V::load16(ql + i), b = V::load16(ql + 32 + i), h = V::load16(qh + i);
        v[0] = V::sub8(V::or_(V::lo4(a), V::shl4(V::bits(h, 0, 3))), 32);
        v[1] = V::sub8(V::or_(V::lo4(b), V::shl4(V::bits(h, 2, 3))), 32);
        v[2] = V::sub8(V::or_(V::hi4(a), V::shl4(V::bits(h, 4, 3))), 32);
        v[3] = V::sub8(V::or_(V::hi4(b), V::shl4(V::bits(h, 6, 3))), 32);
    }

    // Q5_0 / Q5_1: 16 nibble bytes at qs and the 32 fifth bits qh (bit j: value j) give values
    // 0..15 and 16..31, minus sub.
    static inline void q5_block(const uint8_t* qs, uint32_t qh, int sub, q16* lo, q16* hi) {
        const q16 raw = V::load16(qs);
        *lo = V::sub8(V::or_(V::lo4(raw), V::shl4(V::bits16(qh))), sub);
        *hi = V::sub8(V::or_(V::hi4(raw), V::shl4(V::bits16(qh >> 16))), sub);
    }
    // Q2_K / Q3_K: the 16 values 128 * half + 32j + 16g + [0, 16) of a super-block whose 2-bit
    // quants are at q (bits 2j of bytes 32 * half + 16g + [0, 16)); with hmask (Q3_K), their third
    // bits from bit 4 * half + j of hmask[16g + l], as q + 4 * bit - 4.
    static inline q16 k2_group(const uint8_t* q, const uint8_t* hmask, int half, int j, int g) {
        const q16 low = V::bits(V::load16(q + 32 * half + 16 * g), 2 * j, 3);
        if (hmask == nullptr) return low;
        const q16 high = V::bits(V::load16(hmask + 16 * g), 4 * half + j, 1);
        return V::sub8(V::or_(low, V::shl(high, 2)), 4);
    }
    // IQ4_NL / IQ4_XS: the 16 nibble bytes at p as levels (values 0..15, then 16..31).
    static inline void iq4_block(const uint8_t* p, q16 levels, q16* lo, q16* hi) {
        const q16 raw = V::load16(p);
        *lo = V::lut16(V::lo4(raw), levels);
        *hi = V::lut16(V::hi4(raw), levels);
    }
    static inline q16 iq4_levels() { return V::load16(reinterpret_cast<const uint8_t*>(kIq4Levels)); }

    // ---- block formats: one row ----

    // Q8_0 (34 bytes): f16 d, int8 q[32]; w = d * q (dot_d32 below).
    static float dot_q8_0(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_d32<34, false>(p, n, x, xs, unpack_q8_0);
    }

    // Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles
    // (each 64 values use 32 bytes: low nibbles sub-block 2k, high 2k + 1); w = d*sc * q - dmin*mn.
    // Q5_K (176 bytes): the same with 32 bytes qh after the scales holding the fifth bits.
    // Calls fn(i, k, d, dmin, v) for each 64-value quad k of each super-block (starting at value i)
    // of a Q4_K (five = false) or Q5_K row, v its four unpacked 16-value groups.
    template <bool five, class F>
    static inline void k_quads(const uint8_t* p, int64_t n, F fn) {
        constexpr size_t bytes = five ? 176 : 144;
        for (int64_t i = 0; i < n; i += 256, p += bytes) {
            const float d = V::h2f(load_u16(p)), dmin = V::h2f(load_u16(p + 2));
            const uint8_t* qh = five ? p + 16 : nullptr;
            const uint8_t* qs = five ? p + 48 : p + 16;
            for (int k = 0; k < 4; ++k) {
                q16 v[4];
                k_quad(qs, qh, k, v);
                fn(i, k, p + 4, d, dmin, v);
            }
        }
    }
    // One row, one input: the batch kernel's arithmetic with a batch of one (dot_k_tile below), so
    // a batched product equals the single one by construction.
    template <bool five>
    static float dot_k(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        float y = 0.0f;
        dot_k_tile<1, five>(p, n, x, xs, 0, &y, 0);
        return y;
    }
    static float dot_q4_k(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_k<false>(p, n, x, xs);
    }
    static float dot_q5_k(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_k<true>(p, n, x, xs);
    }

    // Q6_K (210 bytes): ql[128], qh[64], int8 sc[16], f16 d; value v of each 128-value half has
    // scale sc[v / 16]; w = d * sc * (q - 32).
    static float dot_q6_k(const uint8_t* p, int64_t n, const float* x, const float*) {
        float y = 0.0f;
        dot_q6_k_tile<1>(p, n, x, nullptr, 0, &y, 0);  // as dot_k: the batch kernel with one input
        return y;
    }

    // The 32-value formats with an f16 scale d first (Q4_0, Q5_0, IQ4_NL: w = d * q) and, with
    // Min, an f16 minimum m after it (Q4_1, Q5_1: w = d * q + m, through the per-32 sums xs);
    // unpack(p, &lo, &hi) gives a block's values 0..15 and 16..31.
    template <size_t Bytes, bool Min, class Unpack>
    static inline float dot_d32(const uint8_t* p, int64_t n, const float* x, const float* xs, Unpack unpack) {
        float y = 0.0f;
        dot_d32_tile<1, 1, Bytes, Min>(p, 0, n, x, xs, 0, &y, 0, unpack);  // as dot_k: a batch of one
        return y;
    }
    // Block unpackers of the legacy 32-value formats for dot_d32 (values 0..15 and 16..31).
    static void unpack_q8_0(const uint8_t* b, q16* lo, q16* hi) {
        *lo = V::load16(b + 2);
        *hi = V::load16(b + 18);
    }
    static void unpack_q4_0(const uint8_t* b, q16* lo, q16* hi) { q4_block(b + 2, 8, lo, hi); }
    static void unpack_q4_1(const uint8_t* b, q16* lo, q16* hi) { q4_block(b + 4, 0, lo, hi); }
    static void unpack_q5_0(const uint8_t* b, q16* lo, q16* hi) { q5_block(b + 6, load_u32(b + 2), 16, lo, hi); }
    static void unpack_q5_1(const uint8_t* b, q16* lo, q16* hi) { q5_block(b + 8, load_u32(b + 4), 0, lo, hi); }

    // Q4_0 (18 bytes): f16 d, 16 bytes of nibbles; w = d * (q - 8).
    static float dot_q4_0(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_d32<18, false>(p, n, x, xs, unpack_q4_0);
    }
    // Q4_1 (20 bytes): f16 d, f16 m, nibbles as Q4_0; w = d * q + m.
    static float dot_q4_1(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_d32<20, true>(p, n, x, xs, unpack_q4_1);
    }
    // Q5_0 (22 bytes): f16 d, u32 qh, 16 bytes of nibbles; w = d * (q - 16).
    static float dot_q5_0(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_d32<22, false>(p, n, x, xs, unpack_q5_0);
    }
    // Q5_1 (24 bytes): f16 d, f16 m, u32 qh, 16 bytes of nibbles; w = d * q + m.
    static float dot_q5_1(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        return dot_d32<24, true>(p, n, x, xs, unpack_q5_1);
    }

    // A batch product's driver: prefetches the tile's rows, then calls group(std::integral_constant<
    // int, g>(), j0) for consecutive groups of the nx inputs starting at input j0: groups of G, then
    // at most one each of 4 (when G > 4), 2 and 1, so every group size is a compile-time constant.
    template <int G, class F>
    static inline void input_groups(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t nx, F group) {
        for (int64_t r = 0; r < n_rows; ++r) prefetch_ahead(w + static_cast<size_t>(r) * row_bytes, row_bytes);
        int64_t j0 = 0;
        for (; nx - j0 >= G; j0 += G) group(std::integral_constant<int, G>(), j0);
        if constexpr (G > 4)
            if (nx - j0 >= 4) {
                group(std::integral_constant<int, 4>(), j0);
                j0 += 4;
            }
        if (nx - j0 >= 2) {
            group(std::integral_constant<int, 2>(), j0);
            j0 += 2;
        }
        if (nx - j0 >= 1) group(std::integral_constant<int, 1>(), j0);
    }
    // dot_d32 of RR rows (row_bytes apart) against G inputs at once: input j at x + j * n (its
    // per-32 sums at xs + j * xs_stride), row a's result for input j into y[j * y_stride + a]. Each
    // (row, input) sees dot_d32's arithmetic in dot_d32's order, so its result is the same bit for
    // bit; a block is unpacked to floats once for G inputs and an input's values are loaded once for
    // RR rows, with the RR x G sums held in registers.
    template <int RR, int G, size_t Bytes, bool Min, class Unpack>
    static inline void dot_d32_tile(const uint8_t* row, size_t row_bytes, int64_t n, const float* x, const float* xs,
                                    int64_t xs_stride, float* y, int64_t y_stride, Unpack unpack) {
        vec acc[RR][G];
        float mins[RR][G];
        for (int a = 0; a < RR; ++a)
            for (int j = 0; j < G; ++j) {
                acc[a][j] = V::zero();
                mins[a][j] = 0.0f;
            }
        for (int64_t i = 0, b = 0; i < n; i += 32, ++b) {
            vec flo[RR][P], fhi[RR][P], d[RR];
            float m[RR];
            for (int a = 0; a < RR; ++a) {
                const uint8_t* p = row + a * row_bytes + b * static_cast<int64_t>(Bytes);
                q16 lo, hi;
                unpack(p, &lo, &hi);
                V::to_f32(lo, flo[a]);
                V::to_f32(hi, fhi[a]);
                d[a] = V::set1(V::h2f(load_u16(p)));
                m[a] = 0.0f;
                if constexpr (Min) m[a] = V::h2f(load_u16(p + 2));
            }
            for (int j = 0; j < G; ++j) {
                const float* xj = x + j * n + i;
                vec xv[2 * P];
                for (int k = 0; k < 2 * P; ++k) xv[k] = V::load(xj + k * N);
                for (int a = 0; a < RR; ++a) {
                    vec s = V::zero();
                    for (int k = 0; k < P; ++k) s = V::fmadd(flo[a][k], xv[k], s);
                    for (int k = 0; k < P; ++k) s = V::fmadd(fhi[a][k], xv[P + k], s);
                    acc[a][j] = V::fmadd(d[a], s, acc[a][j]);
                    if constexpr (Min) mins[a][j] += m[a] * xs[j * xs_stride + i / 32];
                }
            }
        }
        for (int j = 0; j < G; ++j)
            for (int a = 0; a < RR; ++a) {
                if constexpr (Min) y[j * y_stride + a] = V::hsum(acc[a][j]) + mins[a][j];
                else y[j * y_stride + a] = V::hsum(acc[a][j]);
            }
    }
    // Every row of a tile (small enough to stay in L1) against nx inputs: groups of G inputs in
    // turn (so a group's values stay in L1 too), each over the tile's rows RR at a time.
    template <size_t Bytes, bool Min, void (*Unpack)(const uint8_t*, q16*, q16*)>
    static void matvec_batch_d32(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x,
                                 int64_t nx, const float* xs, int64_t xs_stride, float* y, int64_t y_stride) {
        // Sums held in registers: with AVX-512 (32 vector registers) 4 rows x 4 inputs for Q8_0,
        // whose blocks unpack in few registers, 2 x 8 for Q4_0 and Q4_1, 1 x 8 for Q5_0 and Q5_1
        // (whose unpacking would spill more); 1 x 4 with 16 registers.
        constexpr int RR = N == 16 ? (Bytes == 34 ? 4 : Bytes >= 22 ? 1 : 2) : 1;
        constexpr int G = N == 16 ? (RR == 4 ? 4 : 8) : 4;
        input_groups<G>(w, row_bytes, n_rows, nx, [&](auto inputs, int64_t j0) {
            constexpr int g = decltype(inputs)::value;
            const float* xg = x + j0 * n_cols;
            const float* xsg = Min ? xs + j0 * xs_stride : nullptr;
            float* yg = y + j0 * y_stride;
            int64_t r = 0;
            for (; r + RR <= n_rows; r += RR)
                dot_d32_tile<RR, g, Bytes, Min>(w + static_cast<size_t>(r) * row_bytes, row_bytes, n_cols, xg, xsg,
                                                xs_stride, yg + r, y_stride, Unpack);
            for (; r < n_rows; ++r)
                dot_d32_tile<1, g, Bytes, Min>(w + static_cast<size_t>(r) * row_bytes, row_bytes, n_cols, xg, xsg,
                                               xs_stride, yg + r, y_stride, Unpack);
        });
    }
    // fma16 on a block already unpacked to floats (f: P vectors).
    static inline vec fma16f(const vec* f, const float* x, vec acc) {
        for (int k = 0; k < P; ++k) acc = V::fmadd(f[k], V::load(x + k * N), acc);
        return acc;
    }
    // One 64-value quad of a Q4_K / Q5_K row (f: its four 16-value groups as floats) against one
    // input: xk its 64 values, xs2 their two per-32 sums; s1, s2 the two sub-blocks' d * scale and
    // m1, m2 their dmin * min. The arithmetic of every K product, one input or many, one row or many.
    static inline void k_quad_fma(const vec (*f)[P], vec s1, vec s2, float m1, float m2, const float* xk,
                                  const float* xs2, vec& acc, float& mins) {
        acc = V::fmadd(s1, fma16f(f[1], xk + 16, fma16f(f[0], xk, V::zero())), acc);
        acc = V::fmadd(s2, fma16f(f[3], xk + 48, fma16f(f[2], xk + 32, V::zero())), acc);
        mins += m1 * xs2[0] + m2 * xs2[1];
    }
    // Quad k's scales of a Q4_K / Q5_K super-block (scale bytes at `scales`) for k_quad_fma.
    static inline void k_quad_scales(const uint8_t* scales, int k, float d, float dmin, vec* s1, vec* s2, float* m1,
                                     float* m2) {
        int sc1 = 0, mn1 = 0, sc2 = 0, mn2 = 0;
        k_scale_min(2 * k, scales, &sc1, &mn1);
        k_scale_min(2 * k + 1, scales, &sc2, &mn2);
        *s1 = V::set1(d * static_cast<float>(sc1));
        *s2 = V::set1(d * static_cast<float>(sc2));
        *m1 = dmin * static_cast<float>(mn1);
        *m2 = dmin * static_cast<float>(mn2);
    }
    // dot_k (Q4_K, Q5_K) of one row against G inputs (input j at x + j * n, its per-32 sums at
    // xs + j * xs_stride, its result into y[j * y_stride]): each input sees dot_k's arithmetic in
    // dot_k's order; a 64-value quad is unpacked and its scales taken once for the G inputs.
    template <int G, bool five>
    static inline void dot_k_tile(const uint8_t* p, int64_t n, const float* x, const float* xs, int64_t xs_stride,
                                  float* y, int64_t y_stride) {
        vec acc[G];
        float mins[G];
        clear_sums(acc, mins, V::zero());
        k_quads<five>(p, n, [&](int64_t i, int k, const uint8_t* scales, float d, float dmin, const q16* v) {
            vec s1, s2;
            float m1, m2;
            k_quad_scales(scales, k, d, dmin, &s1, &s2, &m1, &m2);
            vec f[4][P];
            for (int g = 0; g < 4; ++g) V::to_f32(v[g], f[g]);
            for (int j = 0; j < G; ++j)
                k_quad_fma(f, s1, s2, m1, m2, x + j * n + i + 64 * k, xs + j * xs_stride + i / 32 + 2 * k, acc[j],
                           mins[j]);
        });
        for (int j = 0; j < G; ++j) y[j * y_stride] = V::hsum(acc[j]) - mins[j];
    }
    // dot_q6_k of one row against G inputs, as dot_k_tile (each 64 values unpacked once).
    template <int G>
    static inline void dot_q6_k_tile(const uint8_t* p, int64_t n, const float* x, const float*, int64_t, float* y,
                                     int64_t y_stride) {
        vec acc[G];
        for (int j = 0; j < G; ++j) acc[j] = V::zero();
        for (int64_t i = 0; i < n; i += 256, p += 210) {
            const float d = V::h2f(load_u16(p + 208));
            const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
            for (int h = 0; h < 2; ++h) {
                for (int jj = 0; jj < 32; jj += 16) {
                    q16 v[4];
                    q6_quad(p + 64 * h, p + 128 + 32 * h, jj, v);
                    vec f[4][P], s[4];
                    for (int g = 0; g < 4; ++g) {
                        V::to_f32(v[g], f[g]);
                        s[g] = V::set1(d * static_cast<float>(sc[8 * h + (32 * g + jj) / 16]));
                    }
                    for (int j = 0; j < G; ++j) {
                        const float* xh = x + j * n + i + 128 * h + jj;
                        for (int g = 0; g < 4; ++g)
                            acc[j] = V::fmadd(s[g], fma16f(f[g], xh + 32 * g, V::zero()), acc[j]);
                    }
                }
            }
        }
        for (int j = 0; j < G; ++j) y[j * y_stride] = V::hsum(acc[j]);
    }
    // Every row of a tile against nx inputs with a one-row tile kernel Tiles::run<G>: groups of G
    // inputs in turn over the tile's rows (the group's values stay in L1 with the tile).
    template <class Tiles>
    static void matvec_batch_rows(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x,
                                  int64_t nx, const float* xs, int64_t xs_stride, float* y, int64_t y_stride) {
        constexpr int G = N == 16 ? 8 : 4;
        input_groups<G>(w, row_bytes, n_rows, nx, [&](auto inputs, int64_t j0) {
            constexpr int g = decltype(inputs)::value;
            for (int64_t r = 0; r < n_rows; ++r)
                Tiles::template run<g>(w + static_cast<size_t>(r) * row_bytes, n_cols, x + j0 * n_cols,
                                       xs != nullptr ? xs + j0 * xs_stride : nullptr, xs_stride, y + j0 * y_stride + r,
                                       y_stride);
        });
    }
    // The one-row tile kernel of super-block format F, for matvec_batch_rows.
    template <Format F>
    struct RowTiles {
        template <int G>
        static void run(const uint8_t* p, int64_t n, const float* x, const float* xs, int64_t xs_stride, float* y,
                        int64_t y_stride) {
            if constexpr (F == kQ4_K || F == kQ5_K) dot_k_tile<G, F == kQ5_K>(p, n, x, xs, xs_stride, y, y_stride);
            else if constexpr (F == kQ2_K) dot_q2_k_tile<G>(p, n, x, xs, xs_stride, y, y_stride);
            else if constexpr (F == kQ3_K) dot_q3_k_tile<G>(p, n, x, xs, xs_stride, y, y_stride);
            else dot_q6_k_tile<G>(p, n, x, xs, xs_stride, y, y_stride);
        }
    };
    // IQ4_NL (18 bytes): f16 d, 16 bytes of level indices; w = d * level.
    static float dot_iq4_nl(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        const q16 levels = iq4_levels();
        return dot_d32<18, false>(p, n, x, xs,
                                  [&](const uint8_t* b, q16* lo, q16* hi) { iq4_block(b + 2, levels, lo, hi); });
    }

    // Q2_K (84 bytes): 16 scale/min nibble pairs, 64 bytes of 2-bit quants, f16 d, f16 dmin; each
    // 16 values have their own pair: w = d * sc * q - dmin * mn (the minimums use the per-16 sums
    // that follow the per-32 ones in xs). One row against G inputs as dot_k_tile (input j at
    // x + j * n, its sums at xs + j * xs_stride, its result into y[j * y_stride]): each input sees
    // the same arithmetic in the same order, a 16-value group unpacked once for the G inputs.
    template <int G>
    static inline void dot_q2_k_tile(const uint8_t* p, int64_t n, const float* x, const float* xs, int64_t xs_stride,
                                     float* y, int64_t y_stride) {
        vec acc[G];
        float mins[G];
        clear_sums(acc, mins, V::zero());
        for (int64_t i = 0; i < n; i += 256, p += 84) {
            const float d = V::h2f(load_u16(p + 80)), dmin = V::h2f(load_u16(p + 82));
            for (int half = 0; half < 2; ++half) {
                for (int jq = 0; jq < 4; ++jq) {
                    for (int g = 0; g < 2; ++g) {
                        const int at = 128 * half + 32 * jq + 16 * g;
                        const uint8_t sc = p[at / 16];
                        vec f[P];
                        V::to_f32(k2_group(p + 16, nullptr, half, jq, g), f);
                        const vec s = V::set1(d * static_cast<float>(sc & 0x0F));
                        const float m = dmin * static_cast<float>(sc >> 4);
                        for (int j = 0; j < G; ++j) {
                            acc[j] = V::fmadd(s, fma16f(f, x + j * n + i + at, V::zero()), acc[j]);
                            mins[j] += m * xs[j * xs_stride + n / 32 + (i + at) / 16];
                        }
                    }
                }
            }
        }
        for (int j = 0; j < G; ++j) y[j * y_stride] = V::hsum(acc[j]) - mins[j];
    }
    static float dot_q2_k(const uint8_t* p, int64_t n, const float* x, const float* xs) {
        float y = 0.0f;
        dot_q2_k_tile<1>(p, n, x, xs, 0, &y, 0);
        return y;
    }

    // Q3_K (110 bytes): hmask[32], 2-bit quants[64], 12 bytes of 6-bit scales, f16 d;
    // w = d * (sc - 32) * q with q in -4..3. One row against G inputs as dot_q2_k_tile.
    template <int G>
    static inline void dot_q3_k_tile(const uint8_t* p, int64_t n, const float* x, const float*, int64_t, float* y,
                                     int64_t y_stride) {
        vec acc[G];
        for (int j = 0; j < G; ++j) acc[j] = V::zero();
        for (int64_t i = 0; i < n; i += 256, p += 110) {
            const float d = V::h2f(load_u16(p + 108));
            for (int half = 0; half < 2; ++half) {
                for (int jq = 0; jq < 4; ++jq) {
                    for (int g = 0; g < 2; ++g) {
                        const int at = 128 * half + 32 * jq + 16 * g;
                        vec f[P];
                        V::to_f32(k2_group(p + 32, p, half, jq, g), f);
                        const vec s = V::set1(d * static_cast<float>(q3_k_scale(p + 96, at / 16)));
                        for (int j = 0; j < G; ++j)
                            acc[j] = V::fmadd(s, fma16f(f, x + j * n + i + at, V::zero()), acc[j]);
                    }
                }
            }
        }
        for (int j = 0; j < G; ++j) y[j * y_stride] = V::hsum(acc[j]);
    }
    static float dot_q3_k(const uint8_t* p, int64_t n, const float* x, const float*) {
        float y = 0.0f;
        dot_q3_k_tile<1>(p, n, x, nullptr, 0, &y, 0);
        return y;
    }

    // IQ4_XS (136 bytes): f16 d, u16 scales_h, scales_l[4], 128 bytes of level indices; each 32
    // values have a 6-bit scale ls: w = d * (ls - 32) * level.
    static float dot_iq4_xs(const uint8_t* p, int64_t n, const float* x, const float*) {
        const q16 levels = iq4_levels();
        vec acc = V::zero();
        for (int64_t i = 0; i < n; i += 256, p += 136) {
            const float d = V::h2f(load_u16(p));
            for (int ib = 0; ib < 8; ++ib) {
                q16 lo, hi;
                iq4_block(p + 8 + 16 * ib, levels, &lo, &hi);
                const float* xb = x + i + 32 * ib;
                acc = V::fmadd(V::set1(d * static_cast<float>(iq4_xs_scale(p, ib))),
                               fma16(hi, xb + 16, fma16(lo, xb, V::zero())), acc);
            }
        }
        return V::hsum(acc);
    }

    // ---- plain formats: any row length ----

    template <class Load, class Scalar>
    static inline float dot_plain(const uint8_t* p, int64_t n, const float* x, size_t esize, Load load, Scalar scalar) {
        vec a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
        int64_t i = 0;
        for (; i + 4 * N <= n; i += 4 * N) {
            a0 = V::fmadd(load(p + i * esize), V::load(x + i), a0);
            a1 = V::fmadd(load(p + (i + N) * esize), V::load(x + i + N), a1);
            a2 = V::fmadd(load(p + (i + 2 * N) * esize), V::load(x + i + 2 * N), a2);
            a3 = V::fmadd(load(p + (i + 3 * N) * esize), V::load(x + i + 3 * N), a3);
        }
        for (; i + N <= n; i += N) a0 = V::fmadd(load(p + i * esize), V::load(x + i), a0);
        float s = V::hsum(V::add(V::add(a0, a1), V::add(a2, a3)));
        for (; i < n; ++i) s += scalar(p + i * esize) * x[i];
        return s;
    }

    static float f32_at(const uint8_t* p) {
        float f;
        std::memcpy(&f, p, sizeof f);
        return f;
    }
    static float f16_at(const uint8_t* p) { return V::h2f(load_u16(p)); }
    static float bf16_at(const uint8_t* p) {
        const uint32_t bits = static_cast<uint32_t>(load_u16(p)) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }

    static float dot_f32(const uint8_t* p, int64_t n, const float* x, const float*) {
        return dot_plain(
            p, n, x, 4, [](const uint8_t* s) { return V::load_unaligned(s); }, f32_at);
    }
    static float dot_f16(const uint8_t* p, int64_t n, const float* x, const float*) {
        return dot_plain(
            p, n, x, 2, [](const uint8_t* s) { return V::from_f16(s); }, f16_at);
    }
    static float dot_bf16(const uint8_t* p, int64_t n, const float* x, const float*) {
        return dot_plain(
            p, n, x, 2, [](const uint8_t* s) { return V::from_bf16(s); }, bf16_at);
    }

    template <float (*Dot)(const uint8_t*, int64_t, const float*, const float*)>
    static void matvec(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x,
                       const float* xs, float* y) {
        for (int64_t r = 0; r < n_rows; ++r) {
            const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
            prefetch_ahead(row, row_bytes);
            y[r] = Dot(row, n_cols, x, xs);
        }
    }

    // ---- dequantizers: one row each, exact (see the file comment) ----

    static void deq_q8_0(const uint8_t* p, int64_t n, float* out) {
        for (int64_t i = 0; i < n; i += 32, p += 34) {
            const float d = V::h2f(load_u16(p));
            scale16(V::load16(p + 2), d, out + i);
            scale16(V::load16(p + 18), d, out + i + 16);
        }
    }
    // The 32-value formats of dot_d32: out = d * q, or d * q + m with Min.
    template <size_t Bytes, bool Min, class Unpack>
    static inline void deq_d32(const uint8_t* p, int64_t n, float* out, Unpack unpack) {
        for (int64_t i = 0; i < n; i += 32, p += Bytes) {
            q16 lo, hi;
            unpack(p, &lo, &hi);
            const float d = V::h2f(load_u16(p));
            if constexpr (Min) {
                const float m = V::h2f(load_u16(p + 2));
                scale_add16(lo, d, m, out + i);
                scale_add16(hi, d, m, out + i + 16);
            } else {
                scale16(lo, d, out + i);
                scale16(hi, d, out + i + 16);
            }
        }
    }
    static void deq_q4_0(const uint8_t* p, int64_t n, float* out) {
        deq_d32<18, false>(p, n, out, [](const uint8_t* b, q16* lo, q16* hi) { q4_block(b + 2, 8, lo, hi); });
    }
    static void deq_q4_1(const uint8_t* p, int64_t n, float* out) {
        deq_d32<20, true>(p, n, out, [](const uint8_t* b, q16* lo, q16* hi) { q4_block(b + 4, 0, lo, hi); });
    }
    static void deq_q5_0(const uint8_t* p, int64_t n, float* out) {
        deq_d32<22, false>(p, n, out,
                           [](const uint8_t* b, q16* lo, q16* hi) { q5_block(b + 6, load_u32(b + 2), 16, lo, hi); });
    }
    static void deq_q5_1(const uint8_t* p, int64_t n, float* out) {
        deq_d32<24, true>(p, n, out,
                          [](const uint8_t* b, q16* lo, q16* hi) { q5_block(b + 8, load_u32(b + 4), 0, lo, hi); });
    }
    static void deq_iq4_nl(const uint8_t* p, int64_t n, float* out) {
        const q16 levels = iq4_levels();
        deq_d32<18, false>(p, n, out, [&](const uint8_t* b, q16* lo, q16* hi) { iq4_block(b + 2, levels, lo, hi); });
    }
    static void deq_q2_k(const uint8_t* p, int64_t n, float* out) {
        for (int64_t i = 0; i < n; i += 256, p += 84) {
            const float d = V::h2f(load_u16(p + 80)), dmin = V::h2f(load_u16(p + 82));
            for (int half = 0; half < 2; ++half)
                for (int j = 0; j < 4; ++j)
                    for (int g = 0; g < 2; ++g) {
                        const int at = 128 * half + 32 * j + 16 * g;
                        const uint8_t sc = p[at / 16];
                        scale_sub16(k2_group(p + 16, nullptr, half, j, g), d * static_cast<float>(sc & 0x0F),
                                    dmin * static_cast<float>(sc >> 4), out + i + at);
                    }
        }
    }
    static void deq_q3_k(const uint8_t* p, int64_t n, float* out) {
        for (int64_t i = 0; i < n; i += 256, p += 110) {
            const float d = V::h2f(load_u16(p + 108));
            for (int half = 0; half < 2; ++half)
                for (int j = 0; j < 4; ++j)
                    for (int g = 0; g < 2; ++g) {
                        const int at = 128 * half + 32 * j + 16 * g;
                        scale16(k2_group(p + 32, p, half, j, g), d * static_cast<float>(q3_k_scale(p + 96, at / 16)),
                                out + i + at);
                    }
        }
    }
    static void deq_iq4_xs(const uint8_t* p, int64_t n, float* out) {
        const q16 levels = iq4_levels();
        for (int64_t i = 0; i < n; i += 256, p += 136) {
            const float d = V::h2f(load_u16(p));
            for (int ib = 0; ib < 8; ++ib) {
                q16 lo, hi;
                iq4_block(p + 8 + 16 * ib, levels, &lo, &hi);
                const float dl = d * static_cast<float>(iq4_xs_scale(p, ib));
                scale16(lo, dl, out + i + 32 * ib);
                scale16(hi, dl, out + i + 32 * ib + 16);
            }
        }
    }
    template <bool five>
    static void deq_k(const uint8_t* p, int64_t n, float* out) {
        k_quads<five>(p, n, [&](int64_t i, int k, const uint8_t* scales, float d, float dmin, const q16* v) {
            for (int half = 0; half < 2; ++half) {
                int sc = 0, mn = 0;
                k_scale_min(2 * k + half, scales, &sc, &mn);
                const float a = d * static_cast<float>(sc), b = dmin * static_cast<float>(mn);
                scale_sub16(v[2 * half], a, b, out + i + 64 * k + 32 * half);
                scale_sub16(v[2 * half + 1], a, b, out + i + 64 * k + 32 * half + 16);
            }
        });
    }
    static void deq_q4_k(const uint8_t* p, int64_t n, float* out) { deq_k<false>(p, n, out); }
    static void deq_q5_k(const uint8_t* p, int64_t n, float* out) { deq_k<true>(p, n, out); }
    // (d * sc) * q in float, the order of ggml's dequantize_row_q6_K and dequant.cpp.
    static void deq_q6_k(const uint8_t* p, int64_t n, float* out) {
        for (int64_t i = 0; i < n; i += 256, p += 210) {
            const float d = V::h2f(load_u16(p + 208));
            const int8_t* sc = reinterpret_cast<const int8_t*>(p + 192);
            for (int h = 0; h < 2; ++h) {
                for (int j = 0; j < 32; j += 16) {
                    q16 v[4];
                    q6_quad(p + 64 * h, p + 128 + 32 * h, j, v);
                    for (int g = 0; g < 4; ++g) {
                        const int at = 32 * g + j;
                        scale16(v[g], d * static_cast<float>(sc[8 * h + at / 16]), out + i + 128 * h + at);
                    }
                }
            }
        }
    }

    template <class Load, class Scalar>
    static inline void deq_plain(const uint8_t* p, int64_t n, float* out, size_t esize, Load load, Scalar scalar) {
        int64_t i = 0;
        for (; i + N <= n; i += N) V::store(out + i, load(p + i * esize));
        for (; i < n; ++i) out[i] = scalar(p + i * esize);
    }
    static void deq_f32(const uint8_t* p, int64_t n, float* out) {
        std::memcpy(out, p, static_cast<size_t>(n) * sizeof(float));
    }
    static void deq_f16(const uint8_t* p, int64_t n, float* out) {
        deq_plain(
            p, n, out, 2, [](const uint8_t* s) { return V::from_f16(s); }, f16_at);
    }
    static void deq_bf16(const uint8_t* p, int64_t n, float* out) {
        deq_plain(
            p, n, out, 2, [](const uint8_t* s) { return V::from_bf16(s); }, bf16_at);
    }

    template <void (*Deq)(const uint8_t*, int64_t, float*)>
    static void dequant(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, float* out) {
        for (int64_t r = 0; r < n_rows; ++r) Deq(w + static_cast<size_t>(r) * row_bytes, n_cols, out + r * n_cols);
    }

    // ---- single-query attention (see qkernels_table.h) ----

    // Vector i.. and value i of a cache's rows in row format F (0 float32, 1 f16, 2 bf16, 3 q8_0
    // through a Q8Rows; 16-bit values widened exactly, q8_0 ones as int8 x f16 scale in float32,
    // one rounding, as the cache's own decoder gives them), so every format computes on the floats
    // of its float32 copy. A q8_0 vector lies inside one 32-value block (N divides 32).
    template <int F>
    static inline vec row_vec(const void* base, int64_t i) {
        const auto* b = static_cast<const uint8_t*>(base);
        if constexpr (F == 0) return V::load(static_cast<const float*>(base) + i);
        else if constexpr (F == 1) return V::from_f16(b + 2 * i);
        else if constexpr (F == 2) return V::from_bf16(b + 2 * i);
        else {
            const auto* r = static_cast<const Q8Rows*>(base);
            return V::mul(V::from_i8(r->q + i), V::set1(V::h2f(r->d[i / 32])));
        }
    }
    template <int F>
    static inline float row_at(const void* base, int64_t i) {
        const auto* b = static_cast<const uint8_t*>(base);
        if constexpr (F == 0) return static_cast<const float*>(base)[i];
        else if constexpr (F == 1) return f16_at(b + 2 * i);
        else if constexpr (F == 2) return bf16_at(b + 2 * i);
        else {
            const auto* r = static_cast<const Q8Rows*>(base);
            return static_cast<float>(r->q[i]) * V::h2f(r->d[i / 32]);
        }
    }
    // a . (row values k0 .. k0 + n of base).
    template <int F>
    static inline float dot_row(const float* a, const void* base, int64_t k0, int64_t n) {
        vec a0 = V::zero(), a1 = V::zero();
        int64_t i = 0;
        for (; i + 2 * N <= n; i += 2 * N) {
            a0 = V::fmadd(V::load(a + i), row_vec<F>(base, k0 + i), a0);
            a1 = V::fmadd(V::load(a + i + N), row_vec<F>(base, k0 + i + N), a1);
        }
        for (; i + N <= n; i += N) a0 = V::fmadd(V::load(a + i), row_vec<F>(base, k0 + i), a0);
        float s = V::hsum(V::add(a0, a1));
        for (; i < n; ++i) s += a[i] * row_at<F>(base, k0 + i);
        return s;
    }
    template <int F>
    static void attn_scores_f(const float* q, const void* k, int64_t g, int64_t S, int64_t D, int64_t s0, int64_t s1,
                              float* scores) {
        for (int64_t s = s0; s < s1; ++s)
            for (int64_t j = 0; j < g; ++j) scores[j * S + s] = dot_row<F>(q + j * D, k, s * D, D);
    }
    // fn(std::integral_constant<int, F>()) for the row format number f (RowFormat's).
    template <class Fn>
    static inline void by_row_format(int f, Fn fn) {
        switch (f) {
        case 1: fn(std::integral_constant<int, 1>()); return;
        case 2: fn(std::integral_constant<int, 2>()); return;
        case 3: fn(std::integral_constant<int, 3>()); return;
        default: fn(std::integral_constant<int, 0>()); return;
        }
    }
    static void attn_scores(const float* q, const void* k, int k_format, int64_t g, int64_t S, int64_t D, int64_t s0,
                            int64_t s1, float* scores) {
        by_row_format(k_format, [&](auto f) { attn_scores_f<decltype(f)::value>(q, k, g, S, D, s0, s1, scores); });
    }
    // out[j][d0, d0 + NV*N) for NJ queries (p and out at the first of them) over slots [s0, s1):
    // the accumulators stay in registers across the slots; each value gets the same fused
    // multiply-adds in the same slot order as one at a time through memory would.
    template <int F, int NV, int NJ>
    static inline void values_block(const float* p, const void* v, int64_t S, int64_t D, int64_t s0, int64_t s1,
                                    int64_t d0, float* out) {
        vec acc[NJ][NV];
        for (int j = 0; j < NJ; ++j)
            for (int k = 0; k < NV; ++k) acc[j][k] = V::load(out + j * D + d0 + k * N);
        for (int64_t s = s0; s < s1; ++s) {
            vec r[NV];
            for (int k = 0; k < NV; ++k) r[k] = row_vec<F>(v, s * D + d0 + k * N);
            for (int j = 0; j < NJ; ++j) {
                const float w = p[j * S + s];
                if (w == 0.0f) continue;  // masked slots
                const vec vw = V::set1(w);
                for (int k = 0; k < NV; ++k) acc[j][k] = V::fmadd(vw, r[k], acc[j][k]);
            }
        }
        for (int j = 0; j < NJ; ++j)
            for (int k = 0; k < NV; ++k) V::store(out + j * D + d0 + k * N, acc[j][k]);
    }
    // Column blocks of NV vectors from d while they fit, then the rest in narrower ones.
    template <int F, int NV, int NJ>
    static inline void values_cols(const float* p, const void* v, int64_t S, int64_t D, int64_t t0, int64_t t1,
                                   int64_t d, float* out) {
        for (; d + NV * N <= D; d += NV * N) values_block<F, NV, NJ>(p, v, S, D, t0, t1, d, out);
        if constexpr (NV > 1) values_cols<F, NV - 1, NJ>(p, v, S, D, t0, t1, d, out);
    }
    // Slots in tiles of 32 (their rows stay in L1 while each column block passes over them); column
    // blocks of four vectors (up to 12 accumulators and 4 row vectors: AVX2's 16 registers), so
    // that a head_dim-64 row is read in one (AVX-512) or two (AVX2) passes: with two vectors, four
    // passes on AVX2 left a SmolLM2 decode's value pass at ~20 GB/s where its key pass read ~28.
    template <int F, int NJ>
    static inline void values_rows(const float* p, const void* v, int64_t S, int64_t D, int64_t s0, int64_t s1,
                                   float* out) {
        for (int64_t t0 = s0; t0 < s1; t0 += 32) {
            const int64_t t1 = t0 + 32 < s1 ? t0 + 32 : s1;
            values_cols<F, 4, NJ>(p, v, S, D, t0, t1, 0, out);
        }
        const int64_t d = D / N * N;
        if (d == D) return;
        for (int64_t s = s0; s < s1; ++s)
            for (int j = 0; j < NJ; ++j) {
                const float w = p[j * S + s];
                if (w == 0.0f) continue;
                float* o = out + j * D;
                for (int64_t i = d; i < D; ++i) o[i] += w * row_at<F>(v, s * D + i);
            }
    }
    template <int F>
    static void attn_values_f(const float* p, const void* v, int64_t g, int64_t S, int64_t D, int64_t s0, int64_t s1,
                              float* out) {
        // Four query heads at a time where the registers hold their 16 accumulators (AVX-512):
        // the values are read once for them instead of twice (three, then one).
        int64_t j = 0;
        if (N >= 16 && g % 4 == 0)
            for (; j + 4 <= g; j += 4) values_rows<F, 4>(p + j * S, v, S, D, s0, s1, out + j * D);
        for (; j + 3 <= g; j += 3) values_rows<F, 3>(p + j * S, v, S, D, s0, s1, out + j * D);
        if (g - j == 2) values_rows<F, 2>(p + j * S, v, S, D, s0, s1, out + j * D);
        if (g - j == 1) values_rows<F, 1>(p + j * S, v, S, D, s0, s1, out + j * D);
    }
    static void attn_values(const float* p, const void* v, int v_format, int64_t g, int64_t S, int64_t D, int64_t s0,
                            int64_t s1, float* out) {
        by_row_format(v_format, [&](auto f) { attn_values_f<decltype(f)::value>(p, v, g, S, D, s0, s1, out); });
    }

    // ---- exp, softmax, SwiGLU (single-token steps) ----

    // exp(x) within ~1 ulp: Cephes' expf (x = n ln2 + r, |r| <= ln2 / 2, a degree-6 polynomial
    // in r). 0 below -87.34 (no subnormal results), +inf above 88.38, NaN stays NaN.
    static inline vec exp_v(vec x) { return exp_clamped<true>(x); }
    // exp_v for x <= 0 (a softmax's x - max; -inf and NaN too), the same bits with fewer
    // operations: the clamps it leaves out (x above 88.38, n above 127; x below -87.34, whose
    // lanes the final select replaces by 0 whatever the polynomial made of them) never act there.
    static inline vec exp_nonpos_v(vec x) { return exp_clamped<false>(x); }
    template <bool Upper>
    static inline vec exp_clamped(vec x) {
        const vec lo = V::set1(-87.33654f), hi = V::set1(88.37626f);
        const vec xc = Upper ? V::min(hi, V::max(lo, x)) : x;
        vec n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
        if (Upper) n = V::min(V::set1(127.0f), n);
        vec r = V::fmadd(n, V::set1(-0.693359375f), xc);
        r = V::fmadd(n, V::set1(2.12194440e-4f), r);
        vec p = V::set1(1.9875691500e-4f);
        p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
        p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
        p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
        p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
        p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
        p = V::fmadd(V::mul(p, r), r, V::add(r, V::set1(1.0f)));
        const vec y = V::zero_below(x, lo, V::ldexp(p, n));
        return Upper ? V::above(x, hi, V::set1(__builtin_inff()), y) : y;
    }
    // The count < N values at p, the other lanes pad.
    static inline vec load_part(const float* p, int64_t count, float pad) {
        float tmp[N];
        for (int k = 0; k < N; ++k) tmp[k] = k < count ? p[k] : pad;
        return V::load(tmp);
    }
    // fn(vec, i) over x[0, n) in place, vector i starting at x + i; the last partial vector goes
    // through a padded copy (pad fills the unused lanes), so every element takes the same code.
    template <class F>
    static inline void map_inplace(float* x, int64_t n, float pad, F fn) {
        int64_t i = 0;
        for (; i + N <= n; i += N) V::store(x + i, fn(V::load(x + i), i));
        if (i < n) {
            float tmp[N];
            V::store(tmp, fn(load_part(x + i, n - i, pad), i));
            for (int k = 0; i + k < n; ++k) x[i + k] = tmp[k];
        }
    }
    // The n values at x become exp(x - mx) / sum (-inf gives 0): a softmax row after its maximum.
    static inline void softmax_finish(float* x, int64_t n, float mx) {
        constexpr float ninf = -__builtin_inff();
        const vec vm = V::set1(mx);
        vec acc = V::zero();
        map_inplace(x, n, ninf, [&](vec v, int64_t) {
            const vec e = exp_nonpos_v(V::sub(v, vm));
            acc = V::add(acc, e);
            return e;
        });
        const vec inv = V::set1(1.0f / V::hsum(acc));
        map_inplace(x, n, 0.0f, [&](vec v, int64_t) { return V::mul(v, inv); });
    }
    // Each of rows rows of n values becomes exp(x - max) / sum (-inf gives 0), in place.
    static void softmax_rows(float* x, int64_t rows, int64_t n) {
        constexpr float ninf = -__builtin_inff();
        for (int64_t r = 0; r < rows; ++r, x += n) {
            vec m = V::set1(ninf);
            int64_t i = 0;
            for (; i + N <= n; i += N) m = V::max(m, V::load(x + i));
            float mx = V::hmax(m);
            for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
            softmax_finish(x, n, mx);
        }
    }
    // AttnSoftmaxFn: scale and mask in one pass that also takes each row's maximum in softmax_rows'
    // order (whole vectors, then the tail one at a time), so the values and the maximum are those of
    // a masking pass followed by softmax_rows. The rows of one cache head share the positions'
    // masks: up to four rows per pass over them.
    static void attn_softmax(float* scores, int64_t r0, int64_t r1, int64_t g, int64_t S, const int64_t* pos,
                             int64_t pos_head_stride, int64_t hi, int64_t lo, float scale) {
        constexpr float ninf = -__builtin_inff();
        const vec vs = V::set1(scale);
        for (int64_t a = r0; a < r1;) {
            const int64_t h = a / g;
            int64_t b = a + 4 < r1 ? a + 4 : r1;  // rows [a, b): one head, at most four
            if (b > (h + 1) * g) b = (h + 1) * g;
            const int k = static_cast<int>(b - a);
            const int64_t* p = pos + h * pos_head_stride;
            vec m[4];
            for (int j = 0; j < k; ++j) m[j] = V::set1(ninf);
            int64_t i = 0;
            for (; i + N <= S; i += N) {
                const typename V::shown_mask shown = V::shown_positions(p + i, hi, lo);
                for (int j = 0; j < k; ++j) {
                    float* x = scores + (a + j) * S + i;
                    const vec v = V::shown_or_ninf(shown, V::mul(V::load(x), vs));
                    V::store(x, v);
                    m[j] = V::max(m[j], v);
                }
            }
            for (int j = 0; j < k; ++j) {
                float* x = scores + (a + j) * S;
                float mx = V::hmax(m[j]);
                for (int64_t t = i; t < S; ++t) {
                    const float v = p[t] > hi || p[t] <= lo ? ninf : x[t] * scale;
                    x[t] = v;
                    mx = v > mx ? v : mx;
                }
                softmax_finish(x, S, mx);
            }
            a = b;
        }
    }

    // gate[i] = gate[i] / (1 + exp(-gate[i])) * up[i] (SwiGLU), in place.
    static void silu_mul(float* gate, const float* up, int64_t n) {
        const vec one = V::set1(1.0f);
        map_inplace(gate, n, 0.0f, [&](vec g, int64_t i) {
            const vec u = i + N <= n ? V::load(up + i) : load_part(up + i, n - i, 0.0f);
            return V::mul(V::div(g, V::add(one, exp_v(V::sub(V::zero(), g)))), u);
        });
    }

    // gate[i] = gelu_tanh(gate[i]) * up[i] (GeGLU), in place. 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u))
    // exactly, with u = sqrt(2 / pi) (x + 0.044715 x^3); this form has no cancellation for large
    // negative x (where 1 + tanh(u) loses every digit) and shares exp with SwiGLU.
    static void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
        const vec one = V::set1(1.0f), c0 = V::set1(-2.0f * 0.7978845608028654f), c1 = V::set1(0.044715f);
        map_inplace(gate, n, 0.0f, [&](vec g, int64_t i) {
            const vec u = i + N <= n ? V::load(up + i) : load_part(up + i, n - i, 0.0f);
            const vec inner = V::mul(c0, V::fmadd(V::mul(c1, g), V::mul(g, g), g));  // -2 u
            return V::mul(V::div(g, V::add(one, exp_v(inner))), u);
        });
    }

    // FwhtFn. Every output is u + v or u - v of the same two floats as ggml's loop (in-vector spans
    // through V::bfly, whose odd half computes u - v as (partner) - (own lane)), so every path gives
    // its bits. A block narrower than a vector (n < N; n, a power of two, is otherwise a multiple of
    // N) goes through a zero-padded vector: spans below n never pair its lanes with the padding.
    static void fwht(float* x, int64_t blocks, int64_t n) {
        const vec vs = V::set1(1.0f / __builtin_sqrtf(static_cast<float>(n)));
        for (int64_t b = 0; b < blocks; ++b) {
            float* p = x + b * n;
            if (n < N) {
                float tmp[N] = {};
                for (int64_t j = 0; j < n; ++j) tmp[j] = p[j];
                vec a = V::mul(V::load(tmp), vs);
                for (int len = 1; len < n; len *= 2) a = V::bfly(a, len);
                V::store(tmp, a);
                for (int64_t j = 0; j < n; ++j) p[j] = tmp[j];
                continue;
            }
            for (int64_t j = 0; j < n; j += N) {
                vec a = V::mul(V::load(p + j), vs);
                for (int len = 1; len < N; len *= 2) a = V::bfly(a, len);
                V::store(p + j, a);
            }
            for (int64_t len = N; len < n; len *= 2)
                for (int64_t i = 0; i < n; i += 2 * len)
                    for (int64_t j = i; j < i + len; j += N) {
                        const vec u = V::load(p + j), v = V::load(p + j + len);
                        V::store(p + j, V::add(u, v));
                        V::store(p + j + len, V::sub(u, v));
                    }
        }
    }

    static KernelTable table() {
        KernelTable t{};
        t.matvec[kF32] = matvec<dot_f32>;
        t.matvec[kF16] = matvec<dot_f16>;
        t.matvec[kBF16] = matvec<dot_bf16>;
        t.matvec[kQ8_0] = matvec<dot_q8_0>;
        t.matvec[kQ4_0] = matvec<dot_q4_0>;
        t.matvec[kQ4_1] = matvec<dot_q4_1>;
        t.matvec[kQ5_0] = matvec<dot_q5_0>;
        t.matvec[kQ5_1] = matvec<dot_q5_1>;
        t.matvec[kQ2_K] = matvec<dot_q2_k>;
        t.matvec[kQ3_K] = matvec<dot_q3_k>;
        t.matvec[kIQ4_NL] = matvec<dot_iq4_nl>;
        t.matvec[kIQ4_XS] = matvec<dot_iq4_xs>;
        t.matvec[kQ4_K] = matvec<dot_q4_k>;
        t.matvec[kQ5_K] = matvec<dot_q5_k>;
        t.matvec[kQ6_K] = matvec<dot_q6_k>;
        t.matvec_batch[kQ8_0] = matvec_batch_d32<34, false, unpack_q8_0>;
        t.matvec_batch[kQ4_0] = matvec_batch_d32<18, false, unpack_q4_0>;
        t.matvec_batch[kQ4_1] = matvec_batch_d32<20, true, unpack_q4_1>;
        t.matvec_batch[kQ5_0] = matvec_batch_d32<22, false, unpack_q5_0>;
        t.matvec_batch[kQ5_1] = matvec_batch_d32<24, true, unpack_q5_1>;
        t.matvec_batch[kQ4_K] = matvec_batch_rows<RowTiles<kQ4_K>>;
        t.matvec_batch[kQ5_K] = matvec_batch_rows<RowTiles<kQ5_K>>;
        t.matvec_batch[kQ6_K] = matvec_batch_rows<RowTiles<kQ6_K>>;
        t.matvec_batch[kQ2_K] = matvec_batch_rows<RowTiles<kQ2_K>>;
        t.matvec_batch[kQ3_K] = matvec_batch_rows<RowTiles<kQ3_K>>;
        t.dequant[kF32] = dequant<deq_f32>;
        t.dequant[kF16] = dequant<deq_f16>;
        t.dequant[kBF16] = dequant<deq_bf16>;
        t.dequant[kQ8_0] = dequant<deq_q8_0>;
        t.dequant[kQ4_0] = dequant<deq_q4_0>;
        t.dequant[kQ4_1] = dequant<deq_q4_1>;
        t.dequant[kQ5_0] = dequant<deq_q5_0>;
        t.dequant[kQ5_1] = dequant<deq_q5_1>;
        t.dequant[kQ2_K] = dequant<deq_q2_k>;
        t.dequant[kQ3_K] = dequant<deq_q3_k>;
        t.dequant[kIQ4_NL] = dequant<deq_iq4_nl>;
        t.dequant[kIQ4_XS] = dequant<deq_iq4_xs>;
        t.dequant[kQ4_K] = dequant<deq_q4_k>;
        t.dequant[kQ5_K] = dequant<deq_q5_k>;
        t.dequant[kQ6_K] = dequant<deq_q6_k>;
        t.attn_scores = attn_scores;
        t.attn_values = attn_values;
        t.softmax_rows = softmax_rows;
        t.attn_softmax = attn_softmax;
        t.silu_mul = silu_mul;
        t.gelu_tanh_mul = gelu_tanh_mul;
        t.fwht = fwht;
        return t;
    }
};

}  // namespace
}  // namespace snapkv::quant_detail
