// The architecture rules SnapKV must respect, so that a heatmap shows what the model really did
// rather than what a plain Llama layer would: a layer's own scoring (attention scale, logit
// soft-cap before the softmax, sliding window) in votes and heatmap rows, checked against the
// naive loop reference; and what selection means on a sliding-window layer: nothing the next
// token cannot see is kept, counted or claimed as saved.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Wmax = captured window, W = window,
// D = head_dim, P = L - W, r = first reachable prefix position (L - sliding_window + 1).
#include <cmath>
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/selector.h"
#include "tests/snapkv/naive_reference.h"
#include "tests/snapkv/tensor_compare.h"

using namespace snapkv;
using namespace snapkv_test;

namespace {

NaiveCapture scored_capture(double scale, double softcap, int64_t sliding_window, unsigned seed) {
    NaiveCapture c = random_capture(4, 2, 12, 48, 8, seed, 3.0f);
    c.scale = scale;
    c.softcap = softcap;
    c.sliding_window = sliding_window;
    return c;
}

std::vector<LayerScorer> scorers_of(const std::vector<NaiveCapture>& captures) {
    std::vector<LayerScorer> out;
    for (const NaiveCapture& c : captures) out.emplace_back(to_layer_capture(c));
    return out;
}

}  // namespace

TEST_CASE("votes and heatmap rows follow the layer's scale, soft-cap and sliding window", "[snapkv][arch]") {
    struct Rule {
        double scale, softcap;
        int64_t window;
    };
    const Rule rule = GENERATE(Rule{0.0, 0.0, 0}, Rule{0.2, 0.0, 0}, Rule{0.0, 2.0, 0}, Rule{0.0, 0.0, 9},
                               Rule{0.3, 1.5, 16}, Rule{0.0, 0.0, 48});
    CAPTURE(rule.scale, rule.softcap, rule.window);
    const NaiveCapture c = scored_capture(rule.scale, rule.softcap, rule.window, 11);
    LayerScorer scorer(to_layer_capture(c));
    CHECK(scorer.sliding_window() == rule.window);
    for (int64_t W : {1, 5, 12}) {
        INFO("window " << W);
        CHECK_TENSORS_CLOSE(scorer.votes(W), rows_to_tensor(naive_votes(c, W)), 2e-6, 2e-5);
        for (int64_t h : {0, 3}) {
            at::Tensor rows = scorer.window_attention(h, W);  // [W, L]
            for (int64_t i = 0; i < W; ++i) {
                const std::vector<double> want = naive_attention_row(c, h, c.Wmax - W + i);
                at::Tensor w = at::tensor(want, at::kDouble).to(at::kFloat);
                CHECK_TENSORS_CLOSE(rows[i], w, 1e-6, 1e-5);
            }
        }
    }
    if (rule.window > 0 && rule.window < c.L) {
        // Keys older than the first window query's reach get exactly zero votes.
        const int64_t W = 5;
        at::Tensor v = scorer.votes(W);  // [H, P]
        const int64_t oldest_seen = c.L - W - rule.window + 1;
        CHECK(v.narrow(1, 0, oldest_seen).abs().max().item<float>() == 0.0f);
        CHECK(v.narrow(1, oldest_seen, 1).abs().max().item<float>() > 0.0f);
    }
    if (rule.softcap > 0) {
        // The cap bites: without it the rows differ.
        NaiveCapture plain = c;
        plain.softcap = 0.0;
        CHECK_FALSE(scorer.votes(12).allclose(rows_to_tensor(naive_votes(plain, 12)).to(at::kFloat), 1e-3, 1e-3));
    }
}

