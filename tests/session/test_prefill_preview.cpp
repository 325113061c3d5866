// A prefill's per-layer previews (PrefillSettings::preview): each layer's selection, handed out as
// soon as the layer has run, equals that layer of select() after the prefill commits, and the
// committed prefill equals one made without a preview, for short prompts (one pass per layer)
// and long ones (a layer in token chunks, long_prompt_layer.cpp). A cancelled prefill keeps the
// previous one.
#include <string>
#include <vector>

#include "common/test_util.h"
#include "core/session/session.h"

#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::data_path;

namespace {

std::string story(size_t chars) {
    const std::string t = snapkv::test::read_text(data_path("reference/ppl-text.txt"));
    std::string out;
    while (out.size() < chars) out += t;
    const size_t end = out.find(". ", chars);
    return out.substr(0, end == std::string::npos ? chars : end + 1);
}

SelectionParams with(Policy policy, int64_t budget, GqaMode gqa) {
    SelectionParams p;
    p.policy = policy;
    p.budget = budget;
    p.gqa = gqa;
    p.window = 16;
    p.kernel = 5;
    return p;
}

// Field by field and float by float: the preview must be the committed selection's layer, not a
// close relative of it.
void check_same_layer(const LayerSelection& a, const LayerSelection& b) {
    CHECK(a.layer == b.layer);
    CHECK(a.compressed == b.compressed);
    CHECK(a.budget == b.budget);
    CHECK(a.sliding_window == b.sliding_window);
    CHECK(a.first_reachable == b.first_reachable);
    REQUIRE(a.heads.size() == b.heads.size());
    for (size_t h = 0; h < a.heads.size(); ++h) {
        INFO("head " << h);
        CHECK(a.heads[h].kept == b.heads[h].kept);
        CHECK(a.heads[h].kept_mass == b.heads[h].kept_mass);
        CHECK(a.heads[h].votes == b.heads[h].votes);
        CHECK(a.heads[h].pooled == b.heads[h].pooled);
    }
}

struct Recorded {
    std::vector<PrefillLayerPreview> previews;
};

PrefillSettings previewing(Recorded& rec, const std::vector<SelectionParams>& params, bool agnostic) {
    PrefillSettings ps;
    ps.max_window = 32;
    ps.preview.params = params;
    ps.preview.query_agnostic = agnostic;
    ps.preview.on_layer = [&rec](const PrefillLayerPreview& p) { rec.previews.push_back(p); };
    return ps;
}

// Prefills `prompt` once with previews of `params` and once without, and checks the previews
// against both committed results.
void check_previews(Session& s, const PromptSpec& prompt, const std::vector<SelectionParams>& params, bool agnostic) {
    PrefillSettings plain;
    plain.max_window = 32;
    s.prefill(prompt, plain);
    std::vector<Selection> without;
    for (const auto& p : params) without.push_back(s.select(p, agnostic));
    const std::vector<float> rows_without = s.window_attention(1, 0, 16, agnostic);

    Recorded rec;
    const PrefillSummary sum = s.prefill(prompt, previewing(rec, params, agnostic));
    const int64_t n_layer = s.model_info().config.n_layer;
    REQUIRE(static_cast<int64_t>(rec.previews.size()) == n_layer);
    double last_ms = 0;
    for (int64_t l = 0; l < n_layer; ++l) {
        const PrefillLayerPreview& pv = rec.previews[static_cast<size_t>(l)];
        INFO("layer " << l);
        CHECK(pv.layer == l);
        CHECK(pv.n_layer == n_layer);
        CHECK(pv.n_tokens == sum.n_tokens);
        CHECK(pv.elapsed_ms >= last_ms);
        last_ms = pv.elapsed_ms;
        REQUIRE(pv.selections.size() == params.size());
    }
    for (size_t i = 0; i < params.size(); ++i) {
        INFO("policy " << policy_name(params[i].policy) << ", " << gqa_mode_name(params[i].gqa)
                       << (agnostic ? ", query-agnostic" : ", query-aware"));
        const Selection with_preview = s.select(params[i], agnostic);
        REQUIRE(with_preview.layers.size() == static_cast<size_t>(n_layer));
        REQUIRE(without[i].layers.size() == static_cast<size_t>(n_layer));
        for (int64_t l = 0; l < n_layer; ++l) {
            INFO("layer " << l);
            const auto& pv = rec.previews[static_cast<size_t>(l)].selections[i];
            REQUIRE(pv.has_value());
            check_same_layer(*pv, with_preview.layers[static_cast<size_t>(l)]);
            // Scorers built during the pass are the ones built after it: the same selection.
            check_same_layer(with_preview.layers[static_cast<size_t>(l)], without[i].layers[static_cast<size_t>(l)]);
        }
    }
    CHECK(s.window_attention(1, 0, 16, agnostic) == rows_without);
}

}  // namespace

