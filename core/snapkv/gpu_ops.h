// Thin adapters from LibTorch tensors to the scoring kernels of kernels/snapkv_kernels.h: the fused
// window votes and pooling + top-k. Core's CPU/LibTorch code stays the reference
// (LayerScorer::votes, pool_scores/top_k_positions); these only check shapes, pick dtypes, stream
// and device, and turn kernels::KernelError into snapkv::Error. The gather of kept K/V rows and
// gpu_kernels_available() live below kv in core/ops/gpu_gather.h (re-exported here). No CUDA types
// here; the adapters exist only in builds with SNAPKV_HAVE_CUDA.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = query heads per selected row (1 or H / Hkv),
// D = head_dim, L = prompt tokens, W = window, P = L - W, k = positions kept per row.
#pragma once

#include <cstdint>
#include <utility>

#include <ATen/ATen.h>

#include "core/ops/gpu_gather.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

#ifdef SNAPKV_HAVE_CUDA
// kernels::window_votes. q: [H, Wmax, D] CUDA, k: [Hkv, L, D] on the same device (a view into a
// larger buffer with the same row layout is read in place) -> votes [H, L - W] float32, exactly
// what LayerScorer::votes(W) computes up to float summation order. Float16/bfloat16 pairs are
// passed as they are; anything else runs with float32 queries (and float32 keys if not 16-bit).
at::Tensor gpu_votes(const at::Tensor& q, const at::Tensor& k, int64_t n_tokens, int64_t window);

// kernels::pool_topk. votes: [N, P] CUDA (float32; converted otherwise); group G divides N ->
// {pooled [N / G, P] float32, positions [N / G, k] int64 sorted}, both on the votes' device: the
// values of pool_scores + group mean and the positions of top_k_positions with the same tie break.
std::pair<at::Tensor, at::Tensor> gpu_pool_topk(const at::Tensor& votes, int64_t group, int64_t kernel, Pooling pooling,
                                                int64_t k, TieBreak tie);
#endif

}  // namespace snapkv
