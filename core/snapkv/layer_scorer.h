// One layer's SnapKV scores over the tensors captured at prefill: the window queries and all keys.
// Built once per layer; every retune (window, kernel, pooling, budget, policy) reads its cache and
// never re-runs prefill. It scores; it does not pool, select, or touch a KV cache (selector.h does).
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv (query heads per KV head), L = prompt tokens,
// Wmax = captured window (queries of the last Wmax prompt positions), W = window (W <= Wmax, W < L),
// D = head_dim, S = checkpoint stride, Nc = checkpoints (Wmax / S, rounded down).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <ATen/ATen.h>

namespace snapkv {

// Filled by the model during prefill; float32 (other floating types are converted), CPU or CUDA.
struct LayerCapture {
    at::Tensor window_queries;  // [H, Wmax, D] post-RoPE queries of the last Wmax prompt positions
    at::Tensor keys;            // [Hkv, L, D] post-RoPE keys of all L prompt positions (may be a
                                // view into a KV cache buffer: only its rows are read; a 16-bit
                                // cache's own rows are read as they are, widened exactly)
    at::Tensor h2o;             // [H, L] attention each key received, summed over all L prompt
                                // queries (causal): H2O's score; may be undefined
    // How the model scores this layer (transformers' eager attention, the order matters):
    // scores = q.k^T * scale, then softcap * tanh(scores / softcap) when softcap > 0, then the
    // causal mask and, when sliding_window > 0, the mask of keys at least sliding_window older
    // than the query (a query at p sees p - sliding_window + 1 .. p).
    double scale = 0.0;          // 0 or 1/sqrt(D): divide by sqrt(D), as snapkv_utils.py does
    double softcap = 0.0;        // gemma2's attn_logit_softcapping; 0: none
    int64_t sliding_window = 0;  // 0: the layer sees the whole prefix

    // ExpectedAttention's inputs (kvpress expected_attention_press.py); undefined unless prefill
    // recorded them. Pre-RoPE queries: those of the first F = min(16, L) positions as they are,
    // the rest as count, mean and centred sum of outer products (so n_sink <= 16 can be left out).
    at::Tensor query_head;    // [H, F, D] float32
    int64_t query_count = 0;  // queries at positions F .. L - 1
    at::Tensor query_mean;    // [H, D] float64 of those
    at::Tensor query_m2;      // [H, D, D] float64: their sum of (q - mean)(q - mean)^T
    at::Tensor future_rope;   // [D, D] float32: RoPE of positions L .. L + 511 averaged, as the
                              // row map x -> x R^T (kvpress averages R over 512 future positions)
    at::Tensor value_norms;   // [Hkv, L] float32: L2 norm of each value vector
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
// position L - Wmax + i and sees keys <= L - Wmax + i whatever the window), so votes(W) is the sum
// of the last W rows. Keeping every row's running sum ([H, Wmax, L] floats: 1.1 GB for SmolLM2 at
// 8K tokens, 9 GB for a 1B model at 32K) cost more than the weights, so the constructor keeps only
// checkpoints: the float32 sums of the last S, 2S, ..., Nc*S rows ([H, Nc, L]), and votes(W) adds
// the W mod S rows above the nearest checkpoint, recomputed from the captured queries and keys
// (at most S - 1 rows per head, one KV head at a time so they stay in cache). Every sum is
// accumulated in float32 in the same order as a full running sum, so votes stay float32-accurate
// (no differences of sums). The votes of the last window asked for are kept, so retuning kernel,
// pooling, budget or policy at a fixed window costs no recomputation. Never L x L.
//
// On the CPU the rows' scores come from core/quant's attention_score_rows (each key block
// transposed once and scored for all of a KV head's G x R rows in register tiles, on the kernel
// threads), then each row is scaled, masked and softmaxed by softmax_rows; LibTorch's bmm with
// OpenBLAS spent most of a first retune repacking the keys for a handful of rows. A capture on a
// CUDA device keeps LibTorch's ops.
//
// The constructor computes rows in blocks of B = max(32, Wmax / 4) (one pass each) and keeps a
// checkpoint every S rows: S = B below 16K tokens, B / 2 from 16K, B / 4 from 32K. A first
// retune to a window off the checkpoints recomputes W mod S rows against all L keys, so its cost
// grows with S * L: with S = B at an 8B model's 32K tokens that was up to 31 rows per head,
// seconds per layer; now at most 7, for 16 checkpoints instead of 4 (64 MB per layer of an 8B
// model at 32K, next to its 128 MB of float32 keys). Below 16K tokens the checkpoints, and so
// every vote, are those of one checkpoint per block, bit for bit. (Above, a window that is a
// multiple of S but not of B reads a sum of rows from their block's GEMM instead of a GEMM of
// its own rows: OpenBLAS's bits depend on the GEMM's row count, so such votes may differ in the
// last bit from the sums of fewer checkpoints, as any two float32 summations of the same rows.)
//
// Derived per-policy scores (a policy's score_tensor, e.g. KeyDiff's or ExpectedAttention's over
// all keys) are computed once per layer and setting and kept with the scorer (cached_scores), so a
// retune back to such a policy does not redo its matrix products; what a policy's scores share
// across its settings is kept apart, for the scorer's life (cached_derived).
//
// CUDA path: when the capture is on a CUDA device and core was built with the kernels
// (gpu_kernels_available(), head_dim <= 256), no checkpoints are built and votes(W) runs
// kernels/window_votes on the capture instead.
class LayerScorer {
public:
    // Throws InputError when the capture's tensors are missing or their shapes disagree.
    explicit LayerScorer(LayerCapture capture);

