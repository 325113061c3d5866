// The eviction policies behind select(): invariants every policy must keep, StreamingLLM's exact
// positions, seeded random selection, H2O's top accumulated scores, PyramidKV's per-layer budgets
// (worked by hand from KVCache-Factory's formula) and AdaKV's shared budget (worked by hand from
// FFY0/AdaKV's floor-then-global split), plus a smoke run of the retune benchmark.
//
// Dimensions: H = n_head, Hkv = n_head_kv, Hs = heads selected, L = prompt tokens, W = window,
// C = budget, P = L - W.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/common/errors.h"
#include "core/snapkv/policy_adakv.h"
#include "core/snapkv/policy_pyramid.h"
#include "core/snapkv/policy_random.h"
#include "core/snapkv/retune_bench.h"
#include "core/snapkv/selector.h"
#include "tests/snapkv/naive_reference.h"
#include "tests/snapkv/tensor_compare.h"

using namespace snapkv;
using namespace snapkv_test;
using Catch::Matchers::Contains;

namespace {

std::vector<LayerScorer> random_scorers(int64_t n_layer, int64_t H, int64_t Hkv, int64_t Wmax, int64_t L, unsigned seed,
                                        std::vector<NaiveCapture>* keep = nullptr) {
    std::vector<LayerScorer> out;
    for (int64_t l = 0; l < n_layer; ++l) {
        NaiveCapture c = random_capture(H, Hkv, Wmax, L, 8, seed + unsigned(l) * 31u, 2.5f);
        out.emplace_back(to_layer_capture(c));
        if (keep) keep->push_back(std::move(c));
    }
    return out;
}

bool sorted_unique_in(const std::vector<int64_t>& v, int64_t P) {
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] < 0 || v[i] >= P) return false;
        if (i && v[i] <= v[i - 1]) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("every policy keeps sorted unique prefix positions within its budget", "[snapkv]") {
    const auto policy = GENERATE(Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid,
                                 Policy::AdaKV);
    const auto gqa = GENERATE(GqaMode::QueryHead, GqaMode::KvHead);
    const int64_t L = 200, W = 16, C = 64, P = L - W, H = 6, Hkv = 2;
    CAPTURE(policy_name(policy), gqa_mode_name(gqa));
    const std::vector<LayerScorer> scorers = random_scorers(4, H, Hkv, 32, L, 77);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.policy = policy;
    p.gqa = gqa;
    p.window = W;
    p.budget = C;
    p.kernel = 7;
    p.adakv_alpha = 0.25;
    const Selection sel = select(scorers, p);
    REQUIRE(sel.layers.size() == 4);
    const size_t Hs = gqa == GqaMode::QueryHead ? size_t(H) : size_t(Hkv);
    int64_t pyramid_total = 0;
    for (const LayerSelection& ls : sel.layers) {
        CHECK(ls.compressed);
        REQUIRE(ls.heads.size() == Hs);
        int64_t total = 0;
        for (const HeadSelection& hs : ls.heads) {
            CHECK(sorted_unique_in(hs.kept, P));
            CHECK(hs.kept_mass >= 0.0);
            CHECK(hs.kept_mass <= 1.0);
            total += int64_t(hs.kept.size());
            if (policy == Policy::AdaKV) {
                CHECK(int64_t(hs.kept.size()) >= adakv_floor(C - W, 0.25));
            } else {
                CHECK(int64_t(hs.kept.size()) == ls.budget - W);
                if (policy != Policy::Pyramid) CHECK(int64_t(hs.kept.size()) <= C - W);
            }
            // What is reported: votes and pooled for the voting policies, h2o as votes for H2O.
            const bool pools = policy == Policy::SnapKV || policy == Policy::Pyramid || policy == Policy::AdaKV;
            CHECK(int64_t(hs.votes.size()) == (pools || policy == Policy::H2O ? P : 0));
            CHECK(int64_t(hs.pooled.size()) == (pools ? P : 0));
        }
        if (policy == Policy::AdaKV) CHECK(total == int64_t(Hs) * (C - W));
        pyramid_total += ls.budget - W;
    }
    // PyramidKV spreads the same total over the layers (up to the integer steps).
    if (policy == Policy::Pyramid) CHECK(pyramid_total <= 4 * (C - W) + 4);
}

