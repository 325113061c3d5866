// The AVX-512 kernel path: 16 float lanes, AVX-512F instructions only (plus AVX2/FMA/F16C).
// Built with -mavx512f -mavx2 -mfma -mf16c (this file only) and called only when cpu_features.h
// reports AVX-512F. The 32-value nibble formats' and the K-quants' products have versions of their
// own below in the generic kernels' arithmetic and order for 16 lanes (so results are unchanged
// and the generic batch kernels still equal them bit for bit), with their values built in 32-bit
// lanes from bytes widened straight from memory, as the AVX2 path's are.
#include <immintrin.h>

#include "core/quant/attn_kernels_impl.h"
#include "core/quant/qkernels_impl.h"
#include "core/quant/qkernels_x86_avx2.h"
#include "core/quant/qkernels_x86_bytes.h"

namespace snapkv::quant_detail {
namespace {

struct Avx512V : SseBytes {
    static constexpr int N = 16;
    using vec = __m512;

    static vec zero() { return _mm512_setzero_ps(); }
    static vec set1(float f) { return _mm512_set1_ps(f); }
    static vec load(const float* p) { return _mm512_loadu_ps(p); }
    static vec load_unaligned(const uint8_t* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, vec a) { _mm512_storeu_ps(p, a); }
    static vec add(vec a, vec b) { return _mm512_add_ps(a, b); }
    static vec sub(vec a, vec b) { return _mm512_sub_ps(a, b); }
    static vec mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
    static vec fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
    static vec div(vec a, vec b) { return _mm512_div_ps(a, b); }
    static vec max(vec a, vec b) { return _mm512_max_ps(a, b); }
    static vec min(vec a, vec b) { return _mm512_min_ps(a, b); }
    static vec round(vec a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    // vscalefps: p 2^n rounded once, which for a whole n in [-126, 127] is p * 2^n's rounding.
    static vec ldexp(vec p, vec n) { return _mm512_scalef_ps(p, n); }
    static vec zero_below(vec x, vec b, vec y) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, b, _CMP_NLT_UQ), y); }
    static vec above(vec x, vec b, vec t, vec f) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, b, _CMP_GT_OQ), f, t);
    }
    using shown_mask = __mmask16;
    static shown_mask shown_positions(const int64_t* p, int64_t hi, int64_t lo) {
        const __m512i h = _mm512_set1_epi64(hi), l = _mm512_set1_epi64(lo);
        const __m512i p0 = _mm512_loadu_si512(p), p1 = _mm512_loadu_si512(p + 8);
        const __mmask8 s0 = _mm512_cmple_epi64_mask(p0, h) & _mm512_cmpgt_epi64_mask(p0, l);
        const __mmask8 s1 = _mm512_cmple_epi64_mask(p1, h) & _mm512_cmpgt_epi64_mask(p1, l);
        return static_cast<__mmask16>(s0 | (static_cast<unsigned>(s1) << 8));
    }
    static vec shown_or_ninf(shown_mask m, vec s) {
        return _mm512_mask_blend_ps(m, _mm512_set1_ps(-__builtin_inff()), s);
    }
    static vec bfly(vec a, int len) {
        // The partner lanes: pairs, pairs of pairs, then 128- and 256-bit quarters swapped.
        const vec b = len == 1   ? _mm512_permute_ps(a, 0xB1)
                      : len == 2 ? _mm512_permute_ps(a, 0x4E)
                      : len == 4 ? _mm512_shuffle_f32x4(a, a, 0xB1)
                                 : _mm512_shuffle_f32x4(a, a, 0x4E);
        const __mmask16 odd = len == 1 ? 0xAAAA : len == 2 ? 0xCCCC : len == 4 ? 0xF0F0 : 0xFF00;
        return _mm512_mask_blend_ps(odd, _mm512_add_ps(a, b), _mm512_sub_ps(b, a));
    }
    static float hmax(vec a) {
        const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(a),
                                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        return _mm_cvtss_f32(m);
    }
    static float hsum(vec a) {
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a),
                                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    static void to_f32(q16 q, vec* f) { f[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
    static float h2f(uint16_t h) { return _cvtsh_ss(h); }
    static vec from_f16(const uint8_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static vec from_i8(const int8_t* p) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static void transpose8(const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
        transpose8x8(src, src_ld, dst, dst_ld);
    }
    static vec from_bf16(const uint8_t* p) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
};

// ---- products of their own, in the generic order ----

inline __m512 to_f16x(__m512i v) { return _mm512_cvtepi32_ps(v); }
// 16 bytes zero-extended (unsigned) or sign-extended to 32-bit lanes straight from memory.
inline __m512i widen_u8(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m512 i8_to_f(const int8_t* p) {
    return to_f16x(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// The 32-value nibble formats in dot_d32's arithmetic and order for 16 lanes: per block
// s = fma(lo, x[0, 16), 0), s = fma(hi, x[16, 32), s), acc = fma(d, s, acc), then hsum(acc) (+ the
// minimums m * xs summed in block order for Q4_1 and Q5_1). Byte j of the 16 nibble bytes holds
// value j (low nibble) and j + 16 (high); Q4_0 takes 8 off each; the value's fifth bit (bit j of
// qh) adds 16 (Q5_1), or Q5_0 takes 16 off where it is clear.
enum class Nib { Q4_0, Q4_1, Q5_0, Q5_1 };
template <Nib F>
float dot_nib32(const uint8_t* p, int64_t n, const float* x, const float* xs) {
    constexpr bool five = F == Nib::Q5_0 || F == Nib::Q5_1, min = F == Nib::Q4_1 || F == Nib::Q5_1;
    constexpr size_t bytes = F == Nib::Q4_0 ? 18 : F == Nib::Q4_1 ? 20 : F == Nib::Q5_0 ? 22 : 24;
    constexpr int qs_at = static_cast<int>(bytes) - 16, qh_at = min ? 4 : 2;
    const __m512i m15 = _mm512_set1_epi32(15);
    __m512 acc = _mm512_setzero_ps();
    float mins = 0.0f;
    for (int64_t i = 0; i < n; i += 32, p += bytes) {
        const __m512i b = widen_u8(p + qs_at);
        __m512i lo = _mm512_and_si512(b, m15), hi = _mm512_srli_epi32(b, 4);
        if constexpr (F == Nib::Q4_0) {
            lo = _mm512_sub_epi32(lo, _mm512_set1_epi32(8));
            hi = _mm512_sub_epi32(hi, _mm512_set1_epi32(8));
        }
        if constexpr (five) {
            // Lane j's fifth bit tested in a broadcast of qh against bit j (bit 16 + j for the
            // high values): 10 % faster on Zen 4 than masks moved from shifted general registers.
            const __m512i lane_bit = _mm512_sllv_epi32(
                _mm512_set1_epi32(1), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
            const __m512i qh = _mm512_set1_epi32(static_cast<int>(load_u32(p + qh_at)));
            const __m512i k16 = _mm512_set1_epi32(16), hi_bit = _mm512_slli_epi32(lane_bit, 16);
            if constexpr (F == Nib::Q5_0) {
                lo = _mm512_mask_sub_epi32(lo, _mm512_testn_epi32_mask(qh, lane_bit), lo, k16);
                hi = _mm512_mask_sub_epi32(hi, _mm512_testn_epi32_mask(qh, hi_bit), hi, k16);
            } else {
                lo = _mm512_mask_or_epi32(lo, _mm512_test_epi32_mask(qh, lane_bit), lo, k16);
                hi = _mm512_mask_or_epi32(hi, _mm512_test_epi32_mask(qh, hi_bit), hi, k16);
            }
        }
        __m512 s = _mm512_fmadd_ps(to_f16x(lo), _mm512_loadu_ps(x + i), _mm512_setzero_ps());
        s = _mm512_fmadd_ps(to_f16x(hi), _mm512_loadu_ps(x + i + 16), s);
        if constexpr (min) {
            const __m128 dm = half_pair(p);
            acc = _mm512_fmadd_ps(_mm512_broadcastss_ps(dm), s, acc);
            mins += lane1(dm) * xs[i / 32];
        } else {
            acc = _mm512_fmadd_ps(_mm512_set1_ps(half_at(p)), s, acc);
        }
    }
    if constexpr (min) return Avx512V::hsum(acc) + mins;
    return Avx512V::hsum(acc);
}

// Q4_K (Five: Q5_K): R rows in the generic dot_k's arithmetic and order for 16 lanes (k_quad_fma:
// per 64-value quad, lo = fma(f1, x[16, 32), fma(f0, x[0, 16), 0)), acc = fma(d sc1, lo, acc), the
// same for the high nibbles with d sc2; the minimums as the AVX2 k_tile takes them), each row its
// own accumulator, the next tile's super-block read ahead at each step. Q5_K adds each value's
// fifth bit: bit 2k (low nibbles) or 2k + 1 (high nibbles) of qh byte j for the quad's value j
// (low / high nibbles of its byte j and 16 + j, as k_quad takes them), set as 16 in the lanes whose
// byte tests it.
template <int R, bool Five>
void k_tile(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float* xs, float* y) {
    struct Quad {
        __m512 x0, x1, x2, x3;
    };
    q4_k_tile_loop<R, Five>(
        p0, row_bytes, n, x, xs, y, _mm512_setzero_ps(),
        [](const float* xk) {
            return Quad{_mm512_loadu_ps(xk), _mm512_loadu_ps(xk + 16), _mm512_loadu_ps(xk + 32),
                        _mm512_loadu_ps(xk + 48)};
        },
        [](__m512& acc, const uint8_t* qs, [[maybe_unused]] const uint8_t* qh, [[maybe_unused]] int k, const Quad& xq,
           float s1, float s2) {
            const __m512i m15 = _mm512_set1_epi32(15);
            const __m512i b0 = widen_u8(qs), b1 = widen_u8(qs + 16);  // values 0..15 | 32..47, 16..31 | 48..63
            __m512i v0 = _mm512_and_si512(b0, m15), v1 = _mm512_and_si512(b1, m15), v2 = _mm512_srli_epi32(b0, 4),
                    v3 = _mm512_srli_epi32(b1, 4);
            if constexpr (Five) {
                const __m512i k16 = _mm512_set1_epi32(16), lo_bit = _mm512_set1_epi32(1 << (2 * k)),
                              hi_bit = _mm512_set1_epi32(2 << (2 * k));
                const __m512i h0 = widen_u8(qh), h1 = widen_u8(qh + 16);
                auto fifth = [&](__m512i v, __m512i h, __m512i bit) {
                    return _mm512_mask_or_epi32(v, _mm512_test_epi32_mask(h, bit), v, k16);
                };
                v0 = fifth(v0, h0, lo_bit);
                v1 = fifth(v1, h1, lo_bit);
                v2 = fifth(v2, h0, hi_bit);
                v3 = fifth(v3, h1, hi_bit);
            }
            const __m512 lo = _mm512_fmadd_ps(to_f16x(v1), xq.x1,
                                              _mm512_fmadd_ps(to_f16x(v0), xq.x0, _mm512_setzero_ps()));
            acc = _mm512_fmadd_ps(_mm512_set1_ps(s1), lo, acc);
            const __m512 hi = _mm512_fmadd_ps(to_f16x(v3), xq.x3,
                                              _mm512_fmadd_ps(to_f16x(v2), xq.x2, _mm512_setzero_ps()));
            acc = _mm512_fmadd_ps(_mm512_set1_ps(s2), hi, acc);
        },
        Avx512V::hsum);
}

// Q2_K (84 bytes: 16 scale/min nibble pairs, 2-bit quants[64], f16 d, f16 dmin) and Q3_K (Three;
// 110 bytes: hmask[32], 2-bit quants[64], 12 bytes of 6-bit scales, f16 d): R rows in the generic
// dot_q2_k / dot_q3_k's arithmetic and order for 16 lanes (k23_tile_loop; per 16-value group
// t = fma(q, x, 0), acc = fma(d sc, t, acc)), a group's values (2 bits of its quant bytes at bit
// 2j; Q3_K: minus 4 where its hmask bit is clear) built in 32-bit lanes from bytes widened straight
// from memory, the 16 scales decoded by vector shifts.
template <int R, bool Three>
void k23_tile(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float* xs, float* y) {
    k23_tile_loop<R, Three>(
        p0, row_bytes, n, x, xs, y, _mm512_setzero_ps(),
        [](const uint8_t* p, [[maybe_unused]] const float* xs16, float* sc, [[maybe_unused]] float& mins) {
            const __m512i k15 = _mm512_set1_epi32(15);
            if constexpr (Three) {
                // q3_k_scale for the 16 groups at once: low 4 bits from byte k % 8 (high nibble
                // for k >= 8), top 2 bits from byte 8 + k % 4 at bit 2 (k / 4); d * (scale - 32).
                const __m512i low_shift = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
                const __m512i top_shift = _mm512_setr_epi32(0, 8, 16, 24, 2, 10, 18, 26, 4, 12, 20, 28, 6, 14, 22, 30);
                const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 96));
                const __m512i low = _mm512_and_si512(
                    _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(s8, s8)), low_shift), k15);
                const __m512i top = _mm512_and_si512(
                    _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(load_u32(p + 104))), top_shift),
                    _mm512_set1_epi32(3));
                const __m512i scale = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(top, 4)),
                                                       _mm512_set1_epi32(32));
                _mm512_store_ps(sc, _mm512_mul_ps(_mm512_set1_ps(half_at(p + 108)), to_f16x(scale)));
            } else {
                // d * (pair & 15); the minimums dmin * (pair >> 4) * xs16 summed in group order.
                const __m512i b = widen_u8(p);
                _mm512_store_ps(sc, _mm512_mul_ps(_mm512_set1_ps(half_at(p + 80)), to_f16x(_mm512_and_si512(b, k15))));
                alignas(64) float terms[16];
                _mm512_store_ps(terms, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(half_at(p + 82)),
                                                                   to_f16x(_mm512_srli_epi32(b, 4))),
                                                     _mm512_loadu_ps(xs16)));
                for (int k = 0; k < 16; ++k) mins += terms[k];
            }
        },
        [](const float* xg) { return _mm512_loadu_ps(xg); },
        [](__m512& acc, const uint8_t* q, [[maybe_unused]] const uint8_t* hmask, int j, [[maybe_unused]] int bit,
           __m512 xv, float s) {
            __m512i v = _mm512_and_si512(_mm512_srl_epi32(widen_u8(q), _mm_cvtsi32_si128(2 * j)), _mm512_set1_epi32(3));
            if constexpr (Three)
                v = _mm512_mask_sub_epi32(v, _mm512_testn_epi32_mask(widen_u8(hmask), _mm512_set1_epi32(1 << bit)), v,
                                          _mm512_set1_epi32(4));
            const __m512 t = _mm512_fmadd_ps(to_f16x(v), xv, _mm512_setzero_ps());
            acc = _mm512_fmadd_ps(_mm512_set1_ps(s), t, acc);
        },
        Avx512V::hsum);
}

