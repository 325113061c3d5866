// select() for the SnapKV policy against the naive loop reference (votes, pooling, GQA grouping,
// top-k, kept mass) on random captures, and every parameter edge case and error of the selector.
// Other policies: test_policies.cpp.
//
// Dimensions: H = n_head, Hkv = n_head_kv, Hs = heads selected, L = prompt tokens, Wmax =
// captured window, W = window, K = kernel, C = budget, P = L - W.
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/common/errors.h"
#include "core/snapkv/selector.h"
#include "tests/snapkv/naive_reference.h"
#include "tests/snapkv/snapkv_test_util.h"
#include "tests/snapkv/tensor_compare.h"

using namespace snapkv;
using namespace snapkv_test;
using Catch::Matchers::Contains;

namespace {

struct Model {
    std::vector<NaiveCapture> captures;
    std::vector<LayerScorer> scorers;
};

Model random_model(int64_t n_layer, int64_t H, int64_t Hkv, int64_t Wmax, int64_t L, int64_t D, unsigned seed,
                   bool with_h2o = true) {
    Model m;
    for (int64_t l = 0; l < n_layer; ++l) {
        m.captures.push_back(random_capture(H, Hkv, Wmax, L, D, seed + unsigned(l) * 101u, 2.5f));
        m.scorers.emplace_back(to_layer_capture(m.captures.back(), with_h2o));
    }
    return m;
}

double naive_kept_mass(const std::vector<double>& votes, const std::vector<int64_t>& kept) {
    double total = 0, on = 0;
    for (double v : votes) total += v;
    for (int64_t p : kept) on += votes[size_t(p)];
    return total > 0 ? on / total : 1.0;
}

at::Tensor vec_d(const std::vector<double>& v) {
    return at::from_blob(const_cast<double*>(v.data()), {int64_t(v.size())}, at::kDouble).clone();
}

}  // namespace

TEST_CASE("snapkv selection equals the naive loop reference", "[snapkv]") {
    // {L, W, K, C}: long and short prefixes, L just above C, a kernel as long as the prefix (L == C
    // is not compressed: see "a prompt that fits the budget ...").
    const auto combo = GENERATE(std::vector<int64_t>{64, 8, 5, 40}, std::vector<int64_t>{100, 16, 7, 90},
                                std::vector<int64_t>{257, 32, 9, 100}, std::vector<int64_t>{50, 4, 1, 49},
                                std::vector<int64_t>{70, 8, 3, 60}, std::vector<int64_t>{40, 31, 9, 39});
    const auto gqa = GENERATE(GqaMode::QueryHead, GqaMode::KvHead);
    const auto pooling = GENERATE(Pooling::Max, Pooling::Avg);
    const int64_t L = combo[0], W = combo[1], K = combo[2], C = combo[3], P = L - W;
    const int64_t H = 6, Hkv = 2;
    CAPTURE(L, W, K, C, gqa_mode_name(gqa), pooling_name(pooling));
    Model m = random_model(2, H, Hkv, 32, L, 16, unsigned(L * 7 + W));

    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = W;
    p.kernel = K;
    p.budget = C;
    p.pooling = pooling;
    p.gqa = gqa;
    const Selection sel = select(m.scorers, p);
    CHECK(sel.n_tokens == L);
    CHECK(sel.window == W);
    CHECK(sel.budget == C);
    CHECK(sel.compressed);
    CHECK(sel.note.empty());
    REQUIRE(sel.layers.size() == 2);

    int64_t near_ties = 0;
    for (size_t l = 0; l < 2; ++l) {
        const Rows votes = naive_votes(m.captures[l], W);  // [H][P]
        Rows pooled;
        for (const auto& v : votes) pooled.push_back(naive_pool(v, K, pooling));
        const Rows gv = naive_group(votes, Hkv, gqa);  // [Hs][P]
        const Rows gp = naive_group(pooled, Hkv, gqa);
        const LayerSelection& ls = sel.layers[l];
        CHECK(ls.layer == int64_t(l));
        CHECK(ls.compressed);
        CHECK(ls.budget == C);
        REQUIRE(ls.heads.size() == gv.size());
        for (size_t h = 0; h < gv.size(); ++h) {
            INFO("layer " << l << " head " << h);
            const HeadSelection& hs = ls.heads[h];
            CHECK_TENSORS_CLOSE(vec_to_tensor(hs.votes), vec_d(gv[h]), 2e-6, 2e-5);
            CHECK_TENSORS_CLOSE(vec_to_tensor(hs.pooled), vec_d(gp[h]), 2e-6, 2e-5);
            CHECK(int64_t(hs.kept.size()) == C - W);
            CHECK(same_top_k(hs.kept, gp[h], C - W, 1e-5, &near_ties));
            CHECK(hs.kept_mass == Approx(naive_kept_mass(gv[h], hs.kept)).margin(1e-5));
        }
    }
    CHECK(near_ties <= 2);
    // Same result without the score vectors.
    const Selection lean = select(m.scorers, p, false);
    for (size_t l = 0; l < 2; ++l)
        for (size_t h = 0; h < lean.layers[l].heads.size(); ++h) {
            CHECK(lean.layers[l].heads[h].kept == sel.layers[l].heads[h].kept);
            CHECK(lean.layers[l].heads[h].votes.empty());
            CHECK(lean.layers[l].heads[h].pooled.empty());
            CHECK(lean.layers[l].heads[h].kept_mass == sel.layers[l].heads[h].kept_mass);
        }
    (void)P;
}

