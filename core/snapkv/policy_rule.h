// The one interface every eviction policy implements (policy_<name>.cpp), and the helpers the
// policies share (GQA grouping of rows, SnapKV's pooled votes). A rule sees one layer as plain CPU
// rows and works inside selector.cpp's parallel region: no LibTorch ops (score_tensor, run before
// that region, is where a rule uses them), no state, no parameter
// validation (check_params in snapkv_params.h has run before). It does not gather tensors, build
// Selections or measure kept mass: selector.cpp does that around it.
//
// Dimensions: H = n_head, Hs = heads selected (H in QueryHead mode, Hkv in KvHead mode), G = H / Hs,
// L = prompt tokens, P = prefix length L - W, r = first reachable prefix position, R = P - r,
// k = prefix positions kept per head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// One layer's inputs as CPU float rows (row h at base + h * stride).
struct LayerRows {
    int64_t layer = 0;
    int64_t n_head = 0;     // H
    int64_t n_head_kv = 0;  // Hkv
    int64_t n_sel = 0;      // Hs
    int64_t n_prefix = 0;   // P = L - W
    int64_t n_tokens = 0;   // L
    // [H, Pv] window votes (summed window attention) of the last Wv queries, Pv = L - Wv: Wv = W for
    // a policy with a window, else the user's window (they then only measure kept mass).
    const float* votes = nullptr;
    int64_t votes_stride = 0;
    int64_t n_votes = 0;         // Pv
    const float* h2o = nullptr;  // [H, L] attention received over all prompt queries; null unless the policy
                                 // captures kCapturesColumnSums
    int64_t h2o_stride = 0;
};

// The part of a layer a rule chooses from: prefix positions [r, P) of each selected head.
struct Choice {
    const float* scores = nullptr;  // [Hs, P] row-major: what the rule's score() wrote; null if it scores nothing
    int64_t layer = 0;
    int64_t n_sel = 0;     // Hs
    int64_t n_prefix = 0;  // P (the row stride of scores)
    int64_t reach = 0;     // r: sliding-window layers cannot keep what the next token cannot see
    int64_t k = 0;         // positions per head, k <= R
};

class PolicyRule {
public:
    virtual ~PolicyRule() = default;

    // Budget of each layer, window included. Default: C in every layer.
    virtual std::vector<int64_t> layer_budgets(const SelectionParams& p, int64_t budget, int64_t n_tokens,
                                               int64_t n_layer) const;
    // A sentence on how the policy applied to this prompt (e.g. PyramidKV's uniform branch), or "".
    virtual std::string note(const SelectionParams& p, int64_t budget, int64_t n_tokens) const;

    // Writes the scores the policy ranks, [Hs, P], and returns true; false when it ranks nothing
    // (positions by rule: StreamingLLM, random).
    virtual bool score(const LayerRows& in, const SelectionParams& p, float* scores) const;
    // True when the scores are the policy's own votes (H2O's accumulated attention): they are
    // reported as the votes, with no pooled row. Otherwise votes are the window votes and the scores
    // are reported as the pooled row.
    virtual bool score_is_votes() const { return false; }
    // True when score() is SnapKV's pooled, group-meaned window votes and choose() the default
    // top-k: then the CUDA kernel (kernels/pool_topk) may do both on the device.
    virtual bool pooled_votes_top_k() const { return false; }
    // Scores computed with LibTorch before the parallel region, from anything the layer's capture
    // holds (keys, value norms, query statistics): [Hkv, P], one row per KV head (kvpress's presses
    // score the cache's heads), or an undefined tensor to use score(). For presses whose scores are
    // matrix products. They are kept with the scorer (LayerScorer::cached_scores) and in QueryHead
    // mode each query head reads its KV head's row (rows_per_selected_head, after the cache: a
    // change of GQA mode reuses them).
    virtual at::Tensor score_tensor(const LayerScorer& layer, const SelectionParams& p, int64_t window) const;

    // k sorted positions in [r, P) per head into out [Hs, k]. Default: per head the top k of the
    // scores over [r, P) (top_k_positions, params.tie_break).
    virtual void choose(const Choice& c, const SelectionParams& p, int64_t* out) const;
    // Per head a sorted list of positions in [r, P); the sizes may differ (PolicyInfo::ragged).
    // Default: choose() split into rows.
    virtual std::vector<std::vector<int64_t>> choose_lists(const Choice& c, const SelectionParams& p) const;
};

// rows [H] of P floats (row h at src + h * stride) -> dst [Hs, P]: a copy in QueryHead mode, the
// mean over each KV group in KvHead mode (kvpress snapkv_press.py: view(Hkv, G, P).mean(2)).
// Query head h = kv * G + g.
void group_rows(const float* src, int64_t stride, int64_t n_head, int64_t n_sel, int64_t n_prefix, float* dst);

// SnapKV's scores: each query head's votes pooled (pool_row), then grouped (group_rows), the order
// of kvpress. dst: [Hs, P].
void pooled_votes(const LayerRows& in, const SelectionParams& p, float* dst);

// rows [Hkv] of P floats, one score per KV head (kvpress's presses score the cache's heads) ->
// dst [Hs, P]: a copy in KvHead mode, each query head h given KV head h / G's row in QueryHead mode.
void expand_kv_rows(const float* src, int64_t n_head_kv, int64_t n_sel, int64_t n_prefix, float* dst);
// The same for a score_tensor: [Hkv, P] -> [Hs, P].
at::Tensor rows_per_selected_head(const at::Tensor& kv_rows, int64_t n_sel);

// The rule of a policy that pools window votes and keeps the per-head top k (SnapKV, PyramidKV).
class PooledVotesRule : public PolicyRule {
public:
    bool score(const LayerRows& in, const SelectionParams& p, float* scores) const override;
    bool pooled_votes_top_k() const override { return true; }
};

}  // namespace snapkv
