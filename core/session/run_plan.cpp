// The run plan (run_plan.h): the union of the policies' declared captures and the largest window
// of a set of configurations, and the memory shape of the prefill that records them. Plain
// arithmetic over the policy table; no model, no LibTorch.
#include "core/session/run_plan.h"

#include <algorithm>

namespace snapkv {

PrefillSettings plan_run(const std::vector<SelectionParams>& configs, const RunFlags& flags) {
    PrefillSettings ps;
    ps.max_window = std::max<int64_t>(flags.max_window, 1);
    ps.captures = 0;
    for (const SelectionParams& p : configs) {
        // The user's window, also for a policy with a fixed one: it then measures the kept mass.
        ps.max_window = std::max(ps.max_window, p.window);
        ps.captures |= policy_info(p.policy).captures;
    }
    ps.keep_values = !flags.analysis_only;
    ps.new_tokens = flags.new_tokens;
    return ps;
}

PrefillSettings plan_all_policies(const RunFlags& flags) {
    std::vector<SelectionParams> every;
    for (Policy p : all_policies()) {
        SelectionParams q;
        q.policy = p;
        q.window = 1;
        every.push_back(q);
    }
    PrefillSettings ps = plan_run(every, flags);
    if (flags.max_window <= 0) ps.max_window = PrefillSettings{}.max_window;
    return ps;
}

RunShape prefill_run_shape(const PrefillSettings& settings, int64_t n_tokens, bool two_parts) {
    RunShape run;
    // A preview builds each layer's scorers while the forward pass runs (the context's own too when
    // it selects query-agnostic from a prompt with a question).
    if (settings.preview.on_layer) run.scorer_sets_in_forward = settings.preview.query_agnostic && two_parts ? 2 : 1;
    run.n_tokens = n_tokens;
    run.cache_slots = n_tokens;  // run_prefill's cache: exactly the prompt
    run.max_window = std::max<int64_t>(settings.max_window, 1);
    run.captures = settings.captures;
    run.two_parts = two_parts;
    run.values_kept = settings.keep_values;
    return run;
}

RunShape grid_cell_run_shape(const PrefillSettings& settings, int64_t n_tokens, int64_t n_question,
                             const GridDecodes& decodes) {
    n_question = std::clamp<int64_t>(n_question, 0, std::max<int64_t>(n_tokens - 1, 0));
    RunShape run = prefill_run_shape(settings, n_tokens, n_question > 0);
    run.answer_tokens = std::max<int64_t>(decodes.answer_tokens, 0);
    run.kl_steps = decodes.kl_steps;
    for (const GridConfig& g : decodes.configs) {
        DecodeCacheShape d;
        d.query_heads = g.params.gqa == GqaMode::QueryHead;
        const bool agnostic = g.query_agnostic && n_question > 0;
        const int64_t selected = agnostic ? n_tokens - n_question : n_tokens;  // what the selection covers
        if (!g.decode.compress_prefill) {
            d.kept = n_tokens;  // the full cache (window_trimmed_cache)
            d.query_heads = false;
        } else {
            d.kept = std::clamp<int64_t>(effective_budget(g.params, selected), 1, selected);
            d.fed = n_tokens - selected;
        }
        run.compressed.push_back(d);
    }
    return run;
}

}  // namespace snapkv
