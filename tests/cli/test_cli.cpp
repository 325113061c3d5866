// The `snapkv` command line as users and scripts call it: JSON contracts, exit codes, error
// messages, and the SmolLM2 checks (the model is fetched by scripts/setup.sh).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "cli/cli_run.h"
#include "common/test_util.h"

using json = nlohmann::json;
using snapkv::test::data_path;

namespace {

using snapkv::test::cli::q;
using snapkv::test::cli::Result;
using snapkv::test::cli::run;

const std::string kStories = data_path("stories260K.gguf");

}  // namespace

TEST_CASE("snapkv tokenize --json gives llama.cpp's ids and pieces", "[cli]") {
    for (const auto& c : snapkv::test::reference()["tokenizer_edge_cases"]["cases"]) {
        const std::string text = c["text"];
        if (text.find('\n') != std::string::npos || text.find('\t') != std::string::npos) continue;
        INFO("text: '" << text << "'");
        Result r = run("tokenize --model " + q(kStories) + " --text " + q(text) + " --json");
        REQUIRE(r.code == 0);
        json j = json::parse(r.out);
        CHECK(j["ids"] == c["ids_with_bos"]);
        CHECK(j["pieces"] == c["pieces"]);
    }
}

TEST_CASE("snapkv generate --json --greedy reproduces llama.cpp's greedy ids", "[cli]") {
    const auto& p = snapkv::test::reference()["prompts"][0];
    Result r = run("generate --model " + q(kStories) + " --prompt " + q(p["prompt"]) +
                   " --max-tokens 64 --greedy --json");
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    CHECK(j["prompt_ids"] == p["token_ids"]);
    CHECK(j["ids"] == p["by_model"]["F32"]["greedy_ids"]);
    CHECK(j["text"] == p["by_model"]["F32"]["greedy_text"]);
    CHECK(j["prefill_ms"].get<double>() > 0);
    CHECK(j["decode_ms"].get<double>() > 0);
}

TEST_CASE("snapkv perplexity --json follows llama-perplexity", "[cli]") {
    Result r = run("perplexity --model " + q(kStories) + " --file " + q(data_path("reference/ppl-text.txt")) +
                   " --ctx 128 --json");
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    CHECK_THAT(j["ppl"].get<double>(), Catch::Matchers::WithinRel(4.7411, 2e-4));
    CHECK(j["chunks"].size() == 57);
}

TEST_CASE("snapkv info describes the model", "[cli]") {
    Result r = run("info --model " + q(data_path("stories260K-Q4_1.gguf")) + " --json");
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    CHECK(j["arch"] == "llama");
    CHECK(j["n_layer"] == 5);
    CHECK(j["n_head"] == 8);
    CHECK(j["n_head_kv"] == 4);
    CHECK(j["tensor_types"]["Q4_1"] == 31);
    CHECK(j["tensor_types"]["Q8_0"] == 1);
    Result t = run("info --model " + q(kStories));
    CHECK(t.code == 0);
    CHECK(t.out.find("8 query, 4 key/value") != std::string::npos);
}

TEST_CASE("snapkv --weights keeps the file's format (with float32 or 8-bit inputs) or dequantizes to float32",
          "[cli]") {
    const std::string model = q(data_path("stories260K-Q4_1.gguf"));
    Result native = run("info --model " + model + " --json");
    Result f32 = run("info --model " + model + " --weights f32 --json");
    REQUIRE(native.code == 0);
    REQUIRE(f32.code == 0);
    const json jn = json::parse(native.out), jf = json::parse(f32.out);
    CHECK(jn["weights"] == "native");
    CHECK(jf["weights"] == "f32");
    // The file is 289632 bytes; float32 copies of its 260K weights take about 1 MB.
    CHECK(jn["weight_bytes"].get<int64_t>() < 289632);
    CHECK(jf["weight_bytes"].get<int64_t>() > 1000000);
    Result text = run("info --model " + model);
    CHECK(text.out.find("in the file's formats (native)") != std::string::npos);
    SECTION("both generate the same greedy text") {
        const std::string gen = "generate --model " + model +
                                " --prompt 'Once upon a time' --max-tokens 24 --greedy --json";
        Result a = run(gen), b = run(gen + " --weights f32");
        REQUIRE(a.code == 0);
        REQUIRE(b.code == 0);
        CHECK(json::parse(a.out)["ids"] == json::parse(b.out)["ids"]);
    }
    SECTION("an unknown choice is refused, naming it and the choices") {
        Result r = run("info --model " + model + " --weights q8");
        CHECK(r.code != 0);
        CHECK(r.err.find("--weights") != std::string::npos);
        CHECK(r.err.find("'q8'") != std::string::npos);
        CHECK(r.err.find("native, native-q8, f32") != std::string::npos);
    }
    SECTION("native-q8 keeps the format and quantizes decode's inputs") {
        Result j = run("info --model " + model + " --weights native-q8 --json");
        REQUIRE(j.code == 0);
        CHECK(json::parse(j.out)["weights"] == "native-q8");
        CHECK(json::parse(j.out)["weight_bytes"].get<int64_t>() < 289632);
        Result t = run("info --model " + model + " --weights native-q8");
        CHECK(t.out.find("8-bit inputs (native-q8)") != std::string::npos);
        Result g = run("generate --model " + model +
                       " --prompt 'Once upon a time' --max-tokens 24 --greedy --json --weights native-q8");
        REQUIRE(g.code == 0);
        CHECK(json::parse(g.out)["ids"].size() == 24);
    }
}

