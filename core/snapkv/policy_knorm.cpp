// Knorm (Devoto et al. 2024, arXiv 2406.11430; kvpress knorm_press.py): keys with a small L2 norm
// draw more attention, so the score is minus the key's norm, per KV head, in float32, over every
// prompt position: no window is protected (the table's fixed_window 0), the top int(L * (1 -
// ratio)) are kept.
#include <ATen/ATen.h>

#include "core/snapkv/policy_rule.h"

namespace snapkv {

namespace {

class KnormRule : public PolicyRule {
public:
    at::Tensor score_tensor(const LayerScorer& layer, const SelectionParams&, int64_t) const override {
        const at::Tensor keys = layer.capture().keys.narrow(1, 0, layer.n_tokens()).to(at::kFloat);  // [Hkv, L, D]
        return -at::linalg_vector_norm(keys, 2, {-1}, false, c10::nullopt);                          // [Hkv, L]
    }
};

}  // namespace

const PolicyRule& knorm_rule() {
    static const KnormRule rule;
    return rule;
}

}  // namespace snapkv
