// Compression while generating against NVIDIA kvpress's DecodingPress, and its invariants.
//
// Reference: tests/data/reference/decoding_press/smollm2_decoding_press.json (made by
// scripts/decoding_press_reference.py; its README says what DecodingPress does): SmolLM2-135M-
// Instruct in float32, 3 documents x target sizes 64 and 128 x KnormPress, KeyDiffPress, TOVAPress
// and SnapKVPress (window 8, kernel 5), interval 16, 48 decoding steps, the kept positions of every
// layer and KV head at the events after steps 16, 32 and 48. The prompt is prefilled whole and the
// reference's generated tokens are fed verbatim; at each event our choice is compared, then the
// reference's own kept set is applied (teacher forcing the cache), so that each event is judged on
// the cache kvpress had. Two float32 implementations differ in the last bits, so a position kept
// by one side only passes as a float tie: within the reference's tie band at the boundary
// (boundary_ties) or, on our side, within a relative 1e-4 of our boundary score.
//
// SnapKV after the first event is not comparable, and is not compared: kvpress's cache keeps the
// kept slots in topk order (score-descending), so from the second event on its avg_pool1d pools
// slots that are score neighbours, not position neighbours; we pool over positions (the gather
// keeps position order), as SnapKV's clustering means. Its first event, on a cache still in
// position order, is compared; the query-free presses and TOVA read no slot order and are compared
// at every event.
//
// Invariants on the bundled models: a decoding budget above prompt + generated tokens changes
// nothing (the same ids and logits as without it), and after the first event the cache never holds
// more than budget + interval tokens per head.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "core/compare/decode_compression.h"
#include "core/io/model_file.h"
#include "core/model/llama_model.h"
#include "core/session/session.h"
#include "core/snapkv/policy_rule.h"

// After the LibTorch headers: their logging defines a CHECK of its own.
#include <catch2/catch.hpp>

#include "session/kvpress_reference.h"

using namespace snapkv;
using json = nlohmann::json;

namespace {

SelectionParams press_params(const std::string& press) {
    SelectionParams p;
    p.policy = parse_policy(press);
    p.gqa = GqaMode::KvHead;  // kvpress scores the cache's (KV) heads
    if (p.policy == Policy::SnapKV) {
        p.window = 8;  // SnapKVPress(window_size=8, kernel_size=5), avg_pool1d
        p.kernel = 5;
        p.pooling = Pooling::Avg;
    }
    return p;
}

// Absolute positions of the cache slots of layer l, head h.
std::vector<int64_t> slot_positions(const KvCache& cache, int64_t l, int64_t h) {
    const at::Tensor pos = cache.layer(l).positions().select(0, h).contiguous();
    return std::vector<int64_t>(pos.data_ptr<int64_t>(), pos.data_ptr<int64_t>() + pos.numel());
}

struct Tally {
    int64_t heads = 0, equal = 0, ref_ties = 0, our_ties = 0;
};

}  // namespace

