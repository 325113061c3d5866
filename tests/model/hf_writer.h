// Writes a Hugging Face model folder (config.json, model.safetensors, tokenizer.json) from a GGUF
// ModelFile, the way convert_hf_to_gguf.py would have read it: HF tensor names, Q/K rows in HF's
// rotate-half order, F32 safetensors written from the format spec, a Llama-2-style tokenizer.json.
// For the model tests only: no F16, no shards, no validation (tests/io covers the reader itself).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/io/model_file.h"
#include "core/tokenizer/unicode_util.h"
#include "io/gguf_test_writer.h"

namespace snapkv::test::hf {

// A folder under the system temp dir, removed with the object.
class ScratchFolder {
public:
    ScratchFolder() {
        static std::atomic<int> counter{0};
        m_path = std::filesystem::temp_directory_path() /
                 ("snapkv_model_hf_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~ScratchFolder() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;
    std::string path() const { return m_path.string(); }

private:
    std::filesystem::path m_path;
};

struct FolderOptions {
    std::string model_type = "llama";   // "llama" or "qwen2"
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

// GGUF -> HF tensor names (llama.cpp gguf-py tensor_mapping.py), written here independently of
// the reader's own table.
inline std::string hf_tensor_name(const std::string& gguf) {
    if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
    if (gguf == "output_norm.weight") return "model.norm.weight";
    if (gguf == "output.weight") return "lm_head.weight";
    static const std::map<std::string, std::string> layer = {
        {"attn_norm.weight", "input_layernorm.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
        {"ffn_norm.weight", "post_attention_layernorm.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"}};
    const size_t dot = gguf.find('.', 4);
    return "model.layers." + gguf.substr(4, dot - 4) + "." + layer.at(gguf.substr(dot + 1));
}

// The inverse of convert_hf_to_gguf.py's permute(): within each head of hd rows, GGUF row 2j + i
// (adjacent rotated pair) becomes HF row i*hd/2 + j (pair halves hd/2 apart). w: [rows, cols].
inline std::vector<float> to_hf_rows(const std::vector<float>& w, int64_t rows, int64_t cols,
                                     int64_t heads) {
    std::vector<float> out(w.size());
    const int64_t hd = rows / heads;
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < hd / 2; ++j)
            for (int64_t i = 0; i < 2; ++i)
                std::memcpy(&out[static_cast<size_t>((h * hd + i * (hd / 2) + j) * cols)],
                            &w[static_cast<size_t>((h * hd + 2 * j + i) * cols)],
                            static_cast<size_t>(cols) * sizeof(float));
    return out;
}

struct F32Tensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values;
};

// safetensors: u64 little-endian header length, JSON header, then the tensors' bytes.
inline std::vector<uint8_t> safetensors_bytes(const std::vector<F32Tensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t pos = 0;
    for (const F32Tensor& t : tensors) {
        const uint64_t n = t.values.size() * sizeof(float);
        header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {pos, pos + n}}};
        pos += n;
    }
    const std::string h = header.dump();
    ByteWriter w;
    w.put<uint64_t>(h.size());
    w.b.insert(w.b.end(), h.begin(), h.end());
    for (const F32Tensor& t : tensors) w.bytes(f32_bytes(t.values));
    return w.b;
}

// A Llama-2-style tokenizer.json for a SentencePiece GGUF vocab, as HF's LlamaConverter writes
// one. Merges as HF's SentencePieceExtractor makes them: every split of a normal token into two
// vocab pieces, ordered by the token's score, highest first.
inline nlohmann::json spm_tokenizer_json(const VocabData& v) {
    using nlohmann::json;
    std::unordered_map<std::string, int32_t> ids;
    json vocab = json::object();
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        ids[v.tokens[i]] = static_cast<int32_t>(i);
        vocab[v.tokens[i]] = i;
    }
    struct Merge {
        float score;
        int32_t token, left, right;
    };
    std::vector<Merge> merges;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.types[i] != 1) continue;  // normal tokens only
        const std::string& t = v.tokens[i];
        for (size_t cut = utf8_char_len(t[0]); cut < t.size(); cut += utf8_char_len(t[cut])) {
            const auto l = ids.find(t.substr(0, cut)), r = ids.find(t.substr(cut));
            if (l != ids.end() && r != ids.end())
                merges.push_back({v.scores[i], static_cast<int32_t>(i), l->second, r->second});
        }
    }
    std::sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        if (a.score != b.score) return a.score > b.score;
        return std::tie(a.token, a.left, a.right) < std::tie(b.token, b.left, b.right);
    });
    json merge_list = json::array();
    for (const Merge& m : merges)
        merge_list.push_back(v.tokens[static_cast<size_t>(m.left)] + " " +
                             v.tokens[static_cast<size_t>(m.right)]);
    json added = json::array();
    for (size_t i = 0; i < v.tokens.size(); ++i)
        if (v.types[i] == 2 || v.types[i] == 3)  // unknown, control
            added.push_back({{"id", i},
                             {"content", v.tokens[i]},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", true}});
    json tj = json::parse(R"({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": null,
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true,
                  "byte_fallback": true}
    })");
    tj["added_tokens"] = added;
    tj["model"]["vocab"] = vocab;
    tj["model"]["merges"] = merge_list;
    return tj;
}

