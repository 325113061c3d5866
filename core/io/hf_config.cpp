// config.json keys follow transformers' LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config /
// Gemma2Config / Gemma3TextConfig / Phi3Config (5.x, with the 4.x names still on the Hub), with
// their defaults where a key may be absent. The tensor-name map follows llama.cpp's gguf-py
// tensor_mapping.py for these architectures.
#include "core/io/hf_config.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/io/arch_tensors.h"

namespace snapkv {

using nlohmann::json;

namespace {

using Kind = FileError::Kind;

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
    const json* opt_object(const std::string& key) const {
        const json* v = get(key);
        if (v != nullptr && !v->is_object()) wrong(key, *v, "an object or null");
        return v;
    }
    std::optional<std::vector<float>> opt_floats(const std::string& key) const {
        const json* v = get(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_array()) wrong(key, *v, "an array of numbers");
        std::vector<float> out;
        out.reserve(v->size());
        for (const json& x : *v) {
            if (!x.is_number()) wrong(key, *v, "an array of numbers");
            out.push_back(static_cast<float>(x.get<double>()));
        }
        return out;
    }
    [[noreturn]] void missing(const std::string& key) const {
        throw FileError(Kind::BadJson, m_where + "required key '" + key + "' is missing");
    }
    [[noreturn]] void wrong(const std::string& key, const json& v, const char* wanted) const {
        throw FileError(Kind::BadJson,
                        m_where + "key '" + key + "' = " + v.dump().substr(0, 80) + ": expected " + wanted);
    }
    const std::string& where() const { return m_where; }

private:
    const json& m_j;
    std::string m_where;
};

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_gemma(const std::string& arch) { return arch == "gemma2" || arch == "gemma3"; }

// Per-layer suffixes, HF -> GGUF (gguf-py tensor_mapping.py). Gemma's post_attention_layernorm is
// the attention post-norm and pre_feedforward_layernorm the FFN norm; in every other supported
// architecture post_attention_layernorm is the FFN norm.
struct LayerName {
    const char* hf;
    const char* gguf;
};
const LayerName kCommonNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},      {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},          {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.bias", "attn_output.bias"},     {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"}, {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // phi3
    {"mlp.gate_proj.weight", "ffn_gate.weight"},       {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},  // phi3: [gate; up] rows
    {"mlp.down_proj.weight", "ffn_down.weight"},
};
const LayerName kPlainNorms[] = {
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
};
const LayerName kGemmaNorms[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

template <typename F>
void for_each_layer_name(const std::string& arch, F&& f) {
    for (const LayerName& n : kCommonNames) f(n);
    if (is_gemma(arch))
        for (const LayerName& n : kGemmaNorms) f(n);
    else
        for (const LayerName& n : kPlainNorms) f(n);
}

// A multimodal Gemma 3 checkpoint keeps the text model under one of these prefixes.
std::string strip_text_prefix(const std::string& hf) {
    for (const char* p : {"language_model.model.", "model.language_model."})
        if (hf.rfind(p, 0) == 0) return "model." + hf.substr(std::char_traits<char>::length(p));
    if (hf.rfind("language_model.lm_head.", 0) == 0) return hf.substr(15);
    return hf;
}

// Model types and what they load as.
struct ModelType {
    const char* hf;
    const char* arch;
};
const ModelType kModelTypes[] = {
    {"llama", "llama"},   {"mistral", "llama"},      {"qwen2", "qwen2"},   {"qwen3", "qwen3"},
    {"gemma2", "gemma2"}, {"gemma3_text", "gemma3"}, {"gemma3", "gemma3"}, {"phi3", "phi3"},
};

bool arch_supported(const std::string& arch) {
    const auto& archs = supported_archs();
    return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

std::string model_types_text() {
    std::string s;
    for (const ModelType& t : kModelTypes)
        if (arch_supported(t.arch)) s += (s.empty() ? "" : ", ") + std::string(t.hf);
    return s;
}

// transformers' defaults for the keys that Gemma configs on the Hub often leave out (the text_config
// of multimodal Gemma 3 lists only what differs from Gemma3TextConfig).
json gemma_defaults(const std::string& arch) {
    json d = {{"vocab_size", arch == "gemma2" ? 256000 : 262208},
              {"hidden_size", 2304},
              {"intermediate_size", 9216},
              {"num_hidden_layers", 26},
              {"num_attention_heads", 8},
              {"num_key_value_heads", 4},
              {"head_dim", 256},
              {"max_position_embeddings", arch == "gemma2" ? 8192 : 131072},
              {"rms_norm_eps", 1e-6},
              {"query_pre_attn_scalar", 256},
              {"sliding_window", 4096}};
    if (arch == "gemma2") {
        d["final_logit_softcapping"] = 30.0;
        d["attn_logit_softcapping"] = 50.0;
        d["rope_theta"] = 10000.0;
    } else {
        d["rope_theta"] = 1000000.0;
        d["rope_local_base_freq"] = 10000.0;
    }
    return d;
}

// One RoPE description: theta and scaling from a rope_parameters entry (5.x) or from rope_theta +
// rope_scaling (4.x). top: the config object (original_max_position_embeddings may sit there).
struct Rope {
    std::optional<double> theta;
    RopeScaling scaling;
    std::optional<double> partial_rotary_factor;
};

// label: the key the dict came from ("rope_scaling", "rope_parameters.full_attention"), for messages.
void parse_scaling(const JsonFields& r, const std::string& label, const JsonFields& top, int64_t max_pos, Rope& out) {
    std::string type = r.opt_string("rope_type").value_or(r.opt_string("type").value_or("default"));
    RopeScaling& s = out.scaling;
    auto original = [&]() -> std::optional<int64_t> {
        if (auto v = r.opt_int("original_max_position_embeddings")) return v;
        return top.opt_int("original_max_position_embeddings");
    };
    if (type == "default") {
        s.type = "none";
    } else if (type == "linear" || type == "llama3") {
        s.type = type;
        const std::optional<double> factor = r.opt_float("factor");
        if (!factor) r.missing("factor");
        s.factor = static_cast<float>(*factor);
        if (type == "llama3") {
            s.low_freq_factor = static_cast<float>(r.opt_float("low_freq_factor").value_or(1.0));
            s.high_freq_factor = static_cast<float>(r.opt_float("high_freq_factor").value_or(4.0));
            const std::optional<int64_t> orig = original();
            if (!orig) r.missing("original_max_position_embeddings");
            s.original_ctx = *orig;
        } else {
            s.original_ctx = original().value_or(0);
        }
    } else if (type == "longrope" || type == "su") {
        // transformers _compute_longrope_parameters: factor defaults to max_position_embeddings /
        // original_max_position_embeddings, the attention factor to sqrt(1 + ln f / ln orig).
        s.type = "longrope";
        const std::optional<int64_t> orig = original();
        if (!orig) r.missing("original_max_position_embeddings");
        s.original_ctx = *orig;
        auto shorts = r.opt_floats("short_factor");
        auto longs = r.opt_floats("long_factor");
        if (!shorts) r.missing("short_factor");
        if (!longs) r.missing("long_factor");
        s.short_factor = std::move(*shorts);
        s.long_factor = std::move(*longs);
        const double factor = r.opt_float("factor").value_or(
            s.original_ctx > 0 ? double(max_pos) / double(s.original_ctx) : 1.0);
        s.factor = static_cast<float>(factor);
        double attn = factor <= 1.0 || s.original_ctx <= 1
                          ? 1.0
                          : std::sqrt(1.0 + std::log(factor) / std::log(double(s.original_ctx)));
        if (auto a = r.opt_float("attention_factor")) attn = *a;
        s.attn_factor = static_cast<float>(attn);
    } else {
        throw FileError(Kind::Unsupported, top.where() + label + " type '" + clip_text(type) +
                                               "' is not supported (supported: default, linear, "
                                               "llama3, longrope/su)");
    }
    if (auto t = r.opt_float("rope_theta")) out.theta = t;
    if (auto p = r.opt_float("partial_rotary_factor")) out.partial_rotary_factor = p;
}

// The global (and, for gemma3, the sliding-layer) RoPE of a config in either form.
void read_rope(const JsonFields& f, const std::string& arch, int64_t max_pos, Rope& global, Rope& local) {
    if (const json* rp = f.opt_object("rope_parameters")) {
        if (arch == "gemma3" && (rp->contains("full_attention") || rp->contains("sliding_attention"))) {
            const JsonFields all(*rp, f.where() + "rope_parameters: ");
            if (const json* g = all.opt_object("full_attention"))
                parse_scaling(JsonFields(*g, f.where() + "rope_parameters.full_attention: "),
                              "rope_parameters.full_attention", f, max_pos, global);
            if (const json* l = all.opt_object("sliding_attention"))
                parse_scaling(JsonFields(*l, f.where() + "rope_parameters.sliding_attention: "),
                              "rope_parameters.sliding_attention", f, max_pos, local);
        } else {
            parse_scaling(JsonFields(*rp, f.where() + "rope_parameters: "), "rope_parameters", f, max_pos, global);
        }
    }
    if (const json* rs = f.opt_object("rope_scaling"))
        parse_scaling(JsonFields(*rs, f.where() + "rope_scaling: "), "rope_scaling", f, max_pos, global);
    if (!global.theta) global.theta = f.opt_float("rope_theta");
    if (!local.theta) local.theta = f.opt_float("rope_local_base_freq");
    if (!global.partial_rotary_factor) global.partial_rotary_factor = f.opt_float("partial_rotary_factor");
    if (local.scaling.type != "none")
        throw FileError(Kind::Unsupported, f.where() + "RoPE scaling '" + local.scaling.type +
                                               "' on the sliding-window layers is not supported "
                                               "(only on the global layers)");
}

// Which layers slide: layer_types when present, else the model type's rule.
std::vector<bool> read_sliding_layers(const JsonFields& f, const std::string& model_type, const std::string& arch,
                                      int64_t n_layer) {
    if (const json* lt = f.get("layer_types")) {
        if (!lt->is_array() || static_cast<int64_t>(lt->size()) != n_layer)
            f.wrong("layer_types", *lt, "an array with one entry per layer");
        std::vector<bool> out;
        for (const json& t : *lt) {
            const std::string s = t.is_string() ? t.get<std::string>() : std::string();
            if (s != "sliding_attention" && s != "full_attention")
                f.wrong("layer_types", *lt, "entries 'sliding_attention' or 'full_attention'");
            out.push_back(s == "sliding_attention");
        }
        return out;
    }
    if (arch == "gemma2") return swa_pattern(n_layer, 2);
    if (arch == "gemma3") return swa_pattern(n_layer, f.opt_int("sliding_window_pattern").value_or(6));
    if (model_type == "qwen2" || model_type == "qwen3") {
        // transformers: sliding layers are those at index >= max_window_layers
        const int64_t first = f.opt_int("max_window_layers").value_or(28);
        std::vector<bool> out(static_cast<size_t>(n_layer));
        for (int64_t l = 0; l < n_layer; ++l) out[static_cast<size_t>(l)] = l >= first;
        return out;
    }
    return swa_pattern(n_layer, 1);
}

}  // namespace

ConfigKeyNames hf_key_names() {
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
    keys.sliding_window = "sliding_window";
    keys.attn_scale = "query_pre_attn_scalar";
    keys.attn_softcap = "attn_logit_softcapping";
    keys.final_softcap = "final_logit_softcapping";
    return keys;
}

HfConfig read_hf_config(const json& root, const std::string& w) {
    if (!root.is_object()) throw FileError(Kind::BadJson, w + "expected a JSON object");
    const JsonFields top(root, w);
    const std::optional<std::string> model_type = top.opt_string("model_type");
    if (!model_type) top.missing("model_type");
    HfConfig out;
    out.model_type = *model_type;
    ModelConfig& c = out.config;
    for (const ModelType& t : kModelTypes)
        if (*model_type == t.hf && arch_supported(t.arch)) c.arch = t.arch;
    if (c.arch.empty())
        throw FileError(Kind::Unsupported, w + "model_type '" + clip_text(*model_type) +
                                               "' is not supported (supported: " + model_types_text() + ")");

    // Multimodal Gemma 3: the text model's settings are in text_config, with Gemma3TextConfig's
    // defaults for whatever it leaves out; the rest of the checkpoint (vision tower) is ignored.
    json merged;
    std::string where = w;
    if (is_gemma(c.arch)) {
        merged = gemma_defaults(c.arch);
        const json* text = *model_type == "gemma3" ? top.opt_object("text_config") : nullptr;
        if (*model_type == "gemma3" && text == nullptr) top.missing("text_config");
        const json& src = text ? *text : root;
        for (auto it = src.begin(); it != src.end(); ++it) merged[it.key()] = it.value();
        if (text) {
            where = w + "text_config: ";
            if (!merged.contains("tie_word_embeddings") && root.contains("tie_word_embeddings"))
                merged["tie_word_embeddings"] = root["tie_word_embeddings"];
        }
    }
    const JsonFields f(is_gemma(c.arch) ? merged : root, where);

    c.n_embd = f.req_int("hidden_size");
    c.n_ff = f.req_int("intermediate_size");
    c.n_layer = f.req_int("num_hidden_layers");
    c.n_head = f.req_int("num_attention_heads");
    c.n_head_kv = f.opt_int("num_key_value_heads").value_or(c.n_head);
    if (const auto hd = f.opt_int("head_dim")) {
        c.head_dim = *hd;
    } else if (c.n_head > 0 && c.n_embd % c.n_head != 0) {
        throw FileError(Kind::BadValue, where + "key 'hidden_size' = " + std::to_string(c.n_embd) +
                                            " is not a multiple of 'num_attention_heads' = " +
                                            std::to_string(c.n_head) + " and 'head_dim' is absent");
    } else {
        c.head_dim = c.n_head > 0 ? c.n_embd / c.n_head : 0;
    }
    c.n_vocab = f.req_int("vocab_size");
    c.n_ctx_train = f.req_int("max_position_embeddings");
    // Before layer_types, the sliding pattern and the per-layer table are sized from n_layer.
    validate_counts(c, where, hf_key_names());
    c.rms_eps = static_cast<float>(f.opt_float("rms_norm_eps").value_or(1e-6));  // transformers default
    set_arch_features(c);

    const std::string want_act = is_gemma(c.arch) ? "gelu_pytorch_tanh" : "silu";
    for (const char* key : {"hidden_act", "hidden_activation"})
        if (const auto act = f.opt_string(key); act && *act != want_act)
            throw FileError(Kind::Unsupported, where + key + " '" + clip_text(*act) + "' is not supported for " +
                                                   clip_text(*model_type) + " (supported: " + want_act + ")");
    if (c.arch != "qwen2" && (f.opt_bool("attention_bias").value_or(false) || f.opt_bool("mlp_bias").value_or(false)))
        throw FileError(Kind::Unsupported,
                        where + "attention_bias / mlp_bias = true is not supported for " + clip_text(*model_type));

    Rope global, local;
    read_rope(f, c.arch, c.n_ctx_train, global, local);
    c.rope_scaling = global.scaling;
    c.rope_freq_base = static_cast<float>(global.theta.value_or(10000.0));
    c.n_rot = c.head_dim;
    if (global.partial_rotary_factor) {
        // convert_hf_to_gguf (Phi3MiniModel): int(partial_rotary_factor * head_dim), kept even.
        const auto n = static_cast<int64_t>(*global.partial_rotary_factor * double(c.head_dim));
        c.n_rot = n - n % 2;
    }

    if (is_gemma(c.arch)) {
        // Gemma2Attention / Gemma3Attention: scaling = query_pre_attn_scalar ** -0.5
        const double scalar = *f.opt_float("query_pre_attn_scalar");
        if (!(scalar > 0.0))
            throw FileError(Kind::BadValue,
                            where + "key 'query_pre_attn_scalar' = " + std::to_string(scalar) + ": must be positive");
        c.attn_scale = static_cast<float>(1.0 / std::sqrt(scalar));
        c.attn_softcap = static_cast<float>(f.opt_float("attn_logit_softcapping").value_or(0.0));
        c.final_softcap = static_cast<float>(f.opt_float("final_logit_softcapping").value_or(0.0));
    }

    bool windowed = true;
    if (*model_type == "qwen2" || *model_type == "qwen3") windowed = f.opt_bool("use_sliding_window").value_or(false);
    c.sliding_window = windowed ? f.opt_int("sliding_window").value_or(0) : 0;
    const std::vector<bool> sliding = read_sliding_layers(f, *model_type, c.arch, c.n_layer);
    const float local_base = c.arch == "gemma3" ? static_cast<float>(local.theta.value_or(10000.0)) : 0.0f;
    set_layers(c, sliding, local_base);

    out.tie_word_embeddings = f.opt_bool("tie_word_embeddings").value_or(is_gemma(c.arch));
    return out;
}

std::optional<std::string> hf_to_gguf_name(const std::string& hf_in, const std::string& arch) {
    const std::string hf = arch == "gemma3" ? strip_text_prefix(hf_in) : hf_in;
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
    // phi3's fused tensors: in any other architecture they are not ours to read
    const bool fused = arch == "phi3";
    if ((suffix == "self_attn.qkv_proj.weight" || suffix == "mlp.gate_up_proj.weight") && !fused) return std::nullopt;
    std::optional<std::string> out;
    for_each_layer_name(arch, [&](const LayerName& n) {
        if (!out && suffix == n.hf) out = "blk." + std::to_string(std::stoll(layer)) + "." + n.gguf;
    });
    return out;
}

std::optional<std::string> gguf_to_hf_name(const std::string& gguf, const std::string& arch) {
    if (gguf == "token_embd.weight") return std::string("model.embed_tokens.weight");
    if (gguf == "output_norm.weight") return std::string("model.norm.weight");
    if (gguf == "output.weight") return std::string("lm_head.weight");
    if (gguf.compare(0, 4, "blk.") != 0) return std::nullopt;
    const size_t dot = gguf.find('.', 4);
    if (dot == std::string::npos) return std::nullopt;
    const std::string layer = gguf.substr(4, dot - 4);
    if (!all_digits(layer)) return std::nullopt;
    const std::string suffix = gguf.substr(dot + 1);
    const bool fused = arch == "phi3";
    std::optional<std::string> out;
    for_each_layer_name(arch, [&](const LayerName& n) {
        const std::string hf = n.hf;
        // ffn_up is gate_up_proj in phi3 and up_proj elsewhere
        if (suffix == "ffn_up.weight" && (hf == "mlp.gate_up_proj.weight") != fused) return;
        if (!out && suffix == n.gguf) out = "model.layers." + layer + "." + hf;
    });
    return out;
}

}  // namespace snapkv
