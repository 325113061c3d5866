// H2O (Zhang et al. 2023, "Heavy-Hitter Oracle"): the attention each prefix key received, summed
// over all prompt queries (LayerCapture.h2o, recorded at prefill), grouped like the votes, and per
// head the top C - W. The score is H2O's own vote: it is reported as the votes, with no pooling.
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class H2ORule : public PolicyRule {
public:
    bool score(const LayerRows& in, const SelectionParams&, float* scores) const override {
        group_rows(in.h2o, in.h2o_stride, in.n_head, in.n_sel, in.n_prefix, scores);  // first P of [H, L]
        return true;
    }
    bool score_is_votes() const override { return true; }
};

}  // namespace

const PolicyRule& h2o_rule() {
    static const H2ORule rule;
    return rule;
}

}  // namespace snapkv