TEST_CASE("streaming keeps the sink tokens and the most recent prefix tokens", "[snapkv]") {
    const std::vector<LayerScorer> scorers = random_scorers(1, 4, 2, 16, 60, 5);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.policy = Policy::Streaming;
    p.window = 10;
    p.budget = 18;  // 8 prefix slots
    p.n_sink = 3;
    const Selection sel = select(scorers, p);
    const std::vector<int64_t> want{0, 1, 2, 45, 46, 47, 48, 49};  // P = 50
    for (const HeadSelection& hs : sel.layers[0].heads) CHECK(hs.kept == want);
    p.n_sink = 0;
    CHECK(select(scorers, p).layers[0].heads[0].kept == std::vector<int64_t>{42, 43, 44, 45, 46, 47, 48, 49});
    p.n_sink = 8;
    CHECK(select(scorers, p).layers[0].heads[0].kept == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("the random policy is reproducible with a seed and differs with another seed", "[snapkv]") {
    const std::vector<LayerScorer> scorers = random_scorers(2, 4, 2, 16, 300, 5);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.policy = Policy::Random;
    p.window = 16;
    p.budget = 80;
    p.seed = 1234;
    const Selection a = select(scorers, p);
    const Selection b = select(scorers, p);
    p.seed = 1235;
    const Selection c = select(scorers, p);
    bool differs_with_seed = false, heads_differ = false;
    for (size_t l = 0; l < 2; ++l)
        for (size_t h = 0; h < 4; ++h) {
            const auto& ka = a.layers[l].heads[h].kept;
            CHECK(ka == b.layers[l].heads[h].kept);
            CHECK(ka.size() == 64);
            CHECK(sorted_unique_in(ka, 284));
            differs_with_seed |= ka != c.layers[l].heads[h].kept;
            heads_differ |= ka != a.layers[l].heads[(h + 1) % 4].kept;
        }
    CHECK(differs_with_seed);
    CHECK(heads_differ);
    // Uniform enough: a positions histogram over many draws is not lopsided.
    std::vector<int64_t> counts(100, 0);
    std::vector<int64_t> out(10);
    for (uint64_t s = 0; s < 2000; ++s) {
        random_positions(100, 10, random_stream_seed(s, 0, 0), out.data());
        for (int64_t t : out) ++counts[size_t(t)];
    }
    CHECK(*std::min_element(counts.begin(), counts.end()) > 120);  // expectation 200
    CHECK(*std::max_element(counts.begin(), counts.end()) < 280);
}

TEST_CASE("h2o keeps the prefix positions with the largest accumulated attention", "[snapkv]") {
    std::vector<NaiveCapture> caps;
    const std::vector<LayerScorer> scorers = random_scorers(2, 6, 2, 16, 150, 9, &caps);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.policy = Policy::H2O;
    p.window = 12;
    p.budget = 52;  // 40 prefix slots of P = 138
    p.kernel = 4;   // ignored: H2O does not pool
    for (GqaMode gqa : {GqaMode::QueryHead, GqaMode::KvHead}) {
        p.gqa = gqa;
        const Selection sel = select(scorers, p);
        for (size_t l = 0; l < 2; ++l) {
            Rows h2o;
            for (int64_t h = 0; h < 6; ++h)
                h2o.emplace_back(caps[l].h2o.begin() + h * 150, caps[l].h2o.begin() + h * 150 + 138);
            const Rows want = naive_group(h2o, 2, gqa);
            for (size_t h = 0; h < want.size(); ++h) {
                const HeadSelection& hs = sel.layers[l].heads[h];
                CHECK(same_top_k(hs.kept, want[h], 40, 1e-5));
                CHECK_TENSORS_CLOSE(vec_to_tensor(hs.votes), rows_to_tensor({want[h]})[0], 1e-6, 1e-6);
                CHECK(hs.pooled.empty());
            }
        }
    }
}

TEST_CASE("pyramid budgets follow KVCache-Factory's formula, worked by hand", "[snapkv]") {
    // C = 132, W = 32: C - W = 100; beta = 20: min_num = 100 // 20 = 5, max_num = 200 - 5 = 195.
    SECTION("long prompt: steps = (195 - 5) // 4 = 47") {
        CHECK(pyramid_layer_budgets(132, 32, 1000, 5, 20) ==
              std::vector<int64_t>{195 + 32, 148 + 32, 101 + 32, 54 + 32, 7 + 32});
    }
    SECTION("max_num clipped to L - W = 188: min_num = 200 - 188 = 12, steps = 176 // 4 = 44") {
        CHECK(pyramid_layer_budgets(132, 32, 220, 5, 20) ==
              std::vector<int64_t>{188 + 32, 144 + 32, 100 + 32, 56 + 32, 12 + 32});
    }
    SECTION("prompt shorter than 2 * (C - W): every layer keeps C") {
        CHECK(pyramid_layer_budgets(132, 32, 150, 5, 20) == std::vector<int64_t>(5, 132));
        CHECK_FALSE(pyramid_is_graded(132, 32, 199));
        CHECK(pyramid_is_graded(132, 32, 200));
    }
    SECTION("prompt shorter than C: not compressed, every layer reports C") {
        CHECK(pyramid_layer_budgets(132, 32, 100, 5, 20) == std::vector<int64_t>(5, 132));
    }
    SECTION("one layer (a division by zero in the reference) keeps max_num") {
        CHECK(pyramid_layer_budgets(132, 32, 1000, 1, 20) == std::vector<int64_t>{227});
    }
    SECTION("select keeps each layer's budget") {
        // L = 300, W = 8, C = 58: C - W = 50, min 2, max 98, steps (98 - 2) // 4 = 24.
        const std::vector<LayerScorer> scorers = random_scorers(5, 4, 2, 8, 300, 3);
        SelectionParams p;
        p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
        p.policy = Policy::Pyramid;
        p.window = 8;
        p.budget = 58;
        p.kernel = 5;
        const Selection sel = select(scorers, p);
        const std::vector<int64_t> prefix{98, 74, 50, 26, 2};
        for (size_t l = 0; l < 5; ++l) {
            CHECK(sel.layers[l].budget == prefix[l] + 8);
            for (const HeadSelection& hs : sel.layers[l].heads) CHECK(int64_t(hs.kept.size()) == prefix[l]);
        }
        // Within a layer the choice is SnapKV's: the top of the pooled scores.
        SelectionParams s = p;
        s.policy = Policy::SnapKV;
        s.budget = 26 + 8;
        CHECK(select(scorers, s).layers[3].heads[1].kept == sel.layers[3].heads[1].kept);
        // Short prompt: the uniform branch, with a note.
        const std::vector<LayerScorer> short_scorers = random_scorers(5, 4, 2, 8, 90, 3);
        const Selection u = select(short_scorers, p);
        CHECK_THAT(u.note, Contains("uniform branch"));
        for (const LayerSelection& ls : u.layers) CHECK(ls.heads[0].kept.size() == 50);
    }
}

TEST_CASE("adakv gives every head its floor and shares the rest by one top-k across heads", "[snapkv]") {
    SECTION("worked example: a confident head takes the shared slots") {
        // Hs = 2, P = 6, k = 3, alpha = 0.34: floor = int(3 * 0.34) = 1, 2 * (3 - 1) = 4 shared.
        const std::vector<float> s{9, 8, 7, 6, 5, 4,   // head 0
                                   1, 0, 0, 0, 0, 2};  // head 1
        const auto kept = adakv_positions(s.data(), 2, 6, 3, 0.34, TieBreak::Later);
        CHECK(kept[0] == std::vector<int64_t>{0, 1, 2, 3, 4});  // floor {0} + 8, 7, 6, 5
        CHECK(kept[1] == std::vector<int64_t>{5});              // floor only
    }
    SECTION("ties across heads follow the flat [head, position] order of the tie-break") {
        const std::vector<float> s(8, 1.0f);  // Hs = 2, P = 4, all equal
        // Earlier: the lower head, then the earlier position.
        const auto kept = adakv_positions(s.data(), 2, 4, 2, 0.0, TieBreak::Earlier);
        CHECK(kept[0] == std::vector<int64_t>{0, 1, 2, 3});
        CHECK(kept[1].empty());
        const auto floored = adakv_positions(s.data(), 2, 4, 2, 0.5, TieBreak::Earlier);  // floor 1 each
        CHECK(floored[0] == std::vector<int64_t>{0, 1, 2});
        CHECK(floored[1] == std::vector<int64_t>{0});
        // Later: the higher head, then the later position.
        const auto late = adakv_positions(s.data(), 2, 4, 2, 0.0, TieBreak::Later);
        CHECK(late[0].empty());
        CHECK(late[1] == std::vector<int64_t>{0, 1, 2, 3});
        const auto late_floored = adakv_positions(s.data(), 2, 4, 2, 0.5, TieBreak::Later);
        CHECK(late_floored[0] == std::vector<int64_t>{3});
        CHECK(late_floored[1] == std::vector<int64_t>{1, 2, 3});
    }
    SECTION("alpha = 1 is SnapKV") {
        const std::vector<LayerScorer> scorers = random_scorers(2, 6, 2, 16, 200, 13);
        SelectionParams p;
        p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
        p.window = 16;
        p.budget = 60;
        const Selection snap = select(scorers, p);
        p.policy = Policy::AdaKV;
        p.adakv_alpha = 1.0;
        const Selection ada = select(scorers, p);
        for (size_t l = 0; l < 2; ++l)
            for (size_t h = 0; h < 6; ++h) CHECK(ada.layers[l].heads[h].kept == snap.layers[l].heads[h].kept);
    }
    SECTION("through select: each head keeps its own top count, the shared slots go to the best") {
        const std::vector<LayerScorer> scorers = random_scorers(2, 6, 2, 16, 200, 17);
        SelectionParams p;
        p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
        p.policy = Policy::AdaKV;
        p.window = 16;
        p.budget = 60;  // k = 44
        p.adakv_alpha = 0.2;
        const int64_t k = 44, floor_k = adakv_floor(k, 0.2), P = 184;
        CHECK(floor_k == 8);
        for (const auto& [gqa, tie] :
             {std::pair{GqaMode::QueryHead, TieBreak::Earlier}, std::pair{GqaMode::QueryHead, TieBreak::Later},
              std::pair{GqaMode::KvHead, TieBreak::Earlier}, std::pair{GqaMode::KvHead, TieBreak::Later}}) {
            INFO(gqa_mode_name(gqa) << ", ties " << tie_break_name(tie));
            p.gqa = gqa;
            p.tie_break = tie;
            const bool later = tie == TieBreak::Later;
            const Selection sel = select(scorers, p);
            for (const LayerSelection& ls : sel.layers) {
                // Naive reference on the reported pooled scores: per-head floor, then the best of
                // every head's remaining scores.
                std::vector<std::pair<double, int64_t>> rest;  // (score, flat index)
                std::vector<std::vector<int64_t>> want(ls.heads.size());
                for (size_t h = 0; h < ls.heads.size(); ++h) {
                    const std::vector<double> s(ls.heads[h].pooled.begin(), ls.heads[h].pooled.end());
                    std::vector<int64_t> order(static_cast<size_t>(P));
                    std::iota(order.begin(), order.end(), int64_t{0});
                    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                        return s[size_t(a)] > s[size_t(b)] || (s[size_t(a)] == s[size_t(b)] && (later ? a > b : a < b));
                    });
                    for (int64_t i = 0; i < P; ++i) {
                        if (i < floor_k) want[h].push_back(order[size_t(i)]);
                        else rest.emplace_back(s[size_t(order[size_t(i)])], int64_t(h) * P + order[size_t(i)]);
                    }
                }
                std::sort(rest.begin(), rest.end(), [later](const auto& a, const auto& b) {
                    return a.first > b.first ||
                           (a.first == b.first && (later ? a.second > b.second : a.second < b.second));
                });
                for (size_t i = 0; i < ls.heads.size() * size_t(k - floor_k); ++i)
                    want[size_t(rest[i].second / P)].push_back(rest[i].second % P);
                int64_t total = 0;
                bool varied = false;
                for (size_t h = 0; h < ls.heads.size(); ++h) {
                    std::sort(want[h].begin(), want[h].end());
                    CHECK(ls.heads[h].kept == want[h]);
                    total += int64_t(ls.heads[h].kept.size());
                    varied |= ls.heads[h].kept.size() != ls.heads[0].kept.size();
                }
                CHECK(total == int64_t(ls.heads.size()) * k);
                CHECK(varied);
            }
        }
    }
}

