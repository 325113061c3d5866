// GGUF -> ModelConfig / VocabData mapping, following the key names llama.cpp writes
// (gguf-py/gguf/constants.py) and llama.cpp's defaults when a key is absent (src/llama-model.cpp,
// src/llama-vocab.cpp). Validation of the numbers and tensor shapes lives in arch_tensors so the
// Hugging Face reader applies the same rules.
#include "core/io/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/io/arch_tensors.h"
#include "core/io/dequant.h"
#include "core/io/tensor_checks.h"

namespace snapkv {

namespace {

using Kind = FileError::Kind;

// Tokens that end a turn in the common chat formats (ChatML, Llama 3, Gemma, Phi-3, SentencePiece
// EOS); llama.cpp's vocab loader marks the same texts as end-of-generation.
const char* const kEogTexts[] = {"<|im_end|>", "<|eot_id|>",    "<|end_of_text|>", "<|endoftext|>",
                                 "</s>",       "<end_of_turn>", "<|end|>"};

// The GGUF keys of each hyperparameter, for messages.
ConfigKeyNames key_names(const std::string& arch) {
    ConfigKeyNames keys;
    keys.n_layer = arch + ".block_count";
    keys.n_embd = arch + ".embedding_length";
    keys.n_ff = arch + ".feed_forward_length";
    keys.n_head = arch + ".attention.head_count";
    keys.n_head_kv = arch + ".attention.head_count_kv";
    keys.head_dim = arch + ".attention.key_length";
    keys.n_rot = arch + ".rope.dimension_count";
    keys.n_vocab = arch + ".vocab_size";
    keys.n_ctx_train = arch + ".context_length";
    keys.rope_freq_base = arch + ".rope.freq_base";
    keys.rms_eps = arch + ".attention.layer_norm_rms_epsilon";
    keys.rope_scaling = arch + ".rope.scaling.type";
    keys.sliding_window = arch + ".attention.sliding_window";
    keys.attn_scale = arch + ".attention.scale";
    keys.attn_softcap = arch + ".attn_logit_softcapping";
    keys.final_softcap = arch + ".final_logit_softcapping";
    return keys;
}

}  // namespace

GgufModel::GgufModel(const std::string& path) : m_reader(path) {
    m_tensors.reserve(m_reader.tensors().size());
    for (const GgufTensorInfo& t : m_reader.tensors()) {
        m_index.emplace(t.name, m_tensors.size());
        m_tensors.push_back(TensorDesc{t.name, t.type->name, t.shape, t.nbytes});
    }
    read_config();
    read_vocab();

    const std::string arch = m_config.arch;
    if (const auto n = m_reader.get_int(arch + ".vocab_size")) {
        m_config.n_vocab = *n;
    } else {
        m_config.n_vocab = static_cast<int64_t>(m_vocab.tokens.size());
    }
    if (static_cast<int64_t>(m_vocab.tokens.size()) > m_config.n_vocab)
        throw FileError(Kind::BadValue, m_reader.where() + "key '" + arch + ".vocab_size' = " +
                                            std::to_string(m_config.n_vocab) + ": smaller than the " +
                                            std::to_string(m_vocab.tokens.size()) + " tokens in tokenizer.ggml.tokens");

    const ConfigKeyNames keys = key_names(arch);
    validate_config(m_config, m_reader.where(), keys);
    validate_tensors(m_config, m_reader.where(), [this](const std::string& name) {
        const auto it = m_index.find(name);
        return it == m_index.end() ? nullptr : &m_tensors[it->second];
    });
    std::vector<std::string> names;
    for (const TensorDesc& t : m_tensors) names.push_back(t.name);
    check_layer_blocks(m_config.n_layer, keys.n_layer, m_reader.where(), names, gguf_block_index);
}

void GgufModel::read_config() {
    const GgufReader& r = m_reader;
    const std::string w = r.where();
    auto missing = [&](const std::string& key) -> FileError {
        return FileError(Kind::BadValue, w + "required key '" + key + "' is missing");
    };
    // Some converters write per-layer arrays (feed_forward_length, head_count); we only support
    // models where every layer agrees.
    auto uniform_int = [&](const std::string& key) -> std::optional<int64_t> {
        const GgufValue* v = r.find(key);
        if (v == nullptr || v->type != GgufValueType::Array) return r.get_int(key);
        // One entry per layer: refuse a count no model has before decoding it (8 bytes each).
        if (v->count > 4096)
            throw FileError(Kind::BadValue, w + "key '" + key + "' has " + std::to_string(v->count) +
                                                " entries, expected one per layer (at most 4096)");
        const std::vector<int64_t> all = *r.get_int_array(key);
        if (all.empty()) throw FileError(Kind::BadValue, w + "key '" + key + "' is an empty array");
        if (std::any_of(all.begin(), all.end(), [&](int64_t x) { return x != all[0]; }))
            throw FileError(Kind::Unsupported, w + "key '" + key + "' varies per layer, which is not supported");
        return all[0];
    };

    const std::optional<std::string> arch = r.get_string("general.architecture");
    if (!arch) throw missing("general.architecture");
    const auto& archs = supported_archs();
    if (std::find(archs.begin(), archs.end(), *arch) == archs.end())
        throw FileError(Kind::Unsupported, w + "architecture '" + clip_text(*arch) +
                                               "' is not supported (supported: " + supported_archs_text() + ")");
    ModelConfig& c = m_config;
    c.arch = *arch;
    const std::string a = c.arch + ".";
    c.name = r.get_string("general.name").value_or(std::filesystem::path(r.path()).stem().string());

    auto required = [&](const std::string& key, bool per_layer) {
        const std::optional<int64_t> v = per_layer ? uniform_int(key) : r.get_int(key);
        if (!v) throw missing(key);
        return *v;
    };
    c.n_layer = required(a + "block_count", false);
    c.n_embd = required(a + "embedding_length", false);
    c.n_ff = required(a + "feed_forward_length", true);
    c.n_head = required(a + "attention.head_count", true);
    c.n_head_kv = uniform_int(a + "attention.head_count_kv").value_or(c.n_head);
    if (const auto hd = r.get_int(a + "attention.key_length")) {
        c.head_dim = *hd;
    } else if (c.n_head > 0 && c.n_embd % c.n_head != 0) {
        throw FileError(Kind::BadValue, w + "key '" + a + "embedding_length' = " + std::to_string(c.n_embd) +
                                            " is not a multiple of '" + a +
                                            "attention.head_count' = " + std::to_string(c.n_head) + " and '" + a +
                                            "attention.key_length' is absent");
    } else {
        c.head_dim = c.n_head > 0 ? c.n_embd / c.n_head : 0;
    }
    if (const auto vd = r.get_int(a + "attention.value_length"); vd && *vd != c.head_dim)
        throw FileError(Kind::Unsupported, w + "key '" + a + "attention.value_length' = " + std::to_string(*vd) +
                                               " differs from key_length " + std::to_string(c.head_dim) +
                                               ", which is not supported");
    c.n_rot = r.get_int(a + "rope.dimension_count").value_or(c.head_dim);
    c.n_ctx_train = required(a + "context_length", false);
    // Before anything below sizes a per-layer table from these counts.
    validate_counts(c, w, key_names(c.arch));
    c.rope_freq_base = static_cast<float>(r.get_float(a + "rope.freq_base").value_or(10000.0));
    const std::optional<double> eps = r.get_float(a + "attention.layer_norm_rms_epsilon");
    if (!eps) throw missing(a + "attention.layer_norm_rms_epsilon");
    c.rms_eps = static_cast<float>(*eps);

    // RoPE scaling: llama.cpp writes rope.scaling.type none|linear|yarn (+ factor); older files
    // only rope.scale_linear. Llama 3 frequency scaling is not a key but the rope_freqs.weight
    // tensor, which is listed like any other tensor for the model code to apply.
    std::string scaling = r.get_string(a + "rope.scaling.type").value_or("none");
    double factor = r.get_float(a + "rope.scaling.factor").value_or(0.0);
    if (const auto legacy = r.get_float(a + "rope.scale_linear"); legacy && scaling == "none" && *legacy != 1.0) {
        scaling = "linear";
        factor = *legacy;
    }
    if (scaling != "none" && scaling != "linear")
        throw FileError(Kind::Unsupported, w + "key '" + a + "rope.scaling.type' = '" + clip_text(scaling) +
                                               "' is not supported (supported: none, linear)");
    c.rope_scaling.type = scaling;
    c.rope_scaling.factor = static_cast<float>(factor == 0.0 ? 1.0 : factor);
    c.rope_scaling.original_ctx = r.get_int(a + "rope.scaling.original_context_length").value_or(0);

    c.tied_embeddings = m_index.count("output.weight") == 0;
    set_arch_features(c);
    read_arch_settings();
}

// What llama.cpp's load_hparams reads per architecture beyond the common keys, with its defaults:
// attention scale and soft-caps (gemma), the sliding window and which layers use it, the local
// RoPE base (gemma3) and Phi-3's longrope factors (tensors, not keys).
void GgufModel::read_arch_settings() {
    const GgufReader& r = m_reader;
    const std::string w = r.where();
    ModelConfig& c = m_config;
    const std::string a = c.arch + ".";
    const bool gemma = c.arch == "gemma2" || c.arch == "gemma3";
    if (gemma) {
        // llama.cpp derives the scale from the model size (Gemma 2 27B / Gemma 3 27B use
        // n_embd / n_head, the others head_dim); the attention.scale key, when a converter wrote
        // one, carries transformers' query_pre_attn_scalar ** -0.5 and wins.
        const bool is_27b = (c.arch == "gemma2" && c.n_layer == 46) || (c.arch == "gemma3" && c.n_layer == 62);
        const double d = is_27b && c.n_head > 0 ? double(c.n_embd / c.n_head) : double(c.head_dim);
        c.attn_scale = static_cast<float>(1.0 / std::sqrt(d));
        c.attn_softcap = c.arch == "gemma2" ? 50.0f : 0.0f;  // llama_hparams defaults
        c.final_softcap = c.arch == "gemma2" ? 30.0f : 0.0f;
        if (auto v = r.get_float(a + "attn_logit_softcapping"); v && c.arch == "gemma2")
            c.attn_softcap = static_cast<float>(*v);
        if (auto v = r.get_float(a + "final_logit_softcapping")) c.final_softcap = static_cast<float>(*v);
    }
    if (auto v = r.get_float(a + "attention.scale")) c.attn_scale = static_cast<float>(*v);

    // Sliding window: gemma2 defaults to 4096 like llama.cpp; elsewhere only when the key is set.
    // (llama.cpp ignores the key for llama/qwen and disables it for phi3; transformers applies the
    // config's window, and we follow transformers.)
    c.sliding_window = r.get_int(a + "attention.sliding_window").value_or(c.arch == "gemma2" ? 4096 : 0);
    std::vector<bool> sliding;
    const std::string pkey = a + "attention.sliding_window_pattern";
    if (const GgufValue* p = r.find(pkey); p != nullptr && p->type == GgufValueType::Array) {
        if (p->count != static_cast<uint64_t>(c.n_layer))  // checked before it is decoded
            throw FileError(Kind::BadValue, w + "key '" + pkey + "' has " + std::to_string(p->count) +
                                                " entries, expected one per layer (" + std::to_string(c.n_layer) + ")");
        const std::vector<int64_t> flags = *r.get_int_array(pkey);
        for (int64_t f : flags) sliding.push_back(f != 0);
    } else {
        const int64_t period = r.get_int(pkey).value_or(default_swa_period(c.arch));
        if (period < 0 || period > c.n_layer + 1)
            throw FileError(Kind::BadValue, w + "key '" + pkey + "' = " + std::to_string(period) + ": allowed 0 to " +
                                                std::to_string(c.n_layer + 1));
        sliding = swa_pattern(c.n_layer, period);
    }
    // Gemma 3's local layers: base 10000 (llama.cpp's rope_freq_base_train_swa), no scaling.
    const float local_base = c.arch == "gemma3"
                                 ? static_cast<float>(r.get_float(a + "rope.freq_base_swa").value_or(10000.0))
                                 : 0.0f;
    set_layers(c, sliding, local_base);

    // Llama 3 frequency scaling: llama.cpp's converter stores the per-frequency divisors as the
    // rope_freqs.weight tensor instead of the rope_scaling keys.
    if (has_tensor("rope_freqs.weight")) {
        const TensorDesc& d = tensor("rope_freqs.weight");
        if (d.shape.size() != 1 || d.shape[0] != c.n_rot / 2)
            throw FileError(Kind::ShapeMismatch, w + "tensor 'rope_freqs.weight': " + shape_text(d.shape) +
                                                     ", expected " + std::to_string(c.n_rot / 2));
        if (c.rope_scaling.type != "none")
            throw FileError(Kind::Unsupported, w + "tensor 'rope_freqs.weight' together with RoPE scaling '" +
                                                   c.rope_scaling.type + "' is not supported");
        c.rope_scaling.type = "llama3";
        c.rope_scaling.freq_factors.resize(static_cast<size_t>(d.shape[0]));
        read_f32("rope_freqs.weight", c.rope_scaling.freq_factors.data());
    }

    // Phi-3 longrope: llama.cpp's converter writes the factors as rope_factors_{short,long}
    // tensors and the attention factor as a key (it writes no scaling type).
    if (has_tensor("rope_factors_short.weight") || has_tensor("rope_factors_long.weight")) {
        RopeScaling& rs = c.rope_scaling;
        rs.type = "longrope";
        rs.original_ctx = r.get_int(a + "rope.scaling.original_context_length").value_or(0);
        rs.attn_factor = static_cast<float>(r.get_float(a + "rope.scaling.attn_factor").value_or(1.0));
        rs.factor = rs.original_ctx > 0 ? float(double(c.n_ctx_train) / double(rs.original_ctx)) : 1.0f;
        for (auto [name, dst] : {std::pair{"rope_factors_short.weight", &rs.short_factor},
                                 std::pair{"rope_factors_long.weight", &rs.long_factor}}) {
            if (!has_tensor(name))
                throw FileError(Kind::MissingTensor, w + "tensor '" + std::string(name) +
                                                         "' is missing (longrope needs both factor tensors)");
            const TensorDesc& d = tensor(name);
            if (d.shape.size() != 1 || d.shape[0] != c.n_rot / 2)
                throw FileError(Kind::ShapeMismatch, w + "tensor '" + std::string(name) + "': " + shape_text(d.shape) +
                                                         ", expected " + std::to_string(c.n_rot / 2));
            dst->resize(static_cast<size_t>(d.shape[0]));
            read_f32(name, dst->data());
        }
    }
}

void GgufModel::read_vocab() {
    const GgufReader& r = m_reader;
    const std::string w = r.where();
    VocabData& v = m_vocab;

    const std::optional<std::string> model = r.get_string("tokenizer.ggml.model");
    if (!model) throw FileError(Kind::BadValue, w + "required key 'tokenizer.ggml.model' is missing");
    v.model = *model;
    v.pre = r.get_string("tokenizer.ggml.pre").value_or("default");
    auto tokens = r.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw FileError(Kind::BadValue, w + "required key 'tokenizer.ggml.tokens' is missing");
    v.tokens = std::move(*tokens);
    const size_t n = v.tokens.size();
    if (n == 0) throw FileError(Kind::BadValue, w + "key 'tokenizer.ggml.tokens' is empty");

    if (auto scores = r.get_f32_array("tokenizer.ggml.scores")) {
        if (scores->size() != n)
            throw FileError(Kind::BadValue, w + "key 'tokenizer.ggml.scores' has " + std::to_string(scores->size()) +
                                                " entries, expected one per token (" + std::to_string(n) + ")");
        v.scores = std::move(*scores);
    }
    if (auto types = r.get_int_array("tokenizer.ggml.token_type")) {
        if (types->size() != n)
            throw FileError(Kind::BadValue, w + "key 'tokenizer.ggml.token_type' has " + std::to_string(types->size()) +
                                                " entries, expected one per token (" + std::to_string(n) + ")");
        v.types.reserve(n);
        for (int64_t t : *types) v.types.push_back(static_cast<int32_t>(t));
    }
    if (auto merges = r.get_string_array("tokenizer.ggml.merges")) v.merges = std::move(*merges);

    // Special ids: absent -> default; 0xFFFFFFFF (uint32) or -1 -> none; anything else must be a
    // token. llama.cpp's SentencePiece defaults are bos 1, eos 2, unk 0.
    const bool spm = v.model == "llama";
    auto token_id = [&](const std::string& key, int32_t fallback) -> int32_t {
        const std::optional<int64_t> id = r.get_int(key);
        if (!id) return fallback < static_cast<int64_t>(n) ? fallback : -1;
        if (*id == -1 || *id == 0xFFFFFFFFll) return -1;
        if (*id < 0 || *id >= static_cast<int64_t>(n))
            throw FileError(Kind::BadValue, w + "key '" + key + "' = " + std::to_string(*id) +
                                                ": not a token id (0 to " + std::to_string(n - 1) + ")");
        return static_cast<int32_t>(*id);
    };
    v.bos_id = token_id("tokenizer.ggml.bos_token_id", spm ? 1 : -1);
    v.eos_id = token_id("tokenizer.ggml.eos_token_id", spm ? 2 : -1);
    v.unk_id = token_id("tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
    v.pad_id = token_id("tokenizer.ggml.padding_token_id", -1);
    const int32_t eot_id = token_id("tokenizer.ggml.eot_token_id", -1);
    const int32_t eom_id = token_id("tokenizer.ggml.eom_token_id", -1);

    v.add_bos = r.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
    v.add_eos = r.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
    v.add_space_prefix = r.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
    v.chat_template = r.get_string("tokenizer.chat_template").value_or("");
    // Named variants: llama.cpp's converter writes tokenizer.chat_template.NAME (e.g. tool_use)
    // for HF's named templates, and lists the names under tokenizer.chat_templates.
    const std::string named_prefix = "tokenizer.chat_template.";
    for (const GgufKv& kv : r.kvs()) {
        if (kv.key.compare(0, named_prefix.size(), named_prefix) != 0 || kv.key.size() == named_prefix.size()) continue;
        v.chat_templates.emplace_back(kv.key.substr(named_prefix.size()), r.get_string(kv.key).value_or(""));
    }

    // End of generation: eos, eot, eom, and any token whose text is a known end-of-turn marker.
    auto add_eog = [&](int32_t id) {
        if (id >= 0 && std::find(v.eog_ids.begin(), v.eog_ids.end(), id) == v.eog_ids.end()) v.eog_ids.push_back(id);
    };
    add_eog(v.eos_id);
    add_eog(eot_id);
    add_eog(eom_id);
    for (size_t id = 0; id < n; ++id)
        for (const char* text : kEogTexts)
            if (v.tokens[id] == text) add_eog(static_cast<int32_t>(id));
}

std::string GgufModel::format() const { return "GGUF v" + std::to_string(m_reader.version()); }

bool GgufModel::has_tensor(const std::string& name) const { return m_index.count(name) != 0; }

const TensorDesc& GgufModel::tensor(const std::string& name) const {
    const auto it = m_index.find(name);
    if (it == m_index.end()) throw FileError(Kind::MissingTensor, m_reader.where() + "no tensor named '" + name + "'");
    return m_tensors[it->second];
}

const GgufTensorInfo& GgufModel::readable_tensor(const std::string& name) const {
    const GgufTensorInfo* t = m_reader.find_tensor(name);
    if (t == nullptr) throw FileError(Kind::MissingTensor, m_reader.where() + "no tensor named '" + name + "'");
    if (t->type->dequant_row == nullptr)
        throw FileError(Kind::Unsupported, m_reader.where() + "tensor '" + name + "' has type " + t->type->name +
                                               ", which cannot be read (supported: " + readable_ggml_type_names() +
                                               ")");
    return *t;
}

void GgufModel::read_f32(const std::string& name, float* dst) const {
    const GgufTensorInfo& t = readable_tensor(name);
    const int64_t row_len = t.ne[0];
    check_finite(m_reader.where(), "'" + name + "'", *t.type, m_reader.tensor_data(t), t.numel);
    dequantize_rows(*t.type, m_reader.tensor_data(t), dst, t.numel / row_len, row_len);
}

TensorBytes GgufModel::tensor_bytes(const std::string& name) const {
    const GgufTensorInfo& t = readable_tensor(name);
    // Native weights are never dequantized as a whole, so they are scanned here instead.
    check_finite(m_reader.where(), "'" + name + "'", *t.type, m_reader.tensor_data(t), t.numel);
    TensorBytes b;
    b.type = t.type;
    b.data = m_reader.tensor_data(t);
    b.row_len = t.ne[0];
    b.n_rows = b.row_len > 0 ? t.numel / b.row_len : 0;
    b.row_bytes = static_cast<size_t>(b.row_len / t.type->block_size) * t.type->block_bytes;
    b.owner = m_reader.mapping();
    return b;
}

std::vector<std::pair<std::string, std::string>> GgufModel::metadata_summary() const {
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(m_reader.kvs().size());
    for (const GgufKv& kv : m_reader.kvs()) out.emplace_back(kv.key, m_reader.summarize(kv.value));
    return out;
}

}  // namespace snapkv
