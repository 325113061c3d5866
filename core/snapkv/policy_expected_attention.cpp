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
// The quadratic form is the cost (a [L, D] x [D, G D] product per KV head: seconds a layer for an
// 8B model at 32K), and n_sink changes it only through the kept queries n_sink .. F - 1: the
// statistics of the queries F .. L - 1 are fixed. Two sets' statistics combine exactly (Chan,
// Golub and LeVeque): M2(A + B) = M2(A) + M2(B) + nA nB / (nA + nB) (mA - mB)(mA - mB)^T, so
// from an anchor a, M2 of the queries n_sink .. L - 1 is M2(a) plus or minus a term of rank
// |n_sink - a| + 1, and k^T R M2 R^T k is the anchor's quadratic plus or minus a sum of squares
// (k . R u)^2. The anchors' quadratics ([H, L] float32 each, kept with the scorer:
// LayerScorer::cached_derived) are a = F (the direct product, once per layer) and the default
// n_sink (from F by the update); a retune of n_sink reads the nearer one and scores the keys
// against at most 8 directions per query head (core/quant's many-row kernel), the mean's included.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, L = prompt tokens, D = head_dim,
// F = queries kept as they are (16), n = L - n_sink, B = kept queries between an anchor and
// n_sink, r = directions per query head, N = keys scored.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/common/errors.h"
#include "core/quant/qkernels.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

// Keys per product of the direct form (a chunk and its [N, G D] product stay in cache), and per
// pass of the low-rank update (its [H, r, N] projections stay small).
constexpr int64_t kChunk = 2048;
constexpr int64_t kUpdateChunk = 8192;

// k^T R M2(F) R^T k for every key k and query head (M2(F): the centred sum of outer products of
// the queries F .. L - 1, query_m2), directly: per KV head one product of its keys with its G
// query heads' rotated M2 side by side ([N, D] x [D, G D], in chunks of keys), instead of
// repeating the keys G times. The rotation in double, the products in float32, as kvpress's on a
// float32 model. [H, L] float32; zeros when no query lies past F (prompts of at most F tokens).
at::Tensor fixed_quadratic(const LayerScorer& layer) {
    const LayerCapture& c = layer.capture();
    const int64_t L = layer.n_tokens(), H = layer.n_head(), Hkv = layer.n_head_kv(), D = layer.head_dim();
    const int64_t G = H / Hkv;
    at::Tensor base = at::zeros({H, L}, at::kFloat);  // [H, L]
    if (c.query_count == 0) return base;
    const at::Tensor rot = c.future_rope.to(at::kCPU, at::kDouble);  // [D, D] = R^T
    const at::Tensor m2 = rot.t().matmul(c.query_m2.to(at::kCPU, at::kDouble)).matmul(rot).to(at::kFloat);  // [H, D, D]
    const at::Tensor keys = c.keys.to(at::kCPU);  // [Hkv, L, D]
    for (int64_t kv = 0; kv < Hkv; ++kv) {
        const at::Tensor m2s = m2.narrow(0, kv * G, G).permute({1, 0, 2}).reshape({D, G * D});  // [D, G D]
        for (int64_t s0 = 0; s0 < L; s0 += kChunk) {
            const int64_t n = std::min(kChunk, L - s0);
            const at::Tensor kk = keys.select(0, kv).narrow(0, s0, n).to(at::kFloat);             // [n, D]
            const at::Tensor quad = (at::mm(kk, m2s).view({n, G, D}) * kk.unsqueeze(1)).sum(-1);  // [n, G]
            base.narrow(0, kv * G, G).narrow(1, s0, n).copy_(quad.t());
        }
    }
    return base;
}

// Count and mean (double, [H, D]) of the queries x .. L - 1 (x <= F): the statistics of F .. L - 1
// and the kept queries x .. F - 1.
struct Moments {
    double count = 0.0;
    at::Tensor mean;  // [H, D] float64
};

Moments moments_from(const LayerCapture& c, int64_t x, int64_t n_head, int64_t head_dim) {
    const int64_t F = c.query_head.size(1);
    Moments m;
    m.count = double(c.query_count + (F - x));
    at::Tensor sum = c.query_count > 0 ? c.query_mean.to(at::kCPU, at::kDouble) * double(c.query_count)
                                       : at::zeros({n_head, head_dim}, at::kDouble);  // [H, D]
    if (x < F) sum = sum + c.query_head.narrow(1, x, F - x).to(at::kCPU, at::kDouble).sum(1);
    m.mean = m.count > 0 ? sum / m.count : sum;
    return m;
}

