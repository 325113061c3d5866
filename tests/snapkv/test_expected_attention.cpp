// ExpectedAttention's scores against kvpress's formula computed directly, in double, from every
// query: mean and covariance of the pre-RoPE queries n_sink .. L - 1, rotated by the averaged
// future RoPE, k . R mu / sqrt(D) + k^T R cov R^T k / (2 D), softmax over the keys after the sinks,
// mean over each KV group, times ||v||, the sinks above every other score. The policy builds the
// statistics of any n_sink from prefill's (the queries 16 .. L - 1 summarised, the first 16 kept)
// and its anchors' quadratic forms by low-rank updates (policy_expected_attention.cpp); here the
// first queries differ from the rest in scale and mean, so that a wrong update term is seen.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, L = prompt tokens, D = head_dim,
// F = queries kept as they are (16), n = L - n_sink.
#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/policy_rule.h"
#include "core/snapkv/policy_table.h"
#include "tests/snapkv/tensor_compare.h"

using namespace snapkv;

namespace {

struct Prompt {
    at::Tensor queries;  // [H, L, D] float64 pre-RoPE queries
    LayerCapture capture;
};

// Queries, keys and values at random; the first F queries at three times the scale around a mean of
// their own (attention-sink-like), the averaged RoPE a random orthogonal matrix.
Prompt random_prompt(int64_t H, int64_t Hkv, int64_t D, int64_t L, at::ScalarType key_type, uint64_t seed) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const int64_t F = std::min<int64_t>(16, L);
    Prompt p;
    at::Tensor q = at::randn({H, L, D}, gen, at::kDouble);  // [H, L, D]
    q.narrow(1, 0, F).mul_(3.0).add_(at::randn({H, 1, D}, gen, at::kDouble) * 2.0);
    p.queries = q;
    LayerCapture& c = p.capture;
    c.window_queries = at::randn({H, 8, D}, gen);                  // [H, 8, D]
    c.keys = (at::randn({Hkv, L, D}, gen) * 0.7).to(key_type);     // [Hkv, L, D]
    c.query_head = q.narrow(1, 0, F).to(at::kFloat).contiguous();  // [H, F, D]
    c.query_count = L - F;
    const at::Tensor rest = q.narrow(1, F, L - F).to(at::kFloat).to(at::kDouble);                    // [H, L - F, D]
    c.query_mean = rest.mean(1);                                                                     // [H, D]
    const at::Tensor centred = rest - c.query_mean.unsqueeze(1);                                     // [H, L - F, D]
    c.query_m2 = centred.transpose(1, 2).matmul(centred);                                            // [H, D, D]
    c.future_rope = std::get<0>(at::linalg_qr(at::randn({D, D}, gen, at::kDouble))).to(at::kFloat);  // [D, D]
    c.value_norms = at::rand({Hkv, L}, gen) + 0.5;                                                   // [Hkv, L]
    // The queries as prefill keeps them: float32 (the statistics of the rest from float32 values).
    p.queries = at::cat({c.query_head.to(at::kDouble), rest}, 1);  // [H, L, D]
    return p;
}

// kvpress's ExpectedAttentionPress.score, in double: [Hkv, L].
at::Tensor direct_scores(const Prompt& p, int64_t n_sink) {
    const LayerCapture& c = p.capture;
    const int64_t H = p.queries.size(0), L = p.queries.size(1), D = p.queries.size(2), Hkv = c.keys.size(0);
    const int64_t n = L - n_sink, G = H / Hkv;
    const at::Tensor q = p.queries.narrow(1, n_sink, n);  // [H, n, D]
    const at::Tensor mu = q.mean(1);                      // [H, D]
    const at::Tensor centred = q - mu.unsqueeze(1);
    const at::Tensor cov = centred.transpose(1, 2).matmul(centred) / double(n);                   // [H, D, D]
    const at::Tensor rot = c.future_rope.to(at::kDouble);                                         // [D, D] = R^T
    const at::Tensor mu_r = mu.matmul(rot);                                                       // [H, D]
    const at::Tensor cov_r = rot.t().matmul(cov).matmul(rot);                                     // [H, D, D]
    const at::Tensor keys = c.keys.to(at::kDouble).narrow(1, n_sink, n).repeat_interleave(G, 0);  // [H, n, D]
    const at::Tensor lin = keys.matmul(mu_r.unsqueeze(2)).squeeze(2);                             // [H, n]
    const at::Tensor quad = (keys.matmul(cov_r) * keys).sum(-1);                                  // [H, n]
    at::Tensor s = at::softmax(lin / std::sqrt(double(D)) + quad / double(D) / 2.0, -1);          // [H, n]
    s = s.view({Hkv, G, n}).mean(1) * c.value_norms.narrow(1, n_sink, n).to(at::kDouble);         // [Hkv, n]
    const double top = s.max().item<double>() + 1.0;
    return at::cat({at::full({Hkv, n_sink}, top, s.options()), s}, 1);  // [Hkv, L]
}

}  // namespace

TEST_CASE("expected_attention scores every n_sink as the direct formula over the queries after the sinks",
          "[snapkv][policy]") {
    const at::ScalarType key_type = GENERATE(at::kFloat, at::kHalf);
    const int64_t H = 4, Hkv = 2, D = 16, L = 90;
    const Prompt p = random_prompt(H, Hkv, D, L, key_type, 7);
    const PolicyRule& rule = expected_attention_rule();
    // One scorer retuned through every n_sink, the anchors' quadratics made on the way (the default
    // n_sink's first, as prefill makes it), and a fresh scorer per n_sink.
    const LayerScorer retuned(p.capture);
    for (int64_t n_sink : {4, 0, 1, 2, 3, 5, 6, 8, 10, 11, 12, 15, 16}) {
        CAPTURE(n_sink, key_type);
        SelectionParams params;
        params.policy = Policy::ExpectedAttention;
        params.n_sink = n_sink;
        const at::Tensor want = direct_scores(p, n_sink);  // [Hkv, L]
        CHECK_TENSORS_CLOSE(rule.score_tensor(retuned, params, 0), want, 1e-12, 1e-5);
        const LayerScorer fresh(p.capture);
        CHECK_TENSORS_CLOSE(rule.score_tensor(fresh, params, 0), want, 1e-12, 1e-5);
    }
}

TEST_CASE("expected_attention scores a prompt no longer than the kept queries from those alone", "[snapkv][policy]") {
    // L <= 16: prefill summarises no query (count 0); every statistic comes from the kept ones.
    const int64_t H = 4, Hkv = 2, D = 8, L = 12;
    const Prompt p = random_prompt(H, Hkv, D, L, at::kFloat, 11);
    REQUIRE(p.capture.query_count == 0);
    const LayerScorer scorer(p.capture);
    for (int64_t n_sink : {4, 0, 2, 6, 10}) {
        CAPTURE(n_sink);
        SelectionParams params;
        params.n_sink = n_sink;
        CHECK_TENSORS_CLOSE(expected_attention_rule().score_tensor(scorer, params, 0), direct_scores(p, n_sink), 1e-12,
                            1e-5);
    }
}