TEST_CASE("the tie-break setting decides which tied positions every ranking policy keeps", "[snapkv]") {
    // Max pooling with a wide kernel makes runs of exactly equal pooled scores, so the boundary of
    // the budget falls inside a tied run in most heads.
    const Model m = random_model(3, 6, 2, 16, 160, 16, 4242u);
    const Policy policy = GENERATE(Policy::SnapKV, Policy::Pyramid, Policy::AdaKV);
    const GqaMode gqa = GENERATE(GqaMode::QueryHead, GqaMode::KvHead);
    CAPTURE(policy_name(policy), gqa_mode_name(gqa));
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.policy = policy;
    p.gqa = gqa;
    p.window = 16;
    p.kernel = 15;
    p.pooling = Pooling::Max;
    p.budget = 56;
    p.tie_break = TieBreak::Earlier;
    const Selection early = select(m.scorers, p);
    p.tie_break = TieBreak::Later;
    const Selection late = select(m.scorers, p);
    CHECK(early.params.tie_break == TieBreak::Earlier);
    CHECK(late.params.tie_break == TieBreak::Later);
    int64_t tied_heads = 0, differing = 0;
    for (size_t l = 0; l < late.layers.size(); ++l)
        for (size_t h = 0; h < late.layers[l].heads.size(); ++h) {
            const HeadSelection& e = early.layers[l].heads[h];
            const HeadSelection& t = late.layers[l].heads[h];
            REQUIRE(t.pooled == e.pooled);  // same scores, only the choice among ties differs
            differing += e.kept != t.kept;
            if (policy == Policy::AdaKV) continue;  // ragged: checked through differing only
            const std::vector<double> pooled(t.pooled.begin(), t.pooled.end());
            const int64_t k = int64_t(t.kept.size());
            CHECK(e.kept == naive_top_k(pooled, k, TieBreak::Earlier));
            CHECK(t.kept == naive_top_k(pooled, k, TieBreak::Later));
            tied_heads += naive_top_k(pooled, k, TieBreak::Earlier) != naive_top_k(pooled, k, TieBreak::Later);
        }
    CHECK(differing > 0);
    if (policy != Policy::AdaKV) CHECK(tied_heads == differing);
    // The positions-only path agrees with select() for both orders.
    if (policy != Policy::AdaKV)
        for (TieBreak tie : {TieBreak::Earlier, TieBreak::Later}) {
            p.tie_break = tie;
            const Selection& want = tie == TieBreak::Earlier ? early : late;
            const std::vector<at::Tensor> pos = select_positions(m.scorers, p);
            for (size_t l = 0; l < pos.size(); ++l) CHECK(at::equal(pos[l], kept_positions(want.layers[l])));
        }
}

