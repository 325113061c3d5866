// The AVX2 + FMA + F16C kernel path: 8 float lanes; the Q4_0, Q4_1 and Q8_0 products have
// versions of their own below (10-20% faster here than the generic ones), and so have Q5_0, Q4_K
// and Q6_K, which keep the generic arithmetic and order and unpack their values with fewer
// shuffles (1.2-1.6x on a Zen 2 EPYC, one thread, weights in L2), as do Q2_K, Q3_K and Q5_K.
// The K-quants run tiles of rows with reads ahead spread through the pass (Q6_K 0.115 -> 0.074
// ns/weight; a 1B-shape Q4_K_M decode 18.0 -> 20.5 tok/s on 2 threads). Built with -mavx2 -mfma
// -mf16c (this file only) and called only when cpu_features.h reports those features.
#include <immintrin.h>

#include <cstring>

#include "core/quant/attn_kernels_impl.h"
#include "core/quant/qkernels_impl.h"
#include "core/quant/qkernels_q8_avx2.h"
#include "core/quant/qkernels_x86_avx2.h"
#include "core/quant/qkernels_x86_bytes.h"

namespace snapkv::quant_detail {
namespace {

struct Avx2V : SseBytes {
    static constexpr int N = 8;
    using vec = __m256;

    static vec zero() { return _mm256_setzero_ps(); }
    static vec set1(float f) { return _mm256_set1_ps(f); }
    static vec load(const float* p) { return _mm256_loadu_ps(p); }
    static vec load_unaligned(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
    static void store(float* p, vec a) { _mm256_storeu_ps(p, a); }
    static vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
    static vec sub(vec a, vec b) { return _mm256_sub_ps(a, b); }
    static vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
    static vec fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
    static vec div(vec a, vec b) { return _mm256_div_ps(a, b); }
    static vec max(vec a, vec b) { return _mm256_max_ps(a, b); }
    static vec min(vec a, vec b) { return _mm256_min_ps(a, b); }
    static vec round(vec a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    // 2^n as n + 2^23 + 127's low mantissa bits (n + 127, exact) shifted into the exponent field.
    static vec ldexp(vec p, vec n) {
        const __m256i e = _mm256_castps_si256(_mm256_add_ps(n, _mm256_set1_ps(8388735.0f)));
        return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
    }
    static vec zero_below(vec x, vec b, vec y) { return _mm256_and_ps(_mm256_cmp_ps(x, b, _CMP_NLT_UQ), y); }
    static vec above(vec x, vec b, vec t, vec f) { return _mm256_blendv_ps(f, t, _mm256_cmp_ps(x, b, _CMP_GT_OQ)); }
    using shown_mask = __m256;
    static shown_mask shown_positions(const int64_t* p, int64_t hi, int64_t lo) {
        const __m256i h = _mm256_set1_epi64x(hi), l = _mm256_set1_epi64x(lo);
        const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4));
        // Not above hi and above lo; then each 64-bit lane's mask to a 32-bit one.
        const __m256i s0 = _mm256_andnot_si256(_mm256_cmpgt_epi64(p0, h), _mm256_cmpgt_epi64(p0, l));
        const __m256i s1 = _mm256_andnot_si256(_mm256_cmpgt_epi64(p1, h), _mm256_cmpgt_epi64(p1, l));
        const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
        return _mm256_castsi256_ps(
            _mm256_blend_epi32(_mm256_permutevar8x32_epi32(s0, even), _mm256_permutevar8x32_epi32(s1, even), 0xF0));
    }
    static vec shown_or_ninf(shown_mask m, vec s) { return _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), s, m); }
    static vec bfly(vec a, int len) {
        if (len == 1) {
            const vec b = _mm256_permute_ps(a, 0xB1);
            return _mm256_blend_ps(_mm256_add_ps(a, b), _mm256_sub_ps(b, a), 0xAA);
        }
        if (len == 2) {
            const vec b = _mm256_permute_ps(a, 0x4E);
            return _mm256_blend_ps(_mm256_add_ps(a, b), _mm256_sub_ps(b, a), 0xCC);
        }
        const vec b = _mm256_permute2f128_ps(a, a, 1);
        return _mm256_blend_ps(_mm256_add_ps(a, b), _mm256_sub_ps(b, a), 0xF0);
    }
    static float hmax(vec a) {
        __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        s = _mm_max_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static float hsum(vec a) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static void to_f32(q16 q, vec* f) {
        f[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
        f[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
    }
    static float h2f(uint16_t h) { return _cvtsh_ss(h); }
    static vec from_f16(const uint8_t* p) { return _mm256_cvtph_ps(SseBytes::load16(p)); }
    static vec from_i8(const int8_t* p) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    static void transpose8(const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
        transpose8x8(src, src_ld, dst, dst_ld);
    }
    static vec from_bf16(const uint8_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(SseBytes::load16(p)), 16));
    }
};

// ---- products of their own for the common formats ----
// The generic kernels widen bytes from a loaded register (pmovsx plus a byte shift for the upper
// half), which keeps the shuffle port busy. These widen 8 bytes at a time straight from memory
// (vpmovzxbd / vpmovsxbd with a memory operand), two chains per row; 5-10% faster here than
// picking values out of 32-bit lanes with variable shifts against a rearranged x (the previous
// version). The block algebra is the generic one.

inline float hsum8(__m256 a) { return Avx2V::hsum(a); }

// Q4_0 / Q4_1: byte j of the 16 holds value j (low nibble) and value j + 16 (high nibble); each
// 8 bytes are zero-extended to 32-bit lanes straight from memory, then masked and shifted, so x
// is read in its own order. Sum of q . x for one 32-value block (q in 0..15).
inline __m256 dot_q4_block(const uint8_t* qs, const float* x) {
    const __m256i m4 = _mm256_set1_epi32(0x0F);
    const __m256i a = u8_lane8(qs);
    const __m256i b = u8_lane8(qs + 8);
    __m256 s0 = _mm256_mul_ps(to_f(_mm256_and_si256(a, m4)), _mm256_loadu_ps(x));
    __m256 s1 = _mm256_mul_ps(to_f(_mm256_and_si256(b, m4)), _mm256_loadu_ps(x + 8));
    s0 = _mm256_fmadd_ps(to_f(_mm256_srli_epi32(a, 4)), _mm256_loadu_ps(x + 16), s0);
    s1 = _mm256_fmadd_ps(to_f(_mm256_srli_epi32(b, 4)), _mm256_loadu_ps(x + 24), s1);
    return _mm256_add_ps(s0, s1);
}
// Q4_0: d * (q - 8) = d * q - 8 d, with the -8 d folded into the block sums of x.
float dot_q4_0(const uint8_t* p, int64_t n, const float* x, const float* xs) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // two chains, as in dot_q4_1
    float off0 = 0.0f, off1 = 0.0f;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64, p += 36, x += 64) {
        const float d0 = half_at(p), d1 = half_at(p + 18);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0), dot_q4_block(p + 2, x), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d1), dot_q4_block(p + 20, x + 32), acc1);
        off0 += d0 * xs[i / 32];
        off1 += d1 * xs[i / 32 + 1];
    }
    if (i < n) {
        const float d = half_at(p);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d), dot_q4_block(p + 2, x), acc0);
        off0 += d * xs[i / 32];
    }
    return hsum8(_mm256_add_ps(acc0, acc1)) - 8.0f * (off0 + off1);
}
float dot_q4_1(const uint8_t* p, int64_t n, const float* x, const float* xs) {
    // Two blocks per step into two accumulators: the loop-carried FMA chains run side by side.
    // Both blocks' scales and minimums convert in one F16C op: [d0, m0, d1, m1]; lanes 0 and 1 of
    // mins hold the two chains' minimum sums (lanes 2 and 3 add m * 0).
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m128 mins = _mm_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64, p += 40, x += 64) {
        uint32_t dm0, dm1;
        std::memcpy(&dm0, p, 4);
        std::memcpy(&dm1, p + 20, 4);
        const __m128 dm = _mm_cvtph_ps(_mm_set_epi32(0, 0, static_cast<int>(dm1), static_cast<int>(dm0)));
        acc0 = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), dot_q4_block(p + 4, x), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehl_ps(dm, dm)), dot_q4_block(p + 24, x + 32), acc1);
        const __m128 xs2 = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(xs + i / 32)));
        mins = _mm_fmadd_ps(_mm_shuffle_ps(dm, dm, _MM_SHUFFLE(3, 1, 3, 1)), xs2, mins);
    }
    float mins0 = _mm_cvtss_f32(mins);
    const float mins1 = _mm_cvtss_f32(_mm_shuffle_ps(mins, mins, 1));
    if (i < n) {
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(p)), dot_q4_block(p + 4, x), acc0);
        mins0 += half_at(p + 2) * xs[i / 32];
    }
    return hsum8(_mm256_add_ps(acc0, acc1)) + (mins0 + mins1);
}

