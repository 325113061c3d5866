// The run plan: what one prefill must record so that a set of selection configurations can be
// made from it, read from the policy table (each policy's row declares its captures, as kvpress's
// presses declare theirs), as the PrefillSettings that run it and the RunShape its memory
// estimate uses. Every caller that prefills for selections asks here instead of testing policies
// by name. Torch-free (the apps include it); it runs nothing and checks no memory itself.
#pragma once

#include <cstdint>
#include <vector>

#include "core/session/memory_estimate.h"
#include "core/session/session.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// How the prefill will be used, beyond which selections are made from it.
struct RunFlags {
    int64_t max_window = 0;      // windows up to this retune freely (0: only the configurations')
    bool analysis_only = false;  // nothing is generated from it: each layer's values go once scored
    int64_t new_tokens = 0;      // tokens generated after it (checked against the context first)
};

// The settings of a prefill that serves every configuration of `configs`: window queries for the
// largest window (at least 1 and flags.max_window), the union of their policies' captures, values
// kept unless flags.analysis_only. An empty list records no captures.
PrefillSettings plan_run(const std::vector<SelectionParams>& configs, const RunFlags& flags = {});

// The settings of a prefill from which every policy can be selected later (the app retunes all
// policies live; the retune benchmark steps through them): every capture of the table.
PrefillSettings plan_all_policies(const RunFlags& flags = {});

// The memory estimate's shape of a prefill with these settings over a prompt of n_tokens tokens;
// two_parts: the prompt has a question after its context, so the context is captured alone too.
// The one shape both Session::estimate_prefill_memory and the prefill's own check use (the cache
// type is the session's to fill in: Session::Impl::estimate).
RunShape prefill_run_shape(const PrefillSettings& settings, int64_t n_tokens, bool two_parts);

// One compressed configuration of an evaluation grid, as its cell decodes it.
struct GridConfig {
    SelectionParams params;
    bool query_agnostic = false;  // selected from the context alone, the question fed after it
    DecodeRun decode;             // its decoding compression; compress_prefill false: the full cache
};

// What a grid cell decodes after its prefill: the full cache's answer, then `configs` together.
struct GridDecodes {
    std::vector<GridConfig> configs;
    int64_t answer_tokens = 0;  // decode steps per answer
    int64_t kl_steps = 0;       // the reference's logits kept for KL
};

// prefill_run_shape of a grid cell's prompt of n_tokens tokens, n_question of them the question,
// with the decodes of `decodes` (RunShape::answer_tokens and compressed: each configuration's
// budget at this length, effective_budget, over the context when query-agnostic).
RunShape grid_cell_run_shape(const PrefillSettings& settings, int64_t n_tokens, int64_t n_question,
                             const GridDecodes& decodes);

}  // namespace snapkv