TEST_CASE("h2o breaks ties of its accumulated attention by the tie-break setting", "[snapkv]") {
    // Equal H2O scores are rare in real attention; this checks the setting reaches its top-k by
    // giving every position the same score (uniform attention rows).
    const int64_t H = 2, Hkv = 2, L = 40, D = 8, Wmax = 8;
    NaiveCapture c = random_capture(H, Hkv, Wmax, L, D, 7u, 2.5f);
    LayerCapture lc = to_layer_capture(c, true);
    lc.h2o = at::ones({H, L}, at::kFloat);  // [H, L]
    std::vector<LayerScorer> scorers;
    scorers.emplace_back(lc);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.policy = Policy::H2O;
    p.window = 8;
    p.budget = 18;  // 10 of the 32 prefix positions
    p.tie_break = TieBreak::Earlier;
    const Selection e = select(scorers, p);
    p.tie_break = TieBreak::Later;
    const Selection t = select(scorers, p);
    std::vector<int64_t> first(10), last(10);
    std::iota(first.begin(), first.end(), int64_t{0});
    std::iota(last.begin(), last.end(), int64_t{22});
    for (size_t h = 0; h < 2; ++h) {
        CHECK(e.layers[0].heads[h].kept == first);
        CHECK(t.layers[0].heads[h].kept == last);
    }
}

TEST_CASE("kv-head mode equals query-head mode when every query head has its own KV head", "[snapkv]") {
    Model m = random_model(2, 4, 4, 16, 80, 8, 21);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 8;
    p.budget = 30;
    p.kernel = 5;
    for (Policy policy : {Policy::SnapKV, Policy::H2O, Policy::AdaKV, Policy::Pyramid}) {
        p.policy = policy;
        p.gqa = GqaMode::QueryHead;
        const Selection a = select(m.scorers, p);
        p.gqa = GqaMode::KvHead;
        const Selection b = select(m.scorers, p);
        for (size_t l = 0; l < 2; ++l)
            for (size_t h = 0; h < 4; ++h) {
                CHECK(a.layers[l].heads[h].kept == b.layers[l].heads[h].kept);
                CHECK(a.layers[l].heads[h].votes == b.layers[l].heads[h].votes);
                CHECK(a.layers[l].heads[h].pooled == b.layers[l].heads[h].pooled);
            }
    }
}

TEST_CASE("kv-head mode makes one selection per KV head from the group-mean pooled scores", "[snapkv]") {
    Model m = random_model(1, 6, 3, 16, 90, 8, 4);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 10;
    p.budget = 40;
    p.kernel = 3;
    p.gqa = GqaMode::KvHead;
    const Selection sel = select(m.scorers, p);
    REQUIRE(sel.layers[0].heads.size() == 3);
    // Pool per query head first, then average: max pooling does not commute with the mean.
    at::Tensor pooled = pool_scores(m.scorers[0].votes(10), 3, Pooling::Max);  // [H, P]
    at::Tensor want = pooled.view({3, 2, 80}).mean(1);                         // [Hkv, P]
    for (int64_t h = 0; h < 3; ++h)
        CHECK_TENSORS_CLOSE(vec_to_tensor(sel.layers[0].heads[size_t(h)].pooled), want[h], 1e-7, 1e-6);
}

TEST_CASE("a prompt that fits the budget is not compressed and the note says so", "[snapkv]") {
    // At C == L nothing is evicted, so nothing may be reported as compressed (an off-by-one once
    // did, and the query-head "compressed" cache was G times the full one).
    Model m = random_model(2, 4, 2, 16, 40, 8, 3);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 8;
    p.budget = GENERATE(64, 40);
    if (GENERATE(false, true)) {
        p.ratio = 0.0;  // kvpress form of C == L
        p.budget = 1000;
    }
    const int64_t C = p.ratio >= 0 ? 40 : p.budget;
    for (Policy policy :
         {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid, Policy::AdaKV}) {
        p.policy = policy;
        CAPTURE(policy_name(policy));
        const Selection sel = select(m.scorers, p);
        CHECK_FALSE(sel.compressed);
        CHECK(sel.note ==
              "prompt of 40 tokens fits in the budget " + std::to_string(C) + ": nothing to evict, not compressed");
        for (const LayerSelection& ls : sel.layers) {
            CHECK_FALSE(ls.compressed);
            CHECK(ls.budget == C);
            for (const HeadSelection& hs : ls.heads) {
                REQUIRE(hs.kept.size() == 32);
                CHECK(hs.kept.front() == 0);
                CHECK(hs.kept.back() == 31);
                CHECK(hs.kept_mass == 1.0);
            }
        }
        if (policy != Policy::AdaKV) {
            const std::vector<at::Tensor> pos = select_positions(m.scorers, p);
            CHECK(pos[1].sizes() == at::IntArrayRef({4, 32}));
        }
    }
}

