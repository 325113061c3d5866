// Expected attention (kvpress expected_attention_press.py, ExpectedAttentionPress with its
// defaults: 512 future positions, n_sink 4, covariance and value norms on, epsilon 0). The queries
// to come are modelled by the mean mu and covariance S of the pre-RoPE queries of positions
// n_sink .. L - 1, both rotated by the RoPE of the next 512 positions averaged (R): then a key k
// expects the attention softmax_k(k . R mu / sqrt(D) + k^T R S R^T k / (2 D)) (the mean of
// exp(q . k / sqrt(D)) under a Gaussian q), averaged over the query heads of its KV group and
// scaled by ||v||. The first n_sink positions are always kept (their score is the maximum + 1);
// no window (the table's fixed_window 0). Inputs: LayerCapture's query statistics, future_rope
// and value_norms, which the table row declares (its captures) and so prefill records.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, L = prompt tokens, D = head_dim,
// F = queries kept as they are (16), n = L - n_sink.
#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "core/common/errors.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class ExpectedAttentionRule : public PolicyRule {
public:
    at::Tensor score_tensor(const LayerScorer& layer, const SelectionParams& p, int64_t) const override {
        const LayerCapture& c = layer.capture();
        if (!c.query_head.defined() || !c.future_rope.defined() || !c.value_norms.defined())
            throw InputError(
                "policy: expected_attention needs the query statistics, RoPE and value norms that "
                "prefill records for it (the table row's captures), which this prefill did not; allowed: "
                "another policy, or a prefill that records them");
        const int64_t L = layer.n_tokens(), H = layer.n_head(), Hkv = layer.n_head_kv(), D = layer.head_dim();
        const int64_t ns = p.n_sink;
        const int64_t F = c.query_head.size(1);
        if (ns > F && ns < L)
            throw InputError("n_sink: " + std::to_string(ns) + " is out of range for expected_attention; allowed 0.." +
                             std::to_string(F) + " (prefill keeps the first " + std::to_string(F) +
                             " queries apart from the statistics)");
        // Statistics of positions [ns, L): those of [F, L), plus the kept queries ns .. F - 1
        // (Welford's update, in double).
        double n = double(c.query_count);
        at::Tensor mean = c.query_count > 0 ? c.query_mean.clone() : at::zeros({H, D}, at::kDouble);  // [H, D]
        at::Tensor m2 = c.query_count > 0 ? c.query_m2.clone() : at::zeros({H, D, D}, at::kDouble);   // [H, D, D]
        for (int64_t i = ns; i < F; ++i) {
            const at::Tensor q = c.query_head.select(1, i).to(at::kDouble);  // [H, D]
            n += 1.0;
            const at::Tensor delta = q - mean;
            mean += delta / n;
            m2 += delta.unsqueeze(2) * (q - mean).unsqueeze(1);
        }
        // kvpress: cov = centred^T centred / (L - n_sink), mu, both in float32, then rotated:
        // mu R^T and R cov R^T with future_rope = R^T.
        const at::Tensor rot = c.future_rope.to(at::kFloat);                         // [D, D] = R^T
        const at::Tensor mu = mean.to(at::kFloat).matmul(rot);                       // [H, D]
        const at::Tensor cov = rot.t().matmul((m2 / n).to(at::kFloat)).matmul(rot);  // [H, D, D]
        // Scores of the keys after the sinks, per query head: mu.k / sqrt(D) + k^T cov k / D / 2.
        // Per KV head one product of its keys with its G query heads' covariances side by side
        // ([n, D] x [D, G D], in chunks of keys that stay in cache), instead of repeating the
        // keys G times: the same multiply-adds in a GEMM of a better shape.
        const int64_t nk = L - ns, G = H / Hkv;
        // The keys as stored (float32, or a 16-bit cache's own rows), widened a chunk at a time.
        const at::Tensor keys_all = c.keys.narrow(1, ns, nk).to(at::kCPU);  // [Hkv, n, D]
        at::Tensor s = at::empty({H, nk}, at::kFloat);                      // [H, n]
        constexpr int64_t kChunk = 2048;
        for (int64_t kv = 0; kv < Hkv; ++kv) {
            const at::Tensor covs = cov.narrow(0, kv * G, G).permute({1, 0, 2}).reshape({D, G * D});  // [D, G D]
            const at::Tensor mus = mu.narrow(0, kv * G, G).t().contiguous();                          // [D, G]
            for (int64_t s0 = 0; s0 < nk; s0 += kChunk) {
                const int64_t n = std::min(kChunk, nk - s0);
                const at::Tensor kk = keys_all.select(0, kv).narrow(0, s0, n).to(at::kFloat);          // [n, D]
                const at::Tensor quad = (at::mm(kk, covs).view({n, G, D}) * kk.unsqueeze(1)).sum(-1);  // [n, G]
                const at::Tensor lin = at::mm(kk, mus);                                                // [n, G]
                s.narrow(0, kv * G, G).narrow(1, s0, n).copy_((lin / std::sqrt(double(D)) + quad / double(D) / 2.0).t());
            }
        }
        s = at::softmax(s, -1).view({Hkv, H / Hkv, nk}).mean(1);  // [Hkv, n]
        s = s * c.value_norms.narrow(1, ns, nk).to(at::kFloat);   // (scores + 0) * ||v||
        const float top = s.numel() > 0 ? s.max().item<float>() + 1.0f : 1.0f;
        const at::Tensor out = at::cat({at::full({Hkv, ns}, top, s.options()), s}, 1);  // [Hkv, L]
        return out;
    }
};

}  // namespace

const PolicyRule& expected_attention_rule() {
    static const ExpectedAttentionRule rule;
    return rule;
}

}  // namespace snapkv