// Writes `src` (a llama GGUF with a SentencePiece vocab) into `dir` as an HF folder. Q and K rows
// are always written in HF order: the reader undoes that for llama and keeps it for qwen2, whose
// NeoX (rotate-half) RoPE expects exactly that order.
inline void write_folder(const ModelFile& src, const std::string& dir, const FolderOptions& o = {}) {
    using nlohmann::json;
    const ModelConfig& c = src.config();
    const json cfg = {
        {"model_type", o.model_type},
        {"architectures", {o.model_type == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
        {"hidden_size", c.n_embd},
        {"intermediate_size", c.n_ff},
        {"num_hidden_layers", c.n_layer},
        {"num_attention_heads", c.n_head},
        {"num_key_value_heads", c.n_head_kv},
        {"hidden_act", "silu"},
        {"rms_norm_eps", c.rms_eps},
        {"rope_theta", c.rope_freq_base},
        {"rope_scaling", nullptr},
        {"max_position_embeddings", c.n_ctx_train},
        {"vocab_size", c.n_vocab},
        {"tie_word_embeddings", o.tie_embeddings},
        {"torch_dtype", "float32"}};
    write_text(dir + "/config.json", cfg.dump(2));
    write_text(dir + "/tokenizer.json", spm_tokenizer_json(src.vocab()).dump());

    auto read = [&](const std::string& name) {
        int64_t n = 1;
        for (int64_t d : src.tensor(name).shape) n *= d;
        std::vector<float> v(static_cast<size_t>(n));
        src.read_f32(name, v.data());
        return v;
    };
    std::vector<F32Tensor> all;
    for (const TensorDesc& t : src.tensors()) {
        if (t.name == "output.weight" && o.tie_embeddings) {
            if (read(t.name) != read("token_embd.weight"))
                throw std::invalid_argument(
                    "hf_writer: output.weight differs from token_embd.weight; cannot tie them");
            continue;  // tied: HF's lm_head is the embedding
        }
        std::vector<float> v = read(t.name);
        const bool is_q = t.name.find(".attn_q.weight") != std::string::npos;
        const bool is_k = t.name.find(".attn_k.weight") != std::string::npos;
        if (is_q || is_k) v = to_hf_rows(v, t.shape[0], t.shape[1], is_q ? c.n_head : c.n_head_kv);
        all.push_back({hf_tensor_name(t.name), t.shape, std::move(v)});
    }
    if (o.model_type == "qwen2") {
        const std::pair<const char*, const std::vector<float>*> biases[] = {
            {"q", &o.q_bias}, {"k", &o.k_bias}, {"v", &o.v_bias}};
        for (int64_t il = 0; il < c.n_layer; ++il)
            for (const auto& [p, given] : biases) {
                const int64_t n = (std::strcmp(p, "q") == 0 ? c.n_head : c.n_head_kv) * c.head_dim;
                std::vector<float> b = given->empty() ? std::vector<float>(static_cast<size_t>(n), 0.0f)
                                                      : *given;
                if (static_cast<int64_t>(b.size()) != n)
                    throw std::invalid_argument(std::string("hf_writer: ") + p + "_bias has " +
                                                std::to_string(b.size()) + " values, expected " +
                                                std::to_string(n));
                all.push_back({"model.layers." + std::to_string(il) + ".self_attn." + p + "_proj.bias",
                               {n},
                               std::move(b)});
            }
    }
    const std::vector<uint8_t> bytes = safetensors_bytes(all);
    write_bytes(dir + "/model.safetensors", bytes.data(), bytes.size());
}

}  // namespace snapkv::test::hf