TEST_CASE("each layer's preview is that layer of the committed selection (short prompt, one pass a layer)",
          "[session][preview]") {
    Session s;
    s.load_model(data_path("stories260K.gguf"));
    PromptSpec p;
    p.document = story(1400);
    p.question = "Who was sad?";
    const bool agnostic = GENERATE(false, true);
    check_previews(s, p,
                   {with(Policy::SnapKV, 64, GqaMode::QueryHead), with(Policy::Pyramid, 64, GqaMode::KvHead),
                    with(Policy::AdaKV, 64, GqaMode::KvHead), with(Policy::H2O, 64, GqaMode::QueryHead),
                    with(Policy::Random, 64, GqaMode::QueryHead)},
                   agnostic);
}

TEST_CASE(
    "each layer's preview is that layer of the committed selection (long prompt in token chunks, sliding "
    "windows)",
    "[session][preview][gemma3]") {
    const std::string model = snapkv::test::gemma3_path();
    INFO("Gemma 3 270M is fetched by datasets/fetch_model.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    Session s;
    s.load_model(model);
    PromptSpec p;
    p.document = story(6000);  // about 1300 tokens: more than one 1024-token chunk
    p.question = "What did the children find in the garden?";
    REQUIRE(s.build_prompt(p).ids.size() > 1100);
    check_previews(s, p,
                   {with(Policy::SnapKV, 256, GqaMode::KvHead), with(Policy::Pyramid, 256, GqaMode::KvHead),
                    with(Policy::TOVA, 256, GqaMode::KvHead)},
                   false);
}

TEST_CASE("a preview whose parameters cannot be selected is empty and the prefill still commits",
          "[session][preview]") {
    Session s;
    s.load_model(data_path("stories260K.gguf"));
    PromptSpec p;
    p.document = story(1400);
    p.question = "Who was sad?";
    SelectionParams too_wide = with(Policy::SnapKV, 64, GqaMode::QueryHead);
    too_wide.window = 64;  // more than the 32 queries the prefill captures
    Recorded rec;
    s.prefill(p, previewing(rec, {too_wide, with(Policy::SnapKV, 64, GqaMode::QueryHead)}, false));
    REQUIRE_FALSE(rec.previews.empty());
    for (const auto& pv : rec.previews) {
        REQUIRE(pv.selections.size() == 2);
        CHECK_FALSE(pv.selections[0].has_value());
        CHECK(pv.selections[1].has_value());
    }
    CHECK(s.has_prefill());
    CHECK_THROWS_WITH(s.select(too_wide), Catch::Contains("window"));
}

TEST_CASE("a prefill cancelled after its first layers keeps the previous prefill", "[session][preview]") {
    Session s;
    s.load_model(data_path("stories260K.gguf"));
    PromptSpec first;
    first.document = story(1400);
    first.question = "Who was sad?";
    const PrefillSummary before = s.prefill(first);
    const SelectionParams sp = with(Policy::SnapKV, 64, GqaMode::QueryHead);
    const Selection sel_before = s.select(sp);

    PromptSpec second = first;
    second.question = "What was in the box?";
    std::atomic<bool> cancel{false};
    Recorded rec;
    PrefillSettings ps = previewing(rec, {sp}, false);
    ps.preview.on_layer = [&](const PrefillLayerPreview& pv) {
        rec.previews.push_back(pv);
        if (pv.layer == 1) cancel = true;  // the forward pass polls the flag in the next layer
    };
    CHECK_THROWS_AS(s.prefill(second, ps, {}, &cancel), Cancelled);
    CHECK(rec.previews.size() == 2);
    REQUIRE(s.has_prefill());
    CHECK(s.prefill_summary().ids == before.ids);
    const Selection sel_after = s.select(sp);
    REQUIRE(sel_after.layers.size() == sel_before.layers.size());
    for (size_t l = 0; l < sel_after.layers.size(); ++l) check_same_layer(sel_after.layers[l], sel_before.layers[l]);
}
