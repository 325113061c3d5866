// PyramidKV (Cai et al. 2024; KVCache-Factory pyramidkv_utils.py): SnapKV's scores and top-k with
// budgets that shrink with depth (pyramid_layer_budgets, policy_pyramid.h), and SnapKV's uniform budget
// when the prompt is shorter than 2 * (C - W), as the reference does.
#include <algorithm>
#include <string>

#include "core/snapkv/policy_pyramid.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class PyramidRule : public PooledVotesRule {
public:
    std::vector<int64_t> layer_budgets(const SelectionParams& p, int64_t budget, int64_t n_tokens,
                                       int64_t n_layer) const override {
        return pyramid_layer_budgets(budget, p.window, n_tokens, n_layer, p.pyramid_beta);
    }
    std::string note(const SelectionParams& p, int64_t budget, int64_t n_tokens) const override {
        if (n_tokens <= budget || pyramid_is_graded(budget, p.window, n_tokens)) return {};
        return "pyramid: prompt of " + std::to_string(n_tokens) +
               " tokens is shorter than 2 * (budget - window) = " + std::to_string(2 * (budget - p.window)) +
               ": every layer keeps budget - window = " + std::to_string(budget - p.window) +
               " prefix tokens (KVCache-Factory's uniform branch)";
    }
};

}  // namespace

bool pyramid_is_graded(int64_t budget, int64_t window, int64_t n_tokens) {
    // update_kv: `if q_len < self.max_capacity_prompt` -> uncompressed;
    // `elif q_len < (self.max_capacity_prompt - self.window_size) * 2` -> uniform SnapKV.
    return n_tokens >= budget && n_tokens >= (budget - window) * 2;
}

std::vector<int64_t> pyramid_layer_budgets(int64_t budget, int64_t window, int64_t n_tokens, int64_t n_layer,
                                           int64_t beta) {
    std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(n_layer, 0)), budget);
    if (!pyramid_is_graded(budget, window, n_tokens)) return out;
    const int64_t base = budget - window;  // max_capacity_prompt - window_size
    int64_t min_num = base / beta;
    int64_t max_num = base * 2 - min_num;
    if (max_num >= n_tokens - window) {
        max_num = n_tokens - window;
        min_num = base * 2 - max_num;
    }
    // In this branch max_num >= min_num >= 0 (L >= C), so C++ division equals Python's //.
    const int64_t steps = n_layer > 1 ? (max_num - min_num) / (n_layer - 1) : 0;
    for (int64_t l = 0; l < n_layer; ++l) out[static_cast<size_t>(l)] = max_num - l * steps + window;
    return out;
}

const PolicyRule& pyramid_rule() {
    static const PyramidRule rule;
    return rule;
}

}  // namespace snapkv
