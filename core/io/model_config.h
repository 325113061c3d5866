// Plain value types describing a loaded model: hyperparameters and tokenizer data, filled by the
// GGUF or Hugging Face readers. No LibTorch, no Qt: the GUI and CLI may include this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace snapkv {

struct RopeScaling {
    std::string type = "none";   // none | linear | llama3 | yarn (yarn: refused at load for now)
    float factor = 1.0f;
    int64_t original_ctx = 0;    // llama3 / yarn: original_max_position_embeddings
    float low_freq_factor = 1.0f;   // llama3
    float high_freq_factor = 4.0f;  // llama3
};

struct ModelConfig {
    std::string arch;            // "llama" | "qwen2"
    std::string name;            // general.name or the folder name
    int64_t n_layer = 0;
    int64_t n_embd = 0;
    int64_t n_ff = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;        // n_embd / n_head unless the file says otherwise
    int64_t n_rot = 0;           // rotated dims per head (rope.dimension_count), normally head_dim
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    float rope_freq_base = 10000.0f;
    RopeScaling rope_scaling;
    bool rope_neox = false;      // NeoX (rotate-half) layout: qwen2. llama uses adjacent pairs.
    float rms_eps = 1e-5f;
    bool qkv_bias = false;       // qwen2
    bool tied_embeddings = false;  // no output.weight: logits use token_embd
};

// Tokenizer data, as GGUF stores it (tokenizer.ggml.*) or as converted from tokenizer.json.
struct VocabData {
    std::string model;           // "llama" (SentencePiece-style BPE) | "gpt2" (byte-level BPE)
    std::string pre;             // tokenizer.ggml.pre: "default", "smollm", "llama-bpe", "qwen2", ...
    std::vector<std::string> tokens;
    std::vector<float> scores;   // may be empty for gpt2
    std::vector<int32_t> types;  // llama.cpp token types: 1 normal, 2 unknown, 3 control,
                                 // 4 user-defined, 5 unused, 6 byte; may be empty
    std::vector<std::string> merges;  // "a b" pairs, rank = index (gpt2)
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t unk_id = -1;
    int32_t pad_id = -1;
    std::vector<int32_t> eog_ids;     // end-of-generation ids, eos included (e.g. </s>, <|im_end|>, <|eot_id|>)
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = true;     // SentencePiece: prepend one space to the first fragment
    std::string chat_template;        // Jinja text from the file, may be empty
};

}  // namespace snapkv
