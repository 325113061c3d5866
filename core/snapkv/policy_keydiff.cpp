// KeyDiff (Park et al. 2025, arXiv 2504.15364; kvpress keydiff_press.py): keys whose direction is
// least like the layer's mean key direction are kept. Per KV head, the anchor is the mean of the
// L2-normalised keys and the score minus each key's cosine similarity to it, over every prompt
// position (no window: the table's fixed_window 0). kvpress's one-shot press, not the paper's
// block-wise loop.
#include <ATen/ATen.h>

#include "core/snapkv/policy_rule.h"

namespace snapkv {

namespace {

class KeyDiffRule : public PolicyRule {
public:
    at::Tensor score_tensor(const LayerScorer& layer, const SelectionParams&, int64_t, int64_t n_sel) const override {
        const at::Tensor keys = layer.capture().keys.narrow(1, 0, layer.n_tokens()).to(at::kFloat);  // [Hkv, L, D]
        // F.normalize(keys, p=2, dim=-1): x / max(||x||, 1e-12); then the mean over positions.
        const at::Tensor unit = keys / at::linalg_vector_norm(keys, 2, {-1}, true, c10::nullopt).clamp_min(1e-12);
        const at::Tensor anchor = unit.mean(1, /*keepdim=*/true);             // [Hkv, 1, D]
        const at::Tensor s = -at::cosine_similarity(keys, anchor, -1, 1e-8);  // [Hkv, L]
        return rows_per_selected_head(s, n_sel);
    }
};

}  // namespace

const PolicyRule& keydiff_rule() {
    static const KeyDiffRule rule;
    return rule;
}

}  // namespace snapkv