TEST_CASE("the ratio form sets the budget from the prompt length", "[snapkv]") {
    Model m = random_model(1, 4, 2, 16, 40, 8, 3);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 8;
    p.budget = 1000;  // ignored
    p.ratio = 0.5;    // C = int(40 * 0.5) = 20
    const Selection sel = select(m.scorers, p);
    CHECK(sel.budget == 20);
    CHECK(sel.layers[0].budget == 20);
    for (const HeadSelection& hs : sel.layers[0].heads) CHECK(hs.kept.size() == 12);
    p.ratio = 0.0;                               // keep everything
    const Selection all = select(m.scorers, p);  // named: the loop must not outlive it
    for (const HeadSelection& hs : all.layers[0].heads) CHECK(hs.kept_mass == 1.0);
}

TEST_CASE("every bad parameter is an input error naming the parameter and the allowed values", "[snapkv]") {
    Model m = random_model(2, 4, 2, 16, 40, 8, 3, /*with_h2o=*/false);  // L = 40, Wmax = 16
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 8;
    p.budget = 20;
    p.kernel = 5;
    auto err = [&](const SelectionParams& q) { return input_error_of([&] { select(m.scorers, q); }); };

    SECTION("even kernel") {
        SelectionParams q = p;
        q.kernel = 6;
        CHECK_THAT(err(q), Contains("kernel: 6") && Contains("odd"));
        q.pooling = Pooling::None;  // no pooling, no kernel to check
        CHECK_NOTHROW(select(m.scorers, q));
    }
    SECTION("kernel longer than the prefix") {
        SelectionParams q = p;
        q.window = 16;
        q.budget = 30;
        q.kernel = 25;  // P = 24
        CHECK_THAT(err(q), Contains("kernel: 25") && Contains("prefix length 24"));
    }
    SECTION("budget not larger than the window") {
        SelectionParams q = p;
        q.budget = 8;
        CHECK_THAT(err(q), Contains("budget: 8") && Contains("larger than the window 8"));
        q.budget = 3;
        CHECK_THAT(err(q), Contains("budget: 3"));
    }
    SECTION("ratio that keeps no more than the window") {
        SelectionParams q = p;
        q.ratio = 0.9;  // int(40 * 0.09999999999999998) = 3 <= 8, as in Python
        CHECK_THAT(err(q), Contains("ratio: 0.9") && Contains("= 3 tokens") && Contains("window 8"));
        q.ratio = 1.0;
        CHECK_THAT(err(q), Contains("ratio: 1") && Contains("0 <= ratio < 1"));
    }
    SECTION("window larger than the captured window") {
        SelectionParams q = p;
        q.window = 17;
        q.budget = 30;
        CHECK_THAT(err(q), Contains("window: 17") && Contains("captured window 16") && Contains("1..16"));
    }
    SECTION("window of zero") {
        SelectionParams q = p;
        q.window = 0;
        CHECK_THAT(err(q), Contains("window: 0"));
    }
    SECTION("window not smaller than the prompt") {
        CHECK_THAT(input_error_of([&] { validate_params(p, 8, 16); }),
                   Contains("window: 8") && Contains("prompt length 8") && Contains("1..7"));
        Model whole = random_model(1, 2, 1, 12, 12, 4, 1);  // Wmax = L = 12
        SelectionParams q = p;
        q.window = 12;
        q.budget = 13;
        CHECK_THAT(input_error_of([&] { select(whole.scorers, q); }), Contains("window: 12"));
    }
    SECTION("streaming sinks beyond the prefix budget") {
        SelectionParams q = p;
        q.policy = Policy::Streaming;
        q.n_sink = 13;  // C - W = 12
        CHECK_THAT(err(q), Contains("n_sink: 13") && Contains("0..12"));
        q.n_sink = -1;
        CHECK_THAT(err(q), Contains("n_sink: -1"));
    }
    SECTION("pyramid beta below 1") {
        SelectionParams q = p;
        q.policy = Policy::Pyramid;
        q.pyramid_beta = 0;
        CHECK_THAT(err(q), Contains("pyramid_beta: 0") && Contains(">= 1"));
    }
    SECTION("adakv alpha outside [0, 1]") {
        SelectionParams q = p;
        q.policy = Policy::AdaKV;
        q.adakv_alpha = 1.5;
        CHECK_THAT(err(q), Contains("adakv_alpha: 1.5") && Contains("0 <= alpha <= 1"));
    }
    SECTION("h2o without the accumulated attention") {
        SelectionParams q = p;
        q.policy = Policy::H2O;
        CHECK_THAT(err(q), Contains("h2o") && Contains("LayerCapture.h2o"));
    }
    SECTION("no layers, or layers of different prompts") {
        CHECK_THAT(input_error_of([&] { select({}, p); }), Contains("layers"));
        std::vector<LayerScorer> mixed = m.scorers;
        mixed.emplace_back(to_layer_capture(random_capture(4, 2, 16, 41, 8, 9)));
        CHECK_THAT(input_error_of([&] { select(mixed, p); }), Contains("layer 2") && Contains("L=41"));
    }
    SECTION("the kernel is not checked for policies that do not pool") {
        SelectionParams q = p;
        q.kernel = 6;
        q.policy = Policy::Streaming;
        CHECK_NOTHROW(select(m.scorers, q));
    }
}

