// Hugging Face folder -> ModelFile. config.json keys follow transformers' LlamaConfig /
// MistralConfig / Qwen2Config (with their defaults where a key may be absent); the name mapping and
// the Q/K permutation follow llama.cpp's convert_hf_to_gguf.py (LlamaModel.modify_tensors and
// LlamaModel.permute). The tokenizer files are read by read_tokenizer_json (tokenizer_json.h).
#include "core/io/hf_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/errors.h"
#include "core/io/arch_tensors.h"
#include "core/io/dequant.h"
#include "core/io/tokenizer_json.h"

namespace snapkv {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Kind = FileError::Kind;

json read_json_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileError(Kind::Io, "hf: " + path + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return json::parse(ss.str());
    } catch (const json::exception& e) {
        throw FileError(Kind::BadJson, "hf: " + path + ": not valid JSON: " + e.what());
    }
}

// Typed access to a JSON object; null counts as absent (transformers writes "head_dim": null).
class JsonFields {
public:
    JsonFields(const json& j, std::string where) : m_j(j), m_where(std::move(where)) {}

    const json* get(const std::string& key) const {
        const auto it = m_j.find(key);
        return (it == m_j.end() || it->is_null()) ? nullptr : &*it;
    }
    std::optional<int64_t> opt_int(const std::string& key) const {
        const json* v = get(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_number_integer()) wrong(key, *v, "an integer");
        if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            wrong(key, *v, "an integer below 2^63");
        return v->get<int64_t>();
    }
    int64_t req_int(const std::string& key) const {
        const std::optional<int64_t> v = opt_int(key);
        if (!v) missing(key);
        return *v;
    }
    std::optional<double> opt_float(const std::string& key) const {
        const json* v = get(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_number()) wrong(key, *v, "a number");
        return v->get<double>();
    }
    std::optional<bool> opt_bool(const std::string& key) const {
        const json* v = get(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_boolean()) wrong(key, *v, "true or false");
        return v->get<bool>();
    }
    std::optional<std::string> opt_string(const std::string& key) const {
        const json* v = get(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_string()) wrong(key, *v, "a string");
        return v->get<std::string>();
    }
    [[noreturn]] void missing(const std::string& key) const {
        throw FileError(Kind::BadJson, m_where + "required key '" + key + "' is missing");
    }
    [[noreturn]] void wrong(const std::string& key, const json& v, const char* wanted) const {
        throw FileError(Kind::BadJson, m_where + "key '" + key + "' = " + v.dump().substr(0, 80) +
                                           ": expected " + wanted);
    }

private:
    const json& m_j;
    std::string m_where;
};

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Per-layer suffixes, HF -> GGUF (llama.cpp gguf-py tensor_mapping.py, for llama/qwen2).
const std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

}  // namespace