TEST_CASE("decoding compression keeps what kvpress's DecodingPress keeps on SmolLM2", "[session][kvpress][smollm2]") {
    const json ref = test::smollm2_reference("reference/decoding_press/smollm2_decoding_press.json");
    const std::string path = test::smollm2_path();
    REQUIRE(ref["cases"].size() >= 24);

    const auto file = ModelFile::open(path);
    ModelOptions mo;
    mo.native_weights = false;  // float32 weights, as transformers dequantizes the GGUF
    const auto model = LlamaModel::load(*file, mo);
    const int64_t n_layer = model->config().n_layer;
    const double rtol = ref["settings"]["tie_rtol"];

    std::map<std::string, Tally> tally;
    for (const json& c : ref["cases"]) {
        const std::string press = c["press"];
        const int64_t target = c["target_size"], interval = c["compression_interval"];
        const json& doc = ref["documents"][c["document"].get<size_t>()];
        CAPTURE(doc["name"].get<std::string>(), press, target);
        const auto ids = doc["ids"].get<std::vector<int32_t>>();
        const auto generated = c["generated"].get<std::vector<int32_t>>();
        REQUIRE(static_cast<int64_t>(ids.size()) == c["prompt_len"].get<int64_t>());

        KvCache cache = model->new_cache(c["n_positions"].get<int64_t>() + 1);
        model->forward(ids, cache);
        DecodeCompressor dc(*model, press_params(press), {target, interval});
        size_t next_event = 0;
        const json& events = c["events"];
        Tally& t = tally[press];
        for (int64_t k = 1; k < static_cast<int64_t>(generated.size()); ++k) {
            std::vector<at::Tensor> queries;
            ForwardOptions fo;
            fo.last_queries = &queries;
            model->forward({generated[static_cast<size_t>(k - 1)]}, cache, fo);
            dc.observe(queries);
            if (next_event >= events.size() || events[next_event]["step"].get<int64_t>() != k) continue;
            const json& ev = events[next_event++];
            CAPTURE(k);
            REQUIRE(ev["compressed"].get<bool>());
            REQUIRE(cache_tokens(cache) == ev["positions_before"].get<int64_t>());
            std::vector<Selection> scored;
            const std::vector<LayerKeep> ours = dc.choose(cache, &scored);
            REQUIRE(static_cast<int64_t>(ours.size()) == n_layer);
            // Tie bands of the reference, by (layer, head).
            std::map<std::pair<int64_t, int64_t>, std::set<int64_t>> ref_band;
            for (const json& b : ev["boundary_ties"]) {
                const auto tied = b["tied_positions"].get<std::vector<int64_t>>();
                ref_band[{b["layer"].get<int64_t>(), b["kv_head"].get<int64_t>()}] = std::set<int64_t>(tied.begin(),
                                                                                                       tied.end());
            }
            const bool comparable = press != "snapkv" || next_event == 1;
            std::vector<LayerKeep> forced(static_cast<size_t>(n_layer));
            for (int64_t l = 0; l < n_layer; ++l) {
                const LayerKeep& heads = ours[static_cast<size_t>(l)];
                REQUIRE(heads.size() == ev["kept"][static_cast<size_t>(l)].size());
                for (size_t h = 0; h < heads.size(); ++h) {
                    const std::vector<int64_t> pos = slot_positions(cache, l, static_cast<int64_t>(h));
                    std::set<int64_t> mine;
                    for (int64_t slot : heads[h]) mine.insert(pos[static_cast<size_t>(slot)]);
                    const std::set<int64_t> theirs = test::from_hex(
                        ev["kept"][static_cast<size_t>(l)][h].get<std::string>());
                    // The reference's set, as slots, continues the run.
                    auto& f = forced[static_cast<size_t>(l)];
                    f.emplace_back();
                    for (size_t s = 0; s < pos.size(); ++s)
                        if (theirs.count(pos[s])) f.back().push_back(static_cast<int64_t>(s));
                    REQUIRE(f.back().size() == theirs.size());
                    if (!comparable) continue;
                    ++t.heads;
                    CHECK(mine.size() == theirs.size());
                    if (mine == theirs) {
                        ++t.equal;
                        continue;
                    }
                    std::vector<int64_t> diff;
                    std::set_symmetric_difference(mine.begin(), mine.end(), theirs.begin(), theirs.end(),
                                                  std::back_inserter(diff));
                    const auto band = ref_band.find({l, static_cast<int64_t>(h)});
                    if (band != ref_band.end() &&
                        std::all_of(diff.begin(), diff.end(), [&](int64_t p) { return band->second.count(p) > 0; })) {
                        ++t.ref_ties;
                        continue;
                    }
                    // Our own near-ties: each differing slot scores within rtol of our boundary.
                    const Selection& sel = scored[static_cast<size_t>(l)];
                    REQUIRE(!sel.layers.empty());
                    const HeadSelection& hs = sel.layers.front().heads[h];
                    const std::vector<float>& score = hs.pooled.empty() ? hs.votes : hs.pooled;
                    REQUIRE(!score.empty());
                    std::vector<float> sorted(score);
                    const auto kk = static_cast<int64_t>(hs.kept.size());
                    std::nth_element(sorted.begin(), sorted.begin() + (kk - 1), sorted.end(), std::greater<float>());
                    const double boundary = sorted[static_cast<size_t>(kk - 1)];
                    for (int64_t p : diff) {
                        const auto slot = static_cast<size_t>(std::find(pos.begin(), pos.end(), p) - pos.begin());
                        INFO("layer " << l << " head " << h << " position " << p << " (slot " << slot << ") score "
                                      << (slot < score.size() ? score[slot] : NAN) << " boundary " << boundary);
                        REQUIRE(slot < score.size());
                        CHECK(std::abs(score[slot] - boundary) <= rtol * std::max(std::abs(boundary), 1e-30));
                    }
                    ++t.our_ties;
                }
            }
            dc.apply(cache, forced, k);
            CHECK(cache_tokens(cache) == target);
        }
        CHECK(next_event == events.size());
    }
    for (const auto& [press, t] : tally) {
        INFO(press << ": " << t.equal << " of " << t.heads << " (layer, KV head, event) sets equal, " << t.ref_ties
                   << " inside kvpress's tie band, " << t.our_ties << " inside ours");
        CHECK(t.heads == (press == "snapkv" ? 1 : 3) * 3 * 2 * n_layer * model->config().n_head_kv);
        CHECK(t.equal + t.ref_ties + t.our_ties == t.heads);
        WARN(press << ": " << t.equal << "/" << t.heads << " equal, " << t.ref_ties << " kvpress ties, " << t.our_ties
                   << " own ties");
    }
}

