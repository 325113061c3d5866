// LayerScorer against the naive loop reference (naive_reference.h) and against a direct ATen
// recomputation per window: votes for every window, the heatmap rows, GQA head mapping, and the
// capture checks. Selection is tested in test_selector.cpp.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Wmax = captured window, W = window,
// D = head_dim, P = L - W.
#include <cmath>
#include <limits>
#include <string>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/common/errors.h"
#include "core/snapkv/layer_scorer.h"
#include "tests/snapkv/naive_reference.h"
#include "tests/snapkv/snapkv_test_util.h"
#include "tests/snapkv/tensor_compare.h"

using namespace snapkv;
using namespace snapkv_test;
using Catch::Matchers::Contains;

namespace {

// Votes of the last W queries recomputed from scratch with ATen: [H, L - W].
at::Tensor direct_votes(const LayerCapture& cap, int64_t W) {
    const int64_t H = cap.window_queries.size(0), Wmax = cap.window_queries.size(1);
    const int64_t D = cap.window_queries.size(2), Hkv = cap.keys.size(0), L = cap.keys.size(1);
    at::Tensor q = cap.window_queries.narrow(1, Wmax - W, W);                // [H, W, D]
    at::Tensor k = cap.keys.repeat_interleave(H / Hkv, 0);                   // [H, L, D]
    at::Tensor s = at::matmul(q, k.transpose(1, 2)) / std::sqrt(double(D));  // [H, W, L]
    at::Tensor pos_q = at::arange(L - W, L, at::kLong).view({W, 1});
    at::Tensor pos_k = at::arange(0, L, at::kLong).view({1, L});
    s = s.masked_fill(pos_k > pos_q, -std::numeric_limits<float>::infinity());
    return at::softmax(s, -1).narrow(2, 0, L - W).sum(1);  // [H, L - W]
}

}  // namespace

TEST_CASE("votes equal the naive loop reference for every window", "[snapkv]") {
    const auto shape = GENERATE(std::vector<int64_t>{4, 2, 8, 40, 16},  // H, Hkv, Wmax, L, D
                                std::vector<int64_t>{3, 3, 6, 20, 8},
                                std::vector<int64_t>{6, 1, 5, 5 + 1, 4},  // one prefix token
                                std::vector<int64_t>{2, 2, 9, 9, 8});     // Wmax = L
    const NaiveCapture c = random_capture(shape[0], shape[1], shape[2], shape[3], shape[4], 7);
    LayerScorer scorer(to_layer_capture(c));
    CHECK(scorer.n_head() == c.H);
    CHECK(scorer.n_head_kv() == c.Hkv);
    CHECK(scorer.max_window() == c.Wmax);
    CHECK(scorer.n_tokens() == c.L);
    CHECK(scorer.head_dim() == c.D);
    for (int64_t W = 1; W <= std::min(c.Wmax, c.L - 1); ++W) {
        INFO("window " << W);
        CHECK_TENSORS_CLOSE(scorer.votes(W), rows_to_tensor(naive_votes(c, W)), 2e-6, 2e-5);
    }
}

TEST_CASE("votes from the checkpoints and recomputed rows equal a direct recomputation for every window", "[snapkv]") {
    const NaiveCapture c = random_capture(6, 2, 32, 300, 32, 11, 3.0f);
    const LayerCapture cap = to_layer_capture(c);
    LayerScorer scorer(cap);
    for (int64_t W = 1; W <= 32; ++W) {
        INFO("window " << W);
        CHECK_TENSORS_CLOSE(scorer.votes(W), direct_votes(cap, W), 1e-5, 1e-4);
    }
}

