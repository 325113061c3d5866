// StreamingLLM (Xiao et al. 2023; kvpress streaming_llm_press.py): the n_sink first prefix
// positions and the most recent ones; no scores. A sliding-window layer cannot see the first
// tokens, so there it keeps only the most recent ones.
#include "core/snapkv/policy_streaming.h"

#include <algorithm>

#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class StreamingRule : public PolicyRule {
public:
    void choose(const Choice& c, const SelectionParams& p, int64_t* out) const override {
        const int64_t R = c.n_prefix - c.reach;
        for (int64_t h = 0; h < c.n_sel; ++h) {
            int64_t* row = out + h * c.k;
            streaming_positions(R, c.k, c.reach > 0 ? 0 : p.n_sink, row);
            for (int64_t i = 0; i < c.k; ++i) row[i] += c.reach;
        }
    }
};

}  // namespace

void streaming_positions(int64_t n_prefix, int64_t k, int64_t n_sink, int64_t* out) {
    k = std::min(k, n_prefix);
    n_sink = std::min(n_sink, k);
    int64_t o = 0;
    for (int64_t t = 0; t < n_sink; ++t) out[o++] = t;
    for (int64_t t = n_prefix - (k - n_sink); t < n_prefix; ++t) out[o++] = t;
}

const PolicyRule& streaming_rule() {
    static const StreamingRule rule;
    return rule;
}

}  // namespace snapkv