std::optional<std::string> hf_to_gguf_name(const std::string& hf) {
    if (hf == "model.embed_tokens.weight") return std::string("token_embd.weight");
    if (hf == "model.norm.weight") return std::string("output_norm.weight");
    if (hf == "lm_head.weight") return std::string("output.weight");
    const std::string prefix = "model.layers.";
    if (hf.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
    const size_t dot = hf.find('.', prefix.size());
    if (dot == std::string::npos) return std::nullopt;
    const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
    if (!all_digits(layer) || layer.size() > 6) return std::nullopt;
    const std::string suffix = hf.substr(dot + 1);
    for (const auto& [from, to] : kLayerNames)
        if (suffix == from) return "blk." + std::to_string(std::stoll(layer)) + "." + to;
    return std::nullopt;
}

std::optional<std::string> gguf_to_hf_name(const std::string& gguf) {
    if (gguf == "token_embd.weight") return std::string("model.embed_tokens.weight");
    if (gguf == "output_norm.weight") return std::string("model.norm.weight");
    if (gguf == "output.weight") return std::string("lm_head.weight");
    if (gguf.compare(0, 4, "blk.") != 0) return std::nullopt;
    const size_t dot = gguf.find('.', 4);
    if (dot == std::string::npos) return std::nullopt;
    const std::string layer = gguf.substr(4, dot - 4);
    if (!all_digits(layer)) return std::nullopt;
    const std::string suffix = gguf.substr(dot + 1);
    for (const auto& [from, to] : kLayerNames)
        if (suffix == to) return "model.layers." + layer + "." + from;
    return std::nullopt;
}

HfModel::HfModel(const std::string& dir) : m_dir(dir) {
    const std::string cfg_path = (fs::path(dir) / "config.json").string();
    if (!fs::is_regular_file(cfg_path))
        throw FileError(Kind::Io, "hf: " + dir +
                                      ": config.json not found (a model folder needs config.json, "
                                      "tokenizer.json and model.safetensors or "
                                      "model.safetensors.index.json)");
    read_config();
    open_weights();
    read_tokenizer();

    ConfigKeyNames keys;
    keys.n_layer = "num_hidden_layers";
    keys.n_embd = "hidden_size";
    keys.n_ff = "intermediate_size";
    keys.n_head = "num_attention_heads";
    keys.n_head_kv = "num_key_value_heads";
    keys.head_dim = "head_dim";
    keys.n_rot = "head_dim";
    keys.n_vocab = "vocab_size";
    keys.n_ctx_train = "max_position_embeddings";
    keys.rope_freq_base = "rope_theta";
    keys.rms_eps = "rms_norm_eps";
    keys.rope_scaling = "rope_scaling";
    validate_config(m_config, "hf: " + cfg_path + ": ", keys);
    validate_tensors(
        m_config, "hf: " + m_dir + ": ",
        [this](const std::string& name) -> const TensorDesc* {
            const auto it = m_index.find(name);
            return it == m_index.end() ? nullptr : &m_tensors[it->second];
        },
        [](const std::string& name) {
            const std::optional<std::string> hf = gguf_to_hf_name(name);
            return "'" + name + "'" + (hf ? " ('" + *hf + "')" : std::string());
        });

    // Undo HF's rotate-half row order for llama Q and K (qwen2 keeps it: it uses NeoX RoPE).
    if (m_config.arch == "llama") {
        for (size_t i = 0; i < m_tensors.size(); ++i) {
            const std::string& n = m_tensors[i].name;
            if (n.size() > 14 && n.compare(n.size() - 14, 14, ".attn_q.weight") == 0)
                m_sources[i].permute_groups = m_config.n_head;
            if (n.size() > 14 && n.compare(n.size() - 14, 14, ".attn_k.weight") == 0)
                m_sources[i].permute_groups = m_config.n_head_kv;
        }
    }
}

void HfModel::read_config() {
    const std::string cfg_path = (fs::path(m_dir) / "config.json").string();
    const std::string w = "hf: " + cfg_path + ": ";
    const json j = read_json_file(cfg_path);
    if (!j.is_object()) throw FileError(Kind::BadJson, w + "expected a JSON object");
    const JsonFields f(j, w);
    for (auto it = j.begin(); it != j.end(); ++it) {
        std::string text = it->is_string() ? it->get<std::string>() : it->dump();
        if (text.size() > 80) text = text.substr(0, 77) + "...";
        m_summary.emplace_back(it.key(), text);
    }

    const std::optional<std::string> model_type = f.opt_string("model_type");
    if (!model_type) f.missing("model_type");
    ModelConfig& c = m_config;
    if (*model_type == "llama" || *model_type == "mistral") {
        c.arch = "llama";
    } else if (*model_type == "qwen2") {
        c.arch = "qwen2";
    } else {
        throw FileError(Kind::Unsupported,
                        w + "model_type '" + *model_type +
                            "' is not supported (supported: llama, mistral, qwen2)");
    }
    std::string name = fs::path(m_dir).filename().string();
    if (name.empty()) name = fs::path(m_dir).parent_path().filename().string();
    c.name = name;

    c.n_embd = f.req_int("hidden_size");
    c.n_ff = f.req_int("intermediate_size");
    c.n_layer = f.req_int("num_hidden_layers");
    c.n_head = f.req_int("num_attention_heads");
    c.n_head_kv = f.opt_int("num_key_value_heads").value_or(c.n_head);
    if (const auto hd = f.opt_int("head_dim")) {
        c.head_dim = *hd;
    } else if (c.n_head > 0 && c.n_embd % c.n_head != 0) {
        throw FileError(Kind::BadValue, w + "key 'hidden_size' = " + std::to_string(c.n_embd) +
                                            " is not a multiple of 'num_attention_heads' = " +
                                            std::to_string(c.n_head) + " and 'head_dim' is absent");
    } else {
        c.head_dim = c.n_head > 0 ? c.n_embd / c.n_head : 0;
    }
    c.n_rot = c.head_dim;
    c.n_vocab = f.req_int("vocab_size");
    c.n_ctx_train = f.req_int("max_position_embeddings");
    c.rope_freq_base = static_cast<float>(f.opt_float("rope_theta").value_or(10000.0));
    c.rms_eps =
        static_cast<float>(f.opt_float("rms_norm_eps").value_or(1e-6));  // transformers default
    c.rope_neox = c.arch == "qwen2";
    c.qkv_bias = c.arch == "qwen2";

    if (const auto act = f.opt_string("hidden_act"); act && *act != "silu")
        throw FileError(Kind::Unsupported,
                        w + "hidden_act '" + *act + "' is not supported (supported: silu)");
    if (c.arch == "llama" &&
        (f.opt_bool("attention_bias").value_or(false) || f.opt_bool("mlp_bias").value_or(false)))
        throw FileError(Kind::Unsupported,
                        w + "attention_bias / mlp_bias = true is not supported for llama");

    if (const json* rs = f.get("rope_scaling")) {
        if (!rs->is_object()) f.wrong("rope_scaling", *rs, "an object or null");
        const JsonFields r(*rs, w + "rope_scaling: ");
        std::string type =
            r.opt_string("rope_type").value_or(r.opt_string("type").value_or("default"));
        if (type == "default") {
            // plain RoPE
        } else if (type == "linear" || type == "llama3") {
            c.rope_scaling.type = type;
            const std::optional<double> factor = r.opt_float("factor");
            if (!factor) r.missing("factor");
            c.rope_scaling.factor = static_cast<float>(*factor);
            if (type == "llama3") {
                c.rope_scaling.low_freq_factor =
                    static_cast<float>(r.opt_float("low_freq_factor").value_or(1.0));
                c.rope_scaling.high_freq_factor =
                    static_cast<float>(r.opt_float("high_freq_factor").value_or(4.0));
                c.rope_scaling.original_ctx = r.req_int("original_max_position_embeddings");
            } else {
                c.rope_scaling.original_ctx =
                    r.opt_int("original_max_position_embeddings").value_or(0);
            }
        } else {
            throw FileError(Kind::Unsupported,
                            w + "rope_scaling type '" + type +
                                "' is not supported (supported: linear, llama3)");
        }
    }
    // transformers defaults to false for these models; checked against lm_head.weight later.
    m_tie_word_embeddings = f.opt_bool("tie_word_embeddings").value_or(false);
}

void HfModel::open_weights() {
    const fs::path dir(m_dir);
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    // (HF name, shard) pairs to expose.
    std::vector<std::pair<std::string, const SafetensorsFile*>> entries;
    if (fs::is_regular_file(single)) {
        m_shards.push_back(std::make_unique<SafetensorsFile>(single.string()));
        for (const SafetensorsTensor& t : m_shards[0]->tensors())
            entries.emplace_back(t.name, m_shards[0].get());
    } else if (fs::is_regular_file(index)) {
        m_sharded = true;
        const std::string w = "hf: " + index.string() + ": ";
        const json j = read_json_file(index.string());
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw FileError(Kind::BadJson, w + "expected an object with a 'weight_map' object");
        std::map<std::string, const SafetensorsFile*> opened;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it->is_string())
                throw FileError(Kind::BadJson, w + "weight_map['" + it.key() +
                                                   "'] = " + it->dump().substr(0, 80) +
                                                   ": expected a file name");
            const std::string shard = it->get<std::string>();
            // Shards live in the folder itself: refuse paths that could point elsewhere.
            if (shard.empty() || shard == "." || shard == ".." ||
                shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos)
                throw FileError(Kind::BadValue, w + "weight_map['" + it.key() + "'] = '" + shard +
                                                    "': expected a file name inside the folder");
            auto found = opened.find(shard);
            if (found == opened.end()) {
                const fs::path p = dir / shard;
                if (!fs::is_regular_file(p))
                    throw FileError(Kind::Io, w + "shard '" + shard + "' (holding '" + it.key() +
                                                  "') not found: " + p.string());
                m_shards.push_back(std::make_unique<SafetensorsFile>(p.string()));
                found = opened.emplace(shard, m_shards.back().get()).first;
            }
            if (found->second->find(it.key()) == nullptr)
                throw FileError(Kind::MissingTensor, w + "tensor '" + it.key() +
                                                         "' is listed in shard '" + shard +
                                                         "' but that file does not hold it");
            entries.emplace_back(it.key(), found->second);
        }
    } else if (fs::exists(dir / "pytorch_model.bin") ||
               fs::exists(dir / "pytorch_model.bin.index.json")) {
        throw FileError(Kind::Unsupported,
                        "hf: " + m_dir +
                            ": only pytorch_model.bin weights found; convert them to "
                            "safetensors (or GGUF) first");
    } else {
        throw FileError(Kind::Io, "hf: " + m_dir +
                                      ": neither model.safetensors nor "
                                      "model.safetensors.index.json found");
    }

    std::sort(entries.begin(), entries.end());
    for (const auto& [hf_name, file] : entries) {
        const std::optional<std::string> name = hf_to_gguf_name(hf_name);
        if (!name) continue;  // buffers such as rotary_emb.inv_freq are recomputed, not read
        const SafetensorsTensor* st = file->find(hf_name);
        m_index.emplace(*name, m_tensors.size());
        const uint64_t nbytes = st->end - st->begin;
        m_tensors.push_back(TensorDesc{*name, st->dtype, st->shape, nbytes});
        m_sources.push_back(Source{file, st, 0});
    }

    const bool has_output = m_index.count("output.weight") != 0;
    if (!m_tie_word_embeddings && !has_output)
        throw FileError(Kind::MissingTensor,
                        "hf: " + m_dir +
                            ": tensor 'lm_head.weight' is missing and config.json "
                            "says tie_word_embeddings is false");
    m_config.tied_embeddings = !has_output;
}

