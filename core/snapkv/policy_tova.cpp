// TOVA (Oren et al. 2024, arXiv 2401.06104) as kvpress tova_press.py applies it: the attention of
// the last prompt token over the earlier ones (the window votes of W = 1, a softmax in float32),
// averaged over all query heads, one score shared by every head; the last token itself is always
// kept (kvpress pads its score with the maximum + 1). So W is fixed at 1 (the table's
// fixed_window) and the top C - 1 earlier positions are kept.
#include <vector>

#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

class TOVARule : public PolicyRule {
public:
    bool score(const LayerRows& in, const SelectionParams&, float* scores) const override {
        // kvpress: attn_weights.mean(1) over all H heads (not per KV group), then repeated for
        // every KV head.
        const int64_t P = in.n_prefix;
        std::vector<float> mean(static_cast<size_t>(P), 0.0f);
        for (int64_t h = 0; h < in.n_head; ++h) {
            const float* row = in.votes + h * in.votes_stride;  // [L - 1]: W = 1
            for (int64_t t = 0; t < P; ++t) mean[size_t(t)] += row[t];
        }
        const float inv = 1.0f / static_cast<float>(in.n_head);
        for (float& v : mean) v *= inv;
        for (int64_t h = 0; h < in.n_sel; ++h) std::copy(mean.begin(), mean.end(), scores + h * P);
        return true;
    }
};

}  // namespace

const PolicyRule& tova_rule() {
    static const TOVARule rule;
    return rule;
}

}  // namespace snapkv
