// Private to core/quant: the 8-bit-activation products on 256-bit vectors. qkernels_avx2.cpp builds
// them for AVX2; qkernels_q8_vnni.cpp for AVX-512 VNNI + BW + VL (fused steps, SNAPKV_Q8_VNNI),
// which the AVX-512 path takes where the CPU has them, else the AVX2 build.
// Bytes of weights meet bytes of the quantized input in vpmaddubsw (unsigned x signed pairs, which
// stay below 2^15 here: |q| <= 127 and weights below 64, or signed weights by the sign trick
// |w| x sign(q, w)), then vpmaddwd with ones or with the sub-block scales; each block's integer sums
// are the generic ones of qkernels_q8_impl.h, and the float steps are its steps in its order, so
// the results equal the scalar path's bit for bit.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/quant/qkernels_q8_impl.h"
#include "core/quant/qkernels_x86_avx2.h"

namespace snapkv::quant_detail {
namespace {

// Each row asks for its bytes this far ahead of the block it multiplies. A 1B-shape Q4_K_M decode
// on a Zen 4 EPYC (2 threads, interleaved runs): 256 bytes 37.2 tok/s on average over 10 runs,
// 1024 34.5 over 7; 128, 512, 2048, 4096 and 8192 in between.
constexpr int kQ8Ahead = 256;

// Prefetches the L cache lines kQ8Ahead bytes past p.
template <int L>
inline void q8_prefetch(const uint8_t* p) {
    for (int l = 0; l < L; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + kQ8Ahead + 64 * l), _MM_HINT_T0);
}

inline __m256i q8_load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 8 lanes of a summed in q8_lane_total's order.
inline float q8_hsum(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Built with AVX-512 VNNI, BW and VL (qkernels_q8_vnni.cpp), the same steps take fused
// instructions on 256-bit vectors: vpdpbusd for a byte product's lane sums, vpdpwssd for a scaled
// sum's multiply-add, vpmovm2b for a bit mask as bytes. The integers are the same.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define SNAPKV_Q8_VNNI 1
#else
#define SNAPKV_Q8_VNNI 0
#endif

// 8 int32 lanes, lane k = sum over bytes 4k..4k+3 of u[i] * s[i] (u unsigned, s signed).
inline __m256i q8_lanes_u(__m256i u, __m256i s) {
#if SNAPKV_Q8_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}
// a + the pairwise sums of the int16 products s * scales (vpmaddwd then vpaddd).
inline __m256i q8_add_scaled(__m256i a, __m256i s, __m256i scales) {
#if SNAPKV_Q8_VNNI
    return _mm256_dpwssd_epi32(a, s, scales);
#else
    return _mm256_add_epi32(a, _mm256_madd_epi16(s, scales));
#endif
}
// The same for signed weights w (|w| <= 128) against q (|q| <= 127).
inline __m256i q8_lanes_s(__m256i w, __m256i q) { return q8_lanes_u(_mm256_abs_epi8(w), _mm256_sign_epi8(q, w)); }

// 16 nibble bytes at p as 32 values in value order: low nibbles, then high nibbles.
inline __m256i q8_nibbles(const uint8_t* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}
// Bit i of qh as 0x10 in byte i.
inline __m256i q8_fifth_bits(uint32_t qh) {
#if SNAPKV_Q8_VNNI
    return _mm256_and_si256(_mm256_movm_epi8(static_cast<__mmask32>(qh)), _mm256_set1_epi8(0x10));
#else
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                                               _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                                                2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
#endif
}

// IQ4_NL's levels (kIq4Levels) of nibble values 0..15.
inline __m256i q8_iq4_levels(__m256i nib) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(kIq4Levels)));
    return _mm256_shuffle_epi8(table, nib);
}

// One block's 8 lane sums of value x input, as Q8Block32<Fmt>'s values give them.
template <int Fmt>
inline __m256i q8_block_lanes(const uint8_t* p, __m256i q) {
    if constexpr (Fmt == kQ8_0) {
        return q8_lanes_s(q8_load32(p + 2), q);
    } else if constexpr (Fmt == kQ4_0) {
        return q8_lanes_s(_mm256_sub_epi8(q8_nibbles(p + 2), _mm256_set1_epi8(8)), q);
    } else if constexpr (Fmt == kQ4_1) {
        return q8_lanes_u(q8_nibbles(p + 4), q);
    } else if constexpr (Fmt == kQ5_1) {
        return q8_lanes_u(_mm256_or_si256(q8_nibbles(p + 8), q8_fifth_bits(load_u32(p + 4))), q);
    } else if constexpr (Fmt == kIQ4_NL) {
        return q8_lanes_s(q8_iq4_levels(q8_nibbles(p + 2)), q);
    } else {
        static_assert(Fmt == kQ5_0);
        const __m256i v = _mm256_or_si256(q8_nibbles(p + 6), q8_fifth_bits(load_u32(p + 2)));
        return q8_lanes_s(_mm256_sub_epi8(v, _mm256_set1_epi8(16)), q);
    }
}