void HfModel::read_tokenizer() {
    const fs::path dir(m_dir);
    const fs::path tok = dir / "tokenizer.json";
    if (!fs::is_regular_file(tok))
        throw FileError(Kind::Io, "hf: " + m_dir +
                                      ": tokenizer.json not found (only fast-tokenizer folders are "
                                      "supported)");
    const fs::path tok_cfg = dir / "tokenizer_config.json";
    m_vocab = read_tokenizer_json(tok.string(),
                                  fs::is_regular_file(tok_cfg) ? tok_cfg.string() : std::string());
    const int64_t n_tokens = static_cast<int64_t>(m_vocab.tokens.size());
    if (n_tokens > m_config.n_vocab)
        throw FileError(Kind::BadValue, "hf: " + m_dir + ": tokenizer.json has " +
                                            std::to_string(n_tokens) +
                                            " tokens, more than config.json vocab_size " +
                                            std::to_string(m_config.n_vocab));

    auto add_eog = [&](int64_t id) {
        if (id >= 0 && id < n_tokens &&
            std::find(m_vocab.eog_ids.begin(), m_vocab.eog_ids.end(), id) == m_vocab.eog_ids.end())
            m_vocab.eog_ids.push_back(static_cast<int32_t>(id));
    };
    add_eog(m_vocab.eos_id);
    // generation_config.json's eos_token_id (an id or a list) lists every id that ends a reply,
    // e.g. Llama 3 Instruct's <|eot_id|> and <|eom_id|>.
    const fs::path gen = dir / "generation_config.json";
    if (fs::is_regular_file(gen)) {
        const json j = read_json_file(gen.string());
        const auto it = j.is_object() ? j.find("eos_token_id") : j.end();
        if (j.is_object() && it != j.end()) {
            if (it->is_number_integer()) add_eog(it->get<int64_t>());
            if (it->is_array())
                for (const json& id : *it)
                    if (id.is_number_integer()) add_eog(id.get<int64_t>());
        }
    }
}

