// One layer's SnapKV scores over the tensors captured at prefill: the window queries and all keys.
// Built once per layer; every retune (window, kernel, pooling, budget, policy) reads its cache and
// never re-runs prefill. It scores; it does not pool, select, or touch a KV cache (selector.h does).
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv (query heads per KV head), L = prompt tokens,
// Wmax = captured window (queries of the last Wmax prompt positions), W = window (W <= Wmax, W < L),
// D = head_dim.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace snapkv {

// Filled by the model during prefill; float32 (other floating types are converted), CPU or CUDA.
struct LayerCapture {
    at::Tensor window_queries;   // [H, Wmax, D] post-RoPE queries of the last Wmax prompt positions
    at::Tensor keys;             // [Hkv, L, D] post-RoPE keys of all L prompt positions
    at::Tensor h2o;              // [H, L] attention each key received, summed over all L prompt
                                 // queries (causal): H2O's score; may be undefined
    // How the model scores this layer (transformers' eager attention, the order matters):
    // scores = q.k^T * scale, then softcap * tanh(scores / softcap) when softcap > 0, then the
    // causal mask and, when sliding_window > 0, the mask of keys at least sliding_window older
    // than the query (a query at p sees p - sliding_window + 1 .. p).
    double scale = 0.0;          // 0 or 1/sqrt(D): divide by sqrt(D), as snapkv_utils.py does
    double softcap = 0.0;        // gemma2's attn_logit_softcapping; 0: none
    int64_t sliding_window = 0;  // 0: the layer sees the whole prefix
};

// Votes exactly as FasterDecoding/SnapKV snapkv_utils.py (SnapKVCluster.update_kv): scores
// q.k^T / sqrt(D) of the window queries against all L keys (query head h reads KV head h / G, as
// repeat_kv does), causal mask inside the window only, softmax over all keys in float32, the
// probabilities on the prefix keys summed over the window queries. Architectures that score
// differently keep their own rules (LayerCapture: scale, soft-cap, sliding window), so that the
// votes are the probabilities the model itself used: a sliding-window layer gives exactly zero
// votes to keys its window queries cannot see.
//
// A probability row depends on its query only, not on W (query i of Wmax sits at absolute
// position L - Wmax + i and sees keys <= L - Wmax + i whatever the window). So the constructor
// computes the rows of all Wmax queries once and keeps their suffix sums over rows,
//   m_suffix[h, i, t] = sum_{j >= i} p[h, j, t],
// and votes(W) is the slice m_suffix[:, Wmax - W, :L - W]. Memory: H * Wmax * L floats per layer
// (9 * 128 * 8192 * 4 B = 38 MB); never L x L.
//
// CUDA path: when the capture is on a CUDA device and core was built with the kernels
// (gpu_kernels_available(), head_dim <= 256), no suffix cache is built (it would be 604 MB per
// layer at L = 128K) and every votes(W) runs kernels/window_votes on the capture instead;
// has_suffix_sums() is then false and suffix_sums() throws.
class LayerScorer {
public:
    // Throws InputError when the capture's tensors are missing or their shapes disagree.
    explicit LayerScorer(LayerCapture capture);

    int64_t n_tokens() const { return m_n_tokens; }      // L
    int64_t max_window() const { return m_max_window; }  // Wmax
    int64_t n_head() const { return m_n_head; }          // H
    int64_t n_head_kv() const { return m_n_head_kv; }    // Hkv
    int64_t head_dim() const { return m_head_dim; }      // D
    int64_t sliding_window() const { return m_capture.sliding_window; }  // 0: none

    // [H, L - W] float32 on the capture's device: window attention summed over the W window
    // queries, on the prefix keys. A copy of the cached slice (CUDA path: the fused kernel's
    // result, equal up to float summation order). Throws InputError unless
    // 1 <= W <= Wmax and W < L.
    at::Tensor votes(int64_t window) const;
    // [W, L] float32 on the capture's device: the softmax rows of query head `head` for the last W
    // prompt positions over all L keys (zeros where the causal mask hides a key); for heatmaps.
    // Recomputed from the capture (exact rows, not differences of suffix sums).
    at::Tensor window_attention(int64_t head, int64_t window) const;

    const LayerCapture& capture() const { return m_capture; }
    bool has_h2o() const { return m_capture.h2o.defined(); }
    // False on the CUDA path (see above): votes(W) is computed by the fused kernel on each call.
    bool has_suffix_sums() const { return !m_fused_votes; }
    // [H, Wmax, L] the cached suffix sums described above (read-only use). Throws snapkv::Error
    // on the CUDA path, where they are not kept; check has_suffix_sums() first.
    const at::Tensor& suffix_sums() const;

private:
    void check_window(int64_t window, const char* where) const;

    LayerCapture m_capture;
    at::Tensor m_suffix;   // [H, Wmax, L] float32; undefined on the CUDA path
    bool m_fused_votes = false;  // CUDA path: votes(W) calls gpu_votes, no m_suffix
    int64_t m_n_tokens = 0;
    int64_t m_max_window = 0;
    int64_t m_n_head = 0;
    int64_t m_n_head_kv = 0;
    int64_t m_head_dim = 0;
};

}  // namespace snapkv