// One row of a 32-value format. (Tiles of 2 or 4 rows sharing the input's loads were measured
// slower on a Zen 4 EPYC, streamed: Q4_K 0.044 / 0.058 / 0.081 ns per weight for 1 / 2 / 4 rows,
// Q8_0 0.059 / 0.126 / 0.115.)
template <int Fmt>
void q8_row_32(const uint8_t* p, int64_t nb, const Q8Input& x, float* y) {
    using B = Q8Block32<Fmt>;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < nb; ++b, p += B::bytes) {
        q8_prefetch<1>(p);
        const __m256 dd = _mm256_set1_ps(half_at(p) * x.d32[b]);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(dd, to_f(q8_block_lanes<Fmt>(p, q8_load32(x.q32 + 32 * b)))));
        if constexpr (B::has_min) mins = mins + half_at(p + 2) * x.m32[b];
    }
    *y = q8_hsum(acc) + mins;
}

// The sum of 8 int32 lanes of a and of b, exactly: {sum a, sum b}.
inline void q8_two_totals(__m256i a, __m256i b, int32_t* ta, int32_t* tb) {
    const __m256i h = _mm256_hadd_epi32(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    s = _mm_hadd_epi32(s, s);  // A B A B
    *ta = _mm_cvtsi128_si32(s);
    *tb = _mm_extract_epi32(s, 1);
}

// The int16 at position i (0..7) of each 128-bit lane of v, in all 8 int16 of that lane.
inline __m256i q8_word_splat(__m256i v, int i) {
    const __m256i ctrl = _mm256_set1_epi16(static_cast<int16_t>((2 * i) | ((2 * i + 1) << 8)));
    return _mm256_shuffle_epi8(v, ctrl);
}

// Of 16-value groups' int16 scales sh (the eight of a 128-value half in each 128-bit lane): scale
// 2k in every word of the low lane and 2k + 1 in every word of the high lane, for a chunk of 32
// values whose first 16 belong to group 2k and the rest to 2k + 1.
inline __m256i q8_pair_scales(__m256i sh, int k) {
    const __m256i ctrl = _mm256_setr_epi8(
        4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1,
        4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2,
        4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3);
    return _mm256_shuffle_epi8(sh, ctrl);
}

// Bit t (0..7) of every byte of v, moved to bit `to` (0..7) of the byte; the other bits clear.
inline __m256i q8_move_bit(__m256i v, int t, int to) {
    const __m256i moved = t >= to ? _mm256_srli_epi16(v, t - to) : _mm256_slli_epi16(v, to - t);
    return _mm256_and_si256(moved, _mm256_set1_epi8(static_cast<char>(1 << to)));
}

// The integers of a super-block without minimum terms whose products were summed in a and a1.
inline Q8Ints q8_ints_of(__m256i a, __m256i a1) {
    Q8Ints t;
    const __m256i sum = _mm256_add_epi32(a, a1);
    q8_two_totals(sum, sum, &t.a, &t.m);
    t.m = 0;
    return t;
}

// Q4_K (Five: Q5_K, whose qh[32] follow the scales and give bit s of byte l to value 32 s + l as
// its fifth bit): super-block b's integers (Q8Generic::ints_q45_k).
template <bool Five>
Q8Ints q8_ints_q45_k(const uint8_t* p, const Q8Input& x, int64_t b) {
    const int8_t* q = x.qk + 256 * b;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    q8_prefetch<Five ? 3 : 2>(p);
    // Scales 0..7 and minimums 0..7 as bytes (the layout of k_super_scales).
    const uint32_t w0 = load_u32(p + 4), w1 = load_u32(p + 8), w2 = load_u32(p + 12);
    const uint32_t low6 = 0x3F3F3F3Fu, low4 = 0x0F0F0F0Fu, low2 = 0x03030303u;
    const uint32_t sc_hi = (w2 & low4) | (((w0 >> 6) & low2) << 4);
    const uint32_t mn_hi = ((w2 >> 4) & low4) | (((w1 >> 6) & low2) << 4);
    const __m128i scm = _mm_setr_epi32(static_cast<int>(w0 & low6), static_cast<int>(sc_hi),
                                       static_cast<int>(w1 & low6), static_cast<int>(mn_hi));
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));  // scales as int16, both lanes
    const __m256i mn = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scm, scm));    // each minimum twice
    // Two sums (integer: their order changes nothing), so that fused multiply-adds do not wait on
    // each other.
    __m256i a = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
        const __m256i raw = q8_load32(p + (Five ? 48 : 16) + 32 * j);
        __m256i lo = _mm256_and_si256(raw, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        if constexpr (Five) {
            const __m256i hb = q8_load32(p + 16);
            lo = _mm256_or_si256(lo, q8_move_bit(hb, 2 * j, 4));
            hi = _mm256_or_si256(hi, q8_move_bit(hb, 2 * j + 1, 4));
        }
        const __m256i s0 = _mm256_maddubs_epi16(lo, q8_load32(q + 64 * j));
        const __m256i s1 = _mm256_maddubs_epi16(hi, q8_load32(q + 64 * j + 32));
        a = q8_add_scaled(a, s0, q8_word_splat(sc, 2 * j));
        a1 = q8_add_scaled(a1, s1, q8_word_splat(sc, 2 * j + 1));
    }
    Q8Ints t;
    q8_two_totals(_mm256_add_epi32(a, a1), _mm256_madd_epi16(q8_load32(x.bk + 16 * b), mn), &t.a, &t.m);
    return t;
}

