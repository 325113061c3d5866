// AdaKV (Feng et al. 2024, arXiv 2407.11550; kvpress adakv_press.py): SnapKV's scores, then every
// head keeps its top floor(alpha * k) and the rest of the layer's Hs * k slots go to one top-k
// across heads (adakv_positions, policies.h). Heads keep different counts (the table's `ragged`),
// so the CUDA top-k kernel does not apply.
#include <algorithm>

#include "core/common/errors.h"
#include "core/snapkv/policies.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class AdaKVRule : public PooledVotesRule {
public:
    bool pooled_votes_top_k() const override { return false; }
    void choose(const Choice&, const SelectionParams&, int64_t*) const override {
        throw InputError("policy: adakv keeps a different number of positions per head; use the per-head lists");
    }
    std::vector<std::vector<int64_t>> choose_lists(const Choice& c, const SelectionParams& p) const override {
        const int64_t R = c.n_prefix - c.reach;
        std::vector<float> reachable(static_cast<size_t>(c.n_sel * R));  // [Hs, R]
        for (int64_t h = 0; h < c.n_sel; ++h)
            std::copy(c.scores + h * c.n_prefix + c.reach, c.scores + (h + 1) * c.n_prefix, reachable.data() + h * R);
        auto lists = adakv_positions(reachable.data(), c.n_sel, R, c.k, p.adakv_alpha, p.tie_break);
        for (auto& list : lists)
            for (int64_t& pos : list) pos += c.reach;
        return lists;
    }
};

}  // namespace

const PolicyRule& adakv_rule() {
    static const AdaKVRule rule;
    return rule;
}

}  // namespace snapkv
