// See eval_plan.h.
#include "core/eval/eval_plan.h"

#include "core/session/memory_estimate.h"

namespace snapkv::eval {

std::vector<int64_t> cells_to_run(const EvalRun& run, const std::set<RowKey>& done) {
    const auto n_configs = static_cast<int64_t>(run.options().configs.size());
    std::vector<int64_t> to_run;
    for (int64_t cell : run.shard_cells())
        for (int64_t k = 0; k < n_configs; ++k)
            if (!done.count({cell, k})) {
                to_run.push_back(cell);
                break;
            }
    return to_run;
}

GridDecodes grid_decodes(const RunOptions& options) {
    GridDecodes d;
    for (const EvalConfig& c : options.configs)
        if (!c.full) d.configs.push_back({c.params, c.query_agnostic, {c.decode, c.compress_prefill}});
    d.answer_tokens = options.generation.max_tokens;
    d.kl_steps = std::min(options.kl_steps, options.generation.max_tokens);
    return d;
}

GridForecast forecast_eval(Session& session, const EvalTask& task, const EvalRun& run, const std::set<RowKey>& done,
                           CancelFlag cancel) {
    const std::vector<int64_t> to_run = cells_to_run(run, done);
    return forecast_grid(
        session, task.plan_candidates(to_run),
        [&](int64_t cell) {
            return GridCell{task.prepare(session, cell).prompt, task.cell_label(cell)};
        },
        static_cast<int64_t>(to_run.size()), grid_decodes(run.options()), cancel);
}

void require_grid_fits(const GridForecast& forecast,
                       const std::function<std::string(const CheaperChoice&)>& choice_text) {
    if (forecast.largest_cell < 0) return;
    const RunForecast& f = forecast.largest;
    std::string choices;
    for (size_t i = 0; i < f.choices.size(); ++i) {
        if (i > 0) choices += i + 1 == f.choices.size() ? " or " : ", ";
        choices += choice_text(f.choices[i]) + " (peak " + format_bytes(f.choices[i].peak_bytes) + ")";
    }
    require_memory(
        f.memory, f.available,
        "the grid's largest cell (" + forecast.largest_label + ", " + group_thousands(f.n_tokens) + " tokens)",
        choices.empty() ? "; no cache type or shorter prompt fits: free memory or use a smaller model"
                        : "; try " + choices);
}

}  // namespace snapkv::eval
