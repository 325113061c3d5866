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
// 8 int8 values sign-extended straight from memory (vpmovsxbd with a memory operand: no shuffle
// of a loaded register) as floats.
inline __m256 q8_lane8(const uint8_t* q) {
    return to_f(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
}
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

}  // namespace
}  // namespace snapkv::quant_detail
