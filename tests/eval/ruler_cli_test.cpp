// `snapkv ruler` as scripts call it: two shard processes joined by `snapkv merge` equal the unsharded
// run, a rerun with the same --out resumes, and an unknown task, a ratio outside [0, 1), a length
// beyond the context or the memory is refused with one line before any prefill (no results file).
// stories260K (it scores 0 on every task; the rows, not the scores, are under test).
#include <catch2/catch.hpp>

#include <algorithm>

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
const std::string kModel = " --model " + snapkv::test::data_path("stories260K.gguf");
const std::string kGrid = kModel +
                          " --tasks niah_single_1,niah_multikey_2,niah_multivalue --lengths 600"
                          " --samples 2 --ratios 0.5 --budgets 200 --window 16 --quiet";

}  // namespace

TEST_CASE("two ruler shards merged equal the unsharded run, and a rerun resumes", "[ruler][cli]") {
    snapkv::test::TempDir dir;
    const std::string whole = dir.file("whole.jsonl");
    Result r = run_shell(kCli + " ruler" + kGrid + " --out " + whole);
    INFO(r.err);
    REQUIRE(r.code == 0);
    // 3 tasks x 1 length x 2 samples = 6 cells, x (full, C200, r0.5).
    CHECK_THAT(r.out, Contains("18 rows written") && Contains("RULER at 600 tokens"));
    r = run_shell(kCli + " ruler" + kGrid + " --shard 0/2 --out " + dir.file("part-0.jsonl") + " & " + kCli + " ruler" +
                  kGrid + " --shard 1/2 --out " + dir.file("part-1.jsonl") + " & wait");
    REQUIRE(r.code == 0);
    CHECK(rows_without_timing(dir.file("part-0.jsonl")).size() == 9);
    CHECK(rows_without_timing(dir.file("part-1.jsonl")).size() == 9);
    r = run_shell(kCli + " merge --out " + dir.file("all.jsonl") + " " + dir.file("part-0.jsonl") + " " +
                  dir.file("part-1.jsonl"));
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("merged 18 rows from 2 files"));
    const std::vector<json> a = rows_without_timing(whole), b = rows_without_timing(dir.file("all.jsonl"));
    check_same_rows(a, b, 18);
    // What a row carries: the task, its references and score, the ratio and the budget it came to.
    const json& row = a[2];
    CHECK(row["ruler_task"] == "niah_single_1");
    CHECK(row["ratio"] == 0.5);
    CHECK(row["budget"].is_null());
    CHECK(row["budget_used"] == row["n_tokens"].get<int64_t>() / 2);
    CHECK(row["references"].size() == 1);
    CHECK(row["score"].get<double>() >= 0.0);
    CHECK(row["settings"]["ruler"]["scoring"] == "string_match_all");
    CHECK(row["n_tokens"].get<int64_t>() + 128 <= 600 + 6);

    r = run_shell(kCli + " ruler" + kGrid + " --out " + whole);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("0 rows written") && Contains("0 cells run, 6 already done"));
}

TEST_CASE("ruler refuses an unknown task, a ratio outside 0 to 1 and a length beyond the context in one line",
          "[ruler][cli]") {
    snapkv::test::TempDir dir;
    const std::string out = dir.file("r.jsonl");
    struct Case {
        std::string args;
        std::string message;
    };
    const std::vector<Case> cases = {
        {" --tasks niah_single_1,niah_single_7", "--tasks: 'niah_single_7' is not a RULER task here; allowed: all,"},
        {" --tasks qa_2", "the QA tasks need SQuAD and HotpotQA and are left out"},
        {" --ratios 0.5,1.0", "--ratios: 1 is outside [0, 1)"},
        {" --ratios -0.25", "--ratios: -0.25 is outside [0, 1)"},
        {" --lengths 1024,4096", "--lengths: length 4096 is above the model's context of 2048 tokens"},
        {" --tasks vt --lengths 600", "--lengths: length 600 is too short for vt"},
        {" --ratios 0.99 --lengths 1500 --tasks niah_single_1", "--ratios: ratio 0.99 keeps about"},
        {" --samples 0", "--samples: 0 must be at least 1"},
        {" --tasks niah_single_1 --lengths 1024 --samples 1", "--lengths: a RULER prompt of length 1024 needs about"},
    };
    for (const auto& c : cases) {
        INFO("snapkv ruler" << c.args);
        // The last case runs under a 2 MiB memory limit: the model loads, the prompt would not fit.
        const std::string limit = &c == &cases.back() ? "SNAPKV_MEMORY_LIMIT=2M " : "";
        const Result r = run_shell(limit + kCli + " ruler" + kModel + c.args + " --out " + out);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains(c.message));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK_FALSE(snapkv::test::file_exists(out));  // refused before any prefill
    }
}

TEST_CASE("ruler --plan prints the plan of its longest length and runs no sample", "[ruler][cli][plan]") {
    snapkv::test::TempDir dir;
    const std::string out = dir.file("r.jsonl");
    const Result r = run_shell(kCli + " ruler" + kGrid + " --plan --out " + out);
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("plan: largest cell length 600 ") && Contains("6 cells to run") &&
                          Contains("--plan stops here"));
    CHECK(r.out.empty());
    CHECK_FALSE(snapkv::test::file_exists(out));
}