TEST_CASE("a decoding budget above the run's length changes nothing", "[session][decode]") {
    Session s;
    s.load_model(test::data_path("stories260K.gguf"), {"cpu", "float32", "f32"});
    PromptSpec spec;
    spec.text = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
    GenerationSettings g;
    g.max_tokens = 40;
    g.greedy = true;
    g.stop_at_eog = false;
    const GenerationOutput plain = s.generate(spec, g);
    for (const char* policy : {"snapkv", "knorm", "tova", "streaming"}) {
        CAPTURE(policy);
        SelectionParams p;
        p.policy = parse_policy(policy);
        p.window = 4;
        p.kernel = 3;
        const GenerationOutput big = s.generate(spec, g, {}, nullptr, p, {4096, 8});
        CHECK(big.ids == plain.ids);
        CHECK(big.decode_events.empty());
    }
}

TEST_CASE("after the first event the cache holds at most budget + interval tokens", "[session][decode]") {
    Session s;
    s.load_model(test::data_path("stories260K.gguf"), {"cpu", "float32", "f32"});
    PromptSpec spec;
    spec.text =
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
        "with her friends. One day, she saw a big red ball under a tree.";
    GenerationSettings g;
    g.max_tokens = 120;
    g.greedy = true;
    g.stop_at_eog = false;
    for (const char* policy : {"snapkv", "pyramid", "knorm", "keydiff", "tova", "streaming", "random"}) {
        for (const auto& [budget, interval] : std::vector<std::pair<int64_t, int64_t>>{{24, 8}, {40, 16}}) {
            CAPTURE(policy, budget, interval);
            SelectionParams p;
            p.policy = parse_policy(policy);
            p.window = 4;
            p.kernel = 3;
            const GenerationOutput out = s.generate(spec, g, {}, nullptr, p, {budget, interval});
            REQUIRE(!out.decode_events.empty());
            CHECK(out.decode_events.front().step == interval);
            // PyramidKV plans a budget per layer from the budget (more below, less above): each
            // layer is held to its own.
            const bool pyramid = p.policy == Policy::Pyramid;
            for (const DecodeCompressionEvent& e : out.decode_events) {
                CHECK(e.step % interval == 0);
                CHECK(e.evicted > 0);
                const std::vector<int64_t> budgets = policy_info(p.policy).rule().layer_budgets(
                    p, budget, e.positions_before, int64_t(e.kept.size()));
                for (size_t l = 0; l < e.kept.size(); ++l)
                    for (const auto& head : e.kept[l])
                        CHECK(static_cast<int64_t>(head.size()) <= (pyramid ? budgets[l] : budget));
                if (!pyramid) CHECK(e.positions_after <= budget);
            }
            const auto first = static_cast<size_t>(out.decode_events.front().step - 1);
            REQUIRE(out.cache_tokens.size() > first);
            if (!pyramid)
                for (size_t i = first; i < out.cache_tokens.size(); ++i)
                    CHECK(out.cache_tokens[i] <= budget + interval);
            CHECK(out.ids.size() == 120);
        }
    }
}

