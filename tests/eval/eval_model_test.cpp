// core/eval on stories260K: needle documents of exact token lengths with the needle where it was
// asked for, the reference-based comparison against the lockstep one, and the runner's rows,
// resume and cancel. Small grids only (the model's context is 2048).
#include <catch2/catch.hpp>

#include <atomic>

#include "common/temp_dir.h"
#include "common/test_util.h"
#include "core/common/errors.h"
#include "core/eval/needle.h"
#include "core/eval/qa_set.h"
#include "core/eval/results_file.h"
#include "core/session/session.h"
#include "eval/eval_fixtures.h"

using namespace snapkv;
using namespace snapkv::eval;
using json = nlohmann::json;
using Catch::Matchers::Contains;
using snapkv::test::stories;

namespace {

// TinyStories prose (the perplexity text) as the haystack: the model's own domain.
Haystack story_haystack() {
    static const Haystack h = load_haystack({test::data_path("reference/ppl-text.txt")});
    return h;
}

// A story and a question prefilled, and the full-cache reference of max_tokens tokens decoded
// (without stopping at the end of generation, so that lockstep and reference runs have the same
// length and agree step by step). Returns the settings the reference ran with; p gets the prompt.
CompareSettings prefill_with_reference(Session& s, PromptSpec& p, int64_t max_tokens) {
    p.document = test::read_text(test::data_path("reference/ppl-text.txt")).substr(0, 1200);
    p.question = "Who was happy?";
    s.prefill(p);
    CompareSettings cs;
    cs.generation.max_tokens = max_tokens;
    cs.generation.stop_at_eog = false;
    s.decode_reference(cs, max_tokens);
    return cs;
}

NeedleOptions needle_options(std::vector<int64_t> lengths, std::vector<double> depths) {
    NeedleOptions o;
    o.haystack = story_haystack();
    o.needle = find_needle(load_needles(std::string(SNAPKV_DATASETS_DIR) + "/needles.jsonl"), "passkey", "needles");
    o.lengths = std::move(lengths);
    o.depths = std::move(depths);
    o.chat.enabled = false;
    return o;
}

std::vector<json> run_rows(const EvalTask& task, const RunOptions& ro, const std::set<RowKey>& done = {},
                           RunStats* stats = nullptr) {
    EvalRun run(stories(), task, ro);
    std::vector<json> rows;
    RunStats st = run.run(done, [&](const Row& r) { rows.push_back(r); });
    if (stats) *stats = st;
    return rows;
}

json without_timing(json r) {
    r.erase("timing");
    return r;
}

}  // namespace

TEST_CASE("needle documents have exactly the requested number of tokens and the needle at its depth", "[eval]") {
    Session& s = stories();
    const NeedleTask task(s, needle_options({100, 173, 256, 401}, {0, 25, 50, 75, 100}), 8);
    for (int64_t cell = 0; cell < task.n_cells(); ++cell) {
        const CellPrompt cp = task.prepare(s, cell);
        const PromptTokens pt = s.build_prompt(cp.prompt);
        INFO("cell " << cell << ": length " << cp.fields["length"] << ", depth " << cp.fields["depth"]);
        CHECK(static_cast<int64_t>(pt.ids.size()) == cp.fields["length"].get<int64_t>());
        // The needle's token span decodes to text holding the needle sentence with this cell's key.
        REQUIRE_FALSE(cp.needle.empty());
        REQUIRE_FALSE(cp.value_tokens.empty());
        const std::string needle = s.decode({pt.ids.begin() + cp.needle.first, pt.ids.begin() + cp.needle.last});
        CHECK_THAT(needle, Contains("The pass key is " + cp.value + ". Remember it"));
        const std::string value = s.decode(
            {pt.ids.begin() + cp.value_tokens.first, pt.ids.begin() + cp.value_tokens.last});
        CHECK_THAT(value, Contains(cp.value));
        CHECK(cp.needle.first <= cp.value_tokens.first);
        CHECK(cp.value_tokens.last <= cp.needle.last);
        // Depth 0 opens the document, depth 100 closes it; the others land near the asked depth.
        const double depth = cp.fields["depth"], actual = cp.fields["depth_actual"];
        if (depth == 0) CHECK(cp.needle.first <= 2);
        if (depth == 100) CHECK(cp.needle.last >= pt.n_context - 2);
        if (cp.fields["length"] >= 256) CHECK(std::fabs(actual - depth) < 20.0);
    }
}

