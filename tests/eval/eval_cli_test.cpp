// `snapkv needle`, `snapkv sweep` and `snapkv merge` as scripts and cluster jobs call them: three
// shard processes merged equal the unsharded run, resume through the CLI, Ctrl-C keeps the finished
// rows, and bad options fail with messages that name the problem. The shards run through
// scripts/cluster (the Slurm array and merge scripts, Slurm's variables set by hand). stories260K.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_run.h"
#include "common/temp_dir.h"
#include "common/test_util.h"
#include "eval/eval_cli_helpers.h"

using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

using snapkv::test::cli::Result;
using snapkv::test::cli::run_shell;
using snapkv::test::eval::check_same_rows;
using snapkv::test::eval::rows_without_timing;

const std::string kCli = SNAPKV_CLI_PATH;
const std::string kGrid = " --model " + snapkv::test::data_path("stories260K.gguf") + " --haystack " +
                          snapkv::test::data_path("reference/ppl-text.txt") +
                          " --lengths 96,128 --depths 0,50,100 --policies snapkv,streaming --budgets 48"
                          " --window 16 --kernel 5 --quiet";

}  // namespace

TEST_CASE("three shard processes merged equal the unsharded run", "[eval][cli]") {
    snapkv::test::TempDir dir;
    const std::string whole = dir.file("whole.jsonl");
    Result r = run_shell(kCli + " needle" + kGrid + " --max-tokens 5 --out " + whole);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("18 rows written"));
    // The three shards run at the same time through the Slurm array script, as three array tasks
    // would (Slurm's variables set by hand), then the merge job's script joins them.
    const std::string cluster = std::string(SNAPKV_DATASETS_DIR) + "/../scripts/cluster/";
    const std::string env = "SNAPKV=" + kCli + " SNAPKV_OUT=" + dir.file("parts") + " SLURM_ARRAY_TASK_COUNT=3 ";
    std::string shards, parts;
    for (int i = 0; i < 3; ++i) {
        shards += env + "SLURM_ARRAY_TASK_ID=" + std::to_string(i) + " bash " + cluster + "eval_array.sbatch needle" +
                  kGrid + " --max-tokens 5 & ";
        parts += " " + dir.file("parts/part-" + std::to_string(i) + ".jsonl");
    }
    r = run_shell(shards + "wait");
    REQUIRE(r.code == 0);
    for (int i = 0; i < 3; ++i)
        CHECK(rows_without_timing(dir.file("parts/part-" + std::to_string(i) + ".jsonl")).size() == 6);
    r = run_shell(env + "bash " + cluster + "merge.sbatch");
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("merged 18 rows from 3 files"));
    const std::vector<json> a = rows_without_timing(whole), b = rows_without_timing(dir.file("parts/all.jsonl"));
    check_same_rows(a, b, 18);
    // (checked here, not in SECTIONs, so that the runs above happen once)
    r = run_shell(kCli + " merge --out " + dir.file("dup.jsonl") + parts + " " + dir.file("parts/part-0.jsonl"));
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("is in both"));
    r = run_shell(kCli + " merge --out " + dir.file("two.jsonl") + " " + dir.file("parts/part-0.jsonl") + " " +
                  dir.file("parts/part-1.jsonl"));
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("6 of 18 rows") && Contains("--allow-partial"));
}

TEST_CASE("rerunning with the same --out computes only the missing rows", "[eval][cli]") {
    snapkv::test::TempDir dir;
    const std::string out = dir.file("r.jsonl");
    Result r = run_shell(kCli + " needle" + kGrid + " --max-tokens 5 --shard 1/2 --out " + out);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("9 rows written"));
    r = run_shell(kCli + " needle" + kGrid + " --max-tokens 5 --out " + out);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("9 rows written") && Contains("3 cells run, 3 already done"));
    r = run_shell(kCli + " needle" + kGrid + " --max-tokens 5 --out " + out);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("0 rows written") && Contains("0 cells run, 6 already done"));
    // Other settings into the same file are refused.
    r = run_shell(kCli + " needle" + kGrid + " --max-tokens 6 --out " + out);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("other settings") && Contains("max_tokens: 6 here, 5 there"));
}

