// See llama_model.h. Math follows llama.cpp's llm_build_llama / llm_build_qwen2 graphs: RMSNorm
// in float32, RoPE angles pos * base^(-2i/n_rot) (computed in double here, cast once), scores
// scaled by 1/sqrt(D) and softmaxed in float32.
#include "core/model/llama_model.h"

#include <cmath>

#include "core/common/errors.h"
#include "core/io/model_file.h"

namespace snapkv {
namespace {

void check_cancel(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
}

// Inverse RoPE frequencies with the file's scaling applied: [n_rot/2] float64 math, float32 out.
at::Tensor rope_inv_freq(const ModelConfig& c, const ModelFile& file) {
    const int64_t half = c.n_rot / 2;
    std::vector<double> inv(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
        inv[static_cast<size_t>(i)] =
            std::pow(static_cast<double>(c.rope_freq_base), -2.0 * static_cast<double>(i) / c.n_rot);
    const auto& rs = c.rope_scaling;
    if (file.has_tensor("rope_freqs.weight")) {
        // llama.cpp stores Llama 3.1 frequency factors as a tensor and divides theta by them.
        std::vector<float> factors(static_cast<size_t>(half));
        const auto& d = file.tensor("rope_freqs.weight");
        if (d.shape.size() != 1 || d.shape[0] != half)
            throw FileError(FileError::Kind::ShapeMismatch,
                            "model: tensor 'rope_freqs.weight' has the wrong shape, expected [" +
                                std::to_string(half) + "]");
        file.read_f32("rope_freqs.weight", factors.data());
        for (int64_t i = 0; i < half; ++i) inv[static_cast<size_t>(i)] /= factors[static_cast<size_t>(i)];
    } else if (rs.type == "llama3") {
        // HF transformers' _compute_llama3_parameters.
        const double pi = 3.14159265358979323846;
        const double low_wavelen = rs.original_ctx / rs.low_freq_factor;
        const double high_wavelen = rs.original_ctx / rs.high_freq_factor;
        for (auto& f : inv) {
            const double wavelen = 2 * pi / f;
            if (wavelen < high_wavelen) continue;
            if (wavelen > low_wavelen) {
                f /= rs.factor;
            } else {
                const double smooth = (rs.original_ctx / wavelen - rs.low_freq_factor) /
                                      (rs.high_freq_factor - rs.low_freq_factor);
                f = (1 - smooth) * f / rs.factor + smooth * f;
            }
        }
    } else if (rs.type == "linear" && rs.factor > 0) {
        for (auto& f : inv) f /= rs.factor;
    } else if (rs.type != "none" && !rs.type.empty()) {
        throw FileError(FileError::Kind::Unsupported,
                        "model: RoPE scaling '" + rs.type + "' is not supported (none, linear, llama3)");
    }
    return at::tensor(inv, at::kDouble);
}

// x @ w^T (+ b). For a single token the product is a matrix-vector one: at::linear would call a
// GEMM that first packs (copies) the whole weight matrix, which made decode 2-3x slower than
// streaming the weights once through GEMV.
at::Tensor dense(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {}) {
    // x: [T, in]; w: [out, in]; b: [out] or undefined -> [T, out]
    if (x.size(0) != 1 || !x.device().is_cpu()) return at::linear(x, w, b);
    at::Tensor y = at::mv(w, x.select(0, 0));
    if (b.defined()) y.add_(b);
    return y.unsqueeze(0);
}

}  // namespace

std::shared_ptr<const LlamaModel> LlamaModel::load(const ModelFile& file, const ModelOptions& opts,
                                                   const std::function<void(int64_t, int64_t)>& progress,
                                                   const std::atomic<bool>* cancel) {
    c10::InferenceMode guard;
    auto model = std::shared_ptr<LlamaModel>(new LlamaModel());
    model->m_config = file.config();
    model->m_opts = opts;
    const ModelConfig& c = model->m_config;
    if (opts.device.is_cpu() && opts.dtype != at::kFloat)
        throw InputError("model: dtype " + std::string(c10::toString(opts.dtype)) +
                         " is not supported on the CPU (use float32)");
    if (c.n_rot <= 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        throw FileError(FileError::Kind::BadValue,
                        "model: rope dimension count " + std::to_string(c.n_rot) +
                            " must be even and at most head_dim " + std::to_string(c.head_dim));

    std::vector<std::string> names = {"token_embd.weight", "output_norm.weight"};
    if (!c.tied_embeddings) names.push_back("output.weight");
    const char* per_layer[] = {"attn_norm.weight", "attn_q.weight",   "attn_k.weight",
                               "attn_v.weight",    "attn_output.weight", "ffn_norm.weight",
                               "ffn_gate.weight",  "ffn_up.weight",   "ffn_down.weight"};
    const char* biases[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias"};
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* n : per_layer) names.push_back(p + n);
        if (c.qkv_bias)
            for (const char* n : biases) names.push_back(p + n);
    }

    const auto total = static_cast<int64_t>(names.size());
    int64_t done = 0;
    auto read = [&](const std::string& name) {
        check_cancel(cancel);
        const TensorDesc& d = file.tensor(name);
        at::Tensor host = at::empty(d.shape, at::TensorOptions().dtype(at::kFloat));
        file.read_f32(name, host.data_ptr<float>());
        at::Tensor t = host.to(opts.device, opts.dtype);
        model->m_weight_bytes += t.numel() * static_cast<int64_t>(t.element_size());
        if (progress) progress(++done, total);
        return t;
    };

    model->m_tok_embd = read("token_embd.weight");
    model->m_output_norm = read("output_norm.weight").to(at::kFloat);
    model->m_output = c.tied_embeddings ? model->m_tok_embd : read("output.weight");
    model->m_layers.resize(static_cast<size_t>(c.n_layer));
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        Layer& L = model->m_layers[static_cast<size_t>(l)];
        L.attn_norm = read(p + "attn_norm.weight").to(at::kFloat);
        L.wq = read(p + "attn_q.weight");
        L.wk = read(p + "attn_k.weight");
        L.wv = read(p + "attn_v.weight");
        if (c.qkv_bias) {
            L.bq = read(p + "attn_q.bias");
            L.bk = read(p + "attn_k.bias");
            L.bv = read(p + "attn_v.bias");
        }
        L.wo = read(p + "attn_output.weight");
        L.ffn_norm = read(p + "ffn_norm.weight").to(at::kFloat);
        L.w_gate = read(p + "ffn_gate.weight");
        L.w_up = read(p + "ffn_up.weight");
        L.w_down = read(p + "ffn_down.weight");
    }
    model->m_inv_freq = rope_inv_freq(c, file);
    return model;
}

KvCache LlamaModel::new_cache(int64_t capacity) const {
    return KvCache(m_config.n_layer, m_config.n_head_kv, m_config.head_dim,
                   at::TensorOptions().device(m_opts.device).dtype(m_opts.dtype), capacity);
}

at::Tensor LlamaModel::rms_norm(const at::Tensor& x, const at::Tensor& w) const {
    // x: [T, E] in the compute dtype; w: [E] float32. Normalise in float32 like ggml_rms_norm.
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor y = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + m_config.rms_eps);
    return (y * w).to(x.scalar_type());
}

