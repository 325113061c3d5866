// The AVX-512 kernel path: 16 float lanes, AVX-512F instructions only (plus AVX2/FMA/F16C).
// Built with -mavx512f -mavx2 -mfma -mf16c (this file only) and called only when cpu_features.h
// reports AVX-512F.
#include <immintrin.h>

#include "core/quant/attn_kernels_impl.h"
#include "core/quant/qkernels_impl.h"
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
    static vec pow2i(vec n) {
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
    }
    static vec below(vec x, vec b, vec t, vec f) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, b, _CMP_LT_OQ), f, t);
    }
    static vec above(vec x, vec b, vec t, vec f) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, b, _CMP_GT_OQ), f, t);
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
    static vec from_bf16(const uint8_t* p) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
};

}  // namespace

const KernelTable& avx512_kernels() {
    static const KernelTable table = [] {
        KernelTable t = Kernels<Avx512V>::table();
        t.attn_block = AttnKernels<Avx512V>::block;
        t.attn_scratch = AttnKernels<Avx512V>::scratch_floats;
        t.attn_h2o = AttnKernels<Avx512V>::h2o_block;
        t.attn_row_scores = AttnKernels<Avx512V>::row_scores;
        t.attn_row_scratch = AttnKernels<Avx512V>::row_scores_scratch;
        return t;
    }();
    return table;
}

}  // namespace snapkv::quant_detail
