// The decoder of every supported architecture (Llama 2/3, SmolLM2, Mistral, Qwen2/3, Gemma 2/3,
// Phi-3) in LibTorch ATen, driven by ModelConfig's feature flags and per-layer descriptions rather
// than by the architecture's name: RMSNorm (+ optional post-norms and q/k norms), RoPE (adjacent
// or NeoX, per-layer base and scaling, partial), grouped-query attention with an optional sliding
// window, logit soft-caps and scale, SwiGLU or GeGLU, QKV bias, tied embeddings. Fused QKV and
// gate-up tensors are split into plain matrices at load. The model is read-only after load and
// may be shared; all per-run state (KV cache, captures) lives in the caller's objects. Attention
// runs in query chunks and never builds an L x L matrix for all heads at once.
//
// Sliding-window layers keep every position in the KV cache and mask the keys older than their
// window (a query at p sees p - window + 1 .. p); session/selection code trims what no later query
// can see (see core/session) so that memory figures count what such a layer needs.
//
// Dimensions: T = tokens in this call, E = n_embd, H = n_head, Hkv = n_head_kv, Hc = heads held by
// the cache, D = head_dim, S = cache slots, V = n_vocab, F = n_ff, W = captured window.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/io/model_config.h"
#include "core/kv/kv_cache.h"
#include "core/model/model_ops.h"
#include "core/model/weight_matrix.h"

namespace snapkv {

class ModelFile;
class StageClock;
namespace prefill_ops {
struct RopeTableRows;
}

struct ModelOptions {
    c10::Device device = c10::Device(c10::kCPU);
    at::ScalarType dtype = at::kFloat;  // float32 on CPU; CUDA also float16 / bfloat16
    // CPU: keep weight matrices in the file's format (quantized blocks, F16, BF16) and multiply
    // them with the core/quant kernels; false dequantizes every weight to float32 at load (the
    // only way on CUDA, where this is ignored).
    bool native_weights = true;
    // With native weights: single-token products quantize their input to 8 bits (as llama.cpp's
    // CPU products do) for the formats that have such products: faster decode, slightly
    // different results. Off: float32 inputs, the reference arithmetic.
    bool q8_activations = false;
    // How caches from new_cache() store keys and values (kv_type.h); f32 keeps the compute dtype.
    KvType cache_type = KvType::F32;
};

// The pre-RoPE queries of one forward call, as ExpectedAttention (kvpress) reads them: those at
// absolute positions below kQueryHeadPositions as they are (so that any n_sink up to it can be left
// out later), the others as a count, a mean and a centred sum of outer products (calls combine
// with Chan's formula).
inline constexpr int64_t kQueryHeadPositions = 16;
struct QueryStats {
    at::Tensor head;    // [H, f, D] float32 (CPU): the call's queries at positions < kQueryHeadPositions
    int64_t count = 0;  // n: the call's queries at positions >= kQueryHeadPositions
    at::Tensor mean;    // [H, D] float64 (CPU) of those n; undefined when n == 0
    at::Tensor m2;      // [H, D, D] float64 (CPU): sum over them of (q - mean)(q - mean)^T
};

// What prefill keeps for SnapKV-style selection, per layer (no extra pass).
struct PrefillCapture {
    int64_t max_window = 0;                  // capture the post-RoPE queries of the last max_window tokens
    bool h2o = false;                        // accumulate attention received per key over all queries
    bool query_stats = false;                // record QueryStats of the pre-RoPE queries
    std::vector<at::Tensor> window_queries;  // per layer [H, W, D] (float32)
    std::vector<at::Tensor> h2o_scores;      // per layer [H, S] (float32), S = cache size after the call
    std::vector<QueryStats> queries;         // per layer, with query_stats
};

// Attention of the last token of a call over the cache, per layer (for hit rates); column s is
// cache slot s (LayerKv::positions() gives its absolute position). Sliding-window layers give 0
// on the slots outside their window.
struct AttentionProbe {
    std::vector<at::Tensor> probs;  // per layer [H, S] float32 softmax of the last query
};

// Wall time of forward()'s stages, summed over layers (CPU; on CUDA a stage's time includes waits
// for work queued before it). Projections include dequantizing their weight tiles, which
// dequant_ms also counts on its own.
struct ForwardProfile {
    enum Stage {
        Embed,
        Norms,
        QkvProj,
        Rope,
        KvAppend,
        Capture,
        Attention,
        OutProj,
        FfnProj,
        Activation,
        Residual,
        Logits,
        kStages
    };
    double ms[kStages] = {};
    double dequant_ms = 0;
    static const char* name(int stage);
};

struct ForwardOptions {
    bool all_logits = false;  // logits for every token (perplexity) or only the last
    int64_t logits_from = 0;  // with all_logits: only positions logits_from.. (a 262K
                              // vocabulary makes each row 1 MiB)
    PrefillCapture* capture = nullptr;
    AttentionProbe* probe = nullptr;
    int64_t attn_chunk = 512;                                      // queries per attention block
    std::function<void(int64_t layer, int64_t n_layer)> on_layer;  // progress
    const std::atomic<bool>* cancel = nullptr;                     // polled twice per layer
    ForwardProfile* profile = nullptr;                             // when set, stage times are added to it
    // When set, filled per layer with the post-RoPE query of each sequence's last token: [n, H, D]
    // float32 on the model's device (n = 1 for forward(), the batch for forward_batch()). What
    // decoding-time compression scores with (core/compare/decode_compression.h).
    std::vector<at::Tensor>* last_queries = nullptr;
};

class LlamaModel {
public:
    // Reads every weight onto opts.device in opts.dtype, matrices in the file's format when
    // opts.native_weights on the CPU (else dequantized). Throws FileError /
    // InputError, or Cancelled when *cancel becomes true. progress(done, total) per tensor.
    static std::shared_ptr<const LlamaModel> load(const ModelFile& file, const ModelOptions& opts = {},
                                                  const std::function<void(int64_t, int64_t)>& progress = {},
                                                  const std::atomic<bool>* cancel = nullptr);

