// Gemma 3 270M (the second real model) against llama.cpp (tests/data/reference/gemma3, made with
// llama.cpp's tools and a small libllama client; see its README): greedy continuations of prompts
// from 6 to 3,674 tokens (past the 512-token sliding window), perplexity at ctx 512, and the logits
// of a 67-token prompt, with the weights dequantized to float32 (--weights f32, which equals
// llama.cpp's F32 dequantization bit for bit: tests/io) and in their native blocks. Needs
// models/gemma-3-270m-q4_k_m.gguf, which the setup step fetches; a missing file fails the test.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/io/model_file.h"
#include "core/model/generator.h"
#include "core/model/llama_model.h"
#include "core/tokenizer/tokenizer.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::data_path;

namespace {

nlohmann::json read_ref(const std::string& name) {
    std::ifstream in(data_path("reference/gemma3/" + name));
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

struct Gemma {
    std::unique_ptr<ModelFile> file;
    std::shared_ptr<const LlamaModel> model;
    std::unique_ptr<Tokenizer> tok;
};

// Loaded once per process and weight storage (the float32 copy is 1 GB).
const Gemma& gemma(bool native) {
    static Gemma g[2];
    Gemma& m = g[native ? 1 : 0];
    if (!m.model) {
        const std::string path = snapkv::test::gemma3_path();
        INFO("Gemma 3 270M is fetched by the setup step (datasets/fetch_model.sh); expected at " << path);
        REQUIRE(snapkv::test::file_exists(path));
        m.file = ModelFile::open(path);
        ModelOptions mo;
        mo.native_weights = native;
        m.model = LlamaModel::load(*m.file, mo);
        m.tok = Tokenizer::create(m.file->vocab());
    }
    return m;
}

std::vector<int32_t> greedy(const Gemma& g, const std::vector<int32_t>& prompt, int64_t n) {
    KvCache cache = g.model->new_cache();
    GenerateOptions go;
    go.max_tokens = n;
    go.stop_at_eog = false;  // llama.cpp's run kept going past <end_of_turn>
    return generate(*g.model, *g.tok, prompt, cache, go).ids;
}

size_t first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
}

}  // namespace

TEST_CASE("Gemma 3 greedy continuations equal llama.cpp's, float32 and native weights", "[model][gemma3][reference]") {
    const nlohmann::json ref = read_ref("greedy.json");
    REQUIRE(ref["prompts"].size() >= 5);
    for (const auto& p : ref["prompts"]) {
        const auto prompt = p["prompt_ids"].get<std::vector<int32_t>>();
        const auto want_f32 = p["f32"]["generated"].get<std::vector<int32_t>>();
        const auto want_native = p["q4_k_m"]["generated"].get<std::vector<int32_t>>();
        INFO("prompt '" << p["name"].get<std::string>() << "' (" << prompt.size() << " tokens)");
        const std::vector<int32_t> got_f32 = greedy(gemma(false), prompt, static_cast<int64_t>(want_f32.size()));
        CHECK(got_f32 == want_f32);
        // llama.cpp's native run quantizes activations to 8 bits and leaves its own F32 run at some
        // step; ours keeps activations float32, so up to that step it must equal both.
        const std::vector<int32_t> got_native = greedy(gemma(true), prompt, static_cast<int64_t>(want_f32.size()));
        const size_t agree = first_difference(want_native, want_f32);
        INFO("llama.cpp native and F32 agree for " << agree << " tokens; ours native agrees with its native for "
                                                   << first_difference(got_native, want_native));
        CHECK(first_difference(got_native, want_native) >= agree);
        CHECK(first_difference(got_native, want_f32) >= agree);
    }
}

TEST_CASE("Gemma 3 perplexity at ctx 512 is llama-perplexity's within 2e-4", "[model][gemma3][reference]") {
    const nlohmann::json ref = read_ref("perplexity.json");
    std::ifstream in(data_path("reference/gemma3/" + ref["text_file"].get<std::string>()), std::ios::binary);
    REQUIRE(in.good());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    for (bool native : {false, true}) {
        const Gemma& g = gemma(native);
        const std::vector<int32_t> ids = g.tok->encode(text, true, true);
        const PerplexityResult r = perplexity(*g.model, ids, g.tok->bos_id(), 512);
        const nlohmann::json& want = ref[native ? "q4_k_m" : "f32"];
        INFO((native ? "native" : "float32")
             << " weights: " << r.ppl << " vs llama.cpp " << want["final_ppl"].get<double>());
        CHECK(static_cast<int64_t>(r.chunk_ppl.size()) == want["n_chunks"].get<int64_t>());
        CHECK(r.scored_per_chunk == want["tokens_scored_per_chunk"].get<int64_t>());
        // llama.cpp's native run quantizes activations; only the float32 weights are held to 2e-4.
        CHECK_THAT(r.ppl, Catch::Matchers::WithinRel(want["final_ppl"].get<double>(), native ? 1e-2 : 2e-4));
    }
}

TEST_CASE("Gemma 3 logits of a 67-token prompt are llama.cpp's on its float32 dequantization",
          "[model][gemma3][reference]") {
    const nlohmann::json ref = read_ref("logits.json");
    const auto ids = ref["prompt_ids"].get<std::vector<int32_t>>();
    const std::vector<float> last = snapkv::test::tiny::floats(data_path("reference/gemma3/logits-last-f32.bin"));
    for (bool native : {false, true}) {
        const Gemma& g = gemma(native);
        KvCache cache = g.model->new_cache();
        ForwardOptions fo;
        fo.all_logits = true;
        const at::Tensor t = g.model->forward(ids, cache, fo).contiguous();  // [T, V]
        REQUIRE(t.size(0) == static_cast<int64_t>(ids.size()));
        const int64_t V = t.size(1);
        REQUIRE(static_cast<int64_t>(last.size()) == V);
        // Every position: llama.cpp's top-20 ids have our logits within the tolerance. ggml's GELU
        // rounds its input to float16 and reads a float16 table (GGML_GELU_FP16), ours is the exact
        // tanh form in float32 (transformers' within 1e-4: test_arch_reference), so llama.cpp's
        // logits carry ~1e-4..1e-3 relative noise of their own: float32 weights are held to 1e-3 of
        // the largest logit (measured: 0.013 of 25.5), native blocks to 0.1.
        float largest = 0.0f;
        for (float v : last) largest = std::max(largest, std::fabs(v));
        const double tol = native ? 0.1 : 1e-3 * largest;
        double worst = 0;
        for (size_t p = 0; p < ids.size(); ++p) {
            const auto& top = ref["top"][p];
            const float* row = t.data_ptr<float>() + static_cast<int64_t>(p) * V;
            for (size_t k = 0; k < top["ids"].size(); ++k)
                worst = std::max(worst, std::fabs(row[top["ids"][k].get<int32_t>()] - top["logits"][k].get<double>()));
        }
        const float* row = t.data_ptr<float>() + (t.size(0) - 1) * V;
        for (int64_t v = 0; v < V; ++v)
            worst = std::max(worst, static_cast<double>(std::fabs(row[v] - last[static_cast<size_t>(v)])));
        INFO((native ? "native" : "float32") << " weights: max abs difference " << worst);
        CHECK(worst <= tol);
    }
}