TEST_CASE("snapkv reports bad input on stderr with a non-zero exit code", "[cli]") {
    SECTION("a missing model file") {
        Result r = run("info --model /nonexistent/model.gguf");
        CHECK(r.code != 0);
        CHECK(r.err.find("/nonexistent/model.gguf") != std::string::npos);
    }
    SECTION("a file that is not a model") {
        Result r = run("info --model " + q(data_path("reference/ppl-text.txt")));
        CHECK(r.code != 0);
        CHECK(r.err.find("error") != std::string::npos);
    }
    SECTION("an even pooling kernel") {
        Result r = run("analyze --model " + q(kStories) + " --prompt " + q(std::string(400, 'a')) +
                       " --window 8 --kernel 4 --budget 64 --json -");
        CHECK(r.code != 0);
        CHECK(r.err.find("kernel") != std::string::npos);
    }
    SECTION("a missing required option") {
        Result r = run("generate --prompt hi");
        CHECK(r.code != 0);
        CHECK(r.err.find("--model") != std::string::npos);
    }
    SECTION("an unknown policy") {
        Result r = run("analyze --model " + q(kStories) + " --prompt hello --policy bogus --json -");
        CHECK(r.code != 0);
        CHECK(r.err.find("bogus") != std::string::npos);
    }
}

TEST_CASE("snapkv --help works for every subcommand", "[cli]") {
    for (const char* sub : {"info", "tokenize", "generate", "perplexity", "bench", "analyze", "compare"}) {
        INFO(sub);
        Result r = run(std::string(sub) + " --help");
        CHECK(r.code == 0);
        CHECK(r.out.find("--model") != std::string::npos);
    }
}

TEST_CASE("SmolLM2 answers the capital of France with Paris in chat mode", "[cli][smollm2]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh (datasets/fetch_model.sh); expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    Result r = run("generate --model " + q(model) + " --prompt " + q("What is the capital of France?") +
                   " --chat --greedy --max-tokens 24 --json");
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    CHECK(j["text"].get<std::string>().find("Paris") != std::string::npos);
}

TEST_CASE("snapkv selects per KV head by default and says why per query head grows the cache and takes --tie-break",
          "[cli]") {
    // stories260K: 8 query heads share 4 KV heads. A budget above L * 4 / 8 tokens shrinks the cache
    // per KV head but grows it per query head.
    const std::string base = "analyze --model " + q(kStories) + " --prompt " +
                             q(snapkv::test::read_text(data_path("reference/ppl-text.txt")).substr(0, 1500)) +
                             " --window 16 --kernel 7 --json -";
    Result r = run(base + " --budget 400");
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    const int64_t L = j["n_tokens"].get<int64_t>();
    REQUIRE(L > 400);
    REQUIRE(400 * 8 > L * 4);
    CHECK(j["params"]["gqa"] == "kv-head");
    CHECK(j["params"]["tie_break"] == "later");
    CHECK(j["layers"][0]["heads"].size() == 4);
    CHECK(j["kv_bytes"]["kept"].get<int64_t>() < j["kv_bytes"]["full"].get<int64_t>());
    CHECK(j["cache_note"] == "");
    CHECK(r.err.find("note:") == std::string::npos);

    r = run(base + " --budget 400 --gqa query-head");
    REQUIRE(r.code == 0);
    j = json::parse(r.out);
    CHECK(j["layers"][0]["heads"].size() == 8);
    CHECK(j["kv_bytes"]["kept"].get<int64_t>() > j["kv_bytes"]["full"].get<int64_t>());
    const std::string note = j["cache_note"].get<std::string>();
    CHECK(note.find("each of the 8 query heads") != std::string::npos);
    CHECK(note.find("the 4 KV heads") != std::string::npos);
    CHECK(note.find("at most " + std::to_string((L * 4 - 1) / 8) + " tokens") != std::string::npos);
    CHECK(r.err.find("note: the compressed cache") != std::string::npos);

    // Ties: the two orders keep the same number of tokens, differing only where pooled scores tie.
    r = run(base + " --budget 120 --tie-break earlier");
    REQUIRE(r.code == 0);
    const json early = json::parse(r.out);
    CHECK(early["params"]["tie_break"] == "earlier");
    r = run(base + " --budget 120 --tie-break later");
    REQUIRE(r.code == 0);
    const json late = json::parse(r.out);
    int differing = 0;
    for (size_t l = 0; l < late["layers"].size(); ++l)
        for (size_t h = 0; h < late["layers"][l]["heads"].size(); ++h) {
            const auto a = late["layers"][l]["heads"][h]["kept"].get<std::vector<int64_t>>();
            const auto b = early["layers"][l]["heads"][h]["kept"].get<std::vector<int64_t>>();
            CHECK(a.size() == b.size());
            differing += a != b;
        }
    CHECK(differing > 0);

    r = run(base + " --tie-break first");
    CHECK(r.code != 0);
    CHECK(r.err.find("first") != std::string::npos);
    CHECK(r.err.find("earlier, later") != std::string::npos);
    for (const char* sub : {"analyze", "compare", "bench", "perplexity"}) {
        INFO(sub);
        CHECK(run(std::string(sub) + " --help").out.find("--tie-break") != std::string::npos);
    }
}