TEST_CASE("kept mass is the share of the window's prefix attention on kept positions", "[snapkv]") {
    std::vector<NaiveCapture> caps;
    const std::vector<LayerScorer> scorers = random_scorers(1, 4, 2, 16, 120, 23, &caps);
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = 16;
    p.budget = 40;
    const Rows votes = naive_votes(caps[0], 16);
    for (Policy policy : {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::AdaKV}) {
        p.policy = policy;
        const Selection sel = select(scorers, p);
        for (size_t h = 0; h < 4; ++h) {
            double total = 0, on = 0;
            for (double v : votes[h]) total += v;
            for (int64_t t : sel.layers[0].heads[h].kept) on += votes[h][size_t(t)];
            CHECK(sel.layers[0].heads[h].kept_mass == Approx(on / total).margin(1e-5));
        }
    }
    // SnapKV keeps more of the window's attention than a random choice of the same size.
    p.policy = Policy::SnapKV;
    const Selection snap = select(scorers, p);
    p.policy = Policy::Random;
    const Selection rnd = select(scorers, p);
    for (size_t h = 0; h < 4; ++h) CHECK(snap.layers[0].heads[h].kept_mass > rnd.layers[0].heads[h].kept_mass);
}

TEST_CASE("the retune benchmark times every retune and reports a table", "[snapkv]") {
    const std::vector<LayerScorer> scorers = random_scorers(2, 4, 2, 32, 300, 29);
    SelectionParams base;
    base.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    base.window = 16;
    base.budget = 64;
    const std::string table = run_retune_benchmark(scorers, base);
    INFO(table);
    for (const char* row :
         {"kernel 5", "kernel 9", "pooling avg", "budget 2048", "window 32", "policy adakv", "gqa kv-head"})
        CHECK_THAT(table, Contains(row));
    CHECK_THAT(table, Contains("median ms"));
}