TEST_CASE("default needle lengths double up to the context less the answer, or a cap", "[eval]") {
    Session& s = stories();
    const NeedleOptions o = needle_options({}, {50});
    CHECK(NeedleTask::default_lengths(s, o, 8) == std::vector<int64_t>{127, 255, 510, 1020, 2040});
    CHECK(NeedleTask::default_lengths(s, o, 8, 1000) == std::vector<int64_t>{62, 125, 250, 500, 1000});
    // Lengths the needle and question alone do not fit in are left out.
    NeedleOptions one = o;
    one.lengths = {400};
    const int64_t minimum = NeedleTask(s, one, 8).min_length();
    REQUIRE(minimum > 25);
    REQUIRE(minimum < 100);
    const std::vector<int64_t> small = NeedleTask::default_lengths(s, o, 8, 400);
    CHECK(small.front() > minimum);
    CHECK(small.back() == 400);
    CHECK(small.size() == (minimum < 50 ? 4u : 3u));
}

TEST_CASE("bad needle grids are refused with the value and the allowed range", "[eval]") {
    Session& s = stories();
    CHECK_THROWS_WITH(NeedleTask(s, needle_options({128}, {0, 120}), 8), Contains("depth 120") && Contains("0..100"));
    CHECK_THROWS_WITH(NeedleTask(s, needle_options({128}, {-5}), 8), Contains("depth -5"));
    CHECK_THROWS_WITH(NeedleTask(s, needle_options({2045}, {50}), 8),
                      Contains("length 2045") && Contains("context of 2048") && Contains("up to 2040"));
    CHECK_THROWS_WITH(NeedleTask(s, needle_options({10}, {50}), 8), Contains("length 10 is too short"));
    CHECK_THROWS_WITH(NeedleTask(s, needle_options({128, 128}, {50}), 8), Contains("given twice"));
}

TEST_CASE("one full decode scored against many selections equals the lockstep comparison", "[eval][session]") {
    Session& s = stories();
    PromptSpec p;
    const CompareSettings cs = prefill_with_reference(s, p, 12);
    for (const char* policy : {"snapkv", "streaming"}) {
        for (bool agnostic : {false, true}) {
            SelectionParams sp;
            sp.gqa = GqaMode::QueryHead;  // official SnapKV's mode
            sp.policy = parse_policy(policy);
            sp.window = 16;
            sp.kernel = 5;
            sp.budget = 80;
            CompareSettings lc = cs;
            lc.query_agnostic = agnostic;
            INFO(policy << (agnostic ? " query-agnostic" : ""));
            const CompareResult lock = s.compare(sp, lc);
            const CompareResult ref = s.compare_to_reference(s.select(sp, agnostic, false));
            CHECK(ref.query_agnostic == agnostic);
            CHECK(ref.full.ids == lock.full.ids);
            CHECK(ref.compressed.ids == lock.compressed.ids);
            CHECK(ref.first_divergence == lock.first_divergence);
            CHECK(ref.compressed.kv_bytes == lock.compressed.kv_bytes);
            REQUIRE(ref.steps.size() == lock.steps.size());
            for (size_t i = 0; i < ref.steps.size(); ++i) {
                CHECK(ref.steps[i].kl == Approx(lock.steps[i].kl).margin(1e-9));
                CHECK(ref.steps[i].rank == lock.steps[i].rank);
                CHECK(ref.steps[i].top1_agree == lock.steps[i].top1_agree);
            }
            REQUIRE(ref.hit_rate.size() == lock.hit_rate.size());
            for (size_t l = 0; l < ref.hit_rate.size(); ++l)
                for (size_t h = 0; h < ref.hit_rate[l].size(); ++h)
                    CHECK(ref.hit_rate[l][h] == Approx(lock.hit_rate[l][h]).margin(1e-12));
        }
    }
    SECTION("a new prefill drops the reference") {
        s.prefill(p);
        CHECK_THROWS_WITH(s.compare_to_reference(s.select(SelectionParams{}, false, false)),
                          Contains("decode the full-cache reference first"));
    }
}

