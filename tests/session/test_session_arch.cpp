// SnapKV through the Session on the tiny models of the other architectures (tests/data/tiny):
// sliding-window layers hold only what their window reaches in both runs of a comparison, the
// memory report equals the caches' real bytes, trimming changes nothing the model computes, and
// selection and heatmaps mark those layers.
#include <string>
#include <vector>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/session/session.h"

#include <catch2/catch.hpp>

using namespace snapkv;
namespace tiny = snapkv::test::tiny;

namespace {

PromptSpec ids_prompt(const std::string& name) {
    PromptSpec p;
    p.ids = tiny::ref(name)["ids"].get<std::vector<int32_t>>();
    return p;
}

SelectionParams params(int64_t window, int64_t budget) {
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = window;
    p.kernel = 3;
    p.budget = budget;
    return p;
}

CompareSettings greedy(int64_t n) {
    CompareSettings cs;
    cs.generation.max_tokens = n;
    cs.generation.greedy = true;
    cs.generation.stop_at_eog = false;
    return cs;
}

}  // namespace

TEST_CASE("on sliding-window models the compare's KV bytes are the caches' and Session::kv_bytes'", "[session][arch]") {
    const std::string name = GENERATE(std::string("gemma2"), std::string("mistral"), std::string("gemma3"),
                                      std::string("llama3"));
    CAPTURE(name);
    Session s;
    s.load_model(tiny::gguf_path(name));
    const ModelConfig c = s.model_info().config;
    s.prefill(ids_prompt(name));
    const int64_t L = 64;
    SelectionParams p = params(8, 24);
    p.gqa = GqaMode::KvHead;  // one selection per KV head: the compressed cache really shrinks
    const Selection sel = s.select(p);
    const auto [full, comp] = s.kv_bytes(sel);
    // Expected by hand: a sliding layer needs the last window - 1 positions (the next token, at L,
    // sees L - window + 1 .. L), a global layer all L; compressed global layers keep 16 + 8 per head.
    const int64_t per = c.head_dim * 2 * 4;
    int64_t want_full = 0;
    for (const LayerConfig& lc : c.layers)
        want_full += c.n_head_kv * (lc.sliding_window > 0 ? lc.sliding_window - 1 : L) * per;
    CHECK(full == want_full);
    for (size_t l = 0; l < sel.layers.size(); ++l) {
        const LayerSelection& ls = sel.layers[l];
        CHECK(ls.sliding_window == c.layers[l].sliding_window);
        if (ls.sliding_window > 0) {
            CHECK(ls.first_reachable == L - ls.sliding_window + 1);
            CHECK_FALSE(ls.compressed);  // windows of 10-12 fit the budget of 24
        } else {
            CHECK(ls.compressed);
        }
    }
    const CompareResult r = s.compare(p, greedy(4));
    CHECK(r.full.kv_bytes == full);
    CHECK(r.compressed.kv_bytes == comp);
    bool any_global = false;
    for (const LayerConfig& lc : c.layers) any_global = any_global || lc.sliding_window == 0;
    if (any_global) CHECK(comp < full);
    else CHECK(comp == full);  // mistral: every layer slides and its window fits the budget
    for (const auto& layer : r.hit_rate)
        for (double h : layer) CHECK((h == -1.0 || (h >= 0.0 && h <= 1.0)));
}

TEST_CASE("trimming sliding layers to their window changes nothing the model computes", "[session][arch]") {
    const std::string name = GENERATE(std::string("gemma2"), std::string("phi3"), std::string("gemma3"));
    CAPTURE(name);
    Session s;
    s.load_model(tiny::hf_path(name));
    const PromptSpec prompt = ids_prompt(name);
    GenerationSettings g = greedy(8).generation;
    const std::vector<int32_t> plain = s.generate(prompt, g).ids;  // untrimmed cache
    s.prefill(prompt);
    const CompareResult r = s.compare(params(8, 1000), greedy(8));  // budget > L: nothing compressed
    CHECK(r.full.ids == plain);
    CHECK(r.compressed.ids == plain);
    for (const CompareStep& st : r.steps) CHECK(st.kl == Approx(0.0).margin(1e-9));
    CHECK(r.full.kv_bytes == r.compressed.kv_bytes);
    // The transformers reference continuation, through the trimmed cache.
    const auto want = tiny::ref(name)["greedy"].get<std::vector<int32_t>>();
    CHECK(std::vector<int32_t>(want.begin(), want.begin() + 8) == plain);
}
