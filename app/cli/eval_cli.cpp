// See eval_cli.h.
#include "app/cli/eval_cli.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "app/cli/cli_checks.h"
#include "core/eval/eval_plan.h"
#include "core/eval/results_file.h"
#include "core/tokenizer/chat_template.h"

namespace snapkv::cli {

using namespace snapkv::eval;

std::string fmt_s(double ms) {
    std::ostringstream ss;
    ss << std::fixed << std::setprecision(ms < 10000 ? 1 : 0) << ms / 1000.0 << " s";
    return ss.str();
}

namespace {

// Prints the plan line (core/eval/eval_plan.h: the forecast of the cells of `run` still to run)
// unless quiet and not plan_only, and refuses a largest cell that does not fit, naming the cheaper
// choices in the command's flags.
void show_grid_plan(Session& s, const EvalTask& task, const EvalRun& run, const std::set<RowKey>& done,
                    const GridPlan& plan, bool quiet, bool plan_only, const std::atomic<bool>* cancel) {
    const GridForecast g = forecast_eval(s, task, run, done, cancel);
    if (!quiet || plan_only) std::cerr << "plan: " << g.summary() << "\n";
    if (g.largest_cell < 0) return;
    require_grid_fits(g, [&](const CheaperChoice& c) {
        if (c.kind == CheaperChoice::Kind::CacheType) return "--cache-type " + std::string(kv_type_name(c.cache_type));
        return plan.shorter ? plan.shorter(c.n_tokens)
                            : "documents of at most " + group_thousands(c.n_tokens) + " tokens";
    });
    if (plan_only) std::cerr << "plan: --plan stops here, before the first cell\n";
}

}  // namespace

CliRun run_and_write(Session& s, const EvalTask& task, const RunOptions& ro, const std::string& header,
                     const GridOpts& o, const CellLine& line, const GridPlan& plan, const std::atomic<bool>* cancel) {
    const std::string& out = o.out;
    const bool quiet = o.quiet;
    EvalRun run(s, task, ro);
    const std::set<RowKey> done = resume_rows(out, run.settings());
    const bool tty = isatty(fileno(stderr));
    if (!quiet)
        std::cerr << header << " x " << ro.configs.size() << " configurations"
                  << (ro.shard.count > 1
                          ? ", shard " + std::to_string(ro.shard.index) + "/" + std::to_string(ro.shard.count) + " (" +
                                std::to_string(run.shard_cells().size()) + " cells)"
                          : std::string())
                  << (done.empty() ? "" : ", resuming: " + std::to_string(done.size()) + " rows already in " + out)
                  << "\n";
    show_grid_plan(s, task, run, done, plan, quiet, o.plan, cancel);
    if (o.plan) {
        CliRun planned;
        planned.plan_only = true;
        return planned;
    }
    RowWriter writer(out);
    std::vector<Row> cell_rows;
    const auto t0 = std::chrono::steady_clock::now();
    int64_t run_cells = 0;
    ProgressFn progress = [&](const std::string& stage, int64_t d, int64_t t) {
        if (quiet) return;
        if (stage != "cells") {
            if (tty) std::cerr << "\r  " << stage << " " << d << "/" << t << "        " << std::flush;
            return;
        }
        if (cell_rows.empty()) return;  // skipped (resumed) cell
        ++run_cells;
        const double el = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::cerr << (tty ? "\r" : "") << "[" << d << "/" << t << "] ";
        line.label(std::cerr, cell_rows.front());
        std::cerr << ":";
        for (const Row& r : cell_rows) {
            std::cerr << " ";
            line.result(std::cerr, r);
            std::cerr << ";";
        }
        std::cerr << " ETA " << fmt_s(el / static_cast<double>(run_cells) * static_cast<double>(t - d)) << "\n";
        cell_rows.clear();
    };
    CliRun res;
    res.stats = run.run(
        done,
        [&](const Row& r) {
            writer.write(r);
            cell_rows.push_back(r);
        },
        progress, cancel);
    const RunStats& st = res.stats;
    std::cout << task.name() << ": " << st.rows_written << " rows written to " << out << " (" << st.cells_run
              << " cells run, " << st.cells_skipped << " already done)\n";
    if (st.cells_run > 0)
        std::cout << "time: " << fmt_s(st.wall_ms) << " (" << std::fixed << std::setprecision(2)
                  << static_cast<double>(st.cells_run) / (st.wall_ms / 60000.0) << " cells/min); prefill "
                  << fmt_s(st.prefill_ms) << ", full-cache decode " << fmt_s(st.reference_ms)
                  << ", compressed select+decode " << fmt_s(st.compressed_ms) << "\n";
    for (auto& r : read_results(out, false).rows)
        if (r["settings"] == run.settings()) res.rows.push_back(std::move(r));
    std::stable_sort(res.rows.begin(), res.rows.end(), row_less);
    return res;
}

void add_grid_options(CLI::App* c, GridOpts& o, const GridCommand& g) {
    const GridAxes& d = g.defaults;
    o.policies = comma_list(d.policies);
    o.budgets = comma_list(d.budgets);
    o.ratios = comma_list(d.ratios);
    o.gqa = comma_list(d.gqa);
    o.windows = comma_list(d.windows);
    o.kernels = comma_list(d.kernels);
    o.poolings = comma_list(d.poolings);
    o.decode_budgets = comma_list(d.decode_budgets);
    o.decode_intervals = comma_list(d.decode_intervals);
    o.tie_break = d.tie_break;
    o.sink = d.n_sink;
    o.seed = d.seed;
    add_common(c, o.common);
    c->add_option("--policies", o.policies, "Comma list: " + policy_list_text())->capture_default_str();
    if (g.ratios)
        c->add_option("--ratios", o.ratios,
                      "Comma list of kvpress compression ratios: the fraction of the cache removed, 0 <= r < 1 "
                      "('' for none)")
            ->capture_default_str();
    c->add_option("--budgets", o.budgets,
                  "Comma list of budgets C (tokens kept per head, window included; 0: no prefill compression, "
                  "for decoding compression alone)" +
                      std::string(g.ratios ? "; '' for none" : ""))
        ->capture_default_str();
    c->add_option("--decode-budget", o.decode_budgets,
                  "Comma list of decoding budgets: compress while generating, to this many tokens per head (0: off)")
        ->capture_default_str();
    c->add_option("--decode-interval", o.decode_intervals,
                  "Comma list of generated tokens between decoding compression events")
        ->capture_default_str();
    c->add_option("--gqa", o.gqa,
                  "Comma list: kv-head (one selection per KV head, as kvpress: the cache shrinks), query-head "
                  "(the official code's)")
        ->capture_default_str();
    c->add_option("--window", o.windows, "Comma list of observation windows W")->capture_default_str();
    c->add_option("--kernel", o.kernels, "Comma list of pooling kernels K (odd)")->capture_default_str();
    c->add_option("--pooling", o.poolings, "Comma list: max, avg, none")->capture_default_str();
    c->add_option("--tie-break", o.tie_break,
                  "Which of equal scores top-k keeps: later (as torch.topk did in the official code) or earlier")
        ->capture_default_str();
    c->add_flag("--query-agnostic", o.query_agnostic,
                "Compress the document alone, then feed the question (as kvpress's leaderboard does)");
    c->add_option("--sink", o.sink, "StreamingLLM sink tokens")->capture_default_str();
    c->add_option("--seed", o.seed,
                  "Seed of the random policy" + (g.seed_draws.empty() ? std::string() : " and of " + g.seed_draws))
        ->capture_default_str();
    if (g.max_tokens) c->add_option("--max-tokens,-n", o.max_tokens, "Answer tokens (greedy)")->capture_default_str();
    c->add_option("--kl-steps", o.kl_steps, "KL and top-1 agreement over the first N answer tokens")
        ->capture_default_str();
    c->add_option("--hit-threshold", o.theta, "θ: attention above it marks an important position")
        ->capture_default_str();
    c->add_flag("--no-chat", o.chat.no_chat,
                "Do not wrap prompts in the model's chat template (default: wrap when it has one)");
    c->add_option("--system", o.chat.system, "System message before each prompt, in the model's chat template");
    c->add_option("--chat-date", o.chat.date,
                  "The date a template prints (strftime_now), YYYY-MM-DD; default today, recorded in the rows");
    c->add_option("--shard", o.shard, "Run cells with index % N == i only (i/N, i from 0); merge the parts afterwards");
    c->add_option("--out,-o", o.out, "Results (JSON Lines); an existing file is resumed")->required();
    c->add_flag("--quiet,-q", o.quiet, "No plan, progress or per-cell lines on stderr");
    c->add_flag("--plan", o.plan,
                "Print what the run will take (the largest cell's memory, peak vs free, and time per prefill from a "
                "short calibration forward; the cells still to run and their total time) and the cheaper choices "
                "when it does not fit, then stop before the first cell");
}

RunOptions grid_run_options(const GridOpts& o, const GridCommand& g) {
    GridAxes a;
    a.policies = parse_name_list(o.policies, "policies");
    a.budgets = g.ratios && o.budgets.empty() ? std::vector<int64_t>{} : parse_int_list(o.budgets, "budgets");
    a.ratios = g.ratios && !o.ratios.empty() ? parse_number_list(o.ratios, "ratios") : std::vector<double>{};
    a.gqa = parse_name_list(o.gqa, "gqa");
    a.windows = parse_int_list(o.windows, "windows");
    a.kernels = parse_int_list(o.kernels, "kernels");
    a.poolings = parse_name_list(o.poolings, "poolings");
    a.decode_budgets = parse_int_list(o.decode_budgets, "decode_budgets");
    a.decode_intervals = parse_int_list(o.decode_intervals, "decode_intervals");
    a.query_agnostic = o.query_agnostic;
    a.n_sink = o.sink;
    a.seed = o.seed;
    a.tie_break = o.tie_break;
    RunOptions r;
    r.configs = expand_configs(a);
    r.generation.greedy = true;
    r.kl_steps = o.kl_steps;
    if (g.max_tokens) {
        r.generation.max_tokens = o.max_tokens;
        r.kl_steps = std::min(o.kl_steps, o.max_tokens);
    }
    r.hit_threshold = o.theta;
    r.shard = parse_shard(o.shard);
    return r;
}

std::string grid_flag(const std::string& param, const GridCommand& g) {
    if (const auto it = g.flags.find(param); it != g.flags.end()) return it->second;
    if (param.empty() || param[0] == '-') return param;  // already a flag
    static const std::map<std::string, std::string> axes = {{"windows", "--window"},
                                                            {"kernels", "--kernel"},
                                                            {"poolings", "--pooling"},
                                                            {"n_sink", "--sink"},
                                                            {"decode_budgets", "--decode-budget"},
                                                            {"decode_intervals", "--decode-interval"}};
    if (const auto it = axes.find(param); it != axes.end()) return it->second;
    std::string flag = "--" + param;
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

void with_grid_flags(const GridCommand& g, const std::function<void()>& run) {
    try {
        run();
    } catch (const ParamError& e) {
        throw InputError(e.text([&](const std::string& p) { return grid_flag(p, g); }));
    }
}

ChatSettings grid_chat(const GridChatOpts& o) {
    ChatSettings c;
    c.enabled = !o.no_chat;
    c.system = o.system;
    c.date = o.date;
    if (!c.date.empty()) {
        try {
            check_chat_date(c.date);
        } catch (const InputError& e) {
            usage_error("--chat-date", e.what());
        }
    }
    return c;
}

}  // namespace snapkv::cli