TEST_CASE("the needle runner writes one row per cell and configuration with the contract fields", "[eval]") {
    Session& s = stories();
    const NeedleTask task(s, needle_options({96, 160}, {0, 100}), 6);
    const RunOptions ro = test::small_grid({"snapkv", "streaming"}, {48}, 6);
    RunStats st;
    const std::vector<json> rows = run_rows(task, ro, {}, &st);
    REQUIRE(rows.size() == 4 * 3);
    CHECK(st.cells_run == 4);
    CHECK(st.rows_written == 12);
    for (const json& r : rows) {
        INFO(r.dump());
        for (const char* k : {"length", "depth", "policy", "budget", "found", "answer", "agree_full", "kl_mean",
                              "kv_bytes", "needle_kept", "value_kept", "hit_rate", "kept_mass", "timing", "settings"})
            CHECK(r.contains(k));
        CHECK(r["found"].is_boolean());
        CHECK(r["n_tokens"] == r["length"]);
        if (r["policy"] == "full") {
            CHECK(r["budget"].is_null());
            CHECK(r["agree_full"] == 1.0);
            CHECK(r["kv_bytes"] == r["kv_bytes_full"]);
        } else {
            CHECK(r["budget"] == 48);
            // KV-head mode (the default) keeps n_head_kv (4) heads of 48 slots against 4 of L.
            CHECK(r["gqa"] == "kv-head");
            CHECK(r["kv_bytes"].get<int64_t>() * r["length"].get<int64_t>() == r["kv_bytes_full"].get<int64_t>() * 48);
            CHECK(r["needle_kept_layers"].size() == 5);  // stories260K: 5 layers
            CHECK(r["agree_full"].get<double>() >= 0.0);
            CHECK(r["agree_full"].get<double>() <= 1.0);
        }
    }
    // Streaming keeps the 4 sinks and the last C - 4 positions (window included): the value's kept
    // share follows from its span alone, the same in every head.
    for (const json& r : rows)
        if (r["policy"] == "streaming") {
            const int64_t L = r["length"], first = r["value_span"][0], last = r["value_span"][1];
            int64_t kept = 0;
            for (int64_t p = first; p < last; ++p) kept += (p < 4 || p >= L - (48 - 4)) ? 1 : 0;
            INFO("length " << L << " depth " << r["depth"] << " value tokens " << first << ".." << last);
            CHECK(r["value_kept"].get<double>() == Approx(double(kept) / double(last - first)).margin(1e-4));
            CHECK(r["value_kept_all"] == (kept == last - first));
        }
}

