// PolicyRule's defaults (uniform budgets, per-head top-k) and the helpers the pooling policies
// share: GQA grouping of rows and SnapKV's pooled votes. Plain loops over CPU arrays.
//
// Dimensions: H = n_head, Hs = heads selected, G = H / Hs, P = prefix length, r = first reachable
// prefix position, R = P - r, k = prefix positions kept per head.
#include "core/snapkv/policy_rule.h"

#include <algorithm>

#include "core/snapkv/ranking.h"

namespace snapkv {

std::vector<int64_t> PolicyRule::layer_budgets(const SelectionParams&, int64_t budget, int64_t, int64_t n_layer) const {
    return std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(n_layer, 0)), budget);
}

std::string PolicyRule::note(const SelectionParams&, int64_t, int64_t) const { return {}; }

bool PolicyRule::score(const LayerRows&, const SelectionParams&, float*) const { return false; }

at::Tensor PolicyRule::score_tensor(const LayerScorer&, const SelectionParams&, int64_t) const { return {}; }

void PolicyRule::choose(const Choice& c, const SelectionParams& p, int64_t* out) const {
    const int64_t R = c.n_prefix - c.reach;
    for (int64_t h = 0; h < c.n_sel; ++h) {
        int64_t* row = out + h * c.k;
        top_k_positions(c.scores + h * c.n_prefix + c.reach, R, c.k, p.tie_break, row);
        for (int64_t i = 0; i < c.k; ++i) row[i] += c.reach;
    }
}

std::vector<std::vector<int64_t>> PolicyRule::choose_lists(const Choice& c, const SelectionParams& p) const {
    std::vector<int64_t> flat(static_cast<size_t>(c.n_sel * c.k));  // [Hs, k]
    choose(c, p, flat.data());
    std::vector<std::vector<int64_t>> lists(static_cast<size_t>(c.n_sel));
    for (int64_t h = 0; h < c.n_sel; ++h) lists[size_t(h)].assign(flat.begin() + h * c.k, flat.begin() + (h + 1) * c.k);
    return lists;
}

void group_rows(const float* src, int64_t stride, int64_t n_head, int64_t n_sel, int64_t n_prefix, float* dst) {
    const int64_t P = n_prefix;
    const int64_t G = n_head / n_sel;
    for (int64_t hs = 0; hs < n_sel; ++hs) {
        float* out = dst + hs * P;
        const float* first = src + hs * G * stride;
        std::copy(first, first + P, out);
        if (G == 1) continue;
        for (int64_t g = 1; g < G; ++g) {
            const float* row = first + g * stride;
            for (int64_t t = 0; t < P; ++t) out[t] += row[t];
        }
        const float inv = 1.0f / static_cast<float>(G);
        for (int64_t t = 0; t < P; ++t) out[t] *= inv;
    }
}

void pooled_votes(const LayerRows& in, const SelectionParams& p, float* dst) {
    const int64_t H = in.n_head, P = in.n_prefix;
    std::vector<float> pooled(static_cast<size_t>(H * P));  // [H, P]
    for (int64_t h = 0; h < H; ++h)
        pool_row(in.votes + h * in.votes_stride, P, p.kernel, p.pooling, pooled.data() + h * P);
    group_rows(pooled.data(), P, H, in.n_sel, P, dst);
}

void expand_kv_rows(const float* src, int64_t n_head_kv, int64_t n_sel, int64_t n_prefix, float* dst) {
    const int64_t G = n_sel / n_head_kv;  // 1 in KvHead mode
    for (int64_t h = 0; h < n_sel; ++h)
        std::copy(src + (h / G) * n_prefix, src + (h / G + 1) * n_prefix, dst + h * n_prefix);
}

at::Tensor rows_per_selected_head(const at::Tensor& kv_rows, int64_t n_sel) {
    const int64_t Hkv = kv_rows.size(0);
    return n_sel == Hkv ? kv_rows : kv_rows.repeat_interleave(n_sel / Hkv, 0);
}

bool PooledVotesRule::score(const LayerRows& in, const SelectionParams& p, float* scores) const {
    pooled_votes(in, p, scores);
    return true;
}

}  // namespace snapkv