    int64_t n_tokens() const { return m_n_tokens; }                      // L
    int64_t max_window() const { return m_max_window; }                  // Wmax
    int64_t n_head() const { return m_n_head; }                          // H
    int64_t n_head_kv() const { return m_n_head_kv; }                    // Hkv
    int64_t head_dim() const { return m_head_dim; }                      // D
    int64_t sliding_window() const { return m_capture.sliding_window; }  // 0: none

    // [H, L - W] float32 on the capture's device, contiguous: window attention summed over the W
    // window queries, on the prefix keys (CUDA path: the fused kernel's result, equal up to float
    // summation order). The tensor is the scorer's cache of the last window: read it, do not
    // modify it. Throws InputError unless 1 <= W <= Wmax and W < L. Thread-safe.
    at::Tensor votes(int64_t window) const;
    // [W, L] float32 on the capture's device: the softmax rows of query head `head` for the last W
    // prompt positions over all L keys (zeros where the causal mask hides a key); for heatmaps.
    // Recomputed from the capture.
    at::Tensor window_attention(int64_t head, int64_t window) const;

    const LayerCapture& capture() const { return m_capture; }
    bool has_h2o() const { return m_capture.h2o.defined(); }
    // S: windows that are multiples of it read a checkpoint without recomputing any row; 0 on the
    // CUDA path (no checkpoints).
    int64_t checkpoint_stride() const { return m_stride; }
    // Bytes the scorer holds beyond its capture: checkpoints, the last window's votes, the
    // cached policy scores and the derived tensors (cached_derived).
    int64_t cache_bytes() const;

    // A tensor derived from this layer's capture alone, computed by `make` the first time `key`
    // is asked for and kept, the last four keys (key: what it depends on, e.g. the policy's name
    // and settings); an undefined result is not kept (make runs again next time). For policies
    // whose scores are matrix products over all keys (score_tensor); the result must not be
    // modified. Thread-safe; make runs under the scorer's lock.
    at::Tensor cached_scores(const std::string& key, const std::function<at::Tensor()>& make) const;
    // A tensor derived from this layer's capture alone that a policy's score_tensor reads under
    // every setting of the policy (ExpectedAttention's quadratic forms of the query statistics at
    // its anchor n_sinks, over every key), computed by `make` the first time `key` is asked
    // for and kept as long as the scorer: not one of cached_scores' last four, which a walk
    // through the settings that reuse it would push out. May be called from a cached_scores
    // make (it takes a lock of its own). Counted in cache_bytes. Thread-safe.
    at::Tensor cached_derived(const std::string& key, const std::function<at::Tensor()>& make) const;

    // B: query rows per GEMM while the checkpoints are built (max(32, Wmax / 4 rounded up)).
    static int64_t block_rows_for(int64_t max_window);
    // The checkpoint stride S and count Nc = Wmax / S of a capture of Wmax queries over L keys:
    // S = B, B / 2 from L = 16384, B / 4 from L = 32768 (rounded up).
    static int64_t stride_for(int64_t max_window, int64_t n_tokens);
    static int64_t checkpoints_for(int64_t max_window, int64_t n_tokens) {
        return max_window / stride_for(max_window, n_tokens);
    }

private:
    void check_window(int64_t window, const char* where) const;
    // [H, count, L] float32 softmax rows of window queries first .. first + count - 1 (0-based in
    // Wmax) over all keys, causal mask applied.
    at::Tensor window_rows(int64_t first, int64_t count) const;
    // window_rows on the CPU kernels (core/quant: attention_score_rows, softmax_rows), all rows at
    // once over the kernel threads.
    at::Tensor cpu_rows(int64_t first, int64_t count) const;
    at::Tensor compute_votes(int64_t window) const;  // [H, L - W]
    // Adds the softmax rows first .. first + count - 1 (0-based in Wmax) to acc, last row first,
    // over the first acc.size(1) keys: acc [H, N] float32 contiguous, N <= L.
    void add_rows(int64_t first, int64_t count, at::Tensor& acc) const;

    struct LastVotes;  // mutex + window + votes of the last call + cached policy scores

    LayerCapture m_capture;
    at::Tensor m_checkpoints;    // [H, Nc, L] float32: [:, m - 1] = sum of the last m * S rows
    int64_t m_stride = 0;        // S (0 on the CUDA path)
    bool m_fused_votes = false;  // CUDA path: votes(W) calls gpu_votes
    std::shared_ptr<LastVotes> m_last;
    int64_t m_n_tokens = 0;
    int64_t m_max_window = 0;
    int64_t m_n_head = 0;
    int64_t m_n_head_kv = 0;
    int64_t m_head_dim = 0;
};

}  // namespace snapkv