// Q6_K: R rows in the generic dot_q6_k's arithmetic and order for 16 lanes (per 16-value group
// t = fma(q, x, 0), acc = fma(d sc, t, acc), groups in the generic order), each half unpacked by
// q6_k_half_values and its bytes sign-extended 16 at a time straight from memory.
template <int R>
void q6_k_tile(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float*, float* y) {
    q6_k_tile_loop<R>(
        p0, row_bytes, n, x, y, _mm512_setzero_ps(), [](const float* xg) { return _mm512_loadu_ps(xg); },
        [](__m512& acc, const int8_t* q, __m512 xv, float s) {
            const __m512 t = _mm512_fmadd_ps(i8_to_f(q), xv, _mm512_setzero_ps());
            acc = _mm512_fmadd_ps(_mm512_set1_ps(s), t, acc);
        },
        Avx512V::hsum);
}

KernelTable make_table() {
    KernelTable t = Kernels<Avx512V>::table();
    t.matvec[kQ4_0] = matvec_rows<dot_nib32<Nib::Q4_0>>;
    t.matvec[kQ4_1] = matvec_rows<dot_nib32<Nib::Q4_1>>;
    t.matvec[kQ5_0] = matvec_rows<dot_nib32<Nib::Q5_0>>;
    t.matvec[kQ5_1] = matvec_rows<dot_nib32<Nib::Q5_1>>;
    // Tiles of 8 rows: measured best on a Zen 4 EPYC (bench_qkernels, one thread, weights in L2:
    // Q4_K 2 / 4 / 6 / 8 rows 0.064 / 0.058 / 0.059 / 0.057 ns per weight, Q6_K 2 / 4 / 6 / 8 / 12
    // rows 0.074 / 0.077 / 0.060 / 0.061 / 0.066).
    t.matvec[kQ4_K] = matvec_tiles<8, k_tile<8, false>, k_tile<1, false>>;
    t.matvec[kQ6_K] = matvec_tiles<8, q6_k_tile<8>, q6_k_tile<1>>;
    t.matvec[kQ5_K] = matvec_tiles<8, k_tile<8, true>, k_tile<1, true>>;
    // Q3_K 4 / 8 rows 0.083 / 0.085 in L2 but 0.092 / 0.088 streamed; Q2_K 2 / 4 / 8 rows 0.090 /
    // 0.077 / 0.086 (its minimum sums are a chain of scalar adds per row).
    t.matvec[kQ3_K] = matvec_tiles<8, k23_tile<8, true>, k23_tile<1, true>>;
    t.matvec[kQ2_K] = matvec_tiles<4, k23_tile<4, false>, k23_tile<1, false>>;
    AttnKernels<Avx512V>::fill(t);
    // The 8-bit products: with AVX-512 VNNI, BW and VL (which the path does not require) their own
    // build with fused multiply-adds (1B-shape Q2_K decode on a Zen 4 EPYC: see README), else the
    // AVX2 ones. Both give the same bits.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        fill_q8_vnni(t);
    else
        for (int f = 0; f < kFormatCount; ++f) t.q8_matvec[f] = avx2_kernels().q8_matvec[f];
    return t;
}

}  // namespace

const KernelTable& avx512_kernels() {
    static const KernelTable table = make_table();
    return table;
}

}  // namespace snapkv::quant_detail
