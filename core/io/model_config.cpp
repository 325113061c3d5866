// Human-readable summaries of a ModelConfig's features, for `snapkv info` and the app. Reads the
// flags only; it does not validate them (arch_tensors does).
#include "core/io/model_config.h"

#include <cmath>
#include <cstdio>

namespace snapkv {
namespace {

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

std::string sliding_layers_text(const ModelConfig& c) {
    std::string list;
    int64_t n = 0;
    for (size_t l = 0; l < c.layers.size(); ++l) {
        if (c.layers[l].sliding_window <= 0) continue;
        list += (n++ ? ", " : "") + std::to_string(l);
    }
    if (n == 0) return "none";
    if (n == static_cast<int64_t>(c.layers.size())) return "all";
    return list;
}

std::vector<std::string> model_features(const ModelConfig& c) {
    std::vector<std::string> out;
    int64_t n_sliding = 0;
    for (const LayerConfig& lc : c.layers) n_sliding += lc.sliding_window > 0 ? 1 : 0;
    if (n_sliding > 0)
        out.push_back("sliding window " + std::to_string(c.sliding_window) + " on layers " + sliding_layers_text(c) +
                      " (" + std::to_string(n_sliding) + " of " + std::to_string(c.n_layer) + ")");
    bool local_base = false;
    for (const LayerConfig& lc : c.layers)
        if (lc.rope_freq_base != c.rope_freq_base) {
            out.push_back("RoPE base " + num(lc.rope_freq_base) + " on sliding layers, " + num(c.rope_freq_base) +
                          " on global layers");
            local_base = true;
            break;
        }
    const RopeScaling& rs = c.rope_scaling;
    if (rs.type == "llama3" && !rs.freq_factors.empty()) out.push_back("RoPE scaling llama3 (rope_freqs factors)");
    else if (rs.type == "llama3")
        out.push_back("RoPE scaling llama3 (factor " + num(rs.factor) + ", original context " +
                      std::to_string(rs.original_ctx) + ")");
    else if (rs.type == "linear")
        out.push_back(std::string("RoPE scaling linear (factor ") + num(rs.factor) + ")" +
                      (local_base ? " on global layers" : ""));
    else if (rs.type == "longrope")
        out.push_back("RoPE scaling longrope (short factors up to " + std::to_string(rs.original_ctx) +
                      " positions, attention factor " + num(rs.attn_factor) + ")");
    if (c.n_rot < c.head_dim)
        out.push_back("partial RoPE (" + std::to_string(c.n_rot) + " of " + std::to_string(c.head_dim) + " dims)");
    if (c.attn_softcap > 0) out.push_back("attention soft-cap " + num(c.attn_softcap));
    if (c.final_softcap > 0) out.push_back("final logit soft-cap " + num(c.final_softcap));
    if (c.head_dim > 0 && std::fabs(c.attn_scale * std::sqrt(double(c.head_dim)) - 1.0) > 1e-6)
        out.push_back("attention scale 1/sqrt(" + num(1.0 / (double(c.attn_scale) * c.attn_scale)) + ")");
    if (c.qk_norm) out.push_back("q/k norm");
    if (c.qkv_bias) out.push_back("QKV bias");
    if (c.post_norms) out.push_back("post-attention and post-FFN norms");
    if (c.ffn_act == FfnActivation::GeluTanh) out.push_back("GeGLU (tanh GELU)");
    if (c.embd_scale != 1.0f) out.push_back("embeddings x " + num(c.embd_scale));
    if (c.fused_qkv || c.fused_gate_up) out.push_back("fused QKV and gate-up tensors (split at load)");
    return out;
}

}  // namespace snapkv