TEST_CASE("kvpress's presses score what kvpress scores, on random captures", "[snapkv][policy]") {
    const int64_t L = 120, H = 6, Hkv = 2, G = H / Hkv, D = 8, C = 60;
    std::vector<NaiveCapture> naive;
    const std::vector<LayerScorer> scorers = random_scorers(2, H, Hkv, 32, L, 91, &naive);
    SelectionParams p;
    p.budget = C;
    p.window = 16;  // read by none of them
    // The k best of a row (ties to the later position), as a set.
    auto top = [](const std::vector<double>& s, int64_t k) {
        std::vector<int64_t> idx(s.size());
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return s[size_t(a)] > s[size_t(b)]; });
        std::vector<int64_t> out(idx.begin(), idx.begin() + k);
        std::sort(out.begin(), out.end());
        return out;
    };
    SECTION("knorm: per KV head the keys of the smallest norm, every position a candidate") {
        p.policy = Policy::Knorm;
        const Selection sel = select(scorers, p);
        CHECK(sel.window == 0);
        for (size_t l = 0; l < 2; ++l)
            for (int64_t kv = 0; kv < Hkv; ++kv) {
                std::vector<double> s(static_cast<size_t>(L));
                for (int64_t t = 0; t < L; ++t) {
                    double n2 = 0;
                    for (int64_t d = 0; d < D; ++d) n2 += std::pow(naive[l].k[size_t((kv * L + t) * D + d)], 2);
                    s[size_t(t)] = -std::sqrt(n2);
                }
                CHECK(sel.layers[l].heads[size_t(kv)].kept == top(s, C));
            }
    }
    SECTION("keydiff: per KV head the keys least like the mean unit key") {
        p.policy = Policy::KeyDiff;
        const Selection sel = select(scorers, p);
        for (size_t l = 0; l < 2; ++l)
            for (int64_t kv = 0; kv < Hkv; ++kv) {
                std::vector<double> anchor(size_t(D), 0.0);
                std::vector<double> s(static_cast<size_t>(L));
                auto key = [&](int64_t t, int64_t d) { return double(naive[l].k[size_t((kv * L + t) * D + d)]); };
                auto norm = [&](int64_t t) {
                    double n2 = 0;
                    for (int64_t d = 0; d < D; ++d) n2 += key(t, d) * key(t, d);
                    return std::sqrt(n2);
                };
                for (int64_t t = 0; t < L; ++t)
                    for (int64_t d = 0; d < D; ++d) anchor[size_t(d)] += key(t, d) / norm(t) / double(L);
                double an = 0;
                for (double a : anchor) an += a * a;
                for (int64_t t = 0; t < L; ++t) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; ++d) dot += key(t, d) * anchor[size_t(d)];
                    s[size_t(t)] = -dot / (norm(t) * std::sqrt(an));
                }
                CHECK(sel.layers[l].heads[size_t(kv)].kept == top(s, C));
            }
    }
    SECTION("tova: the last token's attention averaged over all heads, the last token kept") {
        p.policy = Policy::TOVA;
        const Selection sel = select(scorers, p);
        CHECK(sel.window == 1);
        for (size_t l = 0; l < 2; ++l) {
            const Rows votes = naive_votes(naive[l], 1);  // [H][L - 1]
            std::vector<double> s(size_t(L - 1), 0.0);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t t = 0; t < L - 1; ++t) s[size_t(t)] += votes[size_t(h)][size_t(t)] / double(H);
            for (const HeadSelection& hs : sel.layers[l].heads) CHECK(hs.kept == top(s, C - 1));
        }
    }
    SECTION("query-head mode repeats each KV head's choice to its query heads") {
        p.policy = Policy::Knorm;
        const Selection kv = select(scorers, p);
        p.gqa = GqaMode::QueryHead;
        const Selection qh = select(scorers, p);
        REQUIRE(qh.layers[0].heads.size() == size_t(H));
        for (int64_t h = 0; h < H; ++h)
            CHECK(qh.layers[0].heads[size_t(h)].kept == kv.layers[0].heads[size_t(h / G)].kept);
    }
    SECTION("expected_attention without the query statistics prefill records is refused by name") {
        p.policy = Policy::ExpectedAttention;
        std::string error;
        try {
            select(scorers, p);
        } catch (const InputError& e) {
            error = e.what();
        }
        CHECK_THAT(error, Contains("expected_attention") && Contains("query statistics"));
    }
}