std::string HfModel::format() const {
    if (!m_sharded) return "safetensors (1 file)";
    return "safetensors (" + std::to_string(m_shards.size()) + " shards)";
}

bool HfModel::has_tensor(const std::string& name) const { return m_index.count(name) != 0; }

const TensorDesc& HfModel::tensor(const std::string& name) const {
    const auto it = m_index.find(name);
    if (it == m_index.end())
        throw FileError(Kind::MissingTensor, "hf: " + m_dir + ": no tensor named '" + name + "'");
    return m_tensors[it->second];
}

void HfModel::read_f32(const std::string& name, float* dst) const {
    const auto it = m_index.find(name);
    if (it == m_index.end())
        throw FileError(Kind::MissingTensor, "hf: " + m_dir + ": no tensor named '" + name + "'");
    const TensorDesc& desc = m_tensors[it->second];
    const Source& src = m_sources[it->second];
    const GgmlType* type = ggml_type_by_name(desc.type);
    if (type == nullptr || type->dequant_row == nullptr ||
        (desc.type != "F32" && desc.type != "F16" && desc.type != "BF16"))
        throw FileError(Kind::Unsupported,
                        "safetensors: " + src.file->path() + ": tensor '" + src.tensor->name +
                            "' has dtype " + desc.type +
                            ", which cannot be read (supported: F32, F16, BF16)");
    const uint8_t* bytes = src.file->data(*src.tensor);
    const int64_t numel = src.tensor->numel;
    if (numel == 0) return;
    const int64_t rows = desc.shape.size() >= 2 ? desc.shape[0] : 1;
    const int64_t row_len = numel / rows;
    const size_t row_bytes = static_cast<size_t>(row_len) * type->block_bytes;
    const int64_t groups = src.permute_groups;
    if (groups == 0) {
        dequantize_rows(*type, bytes, dst, rows, row_len);
        return;
    }
    // convert_hf_to_gguf.py permute(): w.reshape(n_head, 2, rows/n_head/2, in).swapaxes(1, 2).
    // Within a head of hd rows, GGUF row 2*j + i is HF row i*hd/2 + j (i in {0, 1}): HF keeps the
    // two halves of each rotated pair hd/2 rows apart, GGUF puts them next to each other.
    const int64_t hd = rows / groups;
    parallel_rows(rows, row_len, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t head = r / hd, within = r % hd;
            const int64_t j = within / 2, i = within % 2;
            const int64_t r_src = head * hd + i * (hd / 2) + j;
            type->dequant_row(bytes + static_cast<size_t>(r_src) * row_bytes, dst + r * row_len,
                              row_len);
        }
    });
}

std::vector<std::pair<std::string, std::string>> HfModel::metadata_summary() const {
    return m_summary;
}

}  // namespace snapkv