TEST_CASE("resume skips finished rows and a cancelled run keeps its finished rows", "[eval]") {
    Session& s = stories();
    test::TempDir dir;
    const NeedleTask task(s, needle_options({96, 128}, {0, 50, 100}), 6);
    const RunOptions ro = test::small_grid({"snapkv"}, {48, 64}, 6);
    const std::vector<json> all = run_rows(task, ro);
    REQUIRE(all.size() == 6 * 3);

    SECTION("rows already present are not computed again; complete cells are not prefilled") {
        std::set<RowKey> done;
        for (const json& r : all)
            if (r["cell"] != 4 && !(r["cell"] == 2 && r["config"] == 1))
                done.insert({r["cell"].get<int64_t>(), r["config"].get<int64_t>()});
        RunStats st;
        const std::vector<json> rest = run_rows(task, ro, done, &st);
        CHECK(st.cells_skipped == 4);
        CHECK(st.cells_run == 2);
        REQUIRE(rest.size() == 4);
        CHECK(without_timing(rest[0]) == without_timing(all[2 * 3 + 1]));
        for (size_t i = 1; i < 4; ++i) CHECK(without_timing(rest[i]) == without_timing(all[4 * 3 + i - 1]));
    }
    SECTION("cancel after 4 rows: the file holds the rows of the cells begun, and resuming completes the grid") {
        const std::string out = dir.file("r.jsonl");
        std::atomic<bool> cancel{false};
        {
            EvalRun run(s, task, ro);
            RowWriter w(out);
            int n = 0;
            CHECK_THROWS_AS(run.run(
                                resume_rows(out, run.settings()),
                                [&](const Row& r) {
                                    w.write(r);
                                    if (++n == 4) cancel = true;
                                },
                                {}, &cancel),
                            Cancelled);
        }
        // A cell's compressed answers are decoded together before its rows go out, so the rows
        // of the cell where the cancel came (cell 1: rows 3 to 5) are finished and kept too.
        const ResultsFile f = read_results(out, false);
        REQUIRE(f.rows.size() == 6);
        for (size_t i = 0; i < 6; ++i) CHECK(without_timing(f.rows[i]) == without_timing(all[i]));
        {
            EvalRun run(s, task, ro);
            const std::set<RowKey> done = resume_rows(out, run.settings());
            CHECK(done.size() == 6);
            RowWriter w(out);
            run.run(done, [&](const Row& r) { w.write(r); });
        }
        std::vector<Row> rows = read_results(out, false).rows;
        REQUIRE(rows.size() == all.size());
        std::stable_sort(rows.begin(), rows.end(), row_less);
        for (size_t i = 0; i < rows.size(); ++i) CHECK(without_timing(rows[i]) == without_timing(all[i]));
    }
}

TEST_CASE("the sweep runner scores answers against the reference and the full cache", "[eval]") {
    Session& s = stories();
    test::TempDir dir;
    const std::string story = test::read_text(test::data_path("reference/ppl-text.txt")).substr(0, 900);
    std::ofstream(dir.file("set.jsonl"))
        << json({{"id", "a"}, {"document", story}, {"question", "Who was happy?"}, {"answer", "Lily"}}).dump() << "\n"
        << json({{"id", "b"}, {"document", story.substr(300)}, {"question", "What did they see?"}}).dump() << "\n";
    const SweepTask task(s, load_qa_set(dir.file("set.jsonl")), ChatSettings{}, 6);
    const std::vector<json> rows = run_rows(task, test::small_grid({"snapkv", "h2o"}, {48, 96}, 6));
    REQUIRE(rows.size() == 2 * 5);
    for (const json& r : rows) {
        INFO(r.dump());
        for (const char* k : {"item", "item_id", "policy", "budget", "agree_full", "kl_mean", "kv_bytes", "hit_rate",
                              "kept_mass", "first_divergence"})
            CHECK(r.contains(k));
        CHECK(r.contains("contains") == (r["item_id"] == "a"));
        if (r["policy"] == "full") CHECK(r["kl_mean"] == 0.0);
        else CHECK(r["kl_mean"].get<double>() >= 0.0);
    }
    SECTION("an item longer than the context is refused before any prefill") {
        std::string long_doc;
        while (long_doc.size() < 12000) long_doc += story;
        std::ofstream(dir.file("long.jsonl")) << json({{"document", long_doc}, {"question", "Who?"}}).dump() << "\n";
        CHECK_THROWS_WITH(SweepTask(s, load_qa_set(dir.file("long.jsonl")), ChatSettings{}, 6),
                          Contains("item 1") && Contains("context of 2048"));
    }
}

