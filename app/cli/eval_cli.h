// The run loop `snapkv needle`, `snapkv sweep` and `snapkv ruler` share: resume from --out, print the
// header line, run the grid with one progress line per finished cell (its scores and an ETA), append
// rows, print the totals. What a cell line says is the command's; the tables at the end are too.
#pragma once

#include <atomic>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/eval/eval_runner.h"

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
};

// The run options of a grid from the axes the command parsed itself (policies, and budgets or
// ratios) and the options `needle`, `sweep` and `ruler` share, read from their text in one way:
// comma lists of GQA modes, windows, kernels and poolings; query-agnostic, sinks, seed, tie break;
// greedy answers, KL steps, the hit threshold and the shard. Opts is the command's option struct.
template <typename Opts>
eval::RunOptions grid_run_options(eval::GridAxes a, const Opts& o) {
    a.gqa = eval::parse_name_list(o.gqa, "--gqa");
    a.windows = eval::parse_int_list(o.windows, "--window");
    a.kernels = eval::parse_int_list(o.kernels, "--kernel");
    a.poolings = eval::parse_name_list(o.poolings, "--pooling");
    a.query_agnostic = o.query_agnostic;
    a.n_sink = o.sink;
    a.seed = o.seed;
    a.tie_break = o.tie_break;
    eval::RunOptions r;
    r.configs = eval::expand_configs(a);
    r.generation.greedy = true;
    r.kl_steps = o.kl_steps;
    r.hit_threshold = o.theta;
    r.shard = eval::parse_shard(o.shard);
    return r;
}

// --no-chat, --system and --chat-date, which `needle`, `sweep` and `ruler` share.
struct GridChatOpts {
    bool no_chat = false;
    std::string system;
    std::string date;
};
void add_grid_chat_options(CLI::App* c, GridChatOpts& o);
// The grid's chat settings (the model's template unless --no-chat; a model without one is
// prompted raw); a --chat-date that is not YYYY-MM-DD is a usage error.
ChatSettings grid_chat(const GridChatOpts& o);

// `header` is the start of the first stderr line, up to " x N configurations". Progress goes to
// stderr unless `quiet`; the totals go to stdout.
CliRun run_and_write(Session& s, const eval::EvalTask& task, const eval::RunOptions& ro, const std::string& header,
                     const std::string& out, bool quiet, const CellLine& line, const std::atomic<bool>* cancel);

}  // namespace snapkv::cli
