// Private to core/quant: AVX2 helpers shared by the AVX2 and AVX-512 kernel paths (both files are
// built with -mavx2 -mfma -mf16c and include this for an internal copy of their own): f16 and
// int8 loads, reads ahead, the K-quant scale and Q6_K unpacking steps, and the row drivers. The
// arithmetic each kernel does with them (and so its order) is the generic one of qkernels_impl.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/quant/qkernels_impl.h"

namespace snapkv::quant_detail {
namespace {

inline float half_at(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }
inline __m256 to_f(__m256i v) { return _mm256_cvtepi32_ps(v); }
// Prefetches the L cache lines from p on (a prefetch never faults, so p may lie past the matrix).
template <int L>
inline void prefetch_lines(const uint8_t* p) {
    for (int l = 0; l < L; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + 64 * l), _MM_HINT_T0);
}
// 8 bytes zero-extended to 32-bit lanes straight from memory (vpmovzxbd with a memory operand).
inline __m256i u8_lane8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
// 8 int8 values sign-extended straight from memory (vpmovsxbd with a memory operand: no shuffle
// of a loaded register) as floats.
inline __m256 q8_lane8(const uint8_t* q) {
    return to_f(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
}
// A block's f16 d and m (4 bytes at p) as floats in lanes 0 and 1, by one F16C operation (4-10 %
// faster than two in the Q4_1 and Q5_1 products); lane1 takes m out.
inline __m128 half_pair(const uint8_t* p) { return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u32(p)))); }
inline float lane1(__m128 v) { return _mm_cvtss_f32(_mm_movehdup_ps(v)); }
// A Q4_K / Q5_K super-block's eight d * scale (sc) and dmin * min (mn), the values k_quad_scales
// gives one quad at a time: the 6-bit fields of k_scale_min taken from the 12 scale bytes as three
// little-endian words (scales 0..3: bytes 0..3; mins 0..3: bytes 4..7; scales 4..7: low nibbles of
// bytes 8..11 and the top two bits of bytes 0..3; mins 4..7: high nibbles of bytes 8..11 and the
// top two bits of bytes 4..7), widened and scaled eight at a time.
inline void k_super_scales(const uint8_t* scales, float d, float dmin, float* sc, float* mn) {
    const uint32_t w0 = load_u32(scales), w1 = load_u32(scales + 4), w2 = load_u32(scales + 8);
    const uint32_t low6 = 0x3F3F3F3Fu, low4 = 0x0F0F0F0Fu, low2 = 0x03030303u;
    const uint32_t sc_hi = (w2 & low4) | (((w0 >> 6) & low2) << 4);
    const uint32_t mn_hi = ((w2 >> 4) & low4) | (((w1 >> 6) & low2) << 4);
    const __m128i bytes = _mm_setr_epi32(static_cast<int>(w0 & low6), static_cast<int>(sc_hi),
                                         static_cast<int>(w1 & low6), static_cast<int>(mn_hi));
    _mm256_storeu_ps(sc, _mm256_mul_ps(_mm256_set1_ps(d), to_f(_mm256_cvtepu8_epi32(bytes))));
    _mm256_storeu_ps(mn, _mm256_mul_ps(_mm256_set1_ps(dmin), to_f(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)))));
}
// q3_k_scale of groups 0..7 (lo) and 8..15 (hi) of a Q3_K super-block's 12 scale bytes s, in
// 32-bit lanes (low nibbles of bytes 0..7 or their high nibbles, two bits of bytes 8..11 above).
inline void q3_k_scales8(const uint8_t* s, __m256i* lo, __m256i* hi) {
    const __m256i bytes = u8_lane8(s), top = _mm256_set1_epi32(static_cast<int>(load_u32(s + 8)));
    const __m256i k3 = _mm256_set1_epi32(3), k15 = _mm256_set1_epi32(15), k32 = _mm256_set1_epi32(32);
    const __m256i top0 = _mm256_and_si256(_mm256_srlv_epi32(top, _mm256_setr_epi32(0, 8, 16, 24, 2, 10, 18, 26)), k3);
    const __m256i top1 = _mm256_and_si256(_mm256_srlv_epi32(top, _mm256_setr_epi32(4, 12, 20, 28, 6, 14, 22, 30)), k3);
    *lo = _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(bytes, k15), _mm256_slli_epi32(top0, 4)), k32);
    *hi = _mm256_sub_epi32(_mm256_or_si256(_mm256_srli_epi32(bytes, 4), _mm256_slli_epi32(top1, 4)), k32);
}
// Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], f16 d): one 128-value half h unpacked 32
// bytes at a time (the generic kernel takes 16) into out[128], q - 32 in value order, for the
// tiles to sign-extend straight from memory.
inline void q6_k_half_values(const uint8_t* p, int h, int8_t* out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30), k32 = _mm256_set1_epi8(32);
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * h + 32));
    const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * h));
    // The two high bits of group g at bits 4 and 5 (16-bit shifts carry into bits the mask drops).
    const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30);
    const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30);
    const __m256i h2 = _mm256_and_si256(hb, m30);
    const __m256i h3 = _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30);
    const __m256i lo_a = _mm256_and_si256(a, m4), lo_b = _mm256_and_si256(b, m4);
    const __m256i hi_a = _mm256_and_si256(_mm256_srli_epi16(a, 4), m4);
    const __m256i hi_b = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
    auto put = [&](int g, __m256i nib, __m256i high) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), _mm256_sub_epi8(_mm256_or_si256(nib, high), k32));
    };
    put(0, lo_a, h0);
    put(1, lo_b, h1);
    put(2, hi_a, h2);
    put(3, hi_b, h3);
}
// The super-block step of the Q4_K / Q5_K row tiles: for each of the R rows from p0 (row_bytes apart),
// its super-block's eight d * scale into sc[r] and its four quads' minimum terms m1 * xs0 + m2 *
// xs1 of k_quad_fma into pairs[r] (the eight products in one vector product, the pairs summed by
// one horizontal add, as the scalar m1 * xs0 + m2 * xs1); the next tile's super-block read ahead.
template <int R>
inline void q4_k_super_step(const uint8_t* p0, size_t row_bytes, const float* xs, float (*sc)[8], float (*pairs)[4]) {
    for (int r = 0; r < R; ++r) {
        const uint8_t* p = p0 + r * row_bytes;
        prefetch_lines<3>(p + R * row_bytes);
        alignas(32) float mn[8];
        k_super_scales(p + 4, half_at(p), half_at(p + 2), sc[r], mn);
        const __m256 prod = _mm256_mul_ps(_mm256_load_ps(mn), _mm256_loadu_ps(xs));
        _mm_store_ps(pairs[r], _mm_hadd_ps(_mm256_castps256_ps128(prod), _mm256_extractf128_ps(prod, 1)));
    }
}
// The half step of the Q6_K row tiles: half h of each of the R rows from p0 unpacked into q[r]
// (q6_k_half_values) and its eight d * scale (as the generic d * float(scale)) into sc[r]; the
// next tile's lines of that half read ahead.
template <int R>
inline void q6_k_half_step(const uint8_t* p0, size_t row_bytes, int h, int8_t (*q)[128], float (*sc)[8]) {
    for (int r = 0; r < R; ++r) {
        const uint8_t* p = p0 + r * row_bytes;
        prefetch_lines<2>(p + R * row_bytes + 128 * h);  // lines 0, 1 and 2, 3 of the 210 bytes
        q6_k_half_values(p, h, q[r]);
        _mm256_store_ps(sc[r], _mm256_mul_ps(_mm256_set1_ps(half_at(p + 208)), q8_lane8(p + 192 + 8 * h)));
    }
}

