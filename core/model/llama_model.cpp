// See llama_model.h. Math follows llama.cpp's graphs (llm_build_llama / qwen2 / qwen3 / gemma2 /
// gemma3 / phi3) and transformers' modeling files: RMSNorm in float32, RoPE angles in double (cast
// once), scores scaled, soft-capped, masked (causal and sliding window) and softmaxed in float32.
// The attention itself is in model_attention.cpp, norms / RoPE / dense in model_ops.cpp.
#include "core/model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/common/errors.h"
#include "core/io/model_file.h"
#include "core/model/decode_ops.h"
#include "core/model/forward_parts.h"
#include "core/model/prefill_ops.h"
#include "core/quant/qkernels.h"

namespace snapkv {

using model_ops::dense;
using model_ops::rms_norm;

// The centred outer products are one float32 batched product, as kvpress's einsum computes them.
QueryStats query_stats(const at::Tensor& q, int64_t pos0) {
    QueryStats out;
    const int64_t T = q.size(0);
    const int64_t f = std::clamp<int64_t>(kQueryHeadPositions - pos0, 0, T);
    at::Tensor qf = q.to(at::kFloat).transpose(0, 1);                    // [H, T, D]
    if (f > 0) out.head = qf.narrow(1, 0, f).to(at::kCPU).contiguous();  // [H, f, D]
    out.count = T - f;
    if (out.count > 0) {
        at::Tensor rest = qf.narrow(1, f, out.count);                                  // [H, n, D]
        at::Tensor mean = rest.mean(1, /*keepdim=*/true);                              // [H, 1, D]
        at::Tensor centred = rest - mean;                                              // [H, n, D]
        out.m2 = at::bmm(centred.transpose(1, 2), centred).to(at::kCPU, at::kDouble);  // [H, D, D]
        out.mean = mean.squeeze(1).to(at::kCPU, at::kDouble);                          // [H, D]
    }
    return out;
}

const char* ForwardProfile::name(int stage) {
    static const char* const names[kStages] = {"embed",     "norms",      "qkv proj",  "rope",
                                               "kv append", "capture",    "attention", "out proj",
                                               "ffn proj",  "activation", "residual",  "logits"};
    return stage >= 0 && stage < kStages ? names[stage] : "";
}

std::shared_ptr<const LlamaModel> LlamaModel::load(const ModelFile& file, const ModelOptions& opts,
                                                   const std::function<void(int64_t, int64_t)>& progress,
                                                   const std::atomic<bool>* cancel) {
    c10::InferenceMode guard;
    auto model = std::shared_ptr<LlamaModel>(new LlamaModel());
    model->m_config = file.config();
    model->m_opts = opts;
    model->m_cache_type.store(opts.cache_type);
    const ModelConfig& c = model->m_config;
    if (opts.device.is_cpu() && opts.dtype != at::kFloat)
        throw InputError("model: dtype " + std::string(c10::toString(opts.dtype)) +
                         " is not supported on the CPU (use float32)");
    if (c.n_rot <= 0 || c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        throw FileError(FileError::Kind::BadValue, "model: rope dimension count " + std::to_string(c.n_rot) +
                                                       " must be even and at most head_dim " +
                                                       std::to_string(c.head_dim));

    // Every tensor the flags ask for: token_embd, output_norm, output unless tied, and per layer:
    std::vector<std::string> per_layer = {"attn_norm.weight", "attn_output.weight", "ffn_norm.weight", "ffn_up.weight",
                                          "ffn_down.weight"};
    if (c.fused_qkv) {
        per_layer.push_back("attn_qkv.weight");
    } else {
        for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_v.weight"}) per_layer.push_back(n);
    }
    if (!c.fused_gate_up) per_layer.push_back("ffn_gate.weight");
    if (c.qkv_bias)
        for (const char* n : {"attn_q.bias", "attn_k.bias", "attn_v.bias"}) per_layer.push_back(n);
    if (c.qk_norm)
        for (const char* n : {"attn_q_norm.weight", "attn_k_norm.weight"}) per_layer.push_back(n);
    if (c.post_norms)
        for (const char* n : {"post_attention_norm.weight", "post_ffw_norm.weight"}) per_layer.push_back(n);
    const int64_t total = (c.tied_embeddings ? 2 : 3) + c.n_layer * static_cast<int64_t>(per_layer.size());
    int64_t done = 0;
    // One tensor as float32 on the host: [shape] in torch order.
    auto read_host = [&](const std::string& name) {
        check_cancel(cancel);
        const TensorDesc& d = file.tensor(name);
        at::Tensor host = at::empty(d.shape, at::TensorOptions().dtype(at::kFloat));
        file.read_f32(name, host.data_ptr<float>());
        if (progress) progress(++done, total);
        return host;
    };
    auto place = [&](const at::Tensor& host) {
        at::Tensor t = host.to(opts.device, opts.dtype);
        model->m_weight_bytes += t.numel() * static_cast<int64_t>(t.element_size());
        return t;
    };
    auto read = [&](const std::string& name) { return place(read_host(name)); };
    // A weight matrix: in the file's format on the CPU when asked and a kernel exists for it
    // (a view into the mapped file), else dequantized and placed like any tensor.
    const bool native = opts.native_weights && opts.device.is_cpu();
    auto read_matrix = [&](const std::string& name) {
        if (native) {
            check_cancel(cancel);
            TensorBytes bytes = file.tensor_bytes(name);
            if (kernel_supports(*bytes.type)) {
                WeightMatrix w(std::move(bytes));
                w.set_q8_activations(opts.q8_activations);
                model->m_weight_bytes += w.bytes();
                if (progress) progress(++done, total);
                return w;
            }
        }
        return WeightMatrix(read(name));
    };
    // Norm weights stay float32: rms_norm multiplies in float32.
    auto read_norm = [&](const std::string& name) { return read(name).to(at::kFloat); };

    model->m_tok_embd = read_matrix("token_embd.weight");
    model->m_output_norm = read_norm("output_norm.weight");
    model->m_output = c.tied_embeddings ? model->m_tok_embd : read_matrix("output.weight");
    model->m_layers.resize(static_cast<size_t>(c.n_layer));
    const int64_t q_rows = c.n_head * c.head_dim, kv_rows = c.n_head_kv * c.head_dim;
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        Layer& L = model->m_layers[static_cast<size_t>(l)];
        L.attn_norm = read_norm(p + "attn_norm.weight");
        if (c.fused_qkv) {
            // phi3's attn_qkv: rows [q; k; v], split into three plain [out, in] matrices.
            const WeightMatrix qkv = read_matrix(p + "attn_qkv.weight");  // [(H + 2 Hkv) D, E]
            L.wq = qkv.slice_rows(0, q_rows);
            L.wk = qkv.slice_rows(q_rows, kv_rows);
            L.wv = qkv.slice_rows(q_rows + kv_rows, kv_rows);
        } else {
            L.wq = read_matrix(p + "attn_q.weight");
            L.wk = read_matrix(p + "attn_k.weight");
            L.wv = read_matrix(p + "attn_v.weight");
        }
        if (c.qkv_bias) {
            L.bq = read(p + "attn_q.bias");
            L.bk = read(p + "attn_k.bias");
            L.bv = read(p + "attn_v.bias");
        }
        if (c.qk_norm) {
            L.q_norm = read_norm(p + "attn_q_norm.weight");
            L.k_norm = read_norm(p + "attn_k_norm.weight");
        }
        L.wo = read_matrix(p + "attn_output.weight");
        if (c.post_norms) L.attn_post_norm = read_norm(p + "post_attention_norm.weight");
        L.ffn_norm = read_norm(p + "ffn_norm.weight");
        if (c.fused_gate_up) {
            // phi3's ffn_up: rows [gate; up] (transformers: gate, up = gate_up.chunk(2); llama.cpp's
            // SWIGLU takes silu of the first half).
            const WeightMatrix gate_up = read_matrix(p + "ffn_up.weight");  // [2F, E]
            L.w_gate = gate_up.slice_rows(0, c.n_ff);
            L.w_up = gate_up.slice_rows(c.n_ff, c.n_ff);
        } else {
            L.w_gate = read_matrix(p + "ffn_gate.weight");
            L.w_up = read_matrix(p + "ffn_up.weight");
        }
        L.w_down = read_matrix(p + "ffn_down.weight");
        if (c.post_norms) L.ffn_post_norm = read_norm(p + "post_ffw_norm.weight");

        // Layers with the same base and scaling share one table.
        model_ops::RopeTable t = model_ops::rope_table(c, l);
        L.rope = model->m_ropes.size();
        for (size_t i = 0; i < model->m_ropes.size(); ++i)
            if (model->m_ropes[i].inv_freq.equal(t.inv_freq) && model->m_ropes[i].attn_factor == t.attn_factor)
                L.rope = i;
        if (L.rope == model->m_ropes.size()) model->m_ropes.push_back(std::move(t));
    }
    // The buffer path of single-token steps (forward_one) needs every matrix multipliable on
    // plain float32 buffers and every norm / bias a contiguous float32 CPU tensor.
    auto ok_vec = [](const at::Tensor& t) {
        return !t.defined() || (t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous());
    };
    bool raw = opts.device.is_cpu() && opts.dtype == at::kFloat && model->m_output.raw_ready() &&
               ok_vec(model->m_output_norm);
    for (const Layer& L : model->m_layers) {
        for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
            raw = raw && w->raw_ready();
        for (const at::Tensor* t : {&L.attn_norm, &L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm, &L.attn_post_norm,
                                    &L.ffn_norm, &L.ffn_post_norm})
            raw = raw && ok_vec(*t);
    }
    model->m_raw_decode = raw;
    return model;
}

KvCache LlamaModel::new_cache(int64_t capacity, bool values) const {
    return KvCache(m_config.n_layer, m_config.n_head_kv, m_config.head_dim,
                   at::TensorOptions().device(m_opts.device).dtype(m_opts.dtype), capacity, values,
                   m_cache_type.load());
}

void LlamaModel::release_layer_pages(int64_t l) const {
    const Layer& L = m_layers.at(static_cast<size_t>(l));
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) w->release_pages();
}

