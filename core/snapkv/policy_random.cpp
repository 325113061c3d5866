// Random eviction, the baseline (kvpress random_press.py): k distinct prefix positions per head,
// uniformly, from a stream seeded by (seed, layer, head) so that a retune or a rerun keeps the same
// positions. No scores.
#include "core/snapkv/policies.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class RandomRule : public PolicyRule {
public:
    void choose(const Choice& c, const SelectionParams& p, int64_t* out) const override {
        const int64_t R = c.n_prefix - c.reach;
        for (int64_t h = 0; h < c.n_sel; ++h) {
            int64_t* row = out + h * c.k;
            random_positions(R, c.k, random_stream_seed(p.seed, c.layer, h), row);
            for (int64_t i = 0; i < c.k; ++i) row[i] += c.reach;
        }
    }
};

}  // namespace

const PolicyRule& random_rule() {
    static const RandomRule rule;
    return rule;
}

}  // namespace snapkv
