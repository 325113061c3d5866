// core/eval/eval_plan.h on stories260K: which cells a grid's plan forecasts from (a needle grid's
// first cell still to run at its longest length, one per RULER task at its longest, every item of
// a question set), with cells already done and shards; what it forecasts (the longest of them, its
// label, the cells left); and the refusal of a largest cell that does not fit, with the choices in
// the caller's words. The front ends print this; tests/eval/*_cli_test.cpp check their lines.
#include <catch2/catch.hpp>

#include <set>

#include "common/test_util.h"
#include "core/common/errors.h"
#include "core/eval/eval_plan.h"
#include "core/eval/needle.h"
#include "core/eval/qa_set.h"
#include "core/eval/ruler_runner.h"
#include "core/session/session.h"
#include "eval/eval_fixtures.h"

using namespace snapkv;
using namespace snapkv::eval;
using Catch::Matchers::Contains;
using snapkv::test::stories;

namespace {

NeedleTask needle_task(std::vector<int64_t> lengths, std::vector<double> depths) {
    NeedleOptions o;
    o.haystack = load_haystack({test::data_path("reference/ppl-text.txt")});
    o.needle = find_needle(load_needles(std::string(SNAPKV_DATASETS_DIR) + "/needles.jsonl"), "passkey", "needles");
    o.lengths = std::move(lengths);
    o.depths = std::move(depths);
    o.chat.enabled = false;
    return NeedleTask(stories(), o, 4);
}

// full, snapkv C48 and streaming C48: three rows a cell.
RunOptions small_run(Shard shard = {}) {
    RunOptions r = test::small_grid({"snapkv", "streaming"}, {48}, 4);
    r.shard = shard;
    return r;
}

// Every configuration's row of each cell: the cell is done.
std::set<RowKey> done_cells(const std::vector<int64_t>& cells, int64_t n_configs = 3) {
    std::set<RowKey> done;
    for (int64_t c : cells)
        for (int64_t k = 0; k < n_configs; ++k) done.insert({c, k});
    return done;
}

}  // namespace

TEST_CASE("a needle grid plans from its first cell still to run at the longest length", "[eval][plan]") {
    // lengths x depths, length-major: cells 0-2 are 96 tokens, 3-5 are 128.
    const NeedleTask task = needle_task({96, 128}, {0, 12.5, 100});
    CHECK(task.cell_label(0) == "length 96 depth 0");
    CHECK(task.cell_label(4) == "length 128 depth 12.5");
    CHECK(task.plan_candidates({0, 1, 2, 3, 4, 5}) == std::vector<int64_t>{3});
    CHECK(task.plan_candidates({0, 1, 2, 4, 5}) == std::vector<int64_t>{4});
    CHECK(task.plan_candidates({0, 2}) == std::vector<int64_t>{0});  // the longest still to run
    CHECK(task.plan_candidates({}).empty());
    // The longest length need not be the last one.
    CHECK(needle_task({128, 96}, {0, 50}).plan_candidates({1, 2, 3}) == std::vector<int64_t>{1});

    EvalRun run(stories(), task, small_run());
    SECTION("a cell with every row done is not run; one with a row missing is") {
        std::set<RowKey> done = done_cells({3});
        done.insert({4, 0});
        CHECK(cells_to_run(run, done) == std::vector<int64_t>{0, 1, 2, 4, 5});
        const GridForecast g = forecast_eval(stories(), task, run, done);
        CHECK(g.largest_cell == 4);
        CHECK(g.largest_label == "length 128 depth 12.5");
        CHECK(g.largest.n_tokens == 128);
        CHECK(g.cells == 5);
        CHECK(g.configs == 2);  // snapkv and streaming decode after the full cache
        CHECK(g.answer_tokens == 4);
        // The cell's memory counts its decodes after the prefill (the full cache's copy, the
        // compressed caches), which the refusal and the cheaper choices read through extra().
        CHECK(g.largest.memory.decode > 0);
        CHECK(g.largest.memory.extra() >= g.largest.memory.kv_cache * 2);
        CHECK(g.fits());
        CHECK_THAT(g.summary(),
                   Contains("largest cell length 128 depth 12.5: 128 tokens") && Contains("5 cells to run"));
    }
    SECTION("a shard plans from its own cells") {
        EvalRun shard(stories(), task, small_run(Shard{1, 2}));  // cells 1, 3, 5
        const GridForecast g = forecast_eval(stories(), task, shard, done_cells({3}));
        CHECK(cells_to_run(shard, done_cells({3})) == std::vector<int64_t>{1, 5});
        CHECK(g.largest_cell == 5);
        CHECK(g.largest_label == "length 128 depth 100");
        CHECK(g.cells == 2);
    }
    SECTION("a grid with every row done has nothing to forecast") {
        const GridForecast g = forecast_eval(stories(), task, run, done_cells({0, 1, 2, 3, 4, 5}));
        CHECK(g.largest_cell < 0);
        CHECK(g.cells == 0);
        CHECK(g.summary() == "nothing to run: every cell of the grid is done");
        CHECK_NOTHROW(require_grid_fits(g, [](const CheaperChoice&) { return std::string("x"); }));
    }
}

