// Hugging Face config.json -> ModelConfig for the supported model types (llama, mistral, qwen2,
// qwen3, gemma2, gemma3_text, gemma3 (its text_config), phi3), in both the pre-5.0 form
// (rope_theta, rope_scaling, rope_local_base_freq, sliding_window_pattern) and transformers 5's
// (rope_parameters, layer_types), with transformers' defaults where a key may be absent. Also the
// HF -> GGUF tensor-name map, which depends on the architecture (gemma's post_attention_layernorm
// is a post-norm, llama's is the FFN norm). Reads no files and no tensors.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/io/arch_tensors.h"
#include "core/io/model_config.h"

namespace snapkv {

struct HfConfig {
    ModelConfig config;                // validated later against the tensors (arch_tensors)
    bool tie_word_embeddings = false;  // as config.json says, or the model type's default
    std::string model_type;            // as written ("mistral", "gemma3_text", ...)
};

// config.json's name for each hyperparameter, for messages (keys.n_rot is "head_dim": the rotated
// part follows from it and partial_rotary_factor).
ConfigKeyNames hf_key_names();

// j: the parsed config.json; where: message prefix ("hf: <path>: "). Throws FileError naming the
// key, its value and what is allowed; Unsupported for a model type, activation or RoPE scaling we
// do not implement.
HfConfig read_hf_config(const nlohmann::json& j, const std::string& where);

// "model.layers.3.self_attn.k_proj.weight" -> "blk.3.attn_k.weight" for architecture `arch`;
// nullopt for names the architecture does not use (rotary_emb.inv_freq, vision tower, ...).
// Multimodal Gemma 3 checkpoints keep the text model under "language_model.model." (or
// "model.language_model."): those prefixes map like "model.".
std::optional<std::string> hf_to_gguf_name(const std::string& hf_name, const std::string& arch);
// The inverse, for messages: "blk.3.attn_k.weight" -> "model.layers.3.self_attn.k_proj.weight".
std::optional<std::string> gguf_to_hf_name(const std::string& gguf_name, const std::string& arch);

}  // namespace snapkv
