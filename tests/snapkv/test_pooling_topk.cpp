// Hand-computed cases for the building blocks of the selection: pooling (max and avg, padding at
// the edges), the deterministic top-k, the budget's ratio form and the enum names. The numbers
// here are worked by hand from F.max_pool1d / F.avg_pool1d's definitions, not taken from our code.
//
// Dimensions: N = rows, P = prefix length, k = positions kept per row.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/common/errors.h"
#include "core/snapkv/ranking.h"
#include "core/snapkv/selector.h"
#include "tests/snapkv/snapkv_test_util.h"
#include "tests/snapkv/tensor_compare.h"

using namespace snapkv;
using namespace snapkv_test;
using Catch::Matchers::Contains;

namespace {

at::Tensor row(std::vector<float> v) {  // [1, P]
    return at::from_blob(v.data(), {1, int64_t(v.size())}, at::kFloat).clone();
}

std::vector<int64_t> as_vector(const at::Tensor& t) {  // [1, k] int64 -> k values
    at::Tensor c = t.contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace

TEST_CASE("max pooling takes the window maximum and the padding never wins", "[snapkv]") {
    SECTION("kernel 3 on positive scores") {
        CHECK_TENSORS_CLOSE(pool_scores(row({1, 3, 2, 5, 4}), 3, Pooling::Max), row({3, 3, 5, 5, 5}), 0.0, 0.0);
    }
    SECTION("kernel 3 on negative scores: the edges keep their own values, not 0") {
        CHECK_TENSORS_CLOSE(pool_scores(row({-1, -3, -2}), 3, Pooling::Max), row({-1, -1, -2}), 0.0, 0.0);
    }
    SECTION("kernel 5 reaches two positions either side") {
        CHECK_TENSORS_CLOSE(pool_scores(row({1, 3, 2, 5, 4}), 5, Pooling::Max), row({3, 5, 5, 5, 5}), 0.0, 0.0);
    }
    SECTION("a single peak spreads to its neighbours, forming a cluster") {
        CHECK_TENSORS_CLOSE(pool_scores(row({0, 0, 9, 0, 0, 0, 0, 1}), 3, Pooling::Max), row({0, 9, 9, 9, 0, 0, 1, 1}),
                            0.0, 0.0);
    }
}

TEST_CASE("average pooling counts the zero padding and divides by the kernel", "[snapkv]") {
    SECTION("kernel 3") {
        CHECK_TENSORS_CLOSE(pool_scores(row({1, 3, 2, 5, 4}), 3, Pooling::Avg),
                            row({4.f / 3, 2, 10.f / 3, 11.f / 3, 3}), 1e-6, 1e-6);
    }
    SECTION("kernel 3 on negative scores") {
        CHECK_TENSORS_CLOSE(pool_scores(row({-1, -3, -2}), 3, Pooling::Avg), row({-4.f / 3, -2, -5.f / 3}), 1e-6, 1e-6);
    }
    SECTION("kernel 5: the edge windows hold two padding zeros") {
        CHECK_TENSORS_CLOSE(pool_scores(row({1, 3, 2, 5, 4}), 5, Pooling::Avg),
                            row({6.f / 5, 11.f / 5, 3, 14.f / 5, 11.f / 5}), 1e-6, 1e-6);
    }
}

TEST_CASE("pooling propagates NaN like torch and sums around an infinity", "[snapkv]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    at::Tensor m = pool_scores(row({1, nan, 2, 3, 4}), 3, Pooling::Max);
    CHECK(std::isnan(m[0][0].item<float>()));
    CHECK(std::isnan(m[0][2].item<float>()));
    CHECK(m[0][3].item<float>() == 4.0f);
    CHECK(m[0][4].item<float>() == 4.0f);
    at::Tensor a = pool_scores(row({inf, 1, 2, 3, 4}), 3, Pooling::Avg);
    CHECK(a[0][1].item<float>() == inf);
    CHECK(a[0][2].item<float>() == Approx(2.0));  // (1 + 2 + 3) / 3, untouched by the inf
    CHECK(a[0][4].item<float>() == Approx(7.0 / 3));
}

TEST_CASE("kernel 1 and pooling none leave the scores unchanged", "[snapkv]") {
    const at::Tensor x = row({0.5f, -2, 7, 1});
    CHECK_TENSORS_CLOSE(pool_scores(x, 1, Pooling::Max), x, 0.0, 0.0);
    CHECK_TENSORS_CLOSE(pool_scores(x, 1, Pooling::Avg), x, 0.0, 0.0);
    CHECK_TENSORS_CLOSE(pool_scores(x, 3, Pooling::None), x, 0.0, 0.0);
}

TEST_CASE("pooling pools every row on its own", "[snapkv]") {
    at::Tensor x = at::cat({row({1, 0, 0, 0}), row({0, 0, 0, 2})}, 0);  // [2, 4]
    at::Tensor want = at::cat({row({1, 1, 0, 0}), row({0, 0, 2, 2})}, 0);
    CHECK_TENSORS_CLOSE(pool_scores(x, 3, Pooling::Max), want, 0.0, 0.0);
}

TEST_CASE("a kernel that is even, not positive or longer than the prefix is an input error", "[snapkv]") {
    const at::Tensor x = row({1, 2, 3, 4, 5});
    const auto kernel = GENERATE(as<int64_t>{}, 4, 0, -1, 7, 2);
    for (Pooling pooling : {Pooling::Max, Pooling::Avg}) {
        const std::string msg = input_error_of([&] { pool_scores(x, kernel, pooling); });
        CHECK_THAT(msg, Contains("kernel: " + std::to_string(kernel)));
        CHECK_THAT(msg, Contains("odd"));
        CHECK_THAT(msg, Contains("prefix length 5"));
    }
    // No pooling reads no kernel, so any value is accepted (--kernel 2 with --pooling none was once
    // refused for a setting that changes nothing).
    CHECK_TENSORS_CLOSE(pool_scores(x, kernel, Pooling::None), x, 0.0, 0.0);
}

TEST_CASE("top-k keeps the best scores in position order and breaks ties by the tie-break setting", "[snapkv]") {
    const TieBreak E = TieBreak::Earlier, Lt = TieBreak::Later;
    SECTION("the default is later, torch.topk's choice in the official and kvpress runs") {
        CHECK(SelectionParams{}.tie_break == Lt);
        CHECK(as_vector(top_k_positions(row({1, 2, 2, 0, 2}), 2)) == std::vector<int64_t>{2, 4});
    }
    SECTION("three equal best scores, two slots") {
        CHECK(as_vector(top_k_positions(row({1, 2, 2, 0, 2}), 2, E)) == std::vector<int64_t>{1, 2});
        CHECK(as_vector(top_k_positions(row({1, 2, 2, 0, 2}), 2, Lt)) == std::vector<int64_t>{2, 4});
    }
    SECTION("one slot among equals") {
        CHECK(as_vector(top_k_positions(row({1, 2, 2, 0, 2}), 1, E)) == std::vector<int64_t>{1});
        CHECK(as_vector(top_k_positions(row({1, 2, 2, 0, 2}), 1, Lt)) == std::vector<int64_t>{4});
    }
    SECTION("all equal") {
        CHECK(as_vector(top_k_positions(row({5, 5, 5, 5}), 2, E)) == std::vector<int64_t>{0, 1});
        CHECK(as_vector(top_k_positions(row({5, 5, 5, 5}), 2, Lt)) == std::vector<int64_t>{2, 3});
    }
    SECTION("scores above the tie are kept whatever the order; only the tied slots move") {
        // 9 beats everything; three 4s compete for the two remaining slots.
        CHECK(as_vector(top_k_positions(row({4, 9, 4, 1, 4}), 3, E)) == std::vector<int64_t>{0, 1, 2});
        CHECK(as_vector(top_k_positions(row({4, 9, 4, 1, 4}), 3, Lt)) == std::vector<int64_t>{1, 2, 4});
    }
    SECTION("a tied run after max pooling: earlier keeps its start, later its end") {
        // Max pooling K = 5 spreads the 9 over positions 2..6: a run of 5 equal scores, 3 slots.
        at::Tensor pooled = pool_scores(row({0, 1, 0, 0, 9, 0, 0, 0, 0, 1}), 5, Pooling::Max);
        CHECK(as_vector(top_k_positions(pooled, 3, E)) == std::vector<int64_t>{2, 3, 4});
        CHECK(as_vector(top_k_positions(pooled, 3, Lt)) == std::vector<int64_t>{4, 5, 6});
    }
    SECTION("a tie at the boundary after a max pooling takes the earlier or the later cluster") {
        at::Tensor pooled = pool_scores(row({0, 0, 9, 0, 0, 0, 9, 0}), 3, Pooling::Max);
        CHECK(as_vector(top_k_positions(pooled, 4, E)) == std::vector<int64_t>{1, 2, 3, 5});
        CHECK(as_vector(top_k_positions(pooled, 4, Lt)) == std::vector<int64_t>{3, 5, 6, 7});
    }
    SECTION("the tie-break names parse and print") {
        CHECK(parse_tie_break("earlier") == E);
        CHECK(parse_tie_break("later") == Lt);
        CHECK(tie_break_name(E) == "earlier");
        CHECK(tie_break_name(Lt) == "later");
        CHECK_THAT(input_error_of([] { parse_tie_break("first"); }),
                   Contains("'first'") && Contains("allowed: earlier, later"));
    }
    SECTION("the result is in position order, not score order") {
        CHECK(as_vector(top_k_positions(row({0, 9, 1, 8, 7}), 3)) == std::vector<int64_t>{1, 3, 4});
    }
    SECTION("NaN ranks below every number") {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float inf = std::numeric_limits<float>::infinity();
        CHECK(as_vector(top_k_positions(row({nan, 1, 0, -inf}), 2, TieBreak::Earlier)) == std::vector<int64_t>{1, 2});
        // NaN ties with -inf: the tie-break picks between them.
        CHECK(as_vector(top_k_positions(row({nan, 1, 0, -inf}), 3, TieBreak::Earlier)) ==
              std::vector<int64_t>{0, 1, 2});
        CHECK(as_vector(top_k_positions(row({nan, 1, 0, -inf}), 3, TieBreak::Later)) == std::vector<int64_t>{1, 2, 3});
        CHECK(as_vector(top_k_positions(row({nan, 1, 0, -inf}), 4)) == std::vector<int64_t>{0, 1, 2, 3});
    }
    SECTION("k at or above the length keeps everything, k = 0 nothing") {
        CHECK(top_k_positions(row({3, 1, 2}), 5).size(1) == 3);
        CHECK(top_k_positions(row({3, 1, 2}), 0).size(1) == 0);
    }
}

TEST_CASE("the ratio form keeps int(L * (1 - ratio)) tokens like kvpress", "[snapkv]") {
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.budget = 1024;
    SECTION("a negative ratio uses the budget") {
        p.ratio = -1.0;
        CHECK(effective_budget(p, 100) == 1024);
    }
    SECTION("the product is truncated as Python's int() does") {
        p.ratio = 0.5;
        CHECK(effective_budget(p, 100) == 50);
        p.ratio = 0.35;
        CHECK(effective_budget(p, 10) == 6);  // 6.5 -> 6
        p.ratio = 0.9;
        CHECK(effective_budget(p, 1000) == 99);  // 1000 * 0.09999999999999998 -> 99
        p.ratio = 0.3;
        CHECK(effective_budget(p, 100) == 70);
        p.ratio = 0.0;
        CHECK(effective_budget(p, 100) == 100);
    }
    SECTION("a ratio of 1 or more, or NaN, is an input error naming the ratio") {
        for (double r : {1.0, 1.5, std::nan("")}) {
            p.ratio = r;
            const std::string msg = input_error_of([&] { effective_budget(p, 100); });
            CHECK_THAT(msg, Contains("ratio: "));
            CHECK_THAT(msg, Contains("0 <= ratio < 1"));
        }
    }
}

TEST_CASE("policy, pooling and GQA mode names round-trip and unknown names are input errors", "[snapkv]") {
    for (Policy p : {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid, Policy::AdaKV})
        CHECK(parse_policy(policy_name(p)) == p);
    for (Pooling p : {Pooling::Max, Pooling::Avg, Pooling::None}) CHECK(parse_pooling(pooling_name(p)) == p);
    for (GqaMode m : {GqaMode::QueryHead, GqaMode::KvHead}) CHECK(parse_gqa_mode(gqa_mode_name(m)) == m);
    CHECK(policy_name(Policy::SnapKV) == "snapkv");
    CHECK(pooling_name(Pooling::Avg) == "avg");
    CHECK(gqa_mode_name(GqaMode::KvHead) == "kv-head");
    CHECK(parse_pooling("maxpool") == Pooling::Max);  // the reference's spelling
    CHECK_THAT(input_error_of([] { parse_policy("snap"); }), Contains("'snap'") && Contains("adakv"));
    CHECK_THAT(input_error_of([] { parse_pooling("median"); }), Contains("'median'") && Contains("avg"));
    CHECK_THAT(input_error_of([] { parse_gqa_mode("kv"); }), Contains("'kv'") && Contains("kv-head"));
}