TEST_CASE("a sliding-window layer keeps only what the next token can see", "[snapkv][arch]") {
    // L = 48, W = 4, P = 44. Layer 0 is global, layer 1 slides over 9 tokens (the next token, at
    // 48, sees 40..48: r = 40, 4 reachable prefix positions), layer 2 over 30 (r = 19, 25 reachable).
    const std::vector<LayerScorer> layers = scorers_of(
        {scored_capture(0, 0, 0, 1), scored_capture(0, 0, 9, 2), scored_capture(0, 0, 30, 3)});
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 4;
    p.kernel = 3;
    p.budget = 16;  // 12 prefix positions per head
    for (Policy policy :
         {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid, Policy::AdaKV}) {
        for (GqaMode gqa : {GqaMode::QueryHead, GqaMode::KvHead}) {
            p.policy = policy;
            p.gqa = gqa;
            CAPTURE(policy_name(policy), gqa_mode_name(gqa));
            const Selection sel = select(layers, p);
            REQUIRE(sel.layers.size() == 3);
            CHECK(sel.note.find("sliding-window layers 1, 2") != std::string::npos);
            const LayerSelection& global = sel.layers[0];
            CHECK(global.sliding_window == 0);
            CHECK(global.first_reachable == 0);
            CHECK(global.compressed);
            // Window 9: its 4 reachable positions fit the budget: the layer stays as it is.
            const LayerSelection& narrow = sel.layers[1];
            CHECK(narrow.sliding_window == 9);
            CHECK(narrow.first_reachable == 40);
            CHECK_FALSE(narrow.compressed);
            for (const HeadSelection& hs : narrow.heads) {
                CHECK(hs.kept == std::vector<int64_t>{40, 41, 42, 43});
                CHECK(hs.kept_mass == 1.0);
                if (!hs.votes.empty()) CHECK(hs.votes.size() == 44);  // the heatmap keeps the whole prefix
            }
            // Window 30: 25 reachable, 12 kept, all at or after 19.
            const LayerSelection& wide = sel.layers[2];
            CHECK(wide.first_reachable == 19);
            CHECK(wide.compressed);
            size_t total = 0;
            for (const HeadSelection& hs : wide.heads) {
                for (int64_t pos : hs.kept) CHECK((pos >= 19 && pos < 44));
                CHECK(std::is_sorted(hs.kept.begin(), hs.kept.end()));
                total += hs.kept.size();
                CHECK(hs.kept_mass <= 1.0);
            }
            if (policy != Policy::Pyramid) CHECK(total == wide.heads.size() * 12);
            if (policy != Policy::AdaKV) {
                const std::vector<at::Tensor> pos = select_positions(layers, p);
                CHECK(pos[1].size(1) == 4);
                CHECK(pos[1].min().item<int64_t>() == 40);
                if (pos[2].numel() > 0) CHECK(pos[2].min().item<int64_t>() >= 19);  // (pyramid may keep none)
            }
        }
    }
}

TEST_CASE("on a sliding-window layer SnapKV keeps the top pooled votes of the reachable prefix", "[snapkv][arch]") {
    const std::vector<LayerScorer> layers = scorers_of({scored_capture(0, 0, 30, 5)});
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 4;
    p.kernel = 1;
    p.pooling = Pooling::None;
    p.budget = 10;  // 6 of the 25 reachable positions
    const Selection sel = select(layers, p);
    const LayerSelection& ls = sel.layers[0];
    REQUIRE(ls.compressed);
    for (const HeadSelection& hs : ls.heads) {
        std::vector<int64_t> order(25);
        std::iota(order.begin(), order.end(), int64_t{19});
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return hs.votes[size_t(a)] > hs.votes[size_t(b)]; });
        std::vector<int64_t> want(order.begin(), order.begin() + 6);
        std::sort(want.begin(), want.end());
        CHECK(hs.kept == want);
        // kept mass over the reachable prefix only
        double total = 0, on_kept = 0;
        for (int64_t t = 19; t < 44; ++t) total += hs.votes[size_t(t)];
        for (int64_t t : hs.kept) on_kept += hs.votes[size_t(t)];
        CHECK(hs.kept_mass == Approx(on_kept / total).epsilon(1e-6));
    }
}