// The Q4_K (Five: Q5_K) row-tile loop of both x86 paths: R rows from p0 (row_bytes apart) in one
// pass over x, each row in the generic dot_k's order with its own accumulator (R times the
// independent FMA chains in flight). Per super-block q4_k_super_step (a Q5_K super-block starts
// the same way); per 64-value quad k, xq = load_x(x + the quad) once for the R rows, then
// quad(acc[r], the row's 32 quad bytes, its 32 fifth-bit bytes qh (Q5_K), k, xq, d sc1, d sc2)
// adds the quad's two scaled sub-block sums; then the minimum terms quad by quad as k_quad_fma
// adds them. y[r] = hsum(acc[r]) - mins.
template <int R, bool Five = false, class Vec, class LoadX, class Quad, class Hsum>
inline void q4_k_tile_loop(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float* xs, float* y,
                           Vec zero, LoadX load_x, Quad quad, Hsum hsum) {
    constexpr size_t block_bytes = Five ? 176 : 144, qs_at = Five ? 48 : 16;
    Vec acc[R];
    float mins[R];
    alignas(32) float sc[R][8];
    clear_sums(acc, mins, zero);
    for (int64_t i = 0; i < n; i += 256, p0 += block_bytes) {
        alignas(16) float pairs[R][4];
        q4_k_super_step<R>(p0, row_bytes, xs + i / 32, sc, pairs);
        for (int k = 0; k < 4; ++k) {
            const auto xq = load_x(x + i + 64 * k);
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = p0 + r * row_bytes;
                quad(acc[r], p + qs_at + 32 * k, p + 16, k, xq, sc[r][2 * k], sc[r][2 * k + 1]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int k = 0; k < 4; ++k) mins[r] += pairs[r][k];
    }
    for (int r = 0; r < R; ++r) y[r] = hsum(acc[r]) - mins[r];
}
// The Q2_K / Q3_K (Three) row-tile loop of both x86 paths: R rows from p0 (row_bytes apart), each
// in the generic dot_q2_k / dot_q3_k's order with its own accumulator. Per super-block and row,
// scales(the row's block, its per-16 sums xs16 (Q2_K), sc, mins) writes the 16 groups' d * scale
// into sc and adds Q2_K's minimum terms to mins in group order; per 16-value group at = 128 half +
// 32 j + 16 g, xg = load_x(x + at) once for the R rows, then group(acc[r], the row's 16 quant
// bytes (bits 2j), its 16 hmask bytes (Q3_K: bit 4 half + j), j, 4 half + j, xg, the group's
// d * scale). y[r] = hsum(acc[r]) - mins (Q2_K).
template <int R, bool Three, class Vec, class Scales, class LoadX, class Group, class Hsum>
inline void k23_tile_loop(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, const float* xs, float* y,
                          Vec zero, Scales scales, LoadX load_x, Group group, Hsum hsum) {
    constexpr size_t block_bytes = Three ? 110 : 84, qs_at = Three ? 32 : 16;
    const float* xs16 = Three ? nullptr : xs + n / 32;
    Vec acc[R];
    float mins[R];
    clear_sums(acc, mins, zero);
    for (int64_t i = 0; i < n; i += 256, p0 += block_bytes) {
        alignas(64) float sc[R][16];
        for (int r = 0; r < R; ++r) {
            const uint8_t* p = p0 + r * row_bytes;
            prefetch_lines<2>(p + R * row_bytes);
            scales(p, Three ? nullptr : xs16 + i / 16, sc[r], mins[r]);
        }
        for (int half = 0; half < 2; ++half)
            for (int j = 0; j < 4; ++j)
                for (int g = 0; g < 2; ++g) {
                    const int at = 128 * half + 32 * j + 16 * g;
                    const auto xg = load_x(x + i + at);
                    for (int r = 0; r < R; ++r) {
                        const uint8_t* p = p0 + r * row_bytes;
                        group(acc[r], p + qs_at + 32 * half + 16 * g, p + 16 * g, j, 4 * half + j, xg, sc[r][at / 16]);
                    }
                }
    }
    for (int r = 0; r < R; ++r) {
        if constexpr (Three) y[r] = hsum(acc[r]);
        else y[r] = hsum(acc[r]) - mins[r];
    }
}
// The Q6_K row-tile loop of both x86 paths, as q4_k_tile_loop: per half q6_k_half_step, then per
// 16-value group in the generic dot_q6_k's order, xg = load_x(x + the group) once for the R rows
// and group(acc[r], the row's 16 values q - 32, xg, d sc). y[r] = hsum(acc[r]).
template <int R, class Vec, class LoadX, class Group, class Hsum>
inline void q6_k_tile_loop(const uint8_t* p0, size_t row_bytes, int64_t n, const float* x, float* y, Vec zero,
                           LoadX load_x, Group group, Hsum hsum) {
    alignas(32) int8_t q[R][128];
    alignas(32) float sc[R][8];
    Vec acc[R];
    for (int r = 0; r < R; ++r) acc[r] = zero;
    for (int64_t i = 0; i < n; i += 256, p0 += 210)
        for (int h = 0; h < 2; ++h) {
            q6_k_half_step<R>(p0, row_bytes, h, q, sc);
            for (int jj = 0; jj < 32; jj += 16)
                for (int g = 0; g < 4; ++g) {
                    const int at = 32 * g + jj;
                    const auto xg = load_x(x + i + 128 * h + at);
                    for (int r = 0; r < R; ++r) group(acc[r], q[r] + at, xg, sc[r][2 * g + jj / 16]);
                }
        }
    for (int r = 0; r < R; ++r) y[r] = hsum(acc[r]);
}

// One row at a time with Dot, reading ahead as the generic matvec does.
template <float (*Dot)(const uint8_t*, int64_t, const float*, const float*)>
void matvec_rows(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x, const float* xs,
                 float* y) {
    for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
        prefetch_ahead(row, row_bytes);
        y[r] = Dot(row, n_cols, x, xs);
    }
}

