// PyramidKV (Cai et al. 2024; KVCache-Factory pyramidkv_utils.py): SnapKV's scores and top-k with
// budgets that shrink with depth (pyramid_layer_budgets, policies.h), and SnapKV's uniform budget
// when the prompt is shorter than 2 * (C - W), as the reference does.
#include <string>

#include "core/snapkv/policies.h"
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

const PolicyRule& pyramid_rule() {
    static const PyramidRule rule;
    return rule;
}

}  // namespace snapkv