TEST_CASE("SmolLM2 default setting compresses the bundled essay while the official one grows it and says why",
          "[cli][smollm2]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh (datasets/fetch_model.sh); expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    const std::string doc = std::string(SNAPKV_DATASETS_DIR) + "/sample_document.md";
    const std::string question = snapkv::test::read_text(std::string(SNAPKV_DATASETS_DIR) + "/sample_question.txt");
    const std::string base = "analyze --model " + q(model) + " --doc " + q(doc) + " --question " + q(question) +
                             " --chat --json -";
    Result r = run(base);  // the defaults: W 32, K 7, max pooling, C 1024, per KV head
    REQUIRE(r.code == 0);
    json j = json::parse(r.out);
    CHECK(j["n_tokens"].get<int64_t>() > 2000);
    CHECK(j["params"]["gqa"] == "kv-head");
    CHECK(j["params"]["budget"] == 1024);
    CHECK(j["kv_bytes"]["kept"].get<int64_t>() * 2 < j["kv_bytes"]["full"].get<int64_t>() * 1.1);
    CHECK(j["cache_note"] == "");
    r = run(base + " --gqa query-head");  // official SnapKV: 9 query heads stored, 3 KV heads in the full cache
    REQUIRE(r.code == 0);
    j = json::parse(r.out);
    CHECK(j["kv_bytes"]["kept"].get<int64_t>() > j["kv_bytes"]["full"].get<int64_t>());
    CHECK(j["cache_note"].get<std::string>().find("each of the 9 query heads") != std::string::npos);
}

TEST_CASE("snapkv analyze runs every policy, kvpress's presses with their own windows", "[cli]") {
    // The rows of core's policy table (policy_table.h); window: the window each keeps.
    const std::vector<std::pair<std::string, int64_t>> policies = {
        {"snapkv", 8}, {"streaming", 8}, {"h2o", 8},   {"random", 8},  {"pyramid", 8},
        {"adakv", 8},  {"tova", 1},      {"knorm", 0}, {"keydiff", 0}, {"expected_attention", 0}};
    const std::string base = "analyze --model " + q(kStories) + " --prompt " +
                             q(snapkv::test::read_text(data_path("reference/ppl-text.txt")).substr(0, 600)) +
                             " --window 8 --budget 48 --json -";
    for (const auto& [policy, window] : policies) {
        INFO("--policy " << policy);
        const Result r = run(base + " --policy " + policy);
        INFO(r.err);
        REQUIRE(r.code == 0);
        const json j = json::parse(r.out);
        CHECK(j["params"]["policy"] == policy);
        CHECK(j["window"] == window);
        const int64_t L = j["n_tokens"];
        int64_t kept = 0;
        for (const auto& h : j["layers"][0]["heads"]) {
            kept += static_cast<int64_t>(h["kept"].size());
            for (const auto& pos : h["kept"]) CHECK(pos.get<int64_t>() < L - window);
        }
        // The layer's C - W per head (PyramidKV: that layer's C; AdaKV: on average).
        const int64_t C = j["layers"][0]["budget"];
        CHECK(kept == (C - window) * static_cast<int64_t>(j["layers"][0]["heads"].size()));
    }
    const Result bad = run(base + " --policy tovaa");
    CHECK(bad.code == 2);
    CHECK(bad.err.find("expected_attention") != std::string::npos);
}

