// Times the retunes a user makes while tuning live (kernel, pooling, budget, window, policy, GQA
// mode) over already built LayerScorers and returns a text table (first-call and median ms per
// step), for
// `snapkv bench --retune`. It measures select() only: prefill and LayerScorer construction are
// not part of a retune and are not timed here.
#pragma once

#include <string>
#include <vector>

#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// Each step changes one setting of the running parameters (starting from `base`) and times
// select(with_scores = true), as the GUI calls it, and select_positions (the cache gather path),
// `repeats` times each; a step the parameters do not allow (e.g. a window above the captured one,
// h2o without its capture) is listed as skipped with the reason.
std::string run_retune_benchmark(const std::vector<LayerScorer>& layers, const SelectionParams& base, int repeats = 5);

}  // namespace snapkv