TEST_CASE("window attention rows are the causal softmax rows of one query head", "[snapkv]") {
    const NaiveCapture c = random_capture(4, 2, 8, 30, 8, 3);
    LayerScorer scorer(to_layer_capture(c));
    for (int64_t head : {0, 1, 3}) {
        for (int64_t W : {1, 5, 8}) {
            INFO("head " << head << " window " << W);
            at::Tensor a = scorer.window_attention(head, W);  // [W, L]
            REQUIRE(a.sizes() == at::IntArrayRef({W, c.L}));
            Rows want;
            for (int64_t i = 0; i < W; ++i) want.push_back(naive_attention_row(c, head, c.Wmax - W + i));
            CHECK_TENSORS_CLOSE(a, rows_to_tensor(want), 1e-6, 1e-5);
            CHECK_TENSORS_CLOSE(a.sum(1), at::ones({W}), 1e-5, 0.0);
            // The first window query may not see the later window keys.
            if (W > 1) CHECK(a[0].narrow(0, c.L - W + 1, W - 1).abs().max().item<float>() == 0.0f);
        }
    }
}

TEST_CASE("query heads of one group read their shared KV head", "[snapkv]") {
    // Two query heads with identical queries in the same group score identically; in another group
    // (other keys) they do not.
    NaiveCapture c = random_capture(4, 2, 4, 20, 8, 5);
    for (int64_t i = 0; i < c.Wmax * c.D; ++i) {
        c.q[size_t(1 * c.Wmax * c.D + i)] = c.q[size_t(i)];  // head 1 = head 0 (group 0)
        c.q[size_t(2 * c.Wmax * c.D + i)] = c.q[size_t(i)];  // head 2 = head 0 (group 1)
    }
    LayerScorer scorer(to_layer_capture(c));
    at::Tensor v = scorer.votes(4);
    CHECK_TENSORS_CLOSE(v[1], v[0], 0.0, 0.0);
    CHECK_FALSE(compare_tensors(v[2], v[0], 1e-4, 1e-3).ok);
}

TEST_CASE("votes of W queries sum to W minus the attention they pay inside the window", "[snapkv]") {
    const NaiveCapture c = random_capture(2, 1, 16, 64, 8, 9);
    LayerScorer scorer(to_layer_capture(c));
    for (int64_t W : {1, 7, 16}) {
        at::Tensor total = at::zeros({c.H}, at::kFloat);
        for (int64_t h = 0; h < c.H; ++h) total[h] = scorer.window_attention(h, W).narrow(1, 0, c.L - W).sum();
        CHECK_TENSORS_CLOSE(scorer.votes(W).sum(1), total, 1e-5, 1e-5);
        CHECK((scorer.votes(W).sum(1) <= W + 1e-4).all().item<bool>());
    }
}

TEST_CASE("a window outside 1..min(Wmax, L - 1) is an input error", "[snapkv]") {
    const NaiveCapture c = random_capture(2, 1, 8, 8, 4, 1);  // Wmax = L = 8
    LayerScorer scorer(to_layer_capture(c));
    CHECK_THAT(input_error_of([&] { scorer.votes(0); }), Contains("window 0") && Contains("1..7"));
    CHECK_THAT(input_error_of([&] { scorer.votes(8); }), Contains("window 8"));
    CHECK_THAT(input_error_of([&] { scorer.votes(9); }), Contains("window 9"));
    CHECK_THAT(input_error_of([&] { scorer.window_attention(2, 4); }), Contains("head 2"));
    CHECK_THAT(input_error_of([&] { scorer.window_attention(0, 8); }), Contains("window 8"));
}

TEST_CASE("a capture with missing or mismatched tensors is an input error", "[snapkv]") {
    const NaiveCapture c = random_capture(4, 2, 4, 10, 8, 1);
    SECTION("no keys") {
        LayerCapture cap = to_layer_capture(c);
        cap.keys = at::Tensor();
        CHECK_THAT(input_error_of([&] { LayerScorer s(cap); }), Contains("no keys"));
    }
    SECTION("2-D queries") {
        LayerCapture cap = to_layer_capture(c);
        cap.window_queries = cap.window_queries[0];
        CHECK_THAT(input_error_of([&] { LayerScorer s(cap); }), Contains("[4, 8]") && Contains("3-D"));
    }
    SECTION("head_dim mismatch") {
        LayerCapture cap = to_layer_capture(c);
        cap.keys = cap.keys.narrow(2, 0, 4);
        CHECK_THAT(input_error_of([&] { LayerScorer s(cap); }), Contains("head_dim 4"));
    }
    SECTION("n_head not a multiple of n_head_kv") {
        LayerCapture cap = to_layer_capture(c);
        cap.keys = at::cat({cap.keys, cap.keys.narrow(0, 0, 1)}, 0);  // 3 KV heads
        CHECK_THAT(input_error_of([&] { LayerScorer s(cap); }), Contains("n_head 4") && Contains("n_head_kv 3"));
    }
    SECTION("captured window longer than the prompt") {
        LayerCapture cap = to_layer_capture(c);
        cap.keys = cap.keys.narrow(1, 0, 3);
        CHECK_THAT(input_error_of([&] { LayerScorer s(cap); }), Contains("captured window 4"));
    }
    SECTION("h2o of the wrong shape") {
        LayerCapture cap = to_layer_capture(c);
        cap.h2o = cap.h2o.narrow(1, 0, 9);
        CHECK_THAT(input_error_of([&] { LayerScorer s(cap); }), Contains("h2o [4, 9]") && Contains("[4, 10]"));
    }
}