TEST_CASE("scores made ahead with the scorers are read by a later select of any budget, kernel or tie rule",
          "[snapkv][policy]") {
    const int64_t L = 150, H = 6, Hkv = 2, n_layer = 3;
    const std::vector<LayerScorer> ahead = random_scorers(n_layer, H, Hkv, 32, L, 123);
    const std::vector<LayerScorer> fresh = random_scorers(n_layer, H, Hkv, 32, L, 123);
    auto bytes = [](const std::vector<LayerScorer>& s) {
        int64_t b = 0;
        for (const LayerScorer& x : s) b += x.cache_bytes();
        return b;
    };
    // The last window's votes are kept with the scorer too (every select reads them): window 9's
    // first, so that what follows adds scores alone.
    SelectionParams snap;
    snap.window = 9;
    select(ahead, snap);
    const int64_t before = bytes(ahead);
    SelectionParams p;
    p.policy = Policy::KeyDiff;  // a score tensor over every key (no window): [Hkv, L] a layer
    prepare_scores(ahead, p);
    CHECK(bytes(ahead) == before + n_layer * Hkv * L * 4);
    // Settings KeyDiff does not read, and the budget and tie rule ranking applies afterwards: the
    // kept scores serve them all (nothing more is kept), with the selection of fresh scorers.
    p.kernel = 3;
    p.pooling = Pooling::Avg;
    p.window = 9;
    p.budget = 40;
    p.tie_break = TieBreak::Earlier;
    const Selection a = select(ahead, p), b = select(fresh, p);
    CHECK(bytes(ahead) == before + n_layer * Hkv * L * 4);
    for (size_t l = 0; l < size_t(n_layer); ++l)
        for (size_t h = 0; h < size_t(Hkv); ++h) CHECK(a.layers[l].heads[h].kept == b.layers[l].heads[h].kept);
    // Query-head mode gives each query head its KV head's row of the same scores.
    p.gqa = GqaMode::QueryHead;
    const Selection qa = select(ahead, p), qb = select(fresh, p);
    CHECK(bytes(ahead) == before + n_layer * Hkv * L * 4);
    for (size_t l = 0; l < size_t(n_layer); ++l)
        for (size_t h = 0; h < size_t(H); ++h) CHECK(qa.layers[l].heads[h].kept == qb.layers[l].heads[h].kept);
    // SnapKV's scores are pooled votes (score()), not a tensor: nothing to make ahead.
    const int64_t now = bytes(ahead);
    prepare_scores(ahead, snap);
    CHECK(bytes(ahead) == now);
}
