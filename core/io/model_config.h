// Plain value types describing a loaded model: hyperparameters, per-architecture feature flags, one
// description per layer, and tokenizer data, filled by the GGUF or Hugging Face readers. The model
// code reads only these flags, never the architecture name. No LibTorch, no Qt: the GUI and CLI
// may include this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace snapkv {

struct RopeScaling {
    // none | linear | llama3 | longrope (Phi-3 "su"/"longrope"; yarn is refused at load)
    std::string type = "none";
    float factor = 1.0f;
    int64_t original_ctx = 0;       // llama3 / longrope: original_max_position_embeddings
    float low_freq_factor = 1.0f;   // llama3
    float high_freq_factor = 4.0f;  // llama3
    // llama3 as llama.cpp stores it (the rope_freqs.weight tensor, [n_rot/2]): each inverse
    // frequency divided by its factor; when set, factor / original_ctx / *_freq_factor are unused.
    std::vector<float> freq_factors;
    // longrope: per-frequency divisors [n_rot/2]; the short ones serve positions below
    // original_ctx (positions beyond it are refused, see llama_model.h), and cos/sin are
    // multiplied by attn_factor.
    std::vector<float> short_factor;
    std::vector<float> long_factor;
    float attn_factor = 1.0f;
};

enum class FfnActivation {
    Silu,      // SwiGLU: silu(gate) * up (llama, qwen, phi3)
    GeluTanh,  // GeGLU: gelu_tanh(gate) * up (gemma)
};

// What differs between the layers of one model.
struct LayerConfig {
    int64_t sliding_window = 0;       // > 0: a query at p sees keys at p - sliding_window + 1 .. p
                                      // (transformers: kv_idx > q_idx - sliding_window); 0: all
    float rope_freq_base = 10000.0f;  // gemma3: local layers use their own base
    bool rope_scaled = true;          // rope_scaling applies to this layer (gemma3: global only)
};

struct ModelConfig {
    std::string arch;  // "llama" | "qwen2" | "qwen3" | "gemma2" | "gemma3" | "phi3"
    std::string name;  // general.name or the folder name
    int64_t n_layer = 0;
    int64_t n_embd = 0;
    int64_t n_ff = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;  // n_embd / n_head unless the file says otherwise
    int64_t n_rot = 0;     // rotated dims per head (rope.dimension_count), normally head_dim
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    float rope_freq_base = 10000.0f;  // global layers
    RopeScaling rope_scaling;
    bool rope_neox = false;  // NeoX (rotate-half) layout: qwen2/3, gemma, phi3. llama: adjacent pairs.
    float rms_eps = 1e-5f;
    bool tied_embeddings = false;  // no output.weight: logits use token_embd

    // Architecture features (the readers set them from the architecture and the file).
    bool qkv_bias = false;       // q/k/v projections have biases (qwen2)
    bool qk_norm = false;        // per-head RMSNorm of q and k before RoPE (qwen3, gemma3)
    bool post_norms = false;     // RMSNorm of the attention and FFN outputs before each residual
                                 // add (gemma2/3: post_attention_norm, post_ffw_norm)
    bool fused_qkv = false;      // the file holds attn_qkv (phi3); split into q/k/v rows at load
    bool fused_gate_up = false;  // the file holds ffn_up with [gate; up] rows (phi3); split at load
    FfnActivation ffn_act = FfnActivation::Silu;
    float embd_scale = 1.0f;          // token embeddings times this (gemma: sqrt(n_embd))
    float attn_scale = 0.0f;          // q.k multiplier; readers set 1/sqrt(head_dim) unless the model
                                      // says otherwise (gemma: query_pre_attn_scalar^-0.5)
    float attn_softcap = 0.0f;        // > 0: scores = cap * tanh(scores / cap) before mask and softmax
    float final_softcap = 0.0f;       // > 0: logits = cap * tanh(logits / cap) (gemma2)
    int64_t sliding_window = 0;       // the model's window (0: none); layers[l] says which layers use it
    std::vector<LayerConfig> layers;  // n_layer entries
};

// Short phrases for what sets this model apart from a plain Llama 2 ("sliding window 4096 on
// layers 0, 2, 4 (3 of 6)", "attention soft-cap 50", "q/k norm", ...), for `snapkv info` and the
// app. Empty for a plain model.
std::vector<std::string> model_features(const ModelConfig& config);
// "0, 2, 4" or "all" or "none": the layers that use a sliding window.
std::string sliding_layers_text(const ModelConfig& config);

// Tokenizer data, as GGUF stores it (tokenizer.ggml.*) or as converted from tokenizer.json.
struct VocabData {
    std::string model;  // "llama" (SentencePiece-style BPE) | "gpt2" (byte-level BPE)
    std::string pre;    // tokenizer.ggml.pre: "default", "smollm", "llama-bpe", "qwen2", ...
    std::vector<std::string> tokens;
    std::vector<float> scores;        // may be empty for gpt2
    std::vector<int32_t> types;       // llama.cpp token types: 1 normal, 2 unknown, 3 control,
                                      // 4 user-defined, 5 unused, 6 byte; may be empty
    std::vector<std::string> merges;  // "a b" pairs, rank = index (gpt2)
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t unk_id = -1;
    int32_t pad_id = -1;
    std::vector<int32_t> eog_ids;  // end-of-generation ids, eos included (e.g. </s>, <|im_end|>, <|eot_id|>)
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = true;  // SentencePiece: prepend one space to the first fragment
    std::string chat_template;     // the default Jinja chat template from the file, may be empty
    // Named variants besides the default (GGUF tokenizer.chat_template.NAME; HF's list of named
    // templates and chat_templates/NAME.jinja), e.g. {"tool_use", text}; file order.
    std::vector<std::pair<std::string, std::string>> chat_templates;
};

}  // namespace snapkv