at::Tensor LlamaModel::rope(const at::Tensor& x, const at::Tensor& pos) const {
    // x: [h, T, D]; pos: [T] int64. Angles in double, then float: [T, n_rot/2].
    const int64_t n_rot = m_config.n_rot;
    const int64_t half = n_rot / 2;
    at::Tensor ang = pos.to(at::kDouble).cpu().unsqueeze(1) * m_inv_freq.unsqueeze(0);  // [T, half]
    at::Tensor cos = ang.cos().to(x.device(), at::kFloat).unsqueeze(0);               // [1, T, half]
    at::Tensor sin = ang.sin().to(x.device(), at::kFloat).unsqueeze(0);               // [1, T, half]
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor rot = xf.narrow(2, 0, n_rot);
    at::Tensor out;
    if (m_config.rope_neox) {
        at::Tensor x0 = rot.narrow(2, 0, half), x1 = rot.narrow(2, half, half);     // [h, T, half]
        out = at::cat({x0 * cos - x1 * sin, x1 * cos + x0 * sin}, 2);
    } else {
        at::Tensor pairs = rot.reshape({rot.size(0), rot.size(1), half, 2});         // [h, T, half, 2]
        at::Tensor x0 = pairs.select(3, 0), x1 = pairs.select(3, 1);                 // [h, T, half]
        out = at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 3).reshape(rot.sizes());
    }
    if (n_rot < m_config.head_dim)
        out = at::cat({out, xf.narrow(2, n_rot, m_config.head_dim - n_rot)}, 2);
    return out.to(x.scalar_type());
}

