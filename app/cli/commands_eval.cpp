// The evaluation subcommands: `snapkv needle` (needle-in-a-haystack grid), `snapkv sweep` (budget
// sweep over a question set) and `snapkv merge` (join shards). Rows go to a JSON Lines file as
// each finishes (see core/eval/results_file.h); rerunning with the same --out resumes. The text
// printed at the end (heatmaps, per-budget means) is a summary for people; scripts read the JSONL.
#include "app/cli/commands.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "app/cli/cli_checks.h"
#include "app/cli/eval_cli.h"
#include "core/eval/datasets.h"
#include "core/eval/eval_runner.h"
#include "core/eval/needle.h"
#include "core/eval/qa_set.h"
#include "core/eval/results_file.h"
#include "core/session/session.h"

namespace snapkv::cli {
namespace {

using namespace snapkv::eval;

// needle and sweep: one budget axis, answers of --max-tokens; the needle's seed also draws the pass keys.
GridCommand needle_command() {
    GridCommand g;
    g.seed_draws = "the pass keys";
    return g;
}
GridCommand sweep_command() { return GridCommand{}; }

std::unique_ptr<Session> load(const GridOpts& o) {
    if (o.max_tokens < 1) throw InputError("--max-tokens: " + std::to_string(o.max_tokens) + " must be at least 1");
    auto s = std::make_unique<Session>();
    s->load_model(o.common.model, {o.common.device, o.common.dtype, o.common.weights, o.common.cache_type});
    return s;
}

// A cell line names the document (needle: its length and depth) and shows per configuration whether
// the needle was found, or how much of the answer agreed with the full cache.
CliRun run_grid(Session& s, const EvalTask& task, const RunOptions& ro, const GridOpts& o, const GridPlan& plan,
                const std::atomic<bool>* cancel) {
    CellLine line;
    if (task.name() == "needle")
        line.label = [](std::ostream& os, const Row& f) {
            os << "length " << f["length"] << " depth " << f["depth"].get<double>();
        };
    else line.label = [](std::ostream& os, const Row& f) { os << f["item_id"].get<std::string>(); };
    line.result = [](std::ostream& os, const Row& r) {
        os << r["policy"].get<std::string>();
        if (!r["budget"].is_null()) os << " C" << r["budget"];
        if (r.contains("found")) os << (r["found"].get<bool>() ? " found" : " missed");
        else os << " agree " << std::setprecision(2) << r["agree_full"].get<double>();
    };
    const std::string header = task.name() + ": " + std::to_string(task.n_cells()) + " cells";
    CliRun run = run_and_write(s, task, ro, header, o, line, plan, cancel);
    if (run.stats.cells_run > 0)
        std::cout << "one prefill and one full decode per document served every configuration: saved ~"
                  << fmt_s(run.stats.saved_ms) << " against one `snapkv compare` per configuration\n";
    return run;
}

// The needle grid's plan names a shorter prompt as --lengths (which cells it forecasts is
// NeedleTask::plan_candidates).
GridPlan needle_plan() {
    GridPlan p;
    p.shorter = [](int64_t n) { return "--lengths (or --max-length) of at most " + std::to_string(n); };
    return p;
}

// Per configuration: lengths down, depths across; '#' found, '.' missed, ' ' not run yet.
void print_needle_maps(const std::vector<Row>& rows, const NeedleOptions& no, const RunOptions& ro) {
    const auto n_depths = static_cast<int64_t>(no.depths.size());
    for (size_t k = 0; k < ro.configs.size(); ++k) {
        std::map<int64_t, bool> found;
        int64_t n_found = 0;
        for (const Row& r : rows)
            if (r["config"].get<int64_t>() == static_cast<int64_t>(k)) {
                found[r["cell"].get<int64_t>()] = r["found"].get<bool>();
                n_found += r["found"].get<bool>() ? 1 : 0;
            }
        std::cout << "\n"
                  << config_label(ro.configs[k]) << ": found " << n_found << "/" << found.size()
                  << "   (depth 0% .. 100% across)\n";
        for (size_t li = 0; li < no.lengths.size(); ++li) {
            std::cout << std::setw(8) << no.lengths[li] << "  ";
            for (int64_t di = 0; di < n_depths; ++di) {
                auto it = found.find(static_cast<int64_t>(li) * n_depths + di);
                std::cout << (it == found.end() ? ' ' : it->second ? '#' : '.');
            }
            std::cout << "\n";
        }
    }
}

void print_sweep_table(const std::vector<Row>& rows, const RunOptions& ro) {
    std::cout << "\n"
              << std::left << std::setw(28) << "configuration" << std::right << std::setw(8) << "items" << std::setw(12)
              << "agree_full" << std::setw(10) << "kl_mean" << std::setw(10) << "contains" << std::setw(8) << "f1"
              << std::setw(12) << "kv MiB"
              << "\n";
    for (size_t k = 0; k < ro.configs.size(); ++k) {
        double agree = 0, kl = 0, contains = 0, f1 = 0, kv = 0;
        int64_t n = 0, n_ref = 0;
        for (const Row& r : rows) {
            if (r["config"].get<int64_t>() != static_cast<int64_t>(k)) continue;
            ++n;
            agree += r["agree_full"].get<double>();
            kl += r["kl_mean"].get<double>();
            kv += r["kv_bytes"].get<double>() / (1 << 20);
            if (r.contains("contains")) {
                ++n_ref;
                contains += r["contains"].get<bool>() ? 1 : 0;
                f1 += r["f1"].get<double>();
            }
        }
        if (n == 0) continue;
        std::cout << std::left << std::setw(28) << config_label(ro.configs[k]) << std::right << std::setw(8) << n
                  << std::fixed << std::setprecision(3) << std::setw(12) << agree / n << std::setw(10) << kl / n;
        if (n_ref) std::cout << std::setw(10) << contains / n_ref << std::setw(8) << f1 / n_ref;
        else std::cout << std::setw(10) << "-" << std::setw(8) << "-";
        std::cout << std::setprecision(1) << std::setw(12) << kv / n << "\n";
    }
}

std::vector<std::string> haystack_paths(const std::string& s) {
    if (!s.empty()) return parse_name_list(s, "haystack");
    return bundled_haystack(SNAPKV_SOURCE_DIR, "--haystack");
}

void cmd_needle(const GridOpts& o, const std::string& lengths, int64_t max_length, const std::string& depths,
                const std::string& needle, const std::string& needles_file, const std::string& haystack,
                const std::atomic<bool>* cancel) {
    RunOptions ro = grid_run_options(o, needle_command());
    const std::string nf = needles_file.empty() ? bundled_dataset("needles.jsonl", SNAPKV_SOURCE_DIR, "--needles")
                                                : needles_file;
    const std::vector<std::string> hay = haystack_paths(haystack);
    std::vector<NamedPath> inputs = {{"the model (--model)", o.common.model}, {"the needles file (--needles)", nf}};
    for (const std::string& h : hay) inputs.push_back({"a haystack (--haystack)", h});
    check_output_not_input("--out", o.out, inputs);
    NeedleOptions no;
    no.needle = find_needle(load_needles(nf), needle, nf);
    no.haystack = load_haystack(hay);
    no.depths = parse_number_list(depths, "depths");
    no.seed = o.seed;
    no.chat = grid_chat(o.chat);
    auto s = load(o);
    // Default: 5 lengths doubling up to the model's context (less the answer) or --max-length.
    no.lengths = !lengths.empty() ? parse_int_list(lengths, "lengths")
                                  : NeedleTask::default_lengths(*s, no, o.max_tokens, max_length);
    NeedleTask task(*s, no, o.max_tokens);
    const CliRun run = run_grid(*s, task, ro, o, needle_plan(), cancel);
    if (!run.plan_only) print_needle_maps(run.rows, task.options(), ro);
}

void cmd_sweep(const GridOpts& o, const std::string& set_path, const std::atomic<bool>* cancel) {
    RunOptions ro = grid_run_options(o, sweep_command());
    check_output_not_input("--out", o.out,
                           {{"the model (--model)", o.common.model}, {"the question set (--set)", set_path}});
    QaSet set = load_qa_set(set_path);
    auto s = load(o);
    SweepTask task(*s, std::move(set), grid_chat(o.chat), o.max_tokens);
    const CliRun run = run_grid(*s, task, ro, o, GridPlan{}, cancel);  // every item's prompt is a candidate
    if (!run.plan_only) print_sweep_table(run.rows, ro);
}

void cmd_merge(const std::vector<std::string>& inputs, const std::string& out, bool allow_partial) {
    std::vector<NamedPath> named;
    for (const std::string& in : inputs) named.push_back({"one of the files being merged", in});
    check_output_not_input("--out", out, named);
    const MergeReport rep = merge_results(inputs, out, allow_partial);
    std::cout << "merged " << rep.rows << " rows from " << inputs.size() << " files into " << out;
    if (!rep.missing.empty())
        std::cout << " (" << rep.missing.size() << " of " << rep.expected << " grid rows missing)";
    std::cout << "\n";
}

}  // namespace

void register_eval_commands(CLI::App& app, const std::atomic<bool>* cancel) {
    {
        static GridOpts o;
        static std::string lengths, depths = "0,10,20,30,40,50,60,70,80,90,100", needle = "passkey", needles, haystack;
        static int64_t max_length = 0;
        auto* cmd = app.add_subcommand(
            "needle",
            "Needle-in-a-haystack grid (length x depth), full cache and every configuration, one prefill per cell");
        add_grid_options(cmd, o, needle_command());
        cmd->add_option(
            "--lengths", lengths,
            "Comma list of prompt lengths in tokens (default: 5 doubling up to the context or --max-length)");
        cmd->add_option("--max-length", max_length, "Cap of the default lengths");
        cmd->add_option("--depths", depths, "Comma list of needle depths, percent of the document")
            ->capture_default_str();
        cmd->add_option("--needle", needle, "Needle name in the needles file (passkey, fact)")->capture_default_str();
        cmd->add_option("--needles", needles, "Needles file (JSON Lines; default datasets/needles.jsonl)");
        cmd->add_option(
            "--haystack", haystack,
            "Comma list of haystack files or folders (default datasets/sample_document.md,datasets/documents)");
        cmd->callback([cancel] {
            with_grid_flags(needle_command(),
                            [&] { cmd_needle(o, lengths, max_length, depths, needle, needles, haystack, cancel); });
        });
    }
    {
        static GridOpts o;
        static std::string set;
        auto* cmd = app.add_subcommand(
            "sweep", "Budget sweep over a question set: every configuration per document from one prefill");
        add_grid_options(cmd, o, sweep_command());
        cmd->add_option("--set", set, "Question set: JSON Lines of {document, question, answer?, id?}")->required();
        cmd->callback([cancel] { with_grid_flags(sweep_command(), [&] { cmd_sweep(o, set, cancel); }); });
    }
    {
        static std::vector<std::string> inputs;
        static std::string out;
        static bool allow_partial = false;
        auto* cmd = app.add_subcommand("merge", "Join the shards of a needle or sweep run into one file");
        cmd->add_option("--out,-o", out, "Merged results (JSON Lines, written atomically)")->required();
        cmd->add_option("inputs", inputs, "Shard result files")->required();
        cmd->add_flag("--allow-partial", allow_partial, "Write the merge even when grid rows are missing");
        cmd->callback([] { with_grid_flags(GridCommand{}, [] { cmd_merge(inputs, out, allow_partial); }); });
    }
}

}  // namespace snapkv::cli
