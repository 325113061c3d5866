// AdaKV (Feng et al. 2024, arXiv 2407.11550; kvpress adakv_press.py): SnapKV's scores, then every
// head keeps its top floor(alpha * k) and the rest of the layer's Hs * k slots go to one top-k
// across heads (adakv_positions, policy_adakv.h; the marking: ranking.h). Heads keep different counts (the table's `ragged`),
// so the CUDA top-k kernel does not apply.
#include <algorithm>

#include "core/common/errors.h"
#include "core/snapkv/policy_adakv.h"
#include "core/snapkv/policy_rule.h"
#include "core/snapkv/ranking.h"

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

int64_t adakv_floor(int64_t k, double alpha) { return static_cast<int64_t>(static_cast<double>(k) * alpha); }

std::vector<std::vector<int64_t>> adakv_positions(const float* scores, int64_t n_heads, int64_t n_prefix, int64_t k,
                                                  double alpha, TieBreak tie) {
    k = std::min(k, n_prefix);
    const int64_t floor_k = std::min(adakv_floor(k, alpha), k);
    std::vector<uint8_t> keep(static_cast<size_t>(n_heads * n_prefix), 0);  // [Hs, P]
    // 1. Every head's own top floor_k (the reference's sorted_attn_score[..., :floor_capacity]).
    for (int64_t h = 0; h < n_heads; ++h)
        mark_best(scores + h * n_prefix, n_prefix, floor_k, tie, keep.data() + h * n_prefix);
    // 2. One top-k over what is left of all heads, Hs * (k - floor_k) slots (the reference's topk
    //    over sorted_attn_score[..., floor_capacity:] flattened across heads).
    mark_best(scores, n_heads * n_prefix, n_heads * (k - floor_k), tie, keep.data());

    std::vector<std::vector<int64_t>> kept(static_cast<size_t>(n_heads));
    for (int64_t h = 0; h < n_heads; ++h) {
        const uint8_t* f = keep.data() + h * n_prefix;
        auto& out = kept[size_t(h)];
        for (int64_t t = 0; t < n_prefix; ++t)
            if (f[t]) out.push_back(t);
    }
    return kept;
}

const PolicyRule& adakv_rule() {
    static const AdaKVRule rule;
    return rule;
}

}  // namespace snapkv
