// Private to core/quant: the 16-byte operations of the x86 kernel paths in SSE2 and SSSE3 (which
// every AVX2 CPU has), shared by qkernels_avx2.cpp and qkernels_avx512.cpp; each includes it under
// its own flags and keeps an internal copy. Semantics as ScalarV's in qkernels_scalar.cpp.
#pragma once

#include <emmintrin.h>
#include <tmmintrin.h>

#include <cstdint>

namespace snapkv::quant_detail {
namespace {

struct SseBytes {
    using q16 = __m128i;

    static inline q16 load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
    static inline q16 lo4(q16 v) { return _mm_and_si128(v, _mm_set1_epi8(0x0F)); }
    // 16-bit shifts move bits across the two bytes of a lane; the mask drops them.
    static inline q16 hi4(q16 v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F)); }
    static inline q16 bits(q16 v, int s, int mask) {
        return _mm_and_si128(_mm_srl_epi16(v, _mm_cvtsi32_si128(s)), _mm_set1_epi8(static_cast<char>(mask)));
    }
    // Values below 16, so nothing crosses into the next byte.
    static inline q16 shl4(q16 v) { return _mm_slli_epi16(v, 4); }
    static inline q16 or_(q16 a, q16 b) { return _mm_or_si128(a, b); }
    static inline q16 sub8(q16 v, int k) { return _mm_sub_epi8(v, _mm_set1_epi8(static_cast<char>(k))); }
    // Values below 2^(8 - s), so nothing crosses into the next byte.
    static inline q16 shl(q16 v, int s) { return _mm_sll_epi16(v, _mm_cvtsi32_si128(s)); }
    // Byte j = bit j of the low 16 bits of m: both mask bytes spread over 8 lanes each, then each
    // lane tests its own bit.
    static inline q16 bits16(uint32_t m) {
        const q16 spread = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(m & 0xFFFFu)),
                                            _mm_set_epi8(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0));
        const q16 sel = _mm_set_epi8(static_cast<char>(0x80), 0x40, 0x20, 0x10, 8, 4, 2, 1, static_cast<char>(0x80),
                                     0x40, 0x20, 0x10, 8, 4, 2, 1);
        return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, sel), sel), _mm_set1_epi8(1));
    }
    // table[v] for each byte v below 16 (table: 16 bytes held as a q16).
    static inline q16 lut16(q16 v, q16 table) { return _mm_shuffle_epi8(table, v); }
};

}  // namespace
}  // namespace snapkv::quant_detail