// From the anchor's quadratic (k^T R M2(a) R^T k, [H, L]) that of the queries x .. L - 1 for the keys
// k0 .. L - 1, into quad ([H, L - k0] float32), and with `lin` also lin[h, j] = k . R mu(x). The
// kept queries between a and x (set B) join M2(a) when x < a and leave it when x > a:
// M2(x) = M2(a) +- (sum over B of (q - mB)(q - mB)^T + n_hi nB / n_lo (m_hi - mB)(m_hi - mB)^T),
// lo/hi the statistics from min(a, x) / max(a, x). The directions (those, then mu(x)) are made and
// rotated in double, scored against the keys in float32 (attention_score_rows: the keys as
// stored, 16-bit ones widened exactly), and the weighted squares summed onto the anchor in double.
void quadratic_from(const LayerScorer& layer, const at::Tensor& anchor, int64_t a, int64_t x, int64_t k0, float* quad,
                    float* lin) {
    const LayerCapture& c = layer.capture();
    const int64_t L = layer.n_tokens(), H = layer.n_head(), Hkv = layer.n_head_kv(), D = layer.head_dim();
    const int64_t G = H / Hkv, N = L - k0;
    const int64_t lo = std::min(a, x), hi = std::max(a, x), nb = hi - lo;
    const double sign = x < a ? 1.0 : -1.0;
    at::Tensor dirs = at::empty({H, 0, D}, at::kDouble);  // [H, r, D]
    double wd = 0.0;                                      // weight of the mean difference
    if (nb > 0) {
        const Moments m_hi = moments_from(c, hi, H, D), m_lo = moments_from(c, lo, H, D);
        const at::Tensor qb = c.query_head.narrow(1, lo, nb).to(at::kCPU, at::kDouble);  // [H, B, D]
        const at::Tensor mb = qb.mean(1);                                                // [H, D]
        wd = m_hi.count * double(nb) / m_lo.count;
        dirs = at::cat({qb - mb.unsqueeze(1), (m_hi.mean - mb).unsqueeze(1)}, 1);  // [H, B + 1, D]
    }
    const int64_t r_quad = dirs.size(1);
    if (lin) dirs = at::cat({dirs, moments_from(c, x, H, D).mean.unsqueeze(1)}, 1);  // [H, r, D]
    const int64_t r = dirs.size(1);
    // kvpress: mu R^T and R cov R^T with future_rope = R^T: each direction as the row u R^T.
    const at::Tensor u = dirs.matmul(c.future_rope.to(at::kCPU, at::kDouble)).to(at::kFloat).contiguous();  // [H, r, D]
    // The keys as the scorer reads them: [Hkv, L, D] rows of D contiguous values, float32 or 16-bit.
    at::Tensor k = c.keys.to(at::kCPU);
    const at::ScalarType kt = k.scalar_type();
    if ((kt != at::kFloat && kt != at::kHalf && kt != at::kBFloat16) || k.stride(2) != 1 || k.stride(1) != D)
        k = k.to(at::kFloat).contiguous();
    const RowFormat kf = k.scalar_type() == at::kHalf       ? RowFormat::F16
                         : k.scalar_type() == at::kBFloat16 ? RowFormat::BF16
                                                            : RowFormat::F32;
    const auto* kbase = static_cast<const char*>(k.data_ptr());
    const float* an = anchor.data_ptr<float>();
    at::Tensor proj = at::empty({H, r, std::min(kUpdateChunk, N)}, at::kFloat);  // [H, r, N] per pass
    for (int64_t s0 = 0; s0 < N; s0 += kUpdateChunk) {
        const int64_t n = std::min(kUpdateChunk, N - s0);
        float* pr = proj.data_ptr<float>();
        if (r > 0)
            attention_score_rows(u.data_ptr<float>(), kbase + (k0 + s0) * D * k.element_size(), kf, k.stride(0), Hkv,
                                 G * r, n, D, pr);  // [Hkv, G r, n] = [H, r, n]
        kernel_parallel_for(H, 1, [&](int64_t h0, int64_t h1) {
            std::vector<double> low(size_t(n), 0.0);  // [n]: the update, one direction at a time
            for (int64_t h = h0; h < h1; ++h) {
                const float* p = pr + h * r * n;  // [r, n]
                const float* base = an + h * L + k0 + s0;
                float* q = quad + h * N + s0;
                std::fill(low.begin(), low.end(), 0.0);
                for (int64_t i = 0; i < r_quad; ++i) {
                    const double w = i + 1 < r_quad ? 1.0 : wd;
                    const float* pi = p + i * n;
                    for (int64_t j = 0; j < n; ++j) low[size_t(j)] += w * double(pi[j]) * double(pi[j]);
                }
                for (int64_t j = 0; j < n; ++j) q[j] = float(double(base[j]) + sign * low[size_t(j)]);
                if (lin) std::copy(p + r_quad * n, p + (r_quad + 1) * n, lin + h * N + s0);
            }
        });
    }
}

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
        const int64_t nk = L - ns, G = H / Hkv;
        if (nk <= 0) return at::ones({Hkv, L}, at::kFloat);  // every position a sink
        // The nearer anchor: F (made directly) or the default n_sink (made from F once, at
        // prefill when scores are made ahead); a tie reads F.
        const at::Tensor fixed = layer.cached_derived("expected_attention quadratic from " + std::to_string(F),
                                                      [&] { return fixed_quadratic(layer); });  // [H, L]
        const int64_t def = std::min(SelectionParams().n_sink, F);
        int64_t a = F;
        at::Tensor anchor = fixed;  // [H, L]
        if (std::llabs(ns - def) < std::llabs(ns - F)) {
            a = def;
            anchor = layer.cached_derived("expected_attention quadratic from " + std::to_string(def), [&] {
                at::Tensor t = at::empty({H, L}, at::kFloat);  // [H, L]
                quadratic_from(layer, fixed, F, def, 0, t.data_ptr<float>(), nullptr);
                return t;
            });
        }
        at::Tensor quad = at::empty({H, nk}, at::kFloat);  // [H, n]
        at::Tensor lin = at::empty({H, nk}, at::kFloat);   // [H, n]
        quadratic_from(layer, anchor, a, ns, ns, quad.data_ptr<float>(), lin.data_ptr<float>());
        // Scores of the keys after the sinks, per query head: mu.k / sqrt(D) + k^T cov k / D / 2
        // with cov = M2 / n (kvpress: centred^T centred / (L - n_sink)).
        const double n = double(c.query_count + std::max<int64_t>(0, F - ns));
        at::Tensor s = lin / std::sqrt(double(D)) + quad * (n > 0 ? 1.0 / n : 0.0) / double(D) / 2.0;  // [H, n]
        s = at::softmax(s, -1).view({Hkv, G, nk}).mean(1);                                             // [Hkv, n]
        s = s * c.value_norms.narrow(1, ns, nk).to(at::kFloat);  // (scores + 0) * ||v||
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