TEST_CASE("select_positions returns the kept positions of select as one tensor per layer", "[snapkv]") {
    Model m = random_model(3, 6, 2, 16, 120, 8, 8);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 16;
    p.budget = 50;
    p.kernel = 5;
    for (Policy policy : {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid})
        for (GqaMode gqa : {GqaMode::QueryHead, GqaMode::KvHead}) {
            p.policy = policy;
            p.gqa = gqa;
            CAPTURE(policy_name(policy), gqa_mode_name(gqa));
            const Selection sel = select(m.scorers, p, false);
            const std::vector<at::Tensor> pos = select_positions(m.scorers, p);
            REQUIRE(pos.size() == 3);
            for (size_t l = 0; l < 3; ++l) {
                const int64_t Hs = gqa == GqaMode::QueryHead ? 6 : 2;
                CHECK(pos[l].scalar_type() == at::kLong);
                CHECK(pos[l].sizes() == at::IntArrayRef({Hs, sel.layers[l].budget - 16}));
                CHECK(at::equal(pos[l], kept_positions(sel.layers[l])));
            }
        }
    p.policy = Policy::AdaKV;
    CHECK_THAT(input_error_of([&] { select_positions(m.scorers, p); }), Contains("adakv"));
    const Selection ada = select(m.scorers, p, false);
    bool ragged = false;
    for (const auto& hs : ada.layers[0].heads) ragged |= hs.kept.size() != ada.layers[0].heads[0].kept.size();
    if (ragged) CHECK_THAT(input_error_of([&] { kept_positions(ada.layers[0]); }), Contains("kept_positions"));
}

TEST_CASE("a retune back to a policy with matrix-product scores reuses them and selects the same", "[snapkv]") {
    // KeyDiff scores every key against the layer's mean key direction (seconds per layer of an 8B
    // model at 32K): kept with the scorer, so returning to it, or changing only its budget, does
    // not redo them, and a reused score selects what a fresh one does.
    std::vector<LayerScorer> layers, fresh;
    for (unsigned l = 0; l < 2; ++l) {
        const NaiveCapture c = random_capture(4, 2, 16, 200, 8, 40 + l, 2.5f);
        layers.emplace_back(to_layer_capture(c));
        fresh.emplace_back(to_layer_capture(c));
    }
    auto cached = [&layers] {
        int64_t n = 0;
        for (const auto& s : layers) n += s.cache_bytes();
        return n;
    };
    SelectionParams p;
    p.policy = Policy::KeyDiff;
    p.window = 8;
    p.budget = 64;
    const Selection first = select(layers, p);
    const int64_t after_first = cached();
    SelectionParams snap = p;
    snap.policy = Policy::SnapKV;
    select(layers, snap);
    p.budget = 48;
    select(layers, p);
    p.budget = 64;
    const Selection again = select(layers, p);
    CHECK(cached() == after_first);
    const Selection reference = select(fresh, p);
    for (size_t l = 0; l < 2; ++l)
        for (size_t h = 0; h < again.layers[l].heads.size(); ++h) {
            CHECK(again.layers[l].heads[h].kept == first.layers[l].heads[h].kept);
            CHECK(again.layers[l].heads[h].kept == reference.layers[l].heads[h].kept);
            CHECK(again.layers[l].heads[h].pooled == reference.layers[l].heads[h].pooled);
        }
}
