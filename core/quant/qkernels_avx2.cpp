// The AVX2 + FMA + F16C kernel path: 8 float lanes. Built with -mavx2 -mfma -mf16c (this file
// only) and called only when cpu_features.h reports those features.
#include <immintrin.h>

#include "core/quant/qkernels_impl.h"
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
    static vec from_bf16(const uint8_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(SseBytes::load16(p)), 16));
    }
};

}  // namespace

const KernelTable& avx2_kernels() {
    static const KernelTable table = Kernels<Avx2V>::table();
    return table;
}

}  // namespace snapkv::quant_detail
