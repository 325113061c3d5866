// Compressed cache building (core/snapkv/compressed_cache.h) on a hand-made selection: which slots
// each head keeps (kept positions + the window; a sliding layer only what the next token sees),
// the kept masks per query head, the gathered cache (and the context prefix of a query-agnostic
// selection), and the full cache trimmed to each sliding window.
//
// Dimensions: Hkv = 2 cache heads, H = 4 query heads, L = 8 tokens, W = 2, P = 6, D = 3.
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include "core/snapkv/compressed_cache.h"

using namespace snapkv;

namespace {

constexpr int64_t kHkv = 2, kH = 4, kL = 8, kD = 3;

// A fresh prefill's cache: 2 layers, slot i holds position i, keys and values carry the position.
KvCache prefill_cache() {
    KvCache c(2, kHkv, kD, at::TensorOptions().dtype(at::kFloat), kL);
    const at::Tensor pos = at::arange(kL, at::TensorOptions().dtype(at::kLong));                    // [L]
    const at::Tensor kv = pos.to(at::kFloat).view({1, kL, 1}).expand({kHkv, kL, kD}).contiguous();  // [Hkv, L, D]
    for (int64_t l = 0; l < 2; ++l) c.layer(l).append(kv, kv, pos);
    c.set_n_past(kL);
    return c;
}

// Layer 0 compressed per KV head; layer 1 not compressed but sliding (window 4: sees 5..7).
Selection selection(int64_t n_tokens) {
    Selection s;
    s.n_tokens = n_tokens;
    s.window = 2;
    s.compressed = true;
    LayerSelection l0;
    l0.compressed = true;
    l0.heads.resize(2);
    l0.heads[0].kept = {1, 3};
    l0.heads[1].kept = {0, 2};
    LayerSelection l1;
    l1.layer = 1;
    l1.sliding_window = 4;
    s.layers = {l0, l1};
    return s;
}

std::vector<std::vector<int64_t>> positions(const KvCache& c, int64_t layer) {
    const at::Tensor p = c.layer(layer).positions().contiguous();  // [Hc, S]
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(p.size(0)));
    for (int64_t h = 0; h < p.size(0); ++h)
        for (int64_t s = 0; s < p.size(1); ++s) out[static_cast<size_t>(h)].push_back(p[h][s].item<int64_t>());
    return out;
}

}  // namespace

TEST_CASE("a selection becomes slot lists, kept masks and a gathered cache", "[snapkv][compressed_cache]") {
    const Selection sel = selection(kL);
    SECTION("keep lists add the window; a sliding layer keeps what the next token sees") {
        const std::vector<LayerKeep> keep = keep_lists(sel, kL, kHkv);
        REQUIRE(keep.size() == 2);
        CHECK(keep[0] == LayerKeep{{1, 3, 6, 7}, {0, 2, 6, 7}});
        CHECK(keep[1] == LayerKeep{{5, 6, 7}, {5, 6, 7}});
        CHECK(first_visible(4, kL) == 5);
        CHECK(first_visible(0, kL) == 0);
    }
    SECTION("a KV head's kept positions stand for every query head of its group") {
        const std::vector<at::Tensor> masks = kept_masks(sel, kH);
        REQUIRE(masks.size() == 2);
        CHECK_FALSE(masks[1].defined());
        REQUIRE(masks[0].sizes() == at::IntArrayRef({kH, 6}));
        const std::vector<std::vector<int64_t>> want = {{1, 3}, {1, 3}, {0, 2}, {0, 2}};
        for (int64_t h = 0; h < kH; ++h) {
            std::vector<int64_t> got;
            for (int64_t p = 0; p < 6; ++p)
                if (masks[0][h][p].item<bool>()) got.push_back(p);
            CHECK(got == want[static_cast<size_t>(h)]);
        }
    }
    SECTION("the compressed cache holds the listed positions with room to grow") {
        const KvCache c = compressed_cache(prefill_cache(), sel, kHkv, 5);
        CHECK(c.n_past() == kL);
        CHECK(positions(c, 0) == std::vector<std::vector<int64_t>>{{1, 3, 6, 7}, {0, 2, 6, 7}});
        CHECK(positions(c, 1) == std::vector<std::vector<int64_t>>{{5, 6, 7}, {5, 6, 7}});
        CHECK(c.layer(0).capacity() >= 4 + 5);
        CHECK(c.layer(0).keys()[1][2][0].item<float>() == 6.0f);  // values follow their slots
    }
    SECTION("a query-agnostic selection gathers from the context alone") {
        const Selection ctx = selection(6);  // the question (positions 6, 7) is fed afterwards
        const KvCache c = compressed_cache(prefill_cache(), ctx, kHkv, 2);
        CHECK(c.n_past() == 6);
        CHECK(positions(c, 0) == std::vector<std::vector<int64_t>>{{1, 3, 4, 5}, {0, 2, 4, 5}});
        CHECK(positions(c, 1) == std::vector<std::vector<int64_t>>{{3, 4, 5}, {3, 4, 5}});
    }
}

TEST_CASE("the full cache is trimmed to each layer's sliding window", "[snapkv][compressed_cache]") {
    ModelConfig config;
    config.n_layer = 2;
    config.n_head_kv = kHkv;
    config.layers.resize(2);
    const std::vector<int64_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
    SECTION("a sliding layer keeps its window, a global layer everything") {
        config.layers[1].sliding_window = 4;
        const KvCache c = window_trimmed_cache(prefill_cache(), config, kL, 3);
        CHECK(positions(c, 0) == std::vector<std::vector<int64_t>>{all, all});
        CHECK(positions(c, 1) == std::vector<std::vector<int64_t>>{{5, 6, 7}, {5, 6, 7}});
    }
    SECTION("without sliding layers it is a copy with room to grow") {
        const KvCache c = window_trimmed_cache(prefill_cache(), config, kL, 3);
        CHECK(positions(c, 1) == std::vector<std::vector<int64_t>>{all, all});
        CHECK(c.layer(1).capacity() >= kL + 3);
        CHECK(c.n_past() == kL);
    }
}
