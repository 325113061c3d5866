// KeyDiff (Park et al. 2025, arXiv 2504.15364; kvpress keydiff_press.py): keys whose direction is
// least like the layer's mean key direction are kept. Per KV head, the anchor is the mean of the
// L2-normalised keys and the score minus each key's cosine similarity to it, over every prompt
// position (no window: the table's fixed_window 0). kvpress's one-shot press, not the paper's
// block-wise loop.
//
// Two passes over the keys on the kernel threads (norms and the anchor, then the similarities),
// instead of LibTorch's normalised copy and the cosine's own norms: at 32K tokens an 8B layer's
// keys are 128 MB, and each extra pass or copy of them is tens of milliseconds of a first retune.
#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "core/quant/qkernels.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {

namespace {

// sum_d a[d] * b[d] in eight running lanes (so the compiler can keep them in vector registers).
inline float dot(const float* a, const float* b, int64_t n) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t d = 0;
    for (; d + 8 <= n; d += 8)
        for (int i = 0; i < 8; ++i) lane[i] += a[d + i] * b[d + i];
    float s = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
    for (; d < n; ++d) s += a[d] * b[d];
    return s;
}

// Keys per work item: partial anchors are summed per item, then in item order (the same sum
// whatever the thread count).
constexpr int64_t kChunk = 1024;

class KeyDiffRule : public PolicyRule {
public:
    at::Tensor score_tensor(const LayerScorer& layer, const SelectionParams&, int64_t) const override {
        at::Tensor keys = layer.capture().keys.narrow(1, 0, layer.n_tokens());  // [Hkv, L, D]
        if (keys.scalar_type() != at::kFloat || keys.is_cuda() || keys.stride(2) != 1 || keys.stride(1) != keys.size(2))
            keys = keys.to(at::kCPU, at::kFloat).contiguous();
        const int64_t Hkv = keys.size(0), L = keys.size(1), D = keys.size(2), head_stride = keys.stride(0);
        const float* k = keys.data_ptr<float>();
        const int64_t chunks = (L + kChunk - 1) / kChunk;
        // Pass 1: each key's norm; per item, the sum of its keys / max(norm, 1e-12) (F.normalize).
        at::Tensor norms = at::empty({Hkv, L}, at::kFloat);  // [Hkv, L]
        float* nrm = norms.data_ptr<float>();
        std::vector<double> partial(static_cast<size_t>(Hkv * chunks * D), 0.0);
        kernel_parallel_for(Hkv * chunks, 1, [&](int64_t begin, int64_t end) {
            for (int64_t item = begin; item < end; ++item) {
                const int64_t h = item / chunks, s0 = (item % chunks) * kChunk, s1 = std::min(L, s0 + kChunk);
                double* acc = partial.data() + item * D;
                for (int64_t s = s0; s < s1; ++s) {
                    const float* row = k + h * head_stride + s * D;
                    const float n = std::sqrt(dot(row, row, D));
                    nrm[h * L + s] = n;
                    const double inv = 1.0 / double(std::max(n, 1e-12f));
                    for (int64_t d = 0; d < D; ++d) acc[d] += double(row[d]) * inv;
                }
            }
        });
        // The anchor (mean unit key) per head and its norm.
        std::vector<float> anchor(static_cast<size_t>(Hkv * D));
        std::vector<float> anchor_norm(static_cast<size_t>(Hkv));
        for (int64_t h = 0; h < Hkv; ++h) {
            double sq = 0.0;
            for (int64_t d = 0; d < D; ++d) {
                double sum = 0.0;
                for (int64_t c = 0; c < chunks; ++c) sum += partial[size_t((h * chunks + c) * D + d)];
                const float a = static_cast<float>(sum / double(L));
                anchor[size_t(h * D + d)] = a;
                sq += double(a) * a;
            }
            anchor_norm[size_t(h)] = std::max(static_cast<float>(std::sqrt(sq)), 1e-8f);
        }
        // Pass 2: minus the cosine similarity, each norm clamped at 1e-8 (torch's cosine_similarity).
        at::Tensor scores = at::empty({Hkv, L}, at::kFloat);  // [Hkv, L]
        float* out = scores.data_ptr<float>();
        kernel_parallel_for(Hkv * chunks, 1, [&](int64_t begin, int64_t end) {
            for (int64_t item = begin; item < end; ++item) {
                const int64_t h = item / chunks, s0 = (item % chunks) * kChunk, s1 = std::min(L, s0 + kChunk);
                const float* a = anchor.data() + h * D;
                for (int64_t s = s0; s < s1; ++s) {
                    const float* row = k + h * head_stride + s * D;
                    out[h * L + s] = -dot(row, a, D) / (std::max(nrm[h * L + s], 1e-8f) * anchor_norm[size_t(h)]);
                }
            }
        });
        return scores.to(layer.capture().keys.device());  // [Hkv, L]
    }
};

}  // namespace

const PolicyRule& keydiff_rule() {
    static const KeyDiffRule rule;
    return rule;
}

}  // namespace snapkv
