// Feature flags, hyperparameter bounds and tensor tables for the supported architectures,
// following llama.cpp's per-architecture hparams, graph builders and tensor lists
// (src/llama-model.cpp: load_hparams, load_tensors, llm_build_*). The bounds are generous sanity
// limits meant to catch corrupt files before they turn into huge allocations, not to police real
// models.
#include "core/io/arch_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/common/errors.h"
#include "core/io/dequant.h"

namespace snapkv {

namespace {

using Kind = FileError::Kind;

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& value,
                      const std::string& allowed) {
    throw FileError(Kind::BadValue, where + "key '" + key + "' = " + value + ": " + allowed);
}

void check_range(const std::string& where, const std::string& key, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
        bad(where, key, std::to_string(v), "allowed " + std::to_string(lo) + " to " + std::to_string(hi));
}

std::string float_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

const std::vector<std::string>& supported_archs() {
    static const std::vector<std::string> archs = {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"};
    return archs;
}

void set_arch_features(ModelConfig& c) {
    const std::string& a = c.arch;
    // llama.cpp: LLAMA_ROPE_TYPE_NORM (adjacent pairs) for llama, NEOX (rotate-half) for the rest.
    c.rope_neox = a != "llama";
    c.qkv_bias = a == "qwen2";
    c.qk_norm = a == "qwen3" || a == "gemma3";
    c.post_norms = a == "gemma2" || a == "gemma3";
    c.fused_qkv = a == "phi3";
    c.fused_gate_up = a == "phi3";
    const bool gemma = a == "gemma2" || a == "gemma3";
    c.ffn_act = gemma ? FfnActivation::GeluTanh : FfnActivation::Silu;
    // Gemma scales the embeddings by sqrt(n_embd) (llm_build_gemma2: ggml_scale(inpL, sqrtf(n_embd))).
    c.embd_scale = gemma ? static_cast<float>(std::sqrt(static_cast<double>(c.n_embd))) : 1.0f;
    c.attn_scale = c.head_dim > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim))) : 0.0f;
}

int64_t default_swa_period(const std::string& arch) {
    if (arch == "gemma2") return 2;
    if (arch == "gemma3") return 6;
    return 1;
}

std::vector<bool> swa_pattern(int64_t n_layer, int64_t period) {
    std::vector<bool> out(static_cast<size_t>(std::max<int64_t>(n_layer, 0)));
    for (int64_t l = 0; l < n_layer; ++l) out[static_cast<size_t>(l)] = period <= 1 || l % period < period - 1;
    return out;
}

void set_layers(ModelConfig& c, const std::vector<bool>& sliding, float local_rope_base) {
    c.layers.assign(static_cast<size_t>(std::max<int64_t>(c.n_layer, 0)), LayerConfig{});
    for (size_t l = 0; l < c.layers.size(); ++l) {
        LayerConfig& lc = c.layers[l];
        const bool slides = c.sliding_window > 0 && l < sliding.size() && sliding[l];
        lc.sliding_window = slides ? c.sliding_window : 0;
        const bool local = slides && local_rope_base > 0.0f;
        lc.rope_freq_base = local ? local_rope_base : c.rope_freq_base;
        lc.rope_scaled = !local;
    }
}

std::string supported_archs_text() {
    std::string s;
    for (const std::string& a : supported_archs()) s += (s.empty() ? "" : ", ") + a;
    return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    if (shape.empty()) return "scalar";
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    return s;
}

void validate_counts(const ModelConfig& c, const std::string& where, const ConfigKeyNames& k) {
    check_range(where, k.n_layer, c.n_layer, 1, 4096);
    check_range(where, k.n_embd, c.n_embd, 1, int64_t(1) << 20);
    check_range(where, k.n_ff, c.n_ff, 1, int64_t(1) << 22);
    check_range(where, k.n_head, c.n_head, 1, 4096);
    check_range(where, k.n_head_kv, c.n_head_kv, 1, c.n_head);
    if (c.n_head % c.n_head_kv != 0)
        bad(where, k.n_head_kv, std::to_string(c.n_head_kv),
            "must divide " + k.n_head + " = " + std::to_string(c.n_head));
    check_range(where, k.head_dim, c.head_dim, 1, 4096);
    check_range(where, k.n_ctx_train, c.n_ctx_train, 1, int64_t(1) << 26);
    // n_vocab: the GGUF reader learns it after the vocabulary (itself bounded by the file size),
    // so 0 here means "not read yet".
    if (c.n_vocab != 0) check_range(where, k.n_vocab, c.n_vocab, 1, int64_t(1) << 24);
}