at::Tensor LlamaModel::attention(const at::Tensor& q, LayerKv& kv, const at::Tensor& q_pos,
                                 int64_t layer, const ForwardOptions& opts) const {
    // q: [H, T, D]; the cache already holds this call's keys; q_pos: [T] int64.
    const int64_t H = q.size(0), T = q.size(1), D = q.size(2);
    const int64_t Hc = kv.n_heads();
    const int64_t g = H / Hc;
    const int64_t S = kv.size();
    at::Tensor K = kv.keys();        // [Hc, S, D]
    at::Tensor V = kv.values();      // [Hc, S, D]
    at::Tensor P = kv.positions();   // [Hc, S]
    at::Tensor qpos = q_pos.to(P.device());
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    at::Tensor qg = q.view({Hc, g, T, D});
    at::Tensor out = at::empty({Hc, g, T, D}, q.options());
    const int64_t chunk = std::max<int64_t>(1, opts.attn_chunk);
    at::Tensor h2o;
    if (opts.capture && opts.capture->h2o) h2o = at::zeros({H, S}, q.options().dtype(at::kFloat));
    // Slots already in the cache before this call hold past positions unless the cache has padding
    // (AdaKV) or was filled out of order: then every column is masked by position, else only the
    // columns of this call's own slots need the causal mask (a third of prefill's memory traffic).
    const int64_t s_old = S - T;
    const bool old_visible = !kv.has_padding() &&
                             (s_old == 0 || P.narrow(1, 0, s_old).max().item<int64_t>() < q_pos.min().item<int64_t>());
    const int64_t mask_from = old_visible ? s_old : 0;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t tc = std::min(chunk, T - t0);
        // Slots appended after this chunk's last query are in its future: skip them.
        const int64_t s_lim = S - (T - (t0 + tc));
        at::Tensor qc = qg.narrow(2, t0, tc).reshape({Hc, g * tc, D});                 // [Hc, g*tc, D]
        at::Tensor Kc = K.narrow(1, 0, s_lim);                                        // [Hc, s, D]
        at::Tensor scores = at::bmm(qc, Kc.transpose(1, 2)).to(at::kFloat).mul_(scale);  // [Hc, g*tc, s]
        at::Tensor rows_pos = qpos.narrow(0, t0, tc).repeat({g});                     // [g*tc]
        const int64_t n_mask = s_lim - mask_from;
        at::Tensor mask = P.narrow(1, mask_from, n_mask).unsqueeze(1).gt(rows_pos.view({1, g * tc, 1}));
        scores.narrow(2, mask_from, n_mask).masked_fill_(mask, -std::numeric_limits<float>::infinity());
        at::Tensor probs = at::softmax(scores, -1);                                    // [Hc, g*tc, s]
        at::Tensor o = at::bmm(probs.to(q.scalar_type()), V.narrow(1, 0, s_lim));      // [Hc, g*tc, D]
        out.narrow(2, t0, tc).copy_(o.view({Hc, g, tc, D}));
        at::Tensor p4 = probs.view({Hc, g, tc, s_lim});                                // [Hc, g, tc, s]
        if (h2o.defined()) h2o.narrow(1, 0, s_lim).add_(p4.sum(2).reshape({H, s_lim}));
        if (opts.probe && t0 + tc == T)
            opts.probe->probs[static_cast<size_t>(layer)] = p4.select(2, tc - 1).reshape({H, s_lim}).clone();
    }
    if (h2o.defined()) opts.capture->h2o_scores[static_cast<size_t>(layer)] = h2o;
    return out.view({H, T, D});
}