    const ModelConfig& config() const { return m_config; }
    const ModelOptions& options() const { return m_opts; }
    int64_t weight_bytes() const { return m_weight_bytes; }  // weights in memory, as held there
    // The model's distinct RoPE tables (1, or Gemma 3's local and global) and the one a layer uses.
    const model_ops::RopeTable& rope(size_t index) const { return m_ropes[index]; }
    size_t rope_index(int64_t layer) const { return m_layers[static_cast<size_t>(layer)].rope; }

    // A cache for this model: n_head_kv heads per layer, the model's device and dtype.
    // values false: each layer's values deferred until its first append (LayerKv's constructor).
    KvCache new_cache(int64_t capacity = 256, bool values = true) const;
    // The storage type of caches new_cache() makes from now on (a run setting, like llama.cpp's
    // context parameter, not part of the weights: hence const). Caches already made keep theirs.
    void set_cache_type(KvType t) const { m_cache_type.store(t); }
    KvType cache_type() const { return m_cache_type.load(); }

    // Run tokens [T] at absolute positions cache.n_past() ... + T - 1, appending their K/V to the
    // cache. Returns logits float32: [T - f, V] if opts.all_logits (f = opts.logits_from, clamped to
    // 0..T-1) else [1, V] for the last token.
    at::Tensor forward(const std::vector<int32_t>& tokens, KvCache& cache, const ForwardOptions& opts = {}) const;
    // Several calls' tokens run as consecutive parts of one prompt, layer by layer: each layer runs
    // for part 0, then part 1, ..., then after_layer(l) sees the cache with that layer complete
    // (parts[i] at positions after parts[i - 1], each with its own options: captures, progress).
    // Every part's logits and capture, and the cache, equal those of forward() called on the parts
    // in order, bit for bit; what changes is that a layer is finished for the whole prompt before
    // the next starts, so after_layer may drop what no later layer needs (an analysis's values).
    std::vector<at::Tensor> forward_parts(const std::vector<std::vector<int32_t>>& parts, KvCache& cache,
                                          const std::vector<ForwardOptions>& opts,
                                          const std::function<void(int64_t layer)>& after_layer = {}) const;
    // Hands the resident pages of layer l's native weights back to the kernel (a layer an
    // analysis has finished with); release_pages() does it for every weight. Both only lower the
    // memory the process holds: the pages are read again from the file when next used.
    void release_layer_pages(int64_t l) const;
    void release_pages() const;
    // One token for each of n sequences, token j at position caches[j]->n_past() appended to
    // caches[j] -> logits [n, V] float32. Row j equals forward({tokens[j]}, *caches[j]) bit for bit;
    // on the CPU buffer path the weights are read once per step for all n. opts: cancel and
    // on_layer only (no capture, probe or all_logits).
    at::Tensor forward_batch(const std::vector<int32_t>& tokens, const std::vector<KvCache*>& caches,
                             const ForwardOptions& opts = {}) const;

private:
    struct Layer {
        at::Tensor attn_norm;       // [E] float32
        WeightMatrix wq;            // [H*D, E]   (phi3: rows of attn_qkv)
        WeightMatrix wk;            // [Hkv*D, E]
        WeightMatrix wv;            // [Hkv*D, E]
        at::Tensor bq, bk, bv;      // [H*D], [Hkv*D] or undefined
        at::Tensor q_norm;          // [D] float32 or undefined (qk_norm)
        at::Tensor k_norm;          // [D] float32 or undefined
        WeightMatrix wo;            // [E, H*D]
        at::Tensor attn_post_norm;  // [E] float32 or undefined (post_norms)
        at::Tensor ffn_norm;        // [E] float32
        WeightMatrix w_gate;        // [F, E]     (phi3: first F rows of ffn_up)
        WeightMatrix w_up;          // [F, E]     (phi3: last F rows of ffn_up)
        WeightMatrix w_down;        // [E, F]
        at::Tensor ffn_post_norm;   // [E] float32 or undefined (post_norms)
        size_t rope = 0;            // index into m_ropes
    };