void validate_config(const ModelConfig& c, const std::string& where, const ConfigKeyNames& k) {
    validate_counts(c, where, k);
    check_range(where, k.n_rot, c.n_rot, 2, c.head_dim);
    if (c.n_rot % 2 != 0) bad(where, k.n_rot, std::to_string(c.n_rot), "rotary dimensions come in pairs: must be even");
    if (c.arch == "llama" && c.head_dim % 2 != 0) bad(where, k.head_dim, std::to_string(c.head_dim), "must be even");
    check_range(where, k.n_vocab, c.n_vocab, 1, int64_t(1) << 24);
    check_range(where, k.n_ctx_train, c.n_ctx_train, 1, int64_t(1) << 26);
    if (!std::isfinite(c.rope_freq_base) || c.rope_freq_base <= 0.0f)
        bad(where, k.rope_freq_base, float_text(c.rope_freq_base), "must be a positive number");
    if (!std::isfinite(c.rms_eps) || c.rms_eps <= 0.0f || c.rms_eps >= 1.0f)
        bad(where, k.rms_eps, float_text(c.rms_eps), "must be between 0 and 1 (exclusive)");
    if (!std::isfinite(c.attn_scale) || c.attn_scale <= 0.0f)
        bad(where, k.attn_scale, float_text(c.attn_scale), "the attention scale must be a positive number");
    if (!std::isfinite(c.attn_softcap) || c.attn_softcap < 0.0f)
        bad(where, k.attn_softcap, float_text(c.attn_softcap), "must be 0 (off) or a positive number");
    if (!std::isfinite(c.final_softcap) || c.final_softcap < 0.0f)
        bad(where, k.final_softcap, float_text(c.final_softcap), "must be 0 (off) or a positive number");
    check_range(where, k.sliding_window, c.sliding_window, 0, int64_t(1) << 30);
    if (static_cast<int64_t>(c.layers.size()) != c.n_layer)
        throw Error(where + "internal: " + std::to_string(c.layers.size()) + " layer descriptions for " +
                    std::to_string(c.n_layer) + " layers");
    for (const LayerConfig& lc : c.layers)
        if (!std::isfinite(lc.rope_freq_base) || lc.rope_freq_base <= 0.0f)
            bad(where, k.rope_freq_base, float_text(lc.rope_freq_base), "must be a positive number");
    const RopeScaling& rs = c.rope_scaling;
    if (rs.type != "none") {
        if (!std::isfinite(rs.factor) || rs.factor <= 0.0f)
            bad(where, k.rope_scaling, "factor " + float_text(rs.factor),
                "the scaling factor must be a positive number");
    }
    if (rs.type == "llama3" && !rs.freq_factors.empty()) {
        if (static_cast<int64_t>(rs.freq_factors.size()) != c.n_rot / 2)
            bad(where, k.rope_scaling, "rope_freqs with " + std::to_string(rs.freq_factors.size()) + " values",
                "one factor per rotated pair (" + std::to_string(c.n_rot / 2) + ")");
        for (float v : rs.freq_factors)
            if (!std::isfinite(v) || v <= 0.0f)
                bad(where, k.rope_scaling, "rope_freqs value " + float_text(v), "factors must be positive numbers");
    } else if (rs.type == "llama3") {
        if (rs.original_ctx <= 0)
            bad(where, k.rope_scaling, "original context " + std::to_string(rs.original_ctx),
                "llama3 scaling needs original_max_position_embeddings > 0");
        if (!(rs.high_freq_factor > rs.low_freq_factor) || !(rs.low_freq_factor > 0.0f))
            bad(where, k.rope_scaling,
                "low_freq_factor " + float_text(rs.low_freq_factor) + ", high_freq_factor " +
                    float_text(rs.high_freq_factor),
                "llama3 scaling needs 0 < low_freq_factor < high_freq_factor");
    }
    if (rs.type == "longrope") {
        const auto half = static_cast<size_t>(c.n_rot / 2);
        if (rs.original_ctx <= 0)
            bad(where, k.rope_scaling, "original context " + std::to_string(rs.original_ctx),
                "longrope needs original_max_position_embeddings > 0");
        for (const auto* f : {&rs.short_factor, &rs.long_factor}) {
            const char* which = f == &rs.short_factor ? "short_factor" : "long_factor";
            if (f->size() != half)
                bad(where, k.rope_scaling, std::string(which) + " with " + std::to_string(f->size()) + " values",
                    "longrope needs one factor per rotated pair (" + std::to_string(half) + ")");
            for (float v : *f)
                if (!std::isfinite(v) || v <= 0.0f)
                    bad(where, k.rope_scaling, std::string(which) + " value " + float_text(v),
                        "longrope factors must be positive numbers");
        }
        if (!std::isfinite(rs.attn_factor) || rs.attn_factor <= 0.0f)
            bad(where, k.rope_scaling, "attention factor " + float_text(rs.attn_factor), "must be a positive number");
    }
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
    const int64_t q_rows = c.n_head * c.head_dim;      // [n_head * head_dim, n_embd]
    const int64_t kv_rows = c.n_head_kv * c.head_dim;  // [n_head_kv * head_dim, n_embd]
    std::vector<ExpectedTensor> out = {
        {"token_embd.weight", {c.n_vocab, c.n_embd}, true},
        {"output_norm.weight", {c.n_embd}, true},
        {"output.weight", {c.n_vocab, c.n_embd}, false},  // absent: tied to token_embd
        {"rope_freqs.weight", {c.n_rot / 2}, false},      // llama3 frequency factors
    };
    if (c.rope_scaling.type == "longrope") {  // phi3 (llama.cpp tensors)
        out.push_back({"rope_factors_long.weight", {c.n_rot / 2}, false});
        out.push_back({"rope_factors_short.weight", {c.n_rot / 2}, false});
    }
    for (int64_t il = 0; il < c.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        out.push_back({b + "attn_norm.weight", {c.n_embd}, true});
        if (c.fused_qkv) {
            out.push_back({b + "attn_qkv.weight", {q_rows + 2 * kv_rows, c.n_embd}, true});
        } else {
            out.push_back({b + "attn_q.weight", {q_rows, c.n_embd}, true});
            out.push_back({b + "attn_k.weight", {kv_rows, c.n_embd}, true});
            out.push_back({b + "attn_v.weight", {kv_rows, c.n_embd}, true});
        }
        if (c.qkv_bias) {
            out.push_back({b + "attn_q.bias", {q_rows}, true});
            out.push_back({b + "attn_k.bias", {kv_rows}, true});
            out.push_back({b + "attn_v.bias", {kv_rows}, true});
        }
        if (c.qk_norm) {
            out.push_back({b + "attn_q_norm.weight", {c.head_dim}, true});
            out.push_back({b + "attn_k_norm.weight", {c.head_dim}, true});
        }
        out.push_back({b + "attn_output.weight", {c.n_embd, q_rows}, true});
        if (c.post_norms) out.push_back({b + "post_attention_norm.weight", {c.n_embd}, true});
        out.push_back({b + "ffn_norm.weight", {c.n_embd}, true});
        if (c.fused_gate_up) {
            out.push_back({b + "ffn_up.weight", {2 * c.n_ff, c.n_embd}, true});
        } else {
            out.push_back({b + "ffn_gate.weight", {c.n_ff, c.n_embd}, true});
            out.push_back({b + "ffn_up.weight", {c.n_ff, c.n_embd}, true});
        }
        out.push_back({b + "ffn_down.weight", {c.n_embd, c.n_ff}, true});
        if (c.post_norms) out.push_back({b + "post_ffw_norm.weight", {c.n_embd}, true});
    }
    return out;
}

void validate_tensors(const ModelConfig& c, const std::string& where,
                      const std::function<const TensorDesc*(const std::string&)>& find,
                      const std::function<std::string(const std::string&)>& display) {
    for (const ExpectedTensor& e : expected_tensors(c)) {
        const std::string shown = display ? display(e.name) : "'" + e.name + "'";
        const TensorDesc* t = find(e.name);
        if (t == nullptr) {
            if (!e.required) continue;
            throw FileError(Kind::MissingTensor, where + "tensor " + shown + " is missing (" + c.arch +
                                                     " needs it, shape " + shape_text(e.shape) + ")");
        }
        if (t->shape != e.shape)
            throw FileError(Kind::ShapeMismatch, where + "tensor " + shown + ": " + shape_text(t->shape) +
                                                     ", expected " + shape_text(e.shape));
        const GgmlType* type = ggml_type_by_name(t->type);
        if (type == nullptr || type->dequant_row == nullptr)
            throw FileError(Kind::Unsupported, where + "tensor " + shown + " has type " + t->type +
                                                   ", which cannot be read (supported: " + readable_ggml_type_names() +
                                                   ")");
    }
}

}  // namespace snapkv