TEST_CASE("Ctrl-C stops a run with its finished rows intact", "[eval][cli]") {
    snapkv::test::TempDir dir;
    const std::string out = dir.file("r.jsonl");
    const std::string cmd = kCli + " needle" + kGrid + " --max-tokens 40 --out " + out;
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // Interrupt once the first rows are on disk.
    for (int i = 0; i < 600 && rows_without_timing(out).size() < 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    const size_t kept = rows_without_timing(out).size();  // every line parses
    INFO("rows kept: " << kept);
    if (WEXITSTATUS(status) == 0) {
        WARN("the run finished before the interrupt arrived; nothing was cancelled");
        CHECK(kept == 18);
    } else {
        CHECK(WEXITSTATUS(status) == 130);
        CHECK(kept >= 2);
        CHECK(kept < 18);
    }
    Result r = run_shell(cmd);
    REQUIRE(r.code == 0);
    CHECK(rows_without_timing(out).size() == 18);
}

TEST_CASE("bad evaluation options fail with messages that name the problem", "[eval][cli]") {
    snapkv::test::TempDir dir;
    const std::string model = " --model " + snapkv::test::data_path("stories260K.gguf");
    const std::string out = " --out " + dir.file("r.jsonl");
    struct Case {
        std::string args;
        std::string message;
    };
    std::ofstream(dir.file("empty.jsonl")) << "\n";
    std::ofstream(dir.file("bad.jsonl")) << "{\"document\": \"a\", \"question\": \"b\"}\n{\"document\": oops}\n";
    const std::vector<Case> cases = {
        {"needle" + model + " --lengths 128 --depths 0,120" + out, "depth 120 is outside 0..100"},
        {"needle" + model + " --lengths 4096 --depths 50" + out, "length 4096 is above the model's context of 2048"},
        {"needle" + model + " --lengths 128 --shard 2/2" + out, "--shard: '2/2' has i = 2"},
        {"sweep" + model + " --set " + dir.file("empty.jsonl") + out, "holds no items"},
        {"sweep" + model + " --set " + dir.file("bad.jsonl") + out, "line 2 is not valid JSON"},
        {"sweep" + model + " --set " + dir.file("none.jsonl") + out, "is not a file"},
    };
    for (const auto& c : cases) {
        INFO("snapkv " << c.args);
        const Result r = run_shell(kCli + " " + c.args);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains(c.message));
    }
}

TEST_CASE("result rows record the KV cache type, and a file of another type is not resumed", "[eval][cli]") {
    snapkv::test::TempDir dir;
    const std::string out = dir.file("f16.jsonl");
    const std::string one_cell = " --model " + snapkv::test::data_path("stories260K.gguf") + " --haystack " +
                                 snapkv::test::data_path("reference/ppl-text.txt") +
                                 " --lengths 96 --depths 50 --policies snapkv,streaming --budgets 48"
                                 " --window 16 --kernel 5 --quiet";
    Result r = run_shell(kCli + " needle" + one_cell + " --max-tokens 4 --cache-type f16 --out " + out);
    REQUIRE(r.code == 0);
    std::vector<json> rows = rows_without_timing(out);
    REQUIRE(rows.size() == 3);  // full cache, snapkv, streaming
    for (const json& row : rows) CHECK(row["settings"]["model"]["cache_type"] == "f16");
    // The float32 cache into the f16 file: refused, naming the difference.
    r = run_shell(kCli + " needle" + one_cell + " --max-tokens 4 --out " + out);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("other settings") && Contains("cache_type: \"f32\" here, \"f16\" there"));
    // A file written before the type was recorded (no cache_type) ran with float32: it resumes
    // with f32 and is refused with f16.
    const std::string old = dir.file("old.jsonl");
    {
        std::ifstream in(out);
        std::ofstream o(old);
        std::string line;
        while (std::getline(in, line)) {
            json row = json::parse(line);
            row["settings"]["model"].erase("cache_type");
            o << row.dump() << "\n";
        }
    }
    r = run_shell(kCli + " needle" + one_cell + " --max-tokens 4 --out " + old);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("0 cells run, 1 already done"));
    r = run_shell(kCli + " needle" + one_cell + " --max-tokens 4 --cache-type f16 --out " + old);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains("cache_type: \"f16\" here, \"f32\" there"));
}