    // One forward call's state between its layers (forward_parts.h).
    struct Pass;
    void check_tokens(const std::vector<int32_t>& tokens) const;  // InputError: empty, outside the vocabulary
    std::unique_ptr<Pass> begin_pass(const std::vector<int32_t>& tokens, int64_t pos0,
                                     const ForwardOptions& opts) const;  // embeddings, capture set-up
    void run_layer(Pass& p, KvCache& cache, int64_t l) const;            // layer l of the pass
    at::Tensor end_pass(Pass& p) const;                                  // output norm, logits

    at::Tensor attention(const at::Tensor& q, LayerKv& kv, const at::Tensor& q_pos, int64_t layer,
                         const ForwardOptions& opts) const;  // [H, T, D] -> [T, H*D]
    // Layer l of a prompt longer than kLayerChunk on the CPU in float32 (long_prompt_layer.cpp):
    // forward()'s operations for one layer in token chunks, so that only x [T, E] is held whole.
    // Rows are independent and attention is causal, so the result is forward()'s up to
    // summation order (GEMM sizes, H2O's sums added per chunk). x is updated in place; the
    // layer's keys and values are appended to kv.
    void long_prompt_layer(int64_t l, at::Tensor& x, LayerKv& kv, const at::Tensor& pos, int64_t pos0,
                           const prefill_ops::RopeTableRows& rope, const ForwardOptions& opts, StageClock& clk) const;
    // Attention of one token's queries q [H, D] over a cpu_readable() cache that already holds its
    // keys: probs [Hc, g, S] (softmax), out [H, D]. Plain buffers (model_attention.cpp).
    void attend_one(const float* q, const LayerKv& kv, int64_t q_pos, int64_t layer, float* probs, float* out) const;
    // One token on the CPU in float32 on plain buffers (model_decode.cpp): the same operations as
    // forward()'s, without a LibTorch call per operation. Only when m_raw_decode and every cache
    // layer is cpu_readable(), and no capture is asked for.
    at::Tensor forward_one(int32_t token, KvCache& cache, const ForwardOptions& opts) const;
    // forward_one for n sequences at once: tokens [n], caches [n] -> [n, V]; the probe only for n 1.
    at::Tensor forward_steps(const int32_t* tokens, KvCache* const* caches, int64_t n,
                             const ForwardOptions& opts) const;
    // Whether the buffer path can step this cache (m_raw_decode, float32 CPU layers).
    bool can_step_raw(const KvCache& cache) const;

    ModelConfig m_config;
    ModelOptions m_opts;
    mutable std::atomic<KvType> m_cache_type{KvType::F32};
    WeightMatrix m_tok_embd;                    // [V, E]
    at::Tensor m_output_norm;                   // [E]
    WeightMatrix m_output;                      // [V, E] (token_embd when tied)
    std::vector<model_ops::RopeTable> m_ropes;  // distinct per-layer RoPE tables (1 or 2)
    std::vector<Layer> m_layers;
    int64_t m_weight_bytes = 0;
    bool m_raw_decode = false;  // CPU float32, every matrix WeightMatrix::raw_ready(), norms contiguous
};

}  // namespace snapkv