TEST_CASE("a RULER grid plans from the first sample still to run of each task at its longest length",
          "[eval][plan][ruler]") {
    const std::string ds = SNAPKV_DATASETS_DIR;
    const Haystack essays = load_haystack({ds + "/sample_document.md", ds + "/documents"});
    RulerOptions o;
    o.tasks = {"niah_single_1", "niah_multikey_2", "niah_multivalue"};
    o.lengths = {500, 600};
    o.samples = 2;
    o.chat.enabled = false;
    const RulerTask task(stories(), load_ruler_data(ds + "/ruler", essays.text), o);
    // cell = (length index x 3 + task index) x 2 + sample: at 600, single_1 6-7, multikey_2 8-9,
    // multivalue 10-11.
    CHECK(task.cell_label(7) == "length 600 niah_single_1");
    CHECK(task.cell_label(2) == "length 500 niah_multikey_2");
    std::vector<int64_t> all(12);
    for (int64_t c = 0; c < 12; ++c) all[static_cast<size_t>(c)] = c;
    CHECK(task.plan_candidates(all) == std::vector<int64_t>{6, 8, 10});

    RunOptions ro = small_run();
    ro.generation.max_tokens = task.max_answer_tokens();
    EvalRun run(stories(), task, ro);
    // single_1's first sample and both of multikey_2's at 600 are done.
    const std::set<RowKey> done = done_cells({6, 8, 9});
    const std::vector<int64_t> to_run = cells_to_run(run, done);
    CHECK(to_run == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 7, 10, 11});
    CHECK(task.plan_candidates(to_run) == std::vector<int64_t>{7, 10});
    const GridForecast g = forecast_eval(stories(), task, run, done);
    REQUIRE((g.largest_cell == 7 || g.largest_cell == 10));
    CHECK(g.largest_label == task.cell_label(g.largest_cell));
    const auto n = stories().build_prompt(task.prepare(stories(), g.largest_cell).prompt).ids.size();
    CHECK(g.largest.n_tokens == static_cast<int64_t>(n));
    CHECK(g.largest.n_tokens <= 600 - 128 + 6);  // a niah length counts its 128 answer tokens
    CHECK(g.cells == 9);
    CHECK(g.answer_tokens == 128);
    // With only the 500 cells left, the plan is at 500.
    const std::set<RowKey> top_done = done_cells({6, 7, 8, 9, 10, 11});
    CHECK(task.plan_candidates(cells_to_run(run, top_done)) == std::vector<int64_t>{0, 2, 4});
}

TEST_CASE("a question set plans from every item still to run and names the largest by its id", "[eval][plan]") {
    QaSet set;
    set.path = "inline.jsonl";
    for (const auto& [id, words] : std::vector<std::pair<std::string, int>>{{"short", 10}, {"long", 60}, {"mid", 30}}) {
        QaItem item;
        item.id = id;
        for (int i = 0; i < words; ++i) item.document += "Tim saw a big dog. ";
        item.question = "What did Tim see?";
        set.items.push_back(item);
    }
    ChatSettings chat;
    chat.enabled = false;
    const SweepTask task(stories(), set, chat, 4);
    CHECK(task.plan_candidates({0, 2}) == std::vector<int64_t>{0, 2});  // the default: every one
    CHECK(task.cell_label(1) == "long");
    EvalRun run(stories(), task, small_run());
    GridForecast g = forecast_eval(stories(), task, run, {});
    CHECK(g.largest_cell == 1);
    CHECK(g.largest_label == "long");
    CHECK(g.cells == 3);
    g = forecast_eval(stories(), task, run, done_cells({1}));
    CHECK(g.largest_cell == 2);
    CHECK(g.largest_label == "mid");
    CHECK(g.cells == 2);
}

TEST_CASE("a largest cell that does not fit is refused with the cheaper choices in the caller's words",
          "[eval][plan]") {
    const NeedleTask task = needle_task({96, 128}, {0, 50});
    EvalRun run(stories(), task, small_run());
    GridForecast g = forecast_eval(stories(), task, run, {});
    REQUIRE(g.largest_cell == 2);
    const auto words = [](const CheaperChoice& c) {
        return c.kind == CheaperChoice::Kind::CacheType ? "type " + std::string(kv_type_name(c.cache_type))
                                                        : "at most " + std::to_string(c.n_tokens);
    };
    CHECK_NOTHROW(require_grid_fits(g, words));
    g.largest.available = {1024, "a test's limit"};
    try {
        require_grid_fits(g, words);
        FAIL("a largest cell over the available memory was not refused");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(),
                   Contains("the grid's largest cell (length 128 depth 0, 128 tokens) needs about") &&
                       Contains("a test's limit") &&
                       Contains("; no cache type or shorter prompt fits: free memory or use a smaller model"));
    }
    CheaperChoice type;
    type.kind = CheaperChoice::Kind::CacheType;
    type.cache_type = KvType::Q8_0;
    type.peak_bytes = 2048;
    CheaperChoice shorter;
    shorter.kind = CheaperChoice::Kind::ShorterDocument;
    shorter.n_tokens = 100;
    shorter.peak_bytes = 4096;
    CheaperChoice half = type;
    half.cache_type = KvType::F16;
    half.peak_bytes = 3072;
    g.largest.choices = {type, half, shorter};
    try {
        require_grid_fits(g, words);
        FAIL("a largest cell over the available memory was not refused");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(),
                   Contains("; try type q8_0 (peak 2.0 KiB), type f16 (peak 3.0 KiB) or at most 100 (peak 4.0 KiB)"));
    }
}