// Q8_0: each 8 bytes sign-extended straight from memory (q8_lane8); 10% faster here than picking
// bytes out of 32-bit lanes with shifts.
inline __m256 dot_q8_block(const uint8_t* qs, const float* x) {
    __m256 s0 = _mm256_mul_ps(q8_lane8(qs), _mm256_loadu_ps(x));
    __m256 s1 = _mm256_mul_ps(q8_lane8(qs + 8), _mm256_loadu_ps(x + 8));
    s0 = _mm256_fmadd_ps(q8_lane8(qs + 16), _mm256_loadu_ps(x + 16), s0);
    s1 = _mm256_fmadd_ps(q8_lane8(qs + 24), _mm256_loadu_ps(x + 24), s1);
    return _mm256_add_ps(s0, s1);
}
float dot_q8_0(const uint8_t* p, int64_t n, const float* x, const float*) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // two chains, as in dot_q4_1
    int64_t i = 0;
    for (; i + 64 <= n; i += 64, p += 68, x += 64) {
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(p)), dot_q8_block(p + 2, x), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(p + 34)), dot_q8_block(p + 36, x + 32), acc1);
    }
    if (i < n) acc0 = _mm256_fmadd_ps(_mm256_set1_ps(half_at(p)), dot_q8_block(p + 2, x), acc0);
    return hsum8(_mm256_add_ps(acc0, acc1));
}

