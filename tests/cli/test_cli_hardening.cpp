// The `snapkv` command line probed as a hostile user would: usage errors exit 2 naming
// the option, output files are written whole or not at all, prompts are checked against the
// context and the free memory before anything is allocated, generation from BOS alone follows
// llama.cpp, and input files that are folders or binary are refused. stories260K throughout.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli/cli_run.h"
#include "common/temp_dir.h"
#include "common/test_util.h"

using json = nlohmann::json;
using Catch::Matchers::Contains;
using snapkv::test::data_path;
using snapkv::test::TempDir;
using snapkv::test::cli::q;
using snapkv::test::cli::Result;
using snapkv::test::cli::run;
using snapkv::test::cli::run_with;

namespace {

const std::string kStories = data_path("stories260K.gguf");
const std::string kModel = " --model " + q(kStories);
// About 100 tokens of plain text.
const std::string kText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with "
    "her friends. One day, she saw a big red ball under a tree. She wanted to play with it, so she ran "
    "to the tree and picked it up. Her mom smiled and said they could play together.";
const std::string kPromptArgs = kModel + " --prompt " + q(kText);
const std::string kAnalyze = "analyze" + kPromptArgs + " --window 8 --budget 32";

void write(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
}

}  // namespace

TEST_CASE("every usage error exits 2 and names the option", "[cli][usage]") {
    // main.cpp documents exit code 2 for usage errors; CLI11's own codes (104-114) once leaked out,
    // '' read as 0 and meaningless values passed.
    struct Case {
        std::string args;
        std::string piece;
    };
    const Case cases[] = {
        {kAnalyze + " --window '' --json -", "--window: must be an integer"},
        {kAnalyze + " --window abc --json -", "--window"},
        {kAnalyze + " --max-window 0 --json -", "--max-window"},
        {kAnalyze + " --max-window -3 --json -", "--max-window"},
        {kAnalyze + " --kernel 4 --json -", "--kernel: 4 must be odd"},
        {"analyze" + kPromptArgs + " --window 8 --budget 8 --json -", "--budget: 8 must be larger than --window 8"},
        {kAnalyze + " --ratio 1 --json -", "--ratio"},
        {kAnalyze + " --policy bogus --json -", "--policy: must be one of"},
        {kAnalyze + " --pooling median --json -", "--pooling"},
        {"compare" + kModel + " --prompt hi --hit-threshold -1 --json -", "--hit-threshold"},
        {"compare" + kModel + " --prompt hi --hit-threshold nan --json -", "--hit-threshold"},
        {"compare" + kModel + " --prompt hi --hit-threshold 2 --json -", "--hit-threshold"},
        {"compare" + kModel + " --prompt hi --max-tokens 0 --json -", "--max-tokens"},
        {"bench" + kModel + " --decode -1", "--decode"},
        {"bench" + kModel + " --lengths 12x", "--lengths: '12x'"},
        {"generate" + kModel + " --prompt hi --max-tokens -5", "--max-tokens"},
        {"generate" + kModel + " --prompt hi --temperature nan", "--temperature"},
        {"generate" + kModel + " --prompt hi --top-p 0", "--top-p"},
        {"generate" + kModel, "no prompt"},
        {"generate --prompt hi", "--model"},
        {"perplexity" + kModel + " --file x --ctx 2", "--ctx"},
        {"info" + kModel + " --bogus", "--bogus"},
        {"info" + kModel + " --dtype int8", "--dtype"},
    };
    for (const Case& c : cases) {
        INFO("snapkv " << c.args);
        const Result r = run(c.args);
        INFO("stderr: " << r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Contains(c.piece));
    }
}

TEST_CASE("pooling none takes any kernel", "[cli][usage]") {
    // No pooling reads the kernel: refusing --kernel 2 here would refuse a setting that changes
    // nothing.
    const Result r = run(kAnalyze + " --kernel 2 --pooling none --json -");
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(json::parse(r.out)["params"]["pooling"] == "none");
}

TEST_CASE("documents that are folders or binary files are refused as such", "[cli]") {
    TempDir dir;
    const Result folder = run("analyze" + kModel + " --doc " + q(dir.path()) + " --question q --json -");
    CHECK(folder.code == 1);
    CHECK_THAT(folder.err, Contains("is a folder; expected a text file"));
    write(dir.file("bin.txt"), std::string("text\0more", 9));
    const Result bin = run("analyze" + kModel + " --doc " + q(dir.file("bin.txt")) + " --question q --json -");
    CHECK(bin.code == 1);
    CHECK_THAT(bin.err, Contains("looks like a binary file") && Contains("offset 4"));
}

