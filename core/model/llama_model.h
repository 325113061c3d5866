// Llama-family decoder (Llama 2/3, SmolLM/SmolLM2, TinyLlama, Mistral, Qwen2) in LibTorch ATen:
// RMSNorm, RoPE (adjacent-pair or NeoX layout), grouped-query attention, SwiGLU, tied embeddings,
// QKV bias. The model is read-only after load and may be shared; all per-run state (KV cache,
// captures) lives in the caller's objects. Attention runs in query chunks and never builds an
// L x L matrix for all heads at once.
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

namespace snapkv {

class ModelFile;

struct ModelOptions {
    c10::Device device = c10::Device(c10::kCPU);
    at::ScalarType dtype = at::kFloat;   // float32 on CPU; CUDA also float16 / bfloat16
};

// What prefill keeps for SnapKV-style selection, per layer (no extra pass).
struct PrefillCapture {
    int64_t max_window = 0;               // capture the post-RoPE queries of the last max_window tokens
    bool h2o = false;                     // accumulate attention received per key over all queries
    std::vector<at::Tensor> window_queries;  // per layer [H, W, D] (float32)
    std::vector<at::Tensor> h2o_scores;      // per layer [H, S] (float32), S = cache size after the call
};

// Attention of the last token of a call over the cache, per layer (for hit rates); column s is
// cache slot s (LayerKv::positions() gives its absolute position).
struct AttentionProbe {
    std::vector<at::Tensor> probs;        // per layer [H, S] float32 softmax of the last query
};

struct ForwardOptions {
    bool all_logits = false;              // logits for every token (perplexity) or only the last
    PrefillCapture* capture = nullptr;
    AttentionProbe* probe = nullptr;
    int64_t attn_chunk = 512;             // queries per attention block
    std::function<void(int64_t layer, int64_t n_layer)> on_layer;  // progress
    const std::atomic<bool>* cancel = nullptr;                    // polled per layer
};

class LlamaModel {
public:
    // Reads and dequantizes every weight onto opts.device in opts.dtype. Throws FileError /
    // InputError, or Cancelled when *cancel becomes true. progress(done, total) per tensor.
    static std::shared_ptr<const LlamaModel> load(
        const ModelFile& file, const ModelOptions& opts = {},
        const std::function<void(int64_t, int64_t)>& progress = {},
        const std::atomic<bool>* cancel = nullptr);

    const ModelConfig& config() const { return m_config; }
    const ModelOptions& options() const { return m_opts; }
    int64_t weight_bytes() const { return m_weight_bytes; }

    // A cache for this model: n_head_kv heads per layer, the model's device and dtype.
    KvCache new_cache(int64_t capacity = 256) const;

    // Run tokens [T] at absolute positions cache.n_past() ... + T - 1, appending their K/V to the
    // cache. Returns logits float32: [T, V] if opts.all_logits else [1, V] for the last token.
    at::Tensor forward(const std::vector<int32_t>& tokens, KvCache& cache,
                       const ForwardOptions& opts = {}) const;

private:
    struct Layer {
        at::Tensor attn_norm;  // [E]
        at::Tensor wq;         // [H*D, E]
        at::Tensor wk;         // [Hkv*D, E]
        at::Tensor wv;         // [Hkv*D, E]
        at::Tensor bq, bk, bv; // [H*D], [Hkv*D] or undefined
        at::Tensor wo;         // [E, H*D]
        at::Tensor ffn_norm;   // [E]
        at::Tensor w_gate;     // [F, E]
        at::Tensor w_up;       // [F, E]
        at::Tensor w_down;     // [E, F]
    };

    at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) const;   // [T, E] -> [T, E]
    at::Tensor rope(const at::Tensor& x, const at::Tensor& pos) const;     // [h, T, D], [T] -> [h, T, D]
    at::Tensor attention(const at::Tensor& q, LayerKv& kv, const at::Tensor& q_pos, int64_t layer,
                         const ForwardOptions& opts) const;               // [H, T, D] -> [H, T, D]

    ModelConfig m_config;
    ModelOptions m_opts;
    at::Tensor m_tok_embd;     // [V, E]
    at::Tensor m_output_norm;  // [E]
    at::Tensor m_output;       // [V, E] (token_embd when tied)
    at::Tensor m_inv_freq;     // [n_rot/2] float32, scaling applied
    std::vector<Layer> m_layers;
    int64_t m_weight_bytes = 0;
};

}  // namespace snapkv
