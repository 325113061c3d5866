// An evaluation grid's plan, for `snapkv needle`, `snapkv sweep`, `snapkv ruler` and the Evaluate
// tab alike: before the first cell, the cells of the shard still to run after a resume, those of
// them whose prompt may be the longest (EvalTask::plan_candidates), and the forecast of the
// largest (core/session/run_forecast.h forecast_grid: memory, prefill and decode time, cells left);
// and the refusal of a largest cell that does not fit. It prints nothing: the front ends print the
// forecast and name the cheaper choices in their own words. Torch-free (the apps use it).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/eval/eval_runner.h"
#include "core/eval/results_file.h"
#include "core/session/run_forecast.h"

namespace snapkv::eval {

// The cells of the run's shard that still miss the row of some configuration (`done`: the rows
// already in the results file, resume_rows), in order.
std::vector<int64_t> cells_to_run(const EvalRun& run, const std::set<RowKey>& done);

// What the runner decodes in each cell of a run with these options after its prefill: its
// compressed configurations (all but the full cache), its answer tokens and KL steps.
GridDecodes grid_decodes(const RunOptions& options);

// The forecast of the run's cells still to run: of task.plan_candidates(cells_to_run(run, done)),
// each built with task.prepare and named with task.cell_label, the longest prompt, prefilled with
// the capture of the run's selecting configurations and decoded as grid_decodes(run.options())
// says (memory: the larger of the prefill's and the decodes' peaks). `task` is the run's task (or
// one that forwards to it). Nothing to run: largest_cell stays -1. Throws Cancelled when `cancel`
// is set.
GridForecast forecast_eval(Session& session, const EvalTask& task, const EvalRun& run, const std::set<RowKey>& done,
                           CancelFlag cancel = nullptr);

// Refuses a forecast whose largest cell does not fit (InputError from require_memory): "the grid's
// largest cell (length 128 depth 0, 128 tokens) needs about ...; try A (peak X), B (peak Y) or C
// (peak Z)", each cheaper choice named by choice_text in the front end's words ("--cache-type
// q8_0"), or "...; no cache type or shorter prompt fits: free memory or use a smaller model".
// Nothing to run, or a largest cell that fits: returns.
void require_grid_fits(const GridForecast& forecast,
                       const std::function<std::string(const CheaperChoice&)>& choice_text);

}  // namespace snapkv::eval
