// Pieces of a Hugging Face model folder written from the formats' own specs, shared by the io,
// tokenizer and model tests: config.json, GGUF -> HF tensor names, the inverse of llama.cpp's Q/K row
// permutation, safetensors bytes and a Llama-2-style tokenizer.json. Test-only code: no
// validation, no F16 conversion (callers pass the bytes), no sharding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/model_config.h"
#include "core/tokenizer/unicode_util.h"

namespace snapkv::test {

// GGUF -> HF tensor names (llama.cpp gguf-py tensor_mapping.py), written here independently of
// the reader's own table.
inline std::string hf_tensor_name(const std::string& gguf) {
    if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
    if (gguf == "output_norm.weight") return "model.norm.weight";
    if (gguf == "output.weight") return "lm_head.weight";
    static const std::map<std::string, std::string> layer = {{"attn_norm.weight", "input_layernorm.weight"},
                                                             {"attn_q.weight", "self_attn.q_proj.weight"},
                                                             {"attn_k.weight", "self_attn.k_proj.weight"},
                                                             {"attn_v.weight", "self_attn.v_proj.weight"},
                                                             {"attn_output.weight", "self_attn.o_proj.weight"},
                                                             {"attn_q.bias", "self_attn.q_proj.bias"},
                                                             {"attn_k.bias", "self_attn.k_proj.bias"},
                                                             {"attn_v.bias", "self_attn.v_proj.bias"},
                                                             {"ffn_norm.weight", "post_attention_layernorm.weight"},
                                                             {"ffn_gate.weight", "mlp.gate_proj.weight"},
                                                             {"ffn_up.weight", "mlp.up_proj.weight"},
                                                             {"ffn_down.weight", "mlp.down_proj.weight"}};
    const size_t dot = gguf.find('.', 4);
    return "model.layers." + gguf.substr(4, dot - 4) + "." + layer.at(gguf.substr(dot + 1));
}

// The inverse of convert_hf_to_gguf.py's permute(): within each head of hd rows, GGUF row 2j + i
// (adjacent rotated pair) becomes HF row i*hd/2 + j (pair halves hd/2 apart). w: [rows, cols].
inline std::vector<float> to_hf_rows(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t heads) {
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

// config.json for a llama-family model with c's hyperparameters, keys as transformers writes
// them for LlamaConfig / Qwen2Config (model_type "llama" or "qwen2").
inline nlohmann::json hf_config_json(const ModelConfig& c, const std::string& model_type, bool tie_word_embeddings,
                                     const std::string& torch_dtype) {
    return {{"model_type", model_type},
            {"architectures", {model_type == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
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
            {"tie_word_embeddings", tie_word_embeddings},
            {"torch_dtype", torch_dtype}};
}

// One tensor of a safetensors file: its dtype name ("F32", "F16", ...) and its raw bytes.
struct StTensor {  // not snapkv::SafetensorsTensor (the reader's view): bytes to write
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
};

// safetensors layout: u64 little-endian header length, JSON header, then the tensors' bytes.
inline std::vector<uint8_t> safetensors_bytes(const std::vector<StTensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t pos = 0;
    for (const StTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {pos, pos + t.data.size()}}};
        pos += t.data.size();
    }
    const std::string h = header.dump();
    std::vector<uint8_t> out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(uint64_t(h.size()) >> (8 * i)));
    out.insert(out.end(), h.begin(), h.end());
    for (const StTensor& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
    return out;
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
        merge_list.push_back(v.tokens[static_cast<size_t>(m.left)] + " " + v.tokens[static_cast<size_t>(m.right)]);
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

// One entry of tokenizer.json's added_tokens: a special token.
inline nlohmann::json added_token(int32_t id, const std::string& content) {
    nlohmann::json t = nlohmann::json::parse(R"({"single_word": false, "lstrip": false, "rstrip": false,
                             "normalized": false, "special": true})");
    t["id"] = id;
    t["content"] = content;
    return t;
}

// SmolLM2's tokenizer.json layout for a byte-level GGUF vocab; merges alternate between the
// "a b" and the ["a", "b"] spellings so both are read.
inline nlohmann::json byte_level_tokenizer_json(const VocabData& v) {
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < v.tokens.size(); ++i) vocab[v.tokens[i]] = i;
    nlohmann::json merges = nlohmann::json::array();
    for (size_t i = 0; i < v.merges.size(); ++i) {
        const std::string& m = v.merges[i];
        const size_t space = m.find(' ', 1);
        if (i % 2 == 0) merges.push_back(m);
        else merges.push_back(nlohmann::json::array({m.substr(0, space), m.substr(space + 1)}));
    }
    nlohmann::json added = nlohmann::json::array();
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.types[i] == 3) added.push_back(added_token(int32_t(i), v.tokens[i]));
    }
    nlohmann::json tj = nlohmann::json::parse(R"({
        "version": "1.0",
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false}
    })");
    tj["added_tokens"] = added;
    tj["model"]["vocab"] = vocab;
    tj["model"]["merges"] = merges;
    return tj;
}

}  // namespace snapkv::test