TEST_CASE(
    "needle prints a plan line for its largest cell, --plan stops before any cell, and a largest cell that "
    "does not fit is refused before any row",
    "[eval][cli][plan]") {
    snapkv::test::TempDir dir;
    const std::string out = dir.file("r.jsonl");
    // kGrid without --quiet.
    const std::string grid = " --model " + snapkv::test::data_path("stories260K.gguf") + " --haystack " +
                             snapkv::test::data_path("reference/ppl-text.txt") +
                             " --lengths 96,128 --depths 0,50,100 --policies snapkv,streaming --budgets 48"
                             " --window 16 --kernel 5 --max-tokens 5";
    SECTION("--plan names the largest length and the cells to run, and runs none") {
        const Result r = run_shell(kCli + " needle" + grid + " --plan --out " + out);
        INFO(r.err);
        REQUIRE(r.code == 0);
        CHECK_THAT(r.err, Contains("plan: largest cell length 128 depth 0: 128 tokens") && Contains("peak ") &&
                              Contains(" free") && Contains("6 cells to run") && Contains("--plan stops here"));
        CHECK(r.err.find("[1/6]") == std::string::npos);
        CHECK(r.out.empty());
        CHECK_FALSE(snapkv::test::file_exists(out));
        // --plan asks for the line: --quiet does not hide it.
        const Result q = run_shell(kCli + " needle" + grid + " --plan --quiet --out " + out);
        CHECK(q.code == 0);
        CHECK_THAT(q.err, Contains("plan: largest cell length 128"));
        CHECK_FALSE(snapkv::test::file_exists(out));
    }
    SECTION("a run prints the plan before its first cell; --quiet prints no plan") {
        Result r = run_shell(kCli + " needle" + grid + " --out " + out);
        INFO(r.err);
        REQUIRE(r.code == 0);
        const size_t plan = r.err.find("plan: largest cell length 128");
        REQUIRE(plan != std::string::npos);
        CHECK(plan < r.err.find("[1/6]"));
        r = run_shell(kCli + " needle" + grid + " --quiet --out " + dir.file("q.jsonl"));
        REQUIRE(r.code == 0);
        CHECK(r.err.find("plan:") == std::string::npos);
    }
    SECTION("the cell count is of the cells still to run after a resume") {
        Result r = run_shell(kCli + " needle" + grid + " --quiet --shard 1/2 --out " + out);
        REQUIRE(r.code == 0);
        r = run_shell(kCli + " needle" + grid + " --plan --out " + out);
        INFO(r.err);
        REQUIRE(r.code == 0);
        CHECK_THAT(r.err, Contains("3 cells to run"));
        CHECK(rows_without_timing(out).size() == 9);  // --plan wrote nothing
    }
    SECTION("a largest cell that does not fit is refused before the shorter cells run") {
        // 500 KiB: a length-96 cell's run (about 450 KiB) fits, a length-128 cell's (about 580 KiB)
        // does not; without the plan the 96 cells would run and write rows first.
        const Result r = run_shell("SNAPKV_MEMORY_LIMIT=500K " + kCli + " needle" + grid + " --out " + out);
        INFO(r.err);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("the grid's largest cell (length 128 depth 0, 128 tokens) needs about") &&
                              Contains("SNAPKV_MEMORY_LIMIT=500K") &&
                              Contains("; try --lengths (or --max-length) of at most"));
        CHECK(r.err.find("[1/6]") == std::string::npos);
        CHECK_FALSE(snapkv::test::file_exists(out));
    }
}