TEST_CASE("captures in another floating type are scored in float32", "[snapkv]") {
    const NaiveCapture c = random_capture(2, 2, 4, 16, 8, 2);
    LayerCapture cap = to_layer_capture(c);
    LayerCapture other = cap;
    other.window_queries = cap.window_queries.to(at::kDouble);
    other.keys = cap.keys.to(at::kDouble);
    LayerScorer a(cap), b(other);
    CHECK(b.votes(4).scalar_type() == at::kFloat);
    CHECK_TENSORS_CLOSE(b.votes(4), a.votes(4), 1e-6, 1e-5);
}

TEST_CASE("the scorer keeps a few float32 checkpoints, not a running sum per window row", "[snapkv]") {
    // Memory: [H, Wmax, L] running sums were 1.1 GB for SmolLM2 at 8K tokens. With
    // Wmax = 128 the scorer keeps 4 checkpoint rows per head (1/32 of that) plus the last window's
    // votes, and every window still gets the exact float32 votes.
    const int64_t H = 4, Hkv = 2, Wmax = 128, L = 600, D = 16;
    const NaiveCapture c = random_capture(H, Hkv, Wmax, L, D, 21, 2.0f);
    const LayerCapture cap = to_layer_capture(c);
    LayerScorer scorer(cap);
    CHECK(scorer.checkpoint_stride() == 32);
    const int64_t full_running_sums = H * Wmax * L * 4;
    CHECK(scorer.cache_bytes() == H * 4 * L * 4);
    for (int64_t W = 1; W <= Wmax; ++W) {
        INFO("window " << W);
        CHECK_TENSORS_CLOSE(scorer.votes(W), direct_votes(cap, W), 1e-5, 1e-4);
    }
    CHECK(scorer.cache_bytes() == H * 4 * L * 4 + H * (L - Wmax) * 4);
    CHECK(scorer.cache_bytes() * 10 < full_running_sums);
}

TEST_CASE("a captured window above 128 spreads at most 4 checkpoints over it", "[snapkv]") {
    const NaiveCapture c = random_capture(2, 1, 300, 420, 8, 4, 2.0f);
    const LayerCapture cap = to_layer_capture(c);
    LayerScorer scorer(cap);
    CHECK(scorer.checkpoint_stride() == 75);  // ceil(300 / 4)
    CHECK(LayerScorer::checkpoints_for(300, 420) == 4);
    for (int64_t W : {1, 37, 74, 75, 76, 150, 151, 266, 299, 300}) {
        INFO("window " << W);
        CHECK_TENSORS_CLOSE(scorer.votes(W), direct_votes(cap, W), 1e-5, 1e-4);
    }
    // Asking again for a window returns its kept votes; another window replaces them.
    at::Tensor a = scorer.votes(100);
    CHECK(scorer.votes(100).is_same(a));
    CHECK_FALSE(scorer.votes(101).is_same(a));
}