TEST_CASE("snapkv compare and generate compress while generating with --decode-budget", "[cli][decode]") {
    const std::string prompt = q(snapkv::test::read_text(data_path("reference/ppl-text.txt")).substr(0, 400));
    const std::string base = "--model " + q(kStories) + " --prompt " + prompt +
                             " --window 4 --kernel 3 --greedy --no-stop --max-tokens 60 --decode-interval 8";
    // Prefill and decoding compression together, then decoding compression alone.
    for (const char* prefill : {"--budget 48", "--no-prefill-compression"}) {
        INFO(prefill);
        const Result r = run("compare " + base + " " + prefill + " --decode-budget 32 --json -");
        INFO(r.err);
        REQUIRE(r.code == 0);
        const json j = json::parse(r.out);
        const json& d = j["decode_compression"];
        CHECK(d["budget"] == 32);
        CHECK(d["interval"] == 8);
        CHECK(d["prefill_compression"] == (std::string(prefill) == "--budget 48"));
        REQUIRE(d["events"].size() >= 5);
        for (const json& e : d["events"]) {
            CHECK(e["step"].get<int64_t>() % 8 == 0);
            CHECK(e["positions_after"] == 32);
            CHECK(e["positions_before"].get<int64_t>() > 32);
            CHECK(e["evicted"].get<int64_t>() > 0);
        }
        const auto first = d["events"][0]["step"].get<size_t>();
        REQUIRE(j["steps"].size() == 60);
        for (size_t i = first - 1; i < j["steps"].size(); ++i)
            CHECK(j["steps"][i]["cache_tokens"].get<int64_t>() <= 40);
    }
    // Without --decode-budget nothing changes and no events are listed.
    const Result off = run("compare " + base + " --budget 48 --json -");
    REQUIRE(off.code == 0);
    CHECK(json::parse(off.out)["decode_compression"]["events"].empty());

    const Result g = run("generate " + base + " --policy knorm --decode-budget 24 --json");
    INFO(g.err);
    REQUIRE(g.code == 0);
    const json gj = json::parse(g.out);
    CHECK(gj["ids"].size() == 60);
    CHECK(gj["decode_compression"]["params"]["policy"] == "knorm");
    CHECK(gj["decode_compression"]["events"].size() == 7);  // after steps 8, 16, ..., 56

    // Settings that cannot work are refused before the model is loaded, naming the option.
    const Result h2o = run("compare " + base + " --policy h2o --decode-budget 32 --json -");
    CHECK(h2o.code == 2);
    CHECK_THAT(h2o.err, Catch::Contains("--decode-budget") && Catch::Contains("h2o"));
    const Result alone = run("compare " + base + " --no-prefill-compression --json -");
    CHECK(alone.code == 2);
    CHECK_THAT(alone.err, Catch::Contains("--no-prefill-compression") && Catch::Contains("--decode-budget"));
    std::string wide_base = base;
    wide_base.replace(wide_base.find("--window 4"), 10, "--window 16");
    const Result wide = run("compare " + wide_base + " --decode-budget 32 --json -");
    CHECK(wide.code == 2);
    CHECK_THAT(wide.err, Catch::Contains("interval 8"));
}

TEST_CASE("snapkv bench --roofline prints each phase against the measured bounds and keeps the figures",
          "[cli][bench]") {
    const std::string dir = "/tmp/snapkv_roofline_test_" + std::to_string(::getpid());
    const std::string out = dir + "/r.json";
    ::mkdir(dir.c_str(), 0755);
    const Result r = snapkv::test::cli::run_with("SNAPKV_STATE_DIR=" + q(dir), "bench --model " + q(kStories) +
                                                                                   " --lengths 64,128 --decode 8 "
                                                                                   "--roofline --json " +
                                                                                   q(out));
    INFO(r.err << r.out);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("FMA peak") && Catch::Contains("prefill attention") &&
                          Catch::Contains("decode 8 after 128"));
    const json j = json::parse(snapkv::test::read_text(out));
    CHECK(j["read_bandwidth_gbs"].get<double>() > 0.1);
    CHECK(j["decode_weight_bytes"].get<double>() > 1e5);  // stories260K: about 1 MB of f32 weights
    REQUIRE(j["rows"].size() == 6);                       // two lengths x (products, attention, decode)
    for (const json& row : j["rows"]) {
        INFO(row.dump());
        CHECK(row["reached"].get<double>() > 0);
        CHECK(row["ms"].get<double>() > 0);
        if (j["fma_path"] != "scalar" || row["unit"] == "GB/s") CHECK(row["bound"].get<double>() > 0);
    }
    // The copy the app's About box reads.
    CHECK(json::parse(snapkv::test::read_text(dir + "/roofline.json")) == j);
    std::remove(out.c_str());
    std::remove((dir + "/roofline.json").c_str());
    ::rmdir(dir.c_str());
    // --json belongs to --roofline.
    CHECK(run("bench --model " + q(kStories) + " --json x.json").code != 0);
}
