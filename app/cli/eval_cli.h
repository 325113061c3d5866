// What `snapkv needle`, `snapkv sweep` and `snapkv ruler` share: their options, registered once
// here with one help text each (what differs is a GridCommand parameter), the run options read from
// them, core's parameter names turned into the flags, and the run loop: resume from --out, print the
// header line and the plan line (the largest cell's memory and time, the cells to run; `--plan`
// stops there, a largest cell that does not fit is refused), run the grid with one progress line per
// finished cell (its scores and an ETA), append rows, print the totals. What a cell line says is the
// command's; the tables at the end are too.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli/command_options.h"
#include "core/eval/eval_runner.h"

// The source tree, where the grid commands find the bundled datasets when nothing else has them
// (core/eval/datasets.h); the build defines it.
#ifndef SNAPKV_SOURCE_DIR
#define SNAPKV_SOURCE_DIR ""
#endif

namespace snapkv::cli {

// Seconds, one decimal below 10 s.
std::string fmt_s(double ms);

// How a finished cell reads on its progress line "[d/t] LABEL: RESULT; RESULT; ... ETA ...":
// `label` names the cell from its first row, `result` prints one row (configuration and score).
struct CellLine {
    std::function<void(std::ostream&, const eval::Row&)> label;
    std::function<void(std::ostream&, const eval::Row&)> result;
};

struct CliRun {
    std::vector<eval::Row> rows;  // the rows of this run's settings now in `out`, sorted
    eval::RunStats stats;
    bool plan_only = false;  // --plan: the plan was printed, no cell ran (rows and stats are empty)
};

// What the plan line of a grid needs from its command: which cells it forecasts is the task's
// (core/eval/eval_plan.h, EvalTask::plan_candidates), how a refusal names the choices is the command's.
struct GridPlan {
    // The shorter-prompt choice in the command's flags for prompts of at most n_tokens tokens
    // ("--lengths of at most 12,000"); unset: "documents of at most 12,000 tokens".
    std::function<std::string(int64_t n_tokens)> shorter;
};

// "64,128": a default list as the options' text.
template <typename T>
std::string comma_list(const std::vector<T>& v) {
    std::ostringstream ss;
    for (size_t i = 0; i < v.size(); ++i) ss << (i ? "," : "") << v[i];
    return ss.str();
}

// --no-chat, --system and --chat-date, which `needle`, `sweep` and `ruler` share.
struct GridChatOpts {
    bool no_chat = false;
    std::string system;
    std::string date;
};
// The grid's chat settings (the model's template unless --no-chat; a model without one is
// prompted raw); a --chat-date that is not YYYY-MM-DD is a usage error.
ChatSettings grid_chat(const GridChatOpts& o);

// What tells the grid commands apart, as parameters of their one registration.
struct GridCommand {
    // The axes' defaults: GridAxes{} (default_params()), or RULER's sizes (eval::RulerDefaults).
    eval::GridAxes defaults;
    // --ratios (kvpress's compression ratios) besides --budgets; either list may then be empty.
    bool ratios = false;
    // --max-tokens; without it each cell says how many answer tokens it needs (RULER's tasks).
    bool max_tokens = true;
    // What the seed draws besides the random policy's choices ("the pass keys"; "" for nothing).
    std::string seed_draws;
    // Flags for parameters that are not called "--" + the parameter ("haystack" -> "--essays").
    std::map<std::string, std::string> flags;
};

// The options `needle`, `sweep` and `ruler` share, as typed (the axes as comma lists).
struct GridOpts {
    Common common;
    std::string policies, budgets, ratios, gqa, windows, kernels, poolings, tie_break;
    std::string decode_budgets, decode_intervals;  // --decode-budget, --decode-interval (lists)
    bool query_agnostic = false;
    int64_t sink = 0;
    uint64_t seed = 0;
    int64_t max_tokens = 32;  // answer tokens of needle and sweep cells
    int64_t kl_steps = eval::RunOptions{}.kl_steps;
    double theta = eval::RunOptions{}.hit_threshold;
    GridChatOpts chat;
    std::string shard, out;
    bool quiet = false;
    bool plan = false;  // --plan: print the plan line and stop before the first cell
};

// The one registration of the grid options, with one help text each: model, device, dtype,
// weights, the axes (defaults from g.defaults), seed, answer tokens, KL steps, the hit threshold,
// the chat options, --shard, --out, --quiet and --plan. The command adds its own options after them.
void add_grid_options(CLI::App* c, GridOpts& o, const GridCommand& g);

// The run options from the options' text: every axis parsed into configurations (expand_configs),
// greedy answers of --max-tokens (where the command has it), KL steps (at most the answer tokens),
// the hit threshold and the shard.
eval::RunOptions grid_run_options(const GridOpts& o, const GridCommand& g);

// The flag of a parameter core names ("budgets" -> "--budgets", "windows" -> "--window").
std::string grid_flag(const std::string& param, const GridCommand& g);
// Runs the command; a core ParamError comes out as an InputError naming the command's flags, so
// "budgets: ..." from core/eval reads "--budgets: ..." on the command line.
void with_grid_flags(const GridCommand& g, const std::function<void()>& run);

// `header` is the start of the first stderr line, up to " x N configurations". Then, before any
// cell, the plan line "plan: largest cell ..." (forecast_eval over the cells still to run); a
// largest cell that does not fit is refused there (InputError naming the cheaper choices: another
// --cache-type, shorter prompts), before --out is touched. o.plan: stop after the plan line (printed
// even with --quiet). Progress and the plan line go to stderr unless o.quiet; the totals go to
// stdout.
CliRun run_and_write(Session& s, const eval::EvalTask& task, const eval::RunOptions& ro, const std::string& header,
                     const GridOpts& o, const CellLine& line, const GridPlan& plan, const std::atomic<bool>* cancel);

}  // namespace snapkv::cli