TEST_CASE("decoding compression refuses what it cannot do, naming it", "[session][decode]") {
    SelectionParams p;
    CHECK(check_decode_settings(p, {}).empty());  // off
    p.policy = Policy::H2O;
    CHECK_THAT(check_decode_settings(p, {64, 16}), Catch::Contains("h2o"));
    p.policy = Policy::AdaKV;
    CHECK_THAT(check_decode_settings(p, {64, 16}), Catch::Contains("adakv"));
    p.policy = Policy::ExpectedAttention;
    CHECK_THAT(check_decode_settings(p, {64, 16}), Catch::Contains("expected_attention"));
    p.policy = Policy::SnapKV;
    p.window = 32;
    CHECK_THAT(check_decode_settings(p, {32, 64}), Catch::Contains("larger than the window 32"));
    CHECK_THAT(check_decode_settings(p, {128, 16}), Catch::Contains("interval 16"));
    CHECK_THAT(check_decode_settings(p, {64, 0}), Catch::Contains("interval 0"));
    p.window = 8;
    p.kernel = 63;
    CHECK_THAT(check_decode_settings(p, {64, 16}), Catch::Contains("kernel 63"));
    p.policy = Policy::Knorm;  // reads no window: any interval
    CHECK(check_decode_settings(p, {64, 1}).empty());
}

TEST_CASE("on SmolLM2 a decoding budget above the run's length leaves compare byte-identical",
          "[session][decode][smollm2]") {
    const std::string path = test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << path);
    REQUIRE(test::file_exists(path));
    Session s;
    s.load_model(path);
    PromptSpec spec;
    spec.document = test::read_text(std::string(SNAPKV_DATASETS_DIR) + "/sample_document.md").substr(0, 3000);
    spec.question = "What is the document about?";
    spec.chat.enabled = true;
    s.prefill(spec);
    SelectionParams p;
    p.window = 16;
    p.budget = 256;
    CompareSettings cs;
    cs.generation.max_tokens = 48;
    cs.generation.greedy = true;
    cs.generation.stop_at_eog = false;
    const CompareResult plain = s.compare(p, cs);
    cs.decode = {1 << 16, 16};
    const CompareResult big = s.compare(p, cs);
    CHECK(big.compressed.ids == plain.compressed.ids);
    CHECK(big.full.ids == plain.full.ids);
    CHECK(big.decode_events.empty());
    REQUIRE(big.steps.size() == plain.steps.size());
    for (size_t i = 0; i < big.steps.size(); ++i) CHECK(big.steps[i].kl == plain.steps[i].kl);
    // A budget that bites changes the run and bounds its cache.
    cs.decode = {128, 16};
    const CompareResult small = s.compare(p, cs);
    REQUIRE(small.decode_events.size() == 2);  // after steps 16 and 32 (48 tokens: 47 fed back)
    for (size_t i = 15; i < small.cache_tokens.size(); ++i) CHECK(small.cache_tokens[i] <= 128 + 16);
}