// Q6_K: super-block b's integers (Q8Generic::ints_q6_k).
inline Q8Ints q8_ints_q6_k(const uint8_t* p, const Q8Input& x, int64_t b) {
    const int8_t* q = x.qk + 256 * b;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    q8_prefetch<4>(p);
    // Scales as int16: 0..7 in the low lane, 8..15 in the high lane; the values carry +32, taken
    // away as 32 x scale x the input's group sum.
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192)));
    __m256i a = _mm256_sub_epi32(_mm256_setzero_si256(),
                                 _mm256_slli_epi32(_mm256_madd_epi16(q8_load32(x.bk + 16 * b), sc16), 5));
    __m256i a1 = _mm256_setzero_si256();  // a second sum, as in q8_ints_q45_k
    for (int h = 0; h < 2; ++h) {
        // Chunk 4h + k takes scales 8h + 2k (its first 16 values) and 8h + 2k + 1.
        const __m256i sh = _mm256_permute4x64_epi64(sc16, h == 0 ? 0x44 : 0xEE);
        const __m256i la = q8_load32(p + 64 * h), lb = q8_load32(p + 64 * h + 32);
        const __m256i hb = q8_load32(p + 128 + 32 * h);
        const __m256i v[4] = {
            _mm256_or_si256(_mm256_and_si256(la, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30)),
            _mm256_or_si256(_mm256_and_si256(lb, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4), _mm256_and_si256(hb, m30)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30))};
        for (int k = 0; k < 4; ++k) {
            const __m256i s = _mm256_maddubs_epi16(v[k], q8_load32(q + 128 * h + 32 * k));
            (k % 2 == 0 ? a : a1) = q8_add_scaled(k % 2 == 0 ? a : a1, s, q8_pair_scales(sh, k));
        }
    }
    return q8_ints_of(a, a1);
}

