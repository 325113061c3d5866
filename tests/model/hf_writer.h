// Writes a Hugging Face model folder (config.json, model.safetensors, tokenizer.json) from a GGUF
// ModelFile, the way convert_hf_to_gguf.py would have read it: HF tensor names, Q/K rows in HF's
// rotate-half order, F32 safetensors, a Llama-2-style tokenizer.json (tests/common/hf_format.h).
// For the model tests only: no F16, no shards, no validation (tests/io covers the reader itself).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/model_file.h"
#include "io/gguf_test_writer.h"
#include "tests/common/hf_format.h"
#include "tests/common/temp_dir.h"

namespace snapkv::test::hf {

// A folder under the system temp dir, removed with the object.
using ScratchFolder = TempDir;

struct FolderOptions {
    std::string model_type = "llama";  // "llama" or "qwen2"
    // Leave out lm_head.weight and say tie_word_embeddings: true. Only allowed when the GGUF has
    // no output.weight or one equal to token_embd.weight (stories260K's llama2.c export is tied).
    bool tie_embeddings = true;
    // qwen2 only: q/k/v_proj biases for every layer ([H*D], [Hkv*D], [Hkv*D] in HF row order);
    // an empty vector writes zeros.
    std::vector<float> q_bias, k_bias, v_bias;
};

inline void write_bytes(const std::string& path, const void* data, size_t n) {
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!out.good()) throw std::runtime_error("hf_writer: cannot write " + path);
}

inline void write_text(const std::string& path, const std::string& text) {
    write_bytes(path, text.data(), text.size());
}

// Writes `src` (a llama GGUF with a SentencePiece vocab) into `dir` as an HF folder. Q and K rows
// are always written in HF order: the reader undoes that for llama and keeps it for qwen2, whose
// NeoX (rotate-half) RoPE expects exactly that order.
inline void write_folder(const ModelFile& src, const std::string& dir, const FolderOptions& o = {}) {
    using nlohmann::json;
    const ModelConfig& c = src.config();
    const json cfg = hf_config_json(c, o.model_type, o.tie_embeddings, "float32");
    write_text(dir + "/config.json", cfg.dump(2));
    write_text(dir + "/tokenizer.json", spm_tokenizer_json(src.vocab()).dump());

    auto read = [&](const std::string& name) {
        int64_t n = 1;
        for (int64_t d : src.tensor(name).shape) n *= d;
        std::vector<float> v(static_cast<size_t>(n));
        src.read_f32(name, v.data());
        return v;
    };
    std::vector<StTensor> all;
    for (const TensorDesc& t : src.tensors()) {
        if (t.name == "output.weight" && o.tie_embeddings) {
            if (read(t.name) != read("token_embd.weight"))
                throw std::invalid_argument("hf_writer: output.weight differs from token_embd.weight; cannot tie them");
            continue;  // tied: HF's lm_head is the embedding
        }
        std::vector<float> v = read(t.name);
        const bool is_q = t.name.find(".attn_q.weight") != std::string::npos;
        const bool is_k = t.name.find(".attn_k.weight") != std::string::npos;
        if (is_q || is_k) v = to_hf_rows(v, t.shape[0], t.shape[1], is_q ? c.n_head : c.n_head_kv);
        all.push_back({hf_tensor_name(t.name), "F32", t.shape, f32_bytes(v)});
    }
    if (o.model_type == "qwen2") {
        const std::pair<const char*, const std::vector<float>*> biases[] = {
            {"q", &o.q_bias}, {"k", &o.k_bias}, {"v", &o.v_bias}};
        for (int64_t il = 0; il < c.n_layer; ++il)
            for (const auto& [p, given] : biases) {
                const int64_t n = (std::strcmp(p, "q") == 0 ? c.n_head : c.n_head_kv) * c.head_dim;
                std::vector<float> b = given->empty() ? std::vector<float>(static_cast<size_t>(n), 0.0f) : *given;
                if (static_cast<int64_t>(b.size()) != n)
                    throw std::invalid_argument(std::string("hf_writer: ") + p + "_bias has " +
                                                std::to_string(b.size()) + " values, expected " + std::to_string(n));
                all.push_back(
                    {"model.layers." + std::to_string(il) + ".self_attn." + p + "_proj.bias", "F32", {n}, f32_bytes(b)});
            }
    }
    const std::vector<uint8_t> bytes = safetensors_bytes(all);
    write_bytes(dir + "/model.safetensors", bytes.data(), bytes.size());
}

}  // namespace snapkv::test::hf
