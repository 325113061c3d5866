// What a supported architecture (llama, qwen2) needs from a model file, whatever its format:
// sanity checks on the hyperparameters and the list of tensors with their expected shapes (torch
// order, GGUF names). Shared by the GGUF and Hugging Face readers so both refuse the same models.
// Does not read files and does not know about formats beyond the key names it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/io/model_config.h"
#include "core/io/model_file.h"

namespace snapkv {

// "llama", "qwen2": the values ModelConfig::arch may take.
const std::vector<std::string>& supported_archs();
std::string supported_archs_text();  // "llama, qwen2"

// How the file names each hyperparameter, so that messages point at the right key.
struct ConfigKeyNames {
    std::string n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, n_vocab, n_ctx_train,
        rope_freq_base, rms_eps, rope_scaling;
};

// Throws FileError(BadValue) naming the key, the value and what is allowed. where: message prefix
// ("gguf: <path>: ").
void validate_config(const ModelConfig& config, const std::string& where,
                     const ConfigKeyNames& keys);

struct ExpectedTensor {
    std::string name;            // GGUF name
    std::vector<int64_t> shape;  // torch order
    bool required = true;
};

// Every tensor the architecture reads: embeddings, output norm, optional output and
// rope_freqs (llama3 frequency factors, [n_rot/2]), and per layer the attention and FFN weights
// (plus q/k/v biases for qwen2).
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
