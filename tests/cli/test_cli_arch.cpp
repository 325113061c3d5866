// `snapkv logits` and `snapkv info` on the tiny models of every architecture (tests/data/tiny):
// the logits JSON equals transformers' reference at every position, info names the architecture
// and its features, and bad input to logits is a clear error.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "common/test_util.h"
#include "common/tiny_models.h"

using json = nlohmann::json;
using snapkv::test::cli::q;
using snapkv::test::cli::Result;
using snapkv::test::cli::run;
namespace tiny = snapkv::test::tiny;

TEST_CASE("snapkv logits writes transformers' logits at every position", "[cli][arch]") {
    const std::string name = GENERATE(std::string("gemma2"), std::string("phi3"), std::string("qwen3"));
    const std::string format = GENERATE(std::string("gguf"), std::string("hf"));
    CAPTURE(name, format);
    const json ref = tiny::ref(name);
    std::string ids;
    for (int32_t id : ref["ids"].get<std::vector<int32_t>>()) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const std::string out = "/tmp/snapkv_cli_logits_" + std::to_string(::getpid()) + ".json";
    const Result r = run("logits --model " + q(tiny::path(name, format)) + " --ids " + ids + " --json " + q(out));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json j = json::parse(snapkv::test::read_text(out));
    std::remove(out.c_str());
    CHECK(j["ids"] == ref["ids"]);
    const std::vector<float> want = tiny::logits(name);
    const auto V = ref["n_vocab"].get<size_t>();
    REQUIRE(j["logits"].size() == ref["ids"].size());
    std::vector<float> got;
    for (const auto& row : j["logits"]) {
        REQUIRE(row.size() == V);
        for (const auto& v : row) got.push_back(v.get<float>());
    }
    const auto rep = snapkv::test::compare_values(got, want, want.size(), 1e-4, 0.0);
    INFO(rep.str());
    CHECK(rep.first_bad == -1);
}

TEST_CASE("snapkv logits refuses bad ids and a missing prompt", "[cli][arch]") {
    const std::string model = q(tiny::gguf_path("llama3"));
    Result r = run("logits --model " + model + " --ids 1,x,3 --json -");
    CHECK(r.code == 1);
    CHECK(r.err.find("--ids: 'x' is not a token id") != std::string::npos);
    r = run("logits --model " + model + " --ids 1,99999 --json -");
    CHECK(r.code == 1);
    CHECK(r.err.find("token id 99999 is outside the vocabulary") != std::string::npos);
    r = run("logits --model " + model + " --json -");
    CHECK(r.code == 1);
    CHECK(r.err.find("exactly one of --ids and --prompt") != std::string::npos);
    r = run("logits --model " + model + " --prompt " + q("Hello world") + " --json -");
    REQUIRE(r.code == 0);
    // transformers' ids for the text, <|begin_of_text|> first
    const json ref = tiny::ref("llama3");
    CHECK(json::parse(r.out)["ids"] == ref["tokenizer_cases"][0]["ids"]);
    REQUIRE(ref["tokenizer_cases"][0]["text"] == "Hello world");
}

TEST_CASE("snapkv info prints each architecture and its special features", "[cli][arch]") {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"llama3", {"architecture   llama", "RoPE scaling llama3"}},
        {"mistral", {"architecture   llama", "sliding window 12 on layers all (2 of 2)"}},
        {"qwen2", {"architecture   qwen2", "QKV bias", "NeoX"}},
        {"qwen3", {"architecture   qwen3", "q/k norm"}},
        {"gemma2",
         {"architecture   gemma2", "sliding window 10 on layers 0 (1 of 2)", "attention soft-cap 6",
          "final logit soft-cap 5", "attention scale 1/sqrt(24)", "post-attention and post-FFN norms",
          "GeGLU (tanh GELU)", "embeddings x 8"}},
        {"gemma3",
         {"architecture   gemma3", "sliding window 10 on layers 0, 1, 2, 3, 4 (5 of 6)",
          "RoPE base 10000 on sliding layers, 1e+06 on global layers",
          "RoPE scaling linear (factor 8) on global layers", "q/k norm"}},
        {"phi3",
         {"architecture   phi3", "sliding window 14", "RoPE scaling longrope", "partial RoPE (12 of 16 dims)",
          "fused QKV and gate-up tensors (split at load)"}},
    };
    for (const auto& [name, pieces] : cases) {
        for (const char* format : {"gguf", "hf"}) {
            const Result r = run("info --model " + q(tiny::path(name, format)));
            INFO(name << " " << format << ":\n" << r.out << r.err);
            REQUIRE(r.code == 0);
            for (const std::string& p : pieces) CHECK(r.out.find(p) != std::string::npos);
        }
        const Result j = run("info --json --model " + q(tiny::gguf_path(name)));
        REQUIRE(j.code == 0);
        const json info = json::parse(j.out);
        CHECK(info["architecture"]["layers"].size() == info["n_layer"]);
        CHECK_FALSE(info["architecture"]["features"].empty());
    }
}

TEST_CASE("snapkv analyze marks sliding-window layers and keeps nothing they cannot see", "[cli][arch]") {
    const Result r = run("analyze --model " + q(tiny::gguf_path("gemma2")) + " --prompt " +
                         q("Twelve miles off a cold northern coast there is a rock called Skerry Dun. It is not much "
                           "of an island: a ridge of grey stone the length of a football pitch.") +
                         " --window 4 --kernel 3 --budget 12 --json -");
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    const int64_t L = j["n_tokens"];
    REQUIRE(L > 20);
    const json& l0 = j["layers"][0];  // gemma2: layer 0 slides over 10 tokens, layer 1 is global
    CHECK(l0["sliding_window"] == 10);
    CHECK(l0["first_reachable"] == L - 9);
    for (const auto& h : l0["heads"])
        for (const auto& pos : h["kept"]) CHECK(pos.get<int64_t>() >= L - 9);
    CHECK(j["layers"][1]["sliding_window"] == 0);
    CHECK(j["note"].get<std::string>().find("sliding-window layer 0 (window 10)") != std::string::npos);
}
