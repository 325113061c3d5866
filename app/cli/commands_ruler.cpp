// `snapkv ruler`: RULER's 11 synthetic tasks (core/eval/ruler_tasks.h) on the loaded model, the full
// cache and every configuration from one prefill per sample, rows to a JSON Lines file as they finish
// (resume with the same --out, --shard i/N, join with `snapkv merge`). Sizes are budgets or kvpress's
// compression ratios. Prints a task x configuration table of mean scores (0-100) at the end. The QA
// tasks (SQuAD, HotpotQA) are left out: they need downloads.
#include "app/cli/commands.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>

#include "app/cli/cli_checks.h"
#include "app/cli/eval_cli.h"
#include "core/eval/datasets.h"
#include "core/eval/eval_runner.h"
#include "core/eval/needle.h"
#include "core/eval/results_file.h"
#include "core/eval/ruler_runner.h"
#include "core/session/session.h"

namespace snapkv::cli {
namespace {

using namespace snapkv::eval;

// RULER's own options; the grid's are GridOpts (eval_cli.h).
struct RulerCliOpts {
    GridOpts grid;
    std::string tasks = RulerDefaults{}.tasks, lengths = comma_list(RulerDefaults{}.lengths);
    int64_t samples = RulerDefaults{}.samples;
    std::string essays, words;
};

// The grid at RULER's sizes (compression ratios, no fixed budget; optional --budgets beside them),
// answers as long as each task asks; the seed also draws the samples; the essays are its haystack.
GridCommand ruler_command() {
    GridCommand g;
    g.defaults.ratios = RulerDefaults{}.ratios;
    g.defaults.budgets = RulerDefaults{}.budgets;
    g.ratios = true;
    g.max_tokens = false;
    g.seed_draws = "the samples";
    g.flags = {{"haystack", "--essays"}};
    return g;
}

void print_table(const std::vector<Row>& rows, const RunOptions& ro, const RulerTask& task) {
    const std::vector<RulerScore> scores = ruler_scores(rows);
    for (int64_t length : task.options().lengths) {
        std::map<std::pair<std::string, int64_t>, RulerScore> at;
        for (const auto& s : scores)
            if (s.length == length) at[{s.task, s.config}] = s;
        if (at.empty()) continue;
        std::cout << "\nRULER at " << length << " tokens, mean score over samples (0-100):\n"
                  << std::left << std::setw(26) << "configuration";
        for (const auto& t : task.options().tasks)
            std::cout << std::right << std::setw(std::max<int>(8, t.size() + 1)) << t;
        std::cout << std::setw(9) << "average"
                  << "\n";
        for (size_t k = 0; k < ro.configs.size(); ++k) {
            std::cout << std::left << std::setw(26) << config_label(ro.configs[k]) << std::right << std::fixed
                      << std::setprecision(1);
            double sum = 0;
            int64_t n = 0;
            for (const auto& t : task.options().tasks) {
                const int w = std::max<int>(8, static_cast<int>(t.size()) + 1);
                auto it = at.find({t, static_cast<int64_t>(k)});
                if (it == at.end()) {
                    std::cout << std::setw(w) << "-";
                    continue;
                }
                std::cout << std::setw(w) << it->second.mean;
                sum += it->second.mean;
                ++n;
            }
            if (n) std::cout << std::setw(9) << sum / static_cast<double>(n);
            else std::cout << std::setw(9) << "-";
            std::cout << "\n";
        }
    }
}

// RULER's plan names a shorter prompt as --lengths, which count the answer's tokens too (which
// cells it forecasts is RulerTask::plan_candidates).
GridPlan ruler_plan(const RulerTask& task) {
    GridPlan p;
    const int64_t answer = task.max_answer_tokens();
    p.shorter = [answer](int64_t n) { return "--lengths of at most " + std::to_string(n + answer); };
    return p;
}

void cmd_ruler(const RulerCliOpts& o, const std::atomic<bool>* cancel) {
    // Everything that can be refused without the model is refused first.
    const GridOpts& g = o.grid;
    RulerOptions ropt;
    ropt.tasks = parse_ruler_tasks(o.tasks);
    ropt.lengths = parse_int_list(o.lengths, "lengths");
    ropt.samples = o.samples;
    ropt.seed = g.seed;
    ropt.chat = grid_chat(g.chat);
    if (o.samples < 1) throw ParamError("samples", std::to_string(o.samples) + " must be at least 1");
    RunOptions ro = grid_run_options(g, ruler_command());
    const std::string words_dir = !o.words.empty() ? o.words : bundled_dataset("ruler", SNAPKV_SOURCE_DIR, "--words");
    const std::vector<std::string> essay_paths = !o.essays.empty() ? parse_name_list(o.essays, "essays")
                                                                   : bundled_haystack(SNAPKV_SOURCE_DIR, "--essays");
    std::vector<NamedPath> inputs = {{"the model (--model)", g.common.model}};
    for (const std::string& e : essay_paths) inputs.push_back({"an essay (--essays)", e});
    check_output_not_input("--out", g.out, inputs);
    const Haystack essays = load_haystack(essay_paths);
    ropt.essay_files = essays.files;
    RulerData data = load_ruler_data(words_dir, essays.text);

    Session s;
    s.load_model(g.common.model, {g.common.device, g.common.dtype, g.common.weights, g.common.cache_type});
    RulerTask task(s, std::move(data), ropt);
    ro.generation.max_tokens = task.max_answer_tokens();
    ro.kl_steps = std::min(ro.kl_steps, ro.generation.max_tokens);
    check_ruler_ratios(task, ro);
    check_ruler_memory(s, task, ro, g.query_agnostic);

    // A cell line names the task, length and sample, and gives each configuration's score (0-100).
    CellLine line;
    line.label = [](std::ostream& os, const Row& f) {
        os << f["ruler_task"].get<std::string>() << " " << f["length"] << " #" << f["sample"];
    };
    line.result = [](std::ostream& os, const Row& r) {
        os << config_label(config_from_json(r)) << " " << std::fixed << std::setprecision(0)
           << 100.0 * r["score"].get<double>();
    };
    const std::string header = "ruler: " + std::to_string(ropt.tasks.size()) + " tasks x " +
                               std::to_string(ropt.lengths.size()) + " lengths x " + std::to_string(o.samples) +
                               " samples = " + std::to_string(task.n_cells()) + " cells,";
    const CliRun run = run_and_write(s, task, ro, header, g, line, ruler_plan(task), cancel);
    if (!run.plan_only) print_table(run.rows, ro, task);
}

}  // namespace

void register_ruler_commands(CLI::App& app, const std::atomic<bool>* cancel) {
    static RulerCliOpts o;
    auto* c = app.add_subcommand(
        "ruler",
        "RULER's 11 synthetic tasks (niah x8, vt, cwe, fwe; the QA tasks are left out: they need SQuAD and "
        "HotpotQA), full cache and every configuration from one prefill per sample, scored with string_match_all");
    add_grid_options(c, o.grid, ruler_command());
    c->add_option("--tasks", o.tasks,
                  "all, or a comma list of niah_single_1, niah_single_2, niah_single_3, niah_multikey_1, "
                  "niah_multikey_2, niah_multikey_3, niah_multivalue, niah_multiquery, vt, cwe, fwe")
        ->capture_default_str();
    c->add_option("--lengths", o.lengths,
                  "Comma list of lengths in tokens: prompt + the task's answer tokens (niah 128, vt 30, cwe 120, "
                  "fwe 50), as RULER's max_seq_length; at most the model's context")
        ->capture_default_str();
    c->add_option("--samples", o.samples, "Samples per task and length (each its own seed)")->capture_default_str();
    c->add_option("--essays", o.essays,
                  "Comma list of essay files or folders for the essay haystack (default datasets/sample_document.md,"
                  "datasets/documents)");
    c->add_option("--words", o.words,
                  "Folder of the word lists adjectives.txt, nouns.txt, verbs.txt (default datasets/ruler)");
    c->callback([cancel] { with_grid_flags(ruler_command(), [&] { cmd_ruler(o, cancel); }); });
}

}  // namespace snapkv::cli