TEST_CASE("a --json file is written whole or not at all", "[cli][output]") {
    // A failed write must not destroy the previous result (a full disk once left a file cut
    // mid-array with exit 0), and a missing parent folder is created or named.
    TempDir dir;
    SECTION("a full device fails with the reason") {
        const Result r = run(kAnalyze + " --json /dev/full");
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("cannot write '/dev/full'") && Contains("No space left on device"));
    }
    SECTION("a write cut short keeps the previous file and leaves no temporary") {
        const std::string keep = dir.file("keep.json");
        write(keep, "{\"previous\": true}\n");
        // A 1 KiB file size limit stands in for a full disk (the JSON is several KiB).
        const Result r = run_with("trap '' XFSZ; ulimit -f 1;", kAnalyze + " --json " + q(keep));
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("cannot write '" + keep + "'") && Contains("the old file is unchanged"));
        CHECK(snapkv::test::read_text(keep) == "{\"previous\": true}\n");
        CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);
    }
    SECTION("missing folders are created") {
        const std::string out = dir.file("out/sub/analyze.json");
        const Result r = run(kAnalyze + " --json " + q(out));
        INFO(r.err);
        REQUIRE(r.code == 0);
        CHECK(json::parse(snapkv::test::read_text(out))["n_tokens"].get<int>() > 32);
    }
    SECTION("a file where a folder should be is named") {
        write(dir.file("plain"), "x");
        const Result r = run(kAnalyze + " --json " + q(dir.file("plain/analyze.json")));
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("'" + dir.file("plain") + "' exists and is not a folder"));
    }
}

TEST_CASE("generate --prompt '' starts from BOS alone, as llama.cpp does", "[cli][llamacpp]") {
    // llama.cpp allows it (and llama2.c's golden output is defined that way): its greedy output for
    // the empty prompt (tokenized to [BOS]).
    const json* ref = nullptr;
    for (const auto& p : snapkv::test::reference()["prompts"])
        if (p["prompt"] == "") ref = &p;
    REQUIRE(ref != nullptr);
    const Result r = run("generate" + kModel + " --prompt '' --max-tokens 64 --greedy --json");
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["prompt_ids"] == (*ref)["token_ids"]);
    CHECK(j["ids"] == (*ref)["by_model"]["F32"]["greedy_ids"]);
}

TEST_CASE("generation stops at the context whatever --max-tokens asks", "[cli][context]") {
    // Sizing the cache for prompt + max-tokens would ask for 12.8 GB at 10^8, and 2^62 overflows.
    for (const char* n : {"100000000", "4611686018427387904"}) {
        INFO("--max-tokens " << n);
        const Result r = run("generate" + kModel + " --prompt " + q("Once upon a time") +
                             " --greedy --no-stop --json --max-tokens " + n);
        INFO(r.err);
        REQUIRE(r.code == 0);
        const json j = json::parse(r.out);
        CHECK(j["stop"] == "context");
        // The last token sampled at position 2047 fills the context (llama.cpp stops there too).
        CHECK(j["prompt_ids"].size() + j["ids"].size() == 2048 + 1);
    }
}

TEST_CASE("lengths are checked against the context before any prefill", "[cli][context]") {
    // Refused up front, with the tokens, the context and the memory it needed: a check after the
    // prefill once cost 190 s and 2.6 GB before saying no.
    SECTION("compare: prompt + new tokens") {
        const Result r = run("compare" + kModel + " --prompt " + q("Once upon a time") +
                             " --window 2 --budget 4 --max-tokens 5000 --json -");
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("5 tokens + 5000 new tokens exceed the model's context of 2048 tokens") &&
                              Contains("allowed: at most 2043 new tokens"));
    }
    SECTION("generate, analyze, perplexity and bench: a prompt longer than the context") {
        const std::string text = data_path("reference/ppl-text.txt");  // about 3900 tokens
        for (const std::string& args :
             {"generate" + kModel + " --prompt-file " + q(text),
              "analyze" + kModel + " --prompt-file " + q(text) + " --json -",
              "perplexity" + kModel + " --file " + q(text) + " --ctx 4096", "bench" + kModel + " --lengths 128,4096"}) {
            INFO("snapkv " << args);
            const Result r = run(args);
            CHECK(r.code == 1);
            CHECK_THAT(r.err,
                       Contains("more than the model's context of 2048 tokens") && Contains("beyond the weights"));
        }
    }
}

TEST_CASE("a prefill that would not fit in the free memory is refused with the estimate", "[cli][memory]") {
    // Refused rather than killed half-way by the kernel. SNAPKV_MEMORY_LIMIT caps the memory the
    // check sees (MemAvailable otherwise).
    const Result r = run_with("SNAPKV_MEMORY_LIMIT=64K", kAnalyze + " --json -");
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("the prompt (") && Contains("needs about") && Contains("KV cache") &&
                          Contains("scorer") && Contains("but only 64.0 KiB is available (SNAPKV_MEMORY_LIMIT=64K)"));
    const Result ok = run_with("SNAPKV_MEMORY_LIMIT=1G", kAnalyze + " --json -");
    CHECK(ok.code == 0);
    const Result bad = run_with("SNAPKV_MEMORY_LIMIT=lots", kAnalyze + " --json -");
    CHECK(bad.code == 1);
    CHECK_THAT(bad.err, Contains("SNAPKV_MEMORY_LIMIT='lots' is not a size"));
}
