// What a supported architecture needs from a model file, whatever its format: the feature flags
// that follow from the architecture, the per-layer sliding-window / RoPE description, sanity checks
// on the hyperparameters and the list of tensors with their expected shapes (torch order, GGUF
// names). Shared by the GGUF and Hugging Face readers so both refuse the same models. Does not read
// files and does not know about formats beyond the key names it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/io/model_config.h"
#include "core/io/model_file.h"

namespace snapkv {

// The values ModelConfig::arch may take (GGUF general.architecture names).
const std::vector<std::string>& supported_archs();
std::string supported_archs_text();  // "llama, qwen2, ..."

// Sets the flags that follow from config.arch alone, as llama.cpp's graph for that architecture
// does: RoPE layout, biases, q/k norm, post-norms, fused tensors, activation, embedding scale
// (needs n_embd), attention scale 1/sqrt(head_dim) (needs head_dim; readers may override it).
void set_arch_features(ModelConfig& config);

// The default sliding-window pattern of an architecture when the file gives none: the period of
// llama.cpp's set_swa_pattern (layer l slides iff l % period < period - 1; period 1: every layer).
// gemma2 2, gemma3 6, else 1.
int64_t default_swa_period(const std::string& arch);
std::vector<bool> swa_pattern(int64_t n_layer, int64_t period);

// Fills config.layers from the model's sliding window (config.sliding_window, 0 = none) and which
// layers use it. Sliding layers take local_rope_base and no RoPE scaling when local_rope_base > 0
// (gemma3: local layers use their own base, unscaled); otherwise every layer uses
// config.rope_freq_base and the model's scaling.
void set_layers(ModelConfig& config, const std::vector<bool>& sliding, float local_rope_base = 0.0f);

// How the file names each hyperparameter, so that messages point at the right key.
struct ConfigKeyNames {
    std::string n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, n_vocab, n_ctx_train, rope_freq_base,
        rms_eps, rope_scaling, sliding_window, attn_scale, attn_softcap, final_softcap;
};

// The counts anything is sized from (layers, width, heads, head size, vocabulary, context), each
// against its sanity bound. Readers call it as soon as they have read them, before a per-layer
// table or anything else is allocated from a count (a config claiming 10^9 layers once took 15 GB
// before it was refused). Throws FileError(BadValue) naming the key; validate_config repeats it.
void validate_counts(const ModelConfig& config, const std::string& where, const ConfigKeyNames& keys);

// Throws FileError(BadValue) naming the key, the value and what is allowed. where: message prefix
// ("gguf: <path>: ").
void validate_config(const ModelConfig& config, const std::string& where, const ConfigKeyNames& keys);

struct ExpectedTensor {
    std::string name;            // GGUF name
    std::vector<int64_t> shape;  // torch order
    bool required = true;
};

// Every tensor the architecture reads: embeddings, output norm, optional output and
// rope_freqs (llama3 frequency factors, [n_rot/2]), and per layer the attention and FFN weights
// with the extras the flags ask for (q/k/v biases, q/k norms [head_dim], post-norms, phi3's fused
// attn_qkv [(H + 2 Hkv) * D, E] and ffn_up [2 F, E]).
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// Checks presence (MissingTensor), shape (ShapeMismatch: "tensor 'x': 1024x4096, expected
// 4096x1024") and readability of the type (Unsupported) of every expected tensor.
// display: optional, turns a GGUF name into the text used in messages (the HF reader adds the
// name the file uses).
void validate_tensors(const ModelConfig& config, const std::string& where,
                      const std::function<const TensorDesc*(const std::string&)>& find,
                      const std::function<std::string(const std::string&)>& display = nullptr);

// "4096x1024"; "scalar" for an empty shape.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace snapkv