at::Tensor LlamaModel::forward(const std::vector<int32_t>& tokens, KvCache& cache,
                               const ForwardOptions& opts) const {
    c10::InferenceMode guard;
    const ModelConfig& c = m_config;
    const auto T = static_cast<int64_t>(tokens.size());
    if (T == 0) throw InputError("model: forward called with no tokens");
    for (int32_t id : tokens)
        if (id < 0 || id >= c.n_vocab)
            throw InputError("model: token id " + std::to_string(id) + " outside the vocabulary (0.." +
                             std::to_string(c.n_vocab - 1) + ")");
    const int64_t pos0 = cache.n_past();
    const int64_t H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim;
    at::Tensor ids = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong)
                         .to(m_opts.device);                                          // [T]
    at::Tensor pos = at::arange(pos0, pos0 + T, at::TensorOptions().dtype(at::kLong));  // [T] (CPU)
    if (opts.capture) {
        opts.capture->window_queries.assign(static_cast<size_t>(c.n_layer), at::Tensor());
        opts.capture->h2o_scores.assign(static_cast<size_t>(c.n_layer), at::Tensor());
    }
    if (opts.probe) {
        opts.probe->probs.assign(static_cast<size_t>(c.n_layer), at::Tensor());
    }
    cache.reserve(T);

    at::Tensor x = m_tok_embd.index_select(0, ids);                                    // [T, E]
    for (int64_t l = 0; l < c.n_layer; ++l) {
        check_cancel(opts.cancel);
        const Layer& L = m_layers[static_cast<size_t>(l)];
        at::Tensor h = rms_norm(x, L.attn_norm);                                       // [T, E]
        at::Tensor q = dense(h, L.wq, L.bq).view({T, H, D}).transpose(0, 1);        // [H, T, D]
        at::Tensor k = dense(h, L.wk, L.bk).view({T, Hkv, D}).transpose(0, 1);      // [Hkv, T, D]
        at::Tensor v = dense(h, L.wv, L.bv).view({T, Hkv, D}).transpose(0, 1);      // [Hkv, T, D]
        q = rope(q, pos).contiguous();
        k = rope(k, pos);
        LayerKv& kv = cache.layer(l);
        kv.append(k, v, pos);
        if (opts.capture && opts.capture->max_window > 0) {
            const int64_t w = std::min(opts.capture->max_window, T);
            opts.capture->window_queries[static_cast<size_t>(l)] =
                q.narrow(1, T - w, w).to(at::kFloat).clone();                          // [H, W, D]
        }
        at::Tensor a = attention(q, kv, pos, l, opts);                                 // [H, T, D]
        x = x + dense(a.transpose(0, 1).reshape({T, H * D}), L.wo);                // [T, E]
        h = rms_norm(x, L.ffn_norm);
        at::Tensor ff = at::silu(dense(h, L.w_gate)) * dense(h, L.w_up);       // [T, F]
        x = x + dense(ff, L.w_down);                                             // [T, E]
        if (opts.on_layer) opts.on_layer(l + 1, c.n_layer);
    }
    cache.set_n_past(pos0 + T);
    at::Tensor last = opts.all_logits ? x : x.narrow(0, T - 1, 1);
    return dense(rms_norm(last, m_output_norm), m_output).to(at::kFloat);        // [T or 1, V]
}

}  // namespace snapkv