TEST_CASE("long prompts get finer checkpoints, and every window still gets its votes", "[snapkv]") {
    // A first retune to a window off the checkpoints recomputes W mod S rows against all L keys:
    // from 16K tokens the stride halves, from 32K it is a quarter of the GEMM block.
    CHECK(LayerScorer::block_rows_for(128) == 32);
    CHECK(LayerScorer::stride_for(128, 16383) == 32);
    CHECK(LayerScorer::stride_for(128, 16384) == 16);
    CHECK(LayerScorer::stride_for(128, 32768) == 8);
    CHECK(LayerScorer::checkpoints_for(128, 32768) == 16);
    CHECK(LayerScorer::stride_for(300, 40000) == 19);  // ceil(75 / 4)
    // A small head at 32K tokens: Wmax 64, so B = 32, S = 8 and 8 checkpoints of [H, L].
    const int64_t H = 2, Hkv = 1, Wmax = 64, L = 32768, D = 8;
    const NaiveCapture c = random_capture(H, Hkv, Wmax, L, D, 5, 3.0f);
    const LayerCapture cap = to_layer_capture(c);
    LayerScorer scorer(cap);
    CHECK(scorer.checkpoint_stride() == 8);
    CHECK(scorer.cache_bytes() == H * 8 * L * 4);
    for (int64_t W : {1, 7, 8, 9, 15, 16, 31, 32, 33, 40, 47, 63, 64}) {
        INFO("window " << W);
        CHECK_TENSORS_CLOSE(scorer.votes(W), direct_votes(cap, W), 1e-5, 1e-4);
    }
}

TEST_CASE("derived scores are made once per key and kept with the scorer", "[snapkv]") {
    const NaiveCapture c = random_capture(4, 2, 8, 40, 16, 9);
    LayerScorer scorer(to_layer_capture(c));
    const int64_t before = scorer.cache_bytes();
    int made = 0;
    auto make = [&made] {
        ++made;
        return at::arange(10, at::kFloat);
    };
    const at::Tensor a = scorer.cached_scores("keydiff hs2", make);
    const at::Tensor b = scorer.cached_scores("keydiff hs2", make);
    CHECK(made == 1);
    CHECK(b.is_same(a));
    CHECK(scorer.cache_bytes() == before + 10 * 4);
    const at::Tensor other = scorer.cached_scores("keydiff hs4", make);
    CHECK(made == 2);
    CHECK_FALSE(other.is_same(a));
}

TEST_CASE("a policy with no score tensor does not push kept scores out", "[snapkv]") {
    const NaiveCapture c = random_capture(4, 2, 8, 40, 16, 9);
    LayerScorer scorer(to_layer_capture(c));
    int made = 0;
    auto make = [&made] {
        ++made;
        return at::arange(10, at::kFloat);
    };
    scorer.cached_scores("expected_attention hs2 sink4", make);
    // More keys with nothing to keep than the scorer keeps tensors: none of them evicts it.
    for (int i = 0; i < 8; ++i)
        CHECK_FALSE(scorer.cached_scores("snapkv w" + std::to_string(i), [] { return at::Tensor(); }).defined());
    scorer.cached_scores("expected_attention hs2 sink4", make);
    CHECK(made == 1);
}

TEST_CASE("derived tensors are made once, outlive the kept scores and may be asked for while scores are made",
          "[snapkv]") {
    const NaiveCapture c = random_capture(4, 2, 8, 40, 16, 9);
    LayerScorer scorer(to_layer_capture(c));
    const int64_t before = scorer.cache_bytes();
    int derived = 0;
    auto make_derived = [&derived] {
        ++derived;
        return at::ones({4, 40}, at::kFloat);
    };
    // Scores whose make reads a derived tensor (ExpectedAttention's anchors), under more keys than
    // the scorer keeps scores for.
    for (int i = 0; i < 6; ++i)
        scorer.cached_scores("expected_attention sink" + std::to_string(i),
                             [&] { return scorer.cached_derived("quadratic", make_derived).sum(0); });
    CHECK(derived == 1);
    CHECK(scorer.cache_bytes() == before + 4 * 40 * 4 + 4 * 40 * 4);  // the derived tensor + four kept scores
    CHECK(scorer.cached_derived("quadratic", make_derived).sum().item<float>() == 160.0f);
    CHECK(derived == 1);
    CHECK_FALSE(scorer.cached_derived("nothing", [] { return at::Tensor(); }).defined());
}
