// Selection over the per-layer scorers: parameter checks, budgets, sliding-window reach and the kept
// positions of every policy of policy_table.h (each policy's rule scores and chooses), as Selection
// values for the GUI/CLI or as position tensors for the cache gather. Pure functions: no model, no
// KV cache, no state between calls.
//
// Dimensions: H = n_head, Hkv = n_head_kv, Hs = heads selected (H in QueryHead mode, Hkv in KvHead
// mode), L = prompt tokens, W = window, P = prefix length L - W, C = budget (window included),
// N = rows of a score matrix, k = kept per row.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/ranking.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// SnapKV's clustering (snapkv_utils.py: F.max_pool1d / F.avg_pool1d, stride 1, padding K // 2):
// max: padding never wins (-inf padding); avg: count_include_pad, zeros counted, divided by K;
// none: the input itself. scores: [N, P] float32 -> [N, P]. Throws InputError unless K is odd and
// 1 <= K <= P (none ignores K).
at::Tensor pool_scores(const at::Tensor& scores, int64_t kernel, Pooling pooling);

// The k best positions of every row, in increasing position order, ties to the later position
// (TieBreak::Later, the default, as torch.topk kept them) or to the earlier one:
// scores [N, P] (any device) -> [N, min(k, P)] int64 on the CPU.
at::Tensor top_k_positions(const at::Tensor& scores, int64_t k, TieBreak tie = TieBreak::Later);

// effective_budget, check_params and validate_params: snapkv_params.h.

// Runs the policy on every layer. L <= C leaves a layer uncompressed (FasterDecoding/SnapKV:
// `if q_len < max_capacity_prompt: return`; at L == C nothing would be evicted either): all
// L - W prefix positions are listed as kept and Selection.note says so. with_scores fills HeadSelection.votes / pooled (Hs x P floats per layer);
// kept and kept_mass are always filled. Throws InputError for bad parameters or mismatched layers.
Selection select(const std::vector<LayerScorer>& layers, const SelectionParams& p, bool with_scores = true);

// select() of the last of the layers computed so far (a prefill's per-layer preview, before the
// later layers exist): `layers` are layers 0 .. l of a model of n_layer layers, and the result is
// select(all n_layer layers, p, with_scores).layers[l] (a layer's choice reads only its own scorer;
// what spans layers, PyramidKV's budgets, is planned for n_layer). Throws as select() does.
LayerSelection select_layer(const std::vector<LayerScorer>& layers, int64_t n_layer, const SelectionParams& p,
                            bool with_scores = true);

// Computes and keeps with each layer's scorer (LayerScorer::cached_scores) the score tensor of
// policy p.policy with p's settings, so that a later select() of that policy, with any budget or
// tie rule, reads it instead of computing it: for scores that are products over every key
// (ExpectedAttention's quadratic form costs seconds a layer at 32K tokens). Nothing for a policy
// that ranks no score tensor. Throws as select() does.
void prepare_scores(const std::vector<LayerScorer>& layers, const SelectionParams& p);

// prepare_scores with the default settings (SelectionParams{}) of every policy whose table row
// asks for captures beyond the keys and window queries, all of them in `captures` (CaptureBit
// set): what a prefill does once its scorers are built, so the first retune to ExpectedAttention
// reads its scores. Defaults this prompt cannot take (fewer tokens than the sinks) are skipped.
void prepare_default_scores(const std::vector<LayerScorer>& layers, uint32_t captures);

// The same selection as select(), straight to tensors for the cache gather: per layer a [Hs, k]
// int64 tensor of sorted prefix positions on the capture's device, k = that layer's C - W (L - W
// when the layer is not compressed); the window is not listed. AdaKV keeps a different count per
// head: it throws InputError, use select() and the per-head lists (or kept_positions) instead.
std::vector<at::Tensor> select_positions(const std::vector<LayerScorer>& layers, const SelectionParams& p);

// One LayerSelection's kept lists as a [Hs, k] int64 CPU tensor; InputError if the heads kept
// different counts (AdaKV).
at::Tensor kept_positions(const LayerSelection& layer);

}  // namespace snapkv