void LlamaModel::release_pages() const {
    for (int64_t l = 0; l < m_config.n_layer; ++l) release_layer_pages(l);
    m_tok_embd.release_pages();
    m_output.release_pages();
}

void LlamaModel::check_tokens(const std::vector<int32_t>& tokens) const {
    if (tokens.empty()) throw InputError("model: forward called with no tokens");
    for (int32_t id : tokens)
        if (id < 0 || id >= m_config.n_vocab)
            throw InputError("model: token id " + std::to_string(id) + " outside the vocabulary (0.." +
                             std::to_string(m_config.n_vocab - 1) + ")");
}

at::Tensor LlamaModel::forward(const std::vector<int32_t>& tokens, KvCache& cache, const ForwardOptions& opts) const {
    c10::InferenceMode guard;
    check_tokens(tokens);
    if (tokens.size() == 1 && !opts.capture && can_step_raw(cache)) return forward_one(tokens[0], cache, opts);
    std::vector<at::Tensor> out = forward_parts({tokens}, cache, {opts});
    return out.front();
}

std::vector<at::Tensor> LlamaModel::forward_parts(const std::vector<std::vector<int32_t>>& parts, KvCache& cache,
                                                  const std::vector<ForwardOptions>& opts,
                                                  const std::function<void(int64_t layer)>& after_layer) const {
    c10::InferenceMode guard;
    TORCH_CHECK(!parts.empty() && parts.size() == opts.size(), "model: forward_parts needs options for each part");
    int64_t total = 0;
    for (const auto& tokens : parts) {
        check_tokens(tokens);
        total += static_cast<int64_t>(tokens.size());
    }
    cache.reserve(total);
    // Each part's state lives from its first layer to its logits; part p starts where p - 1 ends.
    std::vector<std::unique_ptr<Pass>> passes;
    int64_t pos0 = cache.n_past();
    for (size_t i = 0; i < parts.size(); ++i) {
        passes.push_back(begin_pass(parts[i], pos0, opts[i]));
        pos0 += static_cast<int64_t>(parts[i].size());
    }
    for (int64_t l = 0; l < m_config.n_layer; ++l) {
        for (auto& p : passes) run_layer(*p, cache, l);
        if (after_layer) after_layer(l);
    }
    cache.set_n_past(pos0);
    std::vector<at::Tensor> logits;
    for (auto& p : passes) logits.push_back(end_pass(*p));
    return logits;
}