// Q5_0 (22 bytes: f16 d, u32 qh, 16 nibble bytes) and Q5_1 in the generic dot_d32's arithmetic
// and order, so the batch kernels (generic) still equal them bit for bit, with their values built
// in 32-bit lanes: each 8 nibble bytes zero-extended straight from memory give 16 values (low
// and high nibbles), and each 8 values' fifth bits (one byte of qh) select a row of kQ5Offsets,
// added as a memory operand (where per-lane shifts of qh took three vector operations per 8
// values).
// Q5_1 (One; 24 bytes: f16 d, f16 m, u32 qh, 16 nibble bytes) has Q5_0's values plus 16: its own
// table (adding 16 to Q5_0's rows took 10 % longer on a Zen 4 EPYC).
struct Q5Offsets {
    alignas(32) int32_t row[256][8];  // row[b][j] = bit j of b ? set : clear
    constexpr Q5Offsets(int set, int clear) : row{} {
        for (int b = 0; b < 256; ++b)
            for (int j = 0; j < 8; ++j) row[b][j] = (b >> j) & 1 ? set : clear;
    }
};
constexpr Q5Offsets kQ5Offsets{0, -16}, kQ51Offsets{16, 0};
template <bool One>
inline __m256i q5_offsets(uint8_t bits) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>((One ? kQ51Offsets : kQ5Offsets).row[bits]));
}
template <bool One>
inline void q5_values(const uint8_t* b, __m256 f[4]) {
    constexpr int qh_at = One ? 4 : 2, qs_at = One ? 8 : 6;
    const __m256i m15 = _mm256_set1_epi32(15);
    const __m256i a = u8_lane8(b + qs_at);
    const __m256i c = u8_lane8(b + qs_at + 8);
    const __m256i lo[2] = {_mm256_and_si256(a, m15), _mm256_and_si256(c, m15)};
    const __m256i hi[2] = {_mm256_srli_epi32(a, 4), _mm256_srli_epi32(c, 4)};
    const __m256i v[4] = {lo[0], lo[1], hi[0], hi[1]};  // values 0..7, 8..15, 16..23, 24..31
    for (int k = 0; k < 4; ++k) f[k] = to_f(_mm256_add_epi32(v[k], q5_offsets<One>(b[qh_at + k])));
}
template <bool One>
float dot_q5(const uint8_t* p, int64_t n, const float* x, const float* xs) {
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t i = 0; i < n; i += 32, p += One ? 24 : 22) {
        __m256 f[4];
        q5_values<One>(p, f);
        // The generic order: s = fma(f0, x0, 0) (a product: the same value once summed), ...
        __m256 s = _mm256_mul_ps(f[0], _mm256_loadu_ps(x + i));
        s = _mm256_fmadd_ps(f[1], _mm256_loadu_ps(x + i + 8), s);
        s = _mm256_fmadd_ps(f[2], _mm256_loadu_ps(x + i + 16), s);
        s = _mm256_fmadd_ps(f[3], _mm256_loadu_ps(x + i + 24), s);
        if constexpr (One) {
            const __m128 dm = half_pair(p);
            acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), s, acc);
            mins += lane1(dm) * xs[i / 32];
        } else {
            acc = _mm256_fmadd_ps(_mm256_set1_ps(half_at(p)), s, acc);
        }
    }
    if constexpr (One) return hsum8(acc) + mins;
    return hsum8(acc);
}
// Q4_K (144-byte super-blocks of 256; Five: Q5_K, 176 bytes, Q4_K's fields with the 32 fifth-bit
// bytes qh before the nibbles) in the generic dot_k's arithmetic and order (k_quad_fma's
// operations, written out below for tiles of rows), with the values of each 64-value quad built in
// 32-bit lanes: each 8 nibble bytes zero-extended straight from memory give 8 low-nibble and 8
// high-nibble values, in k_quad's groups (f[g][h]: values 16 g + 8 h + [0, 8) of the quad). Q5_K
// adds each value's fifth bit, bit 2k (low nibbles) or 2k + 1 (high) of qh byte j for the quad's
// value j, shifted to bit 4.
using KAvx2 = Kernels<Avx2V>;
template <bool Five>
inline void k_quad_values(const uint8_t* qs, [[maybe_unused]] const uint8_t* qh, [[maybe_unused]] int k,
                          __m256 f[4][2]) {  // qs: the quad's 32 bytes
    const __m256i m15 = _mm256_set1_epi32(15);
    for (int u = 0; u < 4; ++u) {
        const __m256i b = u8_lane8(qs + 8 * u);
        __m256i lo = _mm256_and_si256(b, m15), hi = _mm256_srli_epi32(b, 4);  // values 8u + [0, 8), 32 + 8u + [0, 8)
        if constexpr (Five) {
            const __m256i k16 = _mm256_set1_epi32(16);
            const __m256i h = _mm256_srl_epi32(u8_lane8(qh + 8 * u), _mm_cvtsi32_si128(2 * k));
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi32(h, 4), k16));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi32(h, 3), k16));
        }
        f[u / 2][u % 2] = to_f(lo);
        f[2 + u / 2][u % 2] = to_f(hi);
    }
}
// R rows of a matrix in one pass (q4_k_tile_loop: each row its own accumulator, the next tile
// read ahead through the pass), a quad's two sub-block sums as k_quad_fma takes them.
template <int R, bool Five>
void k_tile(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float* xs, float* y) {
    q4_k_tile_loop<R, Five>(
        p0, row_bytes, n, x, xs, y, _mm256_setzero_ps(), [](const float* xk) { return xk; },
        [](__m256& acc, const uint8_t* qs, const uint8_t* qh, int k, const float* xk, float s1, float s2) {
            __m256 f[4][2];
            k_quad_values<Five>(qs, qh, k, f);
            const __m256 lo = KAvx2::fma16f(f[1], xk + 16, KAvx2::fma16f(f[0], xk, _mm256_setzero_ps()));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(s1), lo, acc);
            const __m256 hi = KAvx2::fma16f(f[3], xk + 48, KAvx2::fma16f(f[2], xk + 32, _mm256_setzero_ps()));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(s2), hi, acc);
        },
        hsum8);
}
// Q2_K and Q3_K (Three): R rows in the generic dot_q2_k / dot_q3_k's arithmetic and order
// (k23_tile_loop; per 16-value group t = fma(q[8, 16), x[8, 16), fma(q[0, 8), x[0, 8), 0)),
// acc = fma(d sc, t, acc)), as the AVX-512 k23_tile with 8 bytes widened at a time.
template <int R, bool Three>
void k23_tile(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float* xs, float* y) {
    k23_tile_loop<R, Three>(
        p0, row_bytes, n, x, xs, y, _mm256_setzero_ps(),
        [](const uint8_t* p, [[maybe_unused]] const float* xs16, float* sc, [[maybe_unused]] float& mins) {
            const __m256i k15 = _mm256_set1_epi32(15);
            if constexpr (Three) {
                // q3_k_scale as the AVX-512 path decodes it, eight groups at a time.
                __m256i s0, s1;
                q3_k_scales8(p + 96, &s0, &s1);
                const __m256 d = _mm256_set1_ps(half_at(p + 108));
                _mm256_store_ps(sc, _mm256_mul_ps(d, to_f(s0)));
                _mm256_store_ps(sc + 8, _mm256_mul_ps(d, to_f(s1)));
            } else {
                const __m256 d = _mm256_set1_ps(half_at(p + 80)), dmin = _mm256_set1_ps(half_at(p + 82));
                alignas(32) float terms[16];
                for (int h = 0; h < 2; ++h) {
                    const __m256i b = u8_lane8(p + 8 * h);
                    _mm256_store_ps(sc + 8 * h, _mm256_mul_ps(d, to_f(_mm256_and_si256(b, k15))));
                    _mm256_store_ps(terms + 8 * h, _mm256_mul_ps(_mm256_mul_ps(dmin, to_f(_mm256_srli_epi32(b, 4))),
                                                                 _mm256_loadu_ps(xs16 + 8 * h)));
                }
                for (int k = 0; k < 16; ++k) mins += terms[k];
            }
        },
        [](const float* xg) { return xg; },
        [](__m256& acc, const uint8_t* q, [[maybe_unused]] const uint8_t* hmask, int j, [[maybe_unused]] int bit,
           const float* xg, float s) {
            const __m128i down = _mm_cvtsi32_si128(2 * j);
            const __m256i k3 = _mm256_set1_epi32(3);
            __m256i v[2];
            for (int h = 0; h < 2; ++h) {
                v[h] = _mm256_and_si256(_mm256_srl_epi32(u8_lane8(q + 8 * h), down), k3);
                if constexpr (Three) {
                    const __m256i clear = _mm256_cmpeq_epi32(
                        _mm256_and_si256(u8_lane8(hmask + 8 * h), _mm256_set1_epi32(1 << bit)), _mm256_setzero_si256());
                    v[h] = _mm256_sub_epi32(v[h], _mm256_and_si256(clear, _mm256_set1_epi32(4)));
                }
            }
            const __m256 t = _mm256_fmadd_ps(to_f(v[1]), _mm256_loadu_ps(xg + 8),
                                             _mm256_fmadd_ps(to_f(v[0]), _mm256_loadu_ps(xg), _mm256_setzero_ps()));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(s), t, acc);
        },
        hsum8);
}
// Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], f16 d): R rows of a matrix in the generic
// dot_q6_k's arithmetic and order, as k_tile; each half unpacked by q6_k_half_values, its bytes
// sign-extended 8 at a time, its eight d * scale one vector product.
template <int R>
void q6_k_tile(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float*, float* y) {
    q6_k_tile_loop<R>(
        p0, row_bytes, n, x, y, _mm256_setzero_ps(), [](const float* xg) { return xg; },
        [](__m256& acc, const int8_t* q, const float* xg, float s) {
            const auto* qg = reinterpret_cast<const uint8_t*>(q);
            const __m256 t = _mm256_fmadd_ps(q8_lane8(qg + 8), _mm256_loadu_ps(xg + 8),
                                             _mm256_mul_ps(q8_lane8(qg), _mm256_loadu_ps(xg)));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(s), t, acc);
        },
        hsum8);
}

