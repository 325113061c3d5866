// See sampler.h. top-k then top-p then temperature-scaled softmax, in that order like llama.cpp's
// default chain (minus the penalties, which we do not apply).
#include "core/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/common/errors.h"

namespace snapkv {

void validate_sampling(const SamplingParams& p) {
    if (p.greedy) return;
    if (!(p.temperature > 0.0f) || !std::isfinite(p.temperature))
        throw InputError("sampling: temperature " + std::to_string(p.temperature) + " must be > 0");
    if (p.top_k < 0) throw InputError("sampling: top-k " + std::to_string(p.top_k) + " must be >= 0");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        throw InputError("sampling: top-p " + std::to_string(p.top_p) + " must be in (0, 1]");
}

int32_t argmax(const float* logits, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (logits[i] > logits[best]) best = i;
    return static_cast<int32_t>(best);
}

std::vector<float> Sampler::softmax(const float* logits, int64_t n, float temperature) {
    std::vector<float> p(static_cast<size_t>(n));
    const float mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
        p[static_cast<size_t>(i)] = std::exp((logits[i] - mx) / temperature);
        sum += p[static_cast<size_t>(i)];
    }
    for (auto& v : p) v = static_cast<float>(v / sum);
    return p;
}

Sampler::Sampler(const SamplingParams& p) : m_p(p), m_rng(p.seed) { validate_sampling(p); }

int32_t Sampler::sample(const at::Tensor& logits_in) {
    at::Tensor logits = logits_in.to(at::kCPU, at::kFloat).contiguous().view({-1});  // [V]
    const float* l = logits.data_ptr<float>();
    const int64_t n = logits.numel();
    if (m_p.greedy) return argmax(l, n);

    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto by_logit = [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
    size_t keep = idx.size();
    if (m_p.top_k > 0 && static_cast<size_t>(m_p.top_k) < keep) {
        keep = static_cast<size_t>(m_p.top_k);
        std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(keep), idx.end(), by_logit);
    } else {
        std::sort(idx.begin(), idx.end(), by_logit);
    }
    idx.resize(keep);
    std::vector<double> prob(keep);
    const double mx = l[idx[0]];
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += prob[i] = std::exp((l[idx[i]] - mx) / m_p.temperature);
    if (m_p.top_p < 1.0f) {
        double cum = 0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            cum += prob[i] / sum;
            if (cum >= m_p.top_p) {
                cut = i + 1;
                break;
            }
        }
        prob.resize(cut);
        idx.resize(cut);
    }
    std::discrete_distribution<size_t> dist(prob.begin(), prob.end());
    return idx[dist(m_rng)];
}

}  // namespace snapkv