std::unique_ptr<LlamaModel::Pass> LlamaModel::begin_pass(const std::vector<int32_t>& tokens, int64_t pos0,
                                                         const ForwardOptions& opts) const {
    const ModelConfig& c = m_config;
    const auto T = static_cast<int64_t>(tokens.size());
    auto p = std::make_unique<Pass>(opts);
    p->T = T;
    p->pos0 = pos0;
    at::Tensor ids = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong).to(m_opts.device);  // [T]
    p->pos = at::arange(pos0, pos0 + T, at::TensorOptions().dtype(at::kLong));  // [T] (CPU)
    if (opts.last_queries) opts.last_queries->assign(static_cast<size_t>(c.n_layer), at::Tensor());
    if (opts.capture) {
        opts.capture->window_queries.assign(static_cast<size_t>(c.n_layer), at::Tensor());
        opts.capture->h2o_scores.assign(static_cast<size_t>(c.n_layer), at::Tensor());
        opts.capture->queries.assign(static_cast<size_t>(opts.capture->query_stats ? c.n_layer : 0), QueryStats{});
    }
    if (opts.probe) {
        opts.probe->probs.assign(static_cast<size_t>(c.n_layer), at::Tensor());
    }
    // Float32 on the CPU: the row-wise steps are core/quant's fused loops (prefill_ops.h), RoPE's
    // angles computed once per table for every layer.
    p->fused = m_opts.device.is_cpu() && m_opts.dtype == at::kFloat;
    p->rope_rows.resize(m_ropes.size());
    p->x = m_tok_embd.gather_rows(ids).to(m_opts.dtype);   // [T, E]
    if (c.embd_scale != 1.0f) p->x = p->x * c.embd_scale;  // gemma
    p->clk.lap(ForwardProfile::Embed);
    return p;
}