// A product in tiles of R rows (Tile) and single rows (One) for the rest: the same arithmetic,
// so the row ranges the threads take need not line up with the tiles.
using TileFn = void (*)(const uint8_t*, size_t, int64_t, const float*, const float*, float*);
template <int R, TileFn Tile, TileFn One>
void matvec_tiles(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const float* x, const float* xs,
                  float* y) {
    int64_t r = 0;
    for (; r + R <= n_rows; r += R) Tile(w + static_cast<size_t>(r) * row_bytes, row_bytes, n_cols, x, xs, y + r);
    for (; r < n_rows; ++r) One(w + static_cast<size_t>(r) * row_bytes, row_bytes, n_cols, x, xs, y + r);
}

// The traits' transpose8 on both x86 paths (AttnKernels::transpose_block's tiles): dst row c,
// columns 0..7 = src rows 0..7, column c (rows src_ld and dst_ld floats apart), by unpacks,
// shuffles and lane swaps in registers.
inline void transpose8x8(const float* src, int64_t src_ld, float* dst, int64_t dst_ld) {
    __m256 a[8], t[8], u[8];
    for (int j = 0; j < 8; ++j) a[j] = _mm256_loadu_ps(src + j * src_ld);
    for (int j = 0; j < 8; j += 2) {  // rows j, j + 1: columns 0 1 | 4 5 and 2 3 | 6 7
        t[j] = _mm256_unpacklo_ps(a[j], a[j + 1]);
        t[j + 1] = _mm256_unpackhi_ps(a[j], a[j + 1]);
    }
    for (int h = 0; h < 8; h += 4) {  // rows h .. h + 3: column c in u[h + c] (c < 4), c + 4 above
        u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
        _mm256_storeu_ps(dst + c * dst_ld, _mm256_permute2f128_ps(u[c], u[c + 4], 0x20));
        _mm256_storeu_ps(dst + (c + 4) * dst_ld, _mm256_permute2f128_ps(u[c], u[c + 4], 0x31));
    }
}

}  // namespace
}  // namespace snapkv::quant_detail