// Q2_K or Q3_K (Three): 32 quant bytes per 128-value half, chunk j of a half their bits 2j, 2j + 1
// (Q3_K: with bit 4 half + j of hmask as bit 2, the values then 0..7 for -4..3); super-block b's
// integers (Q8Generic::ints_k23).
template <bool Three>
Q8Ints q8_ints_k23(const uint8_t* p, const Q8Input& x, int64_t b) {
    const int8_t* q = x.qk + 256 * b;
    const __m256i bsum = q8_load32(x.bk + 16 * b);
    const __m256i k3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    q8_prefetch<2>(p);
    // The 16 group scales as int16, 0..7 in the low lane and 8..15 in the high lane.
    __m256i sc16, mn16 = _mm256_setzero_si256();
    if constexpr (Three) {
        __m256i s0, s1;
        q3_k_scales8(p + 96, &s0, &s1);
        sc16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(s0, s1), 0xD8);
    } else {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, m4));
        mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
    }
    // Q3_K: the values carry +4, taken away per group as 4 x scale x the input's group sum. Two
    // sums, as in q8_ints_q45_k.
    __m256i a = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    if constexpr (Three) a = _mm256_sub_epi32(a, _mm256_slli_epi32(_mm256_madd_epi16(bsum, sc16), 2));
    const __m256i hm = Three ? q8_load32(p) : _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        const __m256i sh = _mm256_permute4x64_epi64(sc16, h == 0 ? 0x44 : 0xEE);
        const __m256i qv = q8_load32(p + (Three ? 32 : 16) + 32 * h);
        for (int j = 0; j < 4; ++j) {
            __m256i v = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * j), k3);
            if constexpr (Three) v = _mm256_or_si256(v, q8_move_bit(hm, 4 * h + j, 2));
            const __m256i s = _mm256_maddubs_epi16(v, q8_load32(q + 128 * h + 32 * j));
            (j % 2 == 0 ? a : a1) = q8_add_scaled(j % 2 == 0 ? a : a1, s, q8_pair_scales(sh, j));
        }
    }
    Q8Ints t;
    q8_two_totals(_mm256_add_epi32(a, a1), _mm256_madd_epi16(bsum, mn16), &t.a, &t.m);
    return t;
}

// IQ4_XS: per sub-block, IQ4_NL's 32 levels against the input, times its scale; super-block b's
// integers (Q8Generic::ints_iq4_xs).
inline Q8Ints q8_ints_iq4_xs(const uint8_t* p, const Q8Input& x, int64_t b) {
    const int8_t* q = x.qk + 256 * b;
    q8_prefetch<3>(p);
    __m256i a = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();  // two sums, as in q8_ints_q45_k
    for (int ib = 0; ib < 8; ++ib) {
        const __m256i w = q8_iq4_levels(q8_nibbles(p + 8 + 16 * ib));
        const __m256i s = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(q8_load32(q + 32 * ib), w));
        const __m256i scale = _mm256_set1_epi16(static_cast<int16_t>(iq4_xs_scale(p, ib)));
        (ib % 2 == 0 ? a : a1) = q8_add_scaled(ib % 2 == 0 ? a : a1, s, scale);
    }
    return q8_ints_of(a, a1);
}

// Every row of a 32-value format, one at a time.
template <int Fmt>
void q8_rows_32(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const Q8Input& x, float* y) {
    for (int64_t r = 0; r < n_rows; ++r) q8_row_32<Fmt>(w + static_cast<size_t>(r) * row_bytes, n_cols / 32, x, y + r);
}

// Every row of a super-block format, in the generic float steps (q8_k_rows).
template <int Fmt, Q8Ints (*Ints)(const uint8_t*, const Q8Input&, int64_t)>
void q8_rows_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const Q8Input& x, float* y) {
    q8_k_rows<Fmt>(
        w, row_bytes, n_rows, n_cols, x, y, [](uint16_t h) { return _cvtsh_ss(h); }, Ints);
}

inline void fill_q8(KernelTable& t) {
    t.q8_matvec[kQ8_0] = q8_rows_32<kQ8_0>;
    t.q8_matvec[kQ4_0] = q8_rows_32<kQ4_0>;
    t.q8_matvec[kQ4_1] = q8_rows_32<kQ4_1>;
    t.q8_matvec[kQ5_0] = q8_rows_32<kQ5_0>;
    t.q8_matvec[kQ5_1] = q8_rows_32<kQ5_1>;
    t.q8_matvec[kIQ4_NL] = q8_rows_32<kIQ4_NL>;
    t.q8_matvec[kQ2_K] = q8_rows_k<kQ2_K, q8_ints_k23<false>>;
    t.q8_matvec[kQ3_K] = q8_rows_k<kQ3_K, q8_ints_k23<true>>;
    t.q8_matvec[kQ4_K] = q8_rows_k<kQ4_K, q8_ints_q45_k<false>>;
    t.q8_matvec[kQ5_K] = q8_rows_k<kQ5_K, q8_ints_q45_k<true>>;
    t.q8_matvec[kQ6_K] = q8_rows_k<kQ6_K, q8_ints_q6_k>;
    t.q8_matvec[kIQ4_XS] = q8_rows_k<kIQ4_XS, q8_ints_iq4_xs>;
}

}  // namespace
}  // namespace snapkv::quant_detail