KernelTable make_table() {
    KernelTable t = Kernels<Avx2V>::table();
    t.matvec[kQ4_0] = matvec_rows<dot_q4_0>;
    t.matvec[kQ4_1] = matvec_rows<dot_q4_1>;
    t.matvec[kQ8_0] = matvec_rows<dot_q8_0>;
    // The generic kernels' arithmetic, so their batch kernels (generic) still equal them.
    t.matvec[kQ5_0] = matvec_rows<dot_q5<false>>;
    t.matvec[kQ5_1] = matvec_rows<dot_q5<true>>;
    // Tiles of 2 rows: measured best (on a Zen 2 EPYC Q4_K 3 and 4 rows were slower; on a Zen 4
    // EPYC, ns/weight streamed, 2 / 4 / 8 rows: Q4_K 0.060 / 0.068 / 0.061, Q5_K 0.092 / 0.111 /
    // 0.101, Q3_K 0.110 / 0.112 / 0.122, Q2_K 0.080 / 0.085 / 0.090). Q6_K in tiles of 8 rows
    // (Zen 4, streamed: 4 / 6 / 8 rows 0.080 / 0.079 / 0.068; a 1B-shape Q4_K_M decode 25.1 ->
    // 25.4 tok/s over 6 interleaved pairs; on Zen 2, 2 rows were slower than 4).
    t.matvec[kQ4_K] = matvec_tiles<2, k_tile<2, false>, k_tile<1, false>>;
    t.matvec[kQ6_K] = matvec_tiles<8, q6_k_tile<8>, q6_k_tile<1>>;
    t.matvec[kQ5_K] = matvec_tiles<2, k_tile<2, true>, k_tile<1, true>>;
    t.matvec[kQ3_K] = matvec_tiles<2, k23_tile<2, true>, k23_tile<1, true>>;
    t.matvec[kQ2_K] = matvec_tiles<2, k23_tile<2, false>, k23_tile<1, false>>;
    // Their batch kernels follow the shared dot_d32's order, not these: a batch loops over them.
    t.matvec_batch[kQ4_0] = nullptr;
    t.matvec_batch[kQ4_1] = nullptr;
    t.matvec_batch[kQ8_0] = nullptr;
    AttnKernels<Avx2V>::fill(t);
    fill_q8(t);
    return t;
}

}  // namespace

const KernelTable& avx2_kernels() {
    static const KernelTable table = make_table();
    return table;
}

}  // namespace snapkv::quant_detail