TEST_CASE("decoding compression scored against the reference equals the lockstep comparison",
          "[eval][session][decode]") {
    Session& s = stories();
    PromptSpec p;
    const CompareSettings cs = prefill_with_reference(s, p, 40);
    SelectionParams sp;
    sp.window = 8;
    sp.kernel = 5;
    sp.budget = 80;
    for (bool prefill : {true, false}) {
        INFO((prefill ? "prefill and decoding compression" : "decoding compression alone"));
        CompareSettings lc = cs;
        lc.decode = {48, 8};
        lc.compress_prefill = prefill;
        const CompareResult lock = s.compare(sp, lc);
        // Two selections decoded together, one without decoding compression: each its own.
        const Selection sel = s.select(sp, false, false);
        const std::vector<CompareResult> refs = s.compare_many_to_reference({sel, sel}, {}, nullptr,
                                                                            {{{48, 8}, prefill}, {{}, true}});
        const CompareResult& ref = refs[0];
        CHECK(ref.compress_prefill == prefill);
        CHECK(ref.compressed.ids == lock.compressed.ids);
        CHECK(ref.cache_tokens == lock.cache_tokens);
        REQUIRE(ref.decode_events.size() == lock.decode_events.size());
        REQUIRE(ref.decode_events.size() == 4);  // after steps 8, 16, 24, 32
        for (size_t i = 0; i < ref.decode_events.size(); ++i) {
            CHECK(ref.decode_events[i].step == lock.decode_events[i].step);
            CHECK(ref.decode_events[i].kept == lock.decode_events[i].kept);
        }
        CHECK(refs[1].decode_events.empty());
        CHECK(refs[1].compressed.ids == s.compare_to_reference(sel).compressed.ids);
    }
}

TEST_CASE("grid rows carry the decoding settings: prefill only, decoding only and both", "[eval][decode]") {
    Session& s = stories();
    const NeedleTask task(s, needle_options({160}, {50}), 24);
    GridAxes a;
    a.policies = {"snapkv"};
    a.budgets = {0, 64};
    a.windows = {8};
    a.kernels = {5};
    a.decode_budgets = {0, 40};
    a.decode_intervals = {8};
    RunOptions ro;
    ro.configs = expand_configs(a);
    ro.generation.max_tokens = 24;
    ro.kl_steps = 24;
    // full, then budget 0 (decoding alone: 0/0 is the full cache again, left out), then 64 and 64 + D40.
    REQUIRE(ro.configs.size() == 4);
    CHECK(config_label(ro.configs[1]) == "snapkv no-prefill D40/8 W8 K5");
    CHECK(config_label(ro.configs[3]) == "snapkv C64 D40/8 W8 K5");
    for (const EvalConfig& c : ro.configs) {
        const EvalConfig back = config_from_json(config_json(c));
        CHECK(config_json(back) == config_json(c));
    }
    const std::vector<json> rows = run_rows(task, ro);
    REQUIRE(rows.size() == 4);
    CHECK_FALSE(rows[0].contains("decode_budget"));
    CHECK(rows[1]["prefill_compression"] == false);
    CHECK(rows[1]["budget"].is_null());
    CHECK(rows[1]["decode_budget"] == 40);
    CHECK(rows[1]["decode_interval"] == 8);
    CHECK(rows[1]["decode_events"].get<int64_t>() >= 2);
    CHECK(rows[1]["cache_tokens_max"].get<int64_t>() <= 160 + 8);
    CHECK(rows[2]["budget"] == 64);
    CHECK_FALSE(rows[2].contains("decode_budget"));
    CHECK(rows[3]["decode_budget"] == 40);
    CHECK(rows[3]["cache_tokens_max"].get<int64_t>() <= 64 + 8);
    for (size_t i = 1; i < 4; ++i) CHECK(rows[i]["compressed"] == true);
    // A decoding budget the window does not fit in names the list.
    a.decode_budgets = {8};
    CHECK_THROWS_WITH(expand_configs(a), Contains("window"));
}
