// LlamaModel::forward_steps: one token for each of n sequences (each with its own KV cache) on the
// CPU in float32, on per-thread buffers that live across calls; forward_one is the case n = 1 and
// forward_batch the public entry. Each weight product serves all n sequences from one pass over
// the weights (matvec_many_batch) with the single-sequence arithmetic, so a sequence's logits do
// not depend on the batch it ran in. forward() spends most of a decode step's non-kernel time in LibTorch's fixed
// cost per operation (dispatch, allocation, views) while the kernel threads wait; here a layer is
// the same sequence of operations in the same float arithmetic, on plain arrays: the fused norms,
// RoPE and masking of decode_ops, the core/quant products and attention kernels, and core/quant's
// softmax, SwiGLU and GeGLU. LibTorch is called once per token (embedding row, logits tensor).
//
// Dimensions as in llama_model.h; F = rows of the layer's gate matrix.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/common/errors.h"
#include "core/model/decode_ops.h"
#include "core/model/llama_model.h"
#include "core/quant/qkernels.h"

namespace snapkv {

namespace {

// One thread's buffers for single-token steps, grown on demand and reused.
struct StepBuffers {
    std::vector<float> x, h, q, k, v, att, o, gate, up, probs;

    static StepBuffers& get() {
        thread_local StepBuffers b;
        return b;
    }
};

float* sized(std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
    return v.data();
}

const float* ptr(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

void add_into(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

at::Tensor LlamaModel::forward_one(int32_t token, KvCache& cache, const ForwardOptions& opts) const {
    KvCache* caches[] = {&cache};
    return forward_steps(&token, caches, 1, opts);
}

bool LlamaModel::can_step_raw(const KvCache& cache) const {
    if (!m_raw_decode || cache.n_layer() != m_config.n_layer) return false;
    for (int64_t l = 0; l < cache.n_layer(); ++l)
        if (!cache.layer(l).cpu_readable()) return false;
    return true;
}

at::Tensor LlamaModel::forward_steps(const int32_t* tokens, KvCache* const* caches, int64_t n,
                                     const ForwardOptions& opts) const {
    c10::InferenceMode guard;
    const ModelConfig& c = m_config;
    const int64_t H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim, E = c.n_embd;
    TORCH_CHECK(!opts.probe || n == 1, "model: an attention probe needs a single sequence");
    if (opts.probe) opts.probe->probs.assign(static_cast<size_t>(c.n_layer), at::Tensor());
    if (opts.last_queries) {
        opts.last_queries->clear();
        for (int64_t l = 0; l < c.n_layer; ++l)
            opts.last_queries->push_back(at::empty({n, H, D}, at::TensorOptions().dtype(at::kFloat)));
    }
    std::vector<int64_t> pos(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
        pos[static_cast<size_t>(j)] = caches[j]->n_past();
        caches[j]->reserve(1);
    }

    // Sequence j's rows at offset j * width of each buffer.
    StepBuffers& b = StepBuffers::get();
    float* x = sized(b.x, n * E);
    float* h = sized(b.h, n * E);
    float* q = sized(b.q, n * H * D);
    float* k = sized(b.k, n * Hkv * D);
    float* v = sized(b.v, n * Hkv * D);
    float* att = sized(b.att, n * H * D);
    float* o = sized(b.o, n * E);
    {
        std::vector<int64_t> ids(tokens, tokens + n);
        const at::Tensor rows =
            m_tok_embd.gather_rows(at::tensor(ids, at::kLong)).to(at::kFloat).contiguous();  // [n, E]
        std::memcpy(x, rows.data_ptr<float>(), static_cast<size_t>(n * E) * sizeof(float));
    }
    if (c.embd_scale != 1.0f)
        for (int64_t i = 0; i < n * E; ++i) x[i] *= c.embd_scale;  // gemma

    // cos / sin of each sequence's position for each distinct RoPE table (gemma3's local and global
    // layers alternate; rope_angles keeps only the last one): angles[j * tables + t].
    const size_t n_tables = m_ropes.size();
    std::vector<decode_ops::RopeAngles> angles;
    angles.reserve(static_cast<size_t>(n) * n_tables);
    for (int64_t j = 0; j < n; ++j)
        for (const model_ops::RopeTable& r : m_ropes) {
            model_ops::check_rope_position(r, pos[static_cast<size_t>(j)]);
            angles.push_back(decode_ops::rope_angles(pos[static_cast<size_t>(j)], r.inv_freq, r.attn_factor));
        }
    auto norm_rows = [&](const float* in, const at::Tensor& w, float* out) {
        for (int64_t j = 0; j < n; ++j) decode_ops::rms_norm_rows(in + j * E, ptr(w), 1, E, c.rms_eps, out + j * E);
    };
    auto add_rows = [&](const float* y) { add_into(x, y, n * E); };

    for (int64_t l = 0; l < c.n_layer; ++l) {
        if (opts.cancel && opts.cancel->load(std::memory_order_relaxed)) throw Cancelled();
        const Layer& L = m_layers[static_cast<size_t>(l)];
        const model_ops::RopeTable& rope = m_ropes[L.rope];
        norm_rows(x, L.attn_norm, h);
        {
            const WeightMatrix* ws[] = {&L.wq, &L.wk, &L.wv};
            float* ys[] = {q, k, v};
            WeightMatrix::apply_raw_batch(ws, 3, h, n, ys);
        }
        for (int64_t j = 0; j < n; ++j) {
            float* qj = q + j * H * D;
            float* kj = k + j * Hkv * D;
            float* vj = v + j * Hkv * D;
            if (L.bq.defined()) {
                add_into(qj, ptr(L.bq), H * D);
                add_into(kj, ptr(L.bk), Hkv * D);
                add_into(vj, ptr(L.bv), Hkv * D);
            }
            if (c.qk_norm) {  // per head, before RoPE
                decode_ops::rms_norm_rows(qj, ptr(L.q_norm), H, D, c.rms_eps, qj);
                decode_ops::rms_norm_rows(kj, ptr(L.k_norm), Hkv, D, c.rms_eps, kj);
            }
            const decode_ops::RopeAngles& a = angles[static_cast<size_t>(j) * n_tables + L.rope];
            decode_ops::rope_rows(qj, H, D, a, rope.n_rot, rope.neox);
            decode_ops::rope_rows(kj, Hkv, D, a, rope.n_rot, rope.neox);
            if (opts.last_queries)
                std::memcpy((*opts.last_queries)[static_cast<size_t>(l)].data_ptr<float>() + j * H * D, qj,
                            static_cast<size_t>(H * D) * sizeof(float));

            // Attention of the new token over its own cache.
            LayerKv& kv = caches[j]->layer(l);
            kv.append_one(kj, D, vj, D, Hkv, pos[static_cast<size_t>(j)]);
            float* probs = sized(b.probs, H * kv.size());                                // [H, S]
            attend_one(qj, kv, pos[static_cast<size_t>(j)], l, probs, att + j * H * D);  // [H, D]
            if (opts.probe) {
                at::Tensor p = at::empty({H, kv.size()}, at::TensorOptions().dtype(at::kFloat));
                std::memcpy(p.data_ptr<float>(), probs, static_cast<size_t>(p.numel()) * sizeof(float));
                opts.probe->probs[static_cast<size_t>(l)] = p;
            }
        }
        {
            const WeightMatrix* ws[] = {&L.wo};
            WeightMatrix::apply_raw_batch(ws, 1, att, n, &o);
        }
        if (c.post_norms) norm_rows(o, L.attn_post_norm, o);
        add_rows(o);
        norm_rows(x, L.ffn_norm, h);
        const int64_t F = L.w_gate.rows();
        float* gate = sized(b.gate, n * F);
        float* up = sized(b.up, n * F);
        {
            const WeightMatrix* ws[] = {&L.w_gate, &L.w_up};
            float* ys[] = {gate, up};
            WeightMatrix::apply_raw_batch(ws, 2, h, n, ys);
        }
        for (int64_t j = 0; j < n; ++j) {
            if (c.ffn_act == FfnActivation::GeluTanh) {
                gelu_tanh_mul(gate + j * F, up + j * F, F);
            } else {
                silu_mul(gate + j * F, up + j * F, F);
            }
        }
        {
            const WeightMatrix* ws[] = {&L.w_down};
            WeightMatrix::apply_raw_batch(ws, 1, gate, n, &o);
        }
        if (c.post_norms) norm_rows(o, L.ffn_post_norm, o);
        add_rows(o);
        if (opts.on_layer) opts.on_layer(l + 1, c.n_layer);
    }
    for (int64_t j = 0; j < n; ++j) caches[j]->set_n_past(pos[static_cast<size_t>(j)] + 1);
    norm_rows(x, m_output_norm, h);
    at::Tensor logits = at::empty({n, m_output.rows()}, at::TensorOptions().dtype(at::kFloat));  // [n, V]
    {
        const WeightMatrix* ws[] = {&m_output};
        float* ys[] = {logits.data_ptr<float>()};
        WeightMatrix::apply_raw_batch(ws, 1, h, n, ys);
    }
    if (c.final_softcap > 0.0f) logits = at::tanh(logits / c.final_softcap) * c.final_softcap;  // gemma2
    return logits;
}

at::Tensor LlamaModel::forward_batch(const std::vector<int32_t>& tokens, const std::vector<KvCache*>& caches,
                                     const ForwardOptions& opts) const {
    TORCH_CHECK(tokens.size() == caches.size(), "model: forward_batch needs one token per cache");
    TORCH_CHECK(!opts.capture && !opts.probe && !opts.all_logits,
                "model: forward_batch takes no capture, probe or all_logits");
    const auto n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw InputError("model: forward_batch called with no sequences");
    check_tokens(tokens);
    bool raw = true;
    for (const KvCache* cache : caches) raw = raw && can_step_raw(*cache);
    if (raw) return forward_steps(tokens.data(), caches.data(), n, opts);
    // Other devices and storages: one forward() per sequence (last queries stacked per layer).
    std::vector<at::Tensor> rows;
    std::vector<std::vector<at::Tensor>> queries(static_cast<size_t>(n));
    ForwardOptions one = opts;
    for (int64_t j = 0; j < n; ++j) {
        one.last_queries = opts.last_queries ? &queries[static_cast<size_t>(j)] : nullptr;
        rows.push_back(forward({tokens[static_cast<size_t>(j)]}, *caches[static_cast<size_t>(j)], one));
    }
    if (opts.last_queries) {
        opts.last_queries->clear();
        for (int64_t l = 0; l < m_config.n_layer; ++l) {
            std::vector<at::Tensor> per_seq;
            for (int64_t j = 0; j < n; ++j) per_seq.push_back(queries[static_cast<size_t>(j)][static_cast<size_t>(l)]);
            opts.last_queries->push_back(at::cat(per_seq, 0));
        }
    }
    return at::cat(rows, 0);
}

}  // namespace snapkv