void LlamaModel::run_layer(Pass& p, KvCache& cache, int64_t l) const {
    const ModelConfig& c = m_config;
    const ForwardOptions& opts = p.opts;
    const int64_t T = p.T, pos0 = p.pos0;
    const at::Tensor& pos = p.pos;
    at::Tensor& x = p.x;
    StageClock& clk = p.clk;
    const int64_t H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim;
    using S = ForwardProfile;
    auto rope_heads = [&](const at::Tensor& y, size_t table) {  // [T, h, D] -> [h, T, D]
        const model_ops::RopeTable& rt = m_ropes[table];
        if (!p.fused || !y.is_contiguous()) return model_ops::apply_rope(y.transpose(0, 1), pos, rt).contiguous();
        if (!p.rope_rows[table]) p.rope_rows[table] = prefill_ops::rope_rows_for(pos, rt);
        return prefill_ops::rope_to_heads(y, *p.rope_rows[table], rt);
    };
    check_cancel(opts.cancel);
    const Layer& L = m_layers[static_cast<size_t>(l)];
    if (p.fused && T > kLayerChunk) {
        // A long prompt: the same layer in token chunks (peak memory; see long_prompt_layer).
        if (!p.rope_rows[L.rope]) p.rope_rows[L.rope] = prefill_ops::rope_rows_for(pos, m_ropes[L.rope]);
        long_prompt_layer(l, x, cache.layer(l), pos, pos0, *p.rope_rows[L.rope], opts, clk);
        if (opts.on_layer) opts.on_layer(l + 1, c.n_layer);
        return;
    }
    at::Tensor h = rms_norm(x, L.attn_norm, c.rms_eps);  // [T, E]
    clk.lap(S::Norms);
    // One pass over the kernel threads for the three products of a decode step.
    std::vector<at::Tensor> qkv = WeightMatrix::apply_many({&L.wq, &L.wk, &L.wv}, h);
    if (L.bq.defined()) {
        qkv[0].add_(L.bq);
        qkv[1].add_(L.bk);
        qkv[2].add_(L.bv);
    }
    clk.lap(S::QkvProj);
    at::Tensor q = qkv[0].view({T, H, D});                    // [T, H, D]
    at::Tensor k = qkv[1].view({T, Hkv, D});                  // [T, Hkv, D]
    at::Tensor v = qkv[2].view({T, Hkv, D}).transpose(0, 1);  // [Hkv, T, D]
    if (c.qk_norm) {                                          // per head, before RoPE
        q = rms_norm(q, L.q_norm, c.rms_eps);
        k = rms_norm(k, L.k_norm, c.rms_eps);
        clk.lap(S::Norms);
    }
    if (opts.capture && opts.capture->query_stats) opts.capture->queries[static_cast<size_t>(l)] = query_stats(q, pos0);
    q = rope_heads(q, L.rope);  // [H, T, D]
    k = rope_heads(k, L.rope);  // [Hkv, T, D]
    clk.lap(S::Rope);
    LayerKv& kv = cache.layer(l);
    kv.append(k, v, pos);
    // The projections' outputs and the normed input are copied by now: release them before
    // attention's buffers are taken (a long prompt's peak memory is this part of a layer).
    qkv.clear();
    v = at::Tensor();
    h = at::Tensor();
    clk.lap(S::KvAppend);
    if (opts.last_queries && static_cast<int64_t>(opts.last_queries->size()) == c.n_layer)
        (*opts.last_queries)[static_cast<size_t>(l)] = q.select(1, T - 1).to(at::kFloat).unsqueeze(0).clone();
    if (opts.capture && opts.capture->max_window > 0) {
        const int64_t w = std::min(opts.capture->max_window, T);
        opts.capture->window_queries[static_cast<size_t>(l)] =
            q.narrow(1, T - w, w).to(at::kFloat).clone();  // [H, W, D]
        clk.lap(S::Capture);
    }
    at::Tensor a = attention(q, kv, pos, l, opts);  // [T, H*D]
    clk.lap(S::Attention);
    check_cancel(opts.cancel);      // twice per layer: a layer of a long prompt takes a while
    at::Tensor o = dense(a, L.wo);  // [T, E]
    a = at::Tensor();
    clk.lap(S::OutProj);
    add_residual(x, o, L.attn_post_norm, c.rms_eps, clk);  // x is this pass's own tensor
    h = rms_norm(x, L.ffn_norm, c.rms_eps);
    clk.lap(S::Norms);
    std::vector<at::Tensor> gu = WeightMatrix::apply_many({&L.w_gate, &L.w_up}, h);  // [T, F] each
    clk.lap(S::FfnProj);
    at::Tensor gate = gu[0];
    const bool fuse_act = p.fused && prefill_ops::applicable(gate) && prefill_ops::applicable(gu[1]);
    if (c.ffn_act == FfnActivation::GeluTanh) {
        if (fuse_act) prefill_ops::gelu_tanh_mul(gate, gu[1]);  // one fused pass
        else gate = at::gelu(gate, "tanh") * gu[1];
    } else if (fuse_act) {
        prefill_ops::silu_mul(gate, gu[1]);
    } else {
        gate = at::silu(gate) * gu[1];
    }
    clk.lap(S::Activation);
    at::Tensor ff = dense(gate, L.w_down);  // [T, E]
    clk.lap(S::FfnProj);
    add_residual(x, ff, L.ffn_post_norm, c.rms_eps, clk);
    if (opts.on_layer) opts.on_layer(l + 1, c.n_layer);
}

at::Tensor LlamaModel::end_pass(Pass& p) const {
    const ModelConfig& c = m_config;
    const ForwardOptions& opts = p.opts;
    const int64_t T = p.T;
    const at::Tensor& x = p.x;
    const int64_t from = opts.all_logits ? std::min(std::max<int64_t>(opts.logits_from, 0), T - 1) : T - 1;
    at::Tensor last = from == 0 ? x : x.narrow(0, from, T - from);
    at::Tensor logits = dense(rms_norm(last, m_output_norm, c.rms_eps), m_output).to(at::kFloat);  // [T or 1, V]
    if (c.final_softcap > 0.0f) logits = at::tanh(logits / c.final_softcap) * c.final_softcap;     // gemma2
    p.clk.lap(ForwardProfile::Logits);
    return logits;
}

}  // namespace snapkv
