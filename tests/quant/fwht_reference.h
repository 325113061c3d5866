// ggml's Walsh-Hadamard transform (ggml-cpu ops.cpp ggml_compute_forward_fwht, which a rotated
// quantized cache uses: llama.cpp src/llama-kv-cache.cpp attn_rot_k / attn_rot_v), written out
// here from that code as the tests' reference: each block of n values scaled by 1 / sqrtf(n),
// then butterflies (u + v, u - v) of span 1, 2, ... n / 2, in this order.
#pragma once

#include <cmath>
#include <cstdint>

namespace snapkv::test {

inline void ggml_fwht_blocks(float* x, int64_t blocks, int64_t n) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(n));
    for (int64_t b = 0; b < blocks; ++b) {
        float* p = x + b * n;
        for (int64_t j = 0; j < n; ++j) p[j] *= scale;
        for (int64_t len = 1; len < n; len *= 2)
            for (int64_t i = 0; i < n; i += 2 * len)
                for (int64_t j = i; j < i + len; ++j) {
                    const float u = p[j], v = p[j + len];
                    p[j] = u + v;
                    p[j + len] = u - v;
                }
    }
}

}  // namespace snapkv::test
