// LlamaModel::forward_one: a single-token step on the CPU in float32, on per-thread buffers that
// live across calls. forward() spends most of a decode step's non-kernel time in LibTorch's fixed
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
    c10::InferenceMode guard;
    const ModelConfig& c = m_config;
    const int64_t H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim, E = c.n_embd;
    const int64_t pos = cache.n_past();
    if (opts.probe) opts.probe->probs.assign(static_cast<size_t>(c.n_layer), at::Tensor());
    cache.reserve(1);

    StepBuffers& b = StepBuffers::get();
    float* x = sized(b.x, E);
    float* h = sized(b.h, E);
    float* q = sized(b.q, H * D);
    float* k = sized(b.k, Hkv * D);
    float* v = sized(b.v, Hkv * D);
    float* att = sized(b.att, H * D);
    float* o = sized(b.o, E);
    {
        const at::Tensor row = m_tok_embd.gather_rows(at::tensor({static_cast<int64_t>(token)}, at::kLong))
                                   .to(at::kFloat)
                                   .contiguous();  // [1, E]
        std::memcpy(x, row.data_ptr<float>(), static_cast<size_t>(E) * sizeof(float));
    }
    if (c.embd_scale != 1.0f)
        for (int64_t i = 0; i < E; ++i) x[i] *= c.embd_scale;  // gemma

    // cos / sin of this position for each distinct RoPE table (gemma3's local and global layers
    // alternate; rope_angles keeps only the last one).
    std::vector<decode_ops::RopeAngles> angles;
    angles.reserve(m_ropes.size());
    for (const model_ops::RopeTable& r : m_ropes) {
        model_ops::check_rope_position(r, pos);
        angles.push_back(decode_ops::rope_angles(pos, r.inv_freq, r.attn_factor));
    }

    for (int64_t l = 0; l < c.n_layer; ++l) {
        if (opts.cancel && opts.cancel->load(std::memory_order_relaxed)) throw Cancelled();
        const Layer& L = m_layers[static_cast<size_t>(l)];
        const model_ops::RopeTable& rope = m_ropes[L.rope];
        decode_ops::rms_norm_rows(x, ptr(L.attn_norm), 1, E, c.rms_eps, h);
        {
            const WeightMatrix* ws[] = {&L.wq, &L.wk, &L.wv};
            float* ys[] = {q, k, v};
            WeightMatrix::apply_raw(ws, 3, h, ys);
        }
        if (L.bq.defined()) {
            add_into(q, ptr(L.bq), H * D);
            add_into(k, ptr(L.bk), Hkv * D);
            add_into(v, ptr(L.bv), Hkv * D);
        }
        if (c.qk_norm) {  // per head, before RoPE
            decode_ops::rms_norm_rows(q, ptr(L.q_norm), H, D, c.rms_eps, q);
            decode_ops::rms_norm_rows(k, ptr(L.k_norm), Hkv, D, c.rms_eps, k);
        }
        decode_ops::rope_rows(q, H, D, angles[L.rope], rope.n_rot, rope.neox);
        decode_ops::rope_rows(k, Hkv, D, angles[L.rope], rope.n_rot, rope.neox);

        // Attention of the new token over the cache.
        LayerKv& kv = cache.layer(l);
        kv.append_one(k, D, v, D, Hkv, pos);
        float* probs = sized(b.probs, H * kv.size());  // [H, S]
        attend_one(q, kv, pos, l, probs, att);         // att [H, D]
        if (opts.probe) {
            at::Tensor p = at::empty({H, kv.size()}, at::TensorOptions().dtype(at::kFloat));
            std::memcpy(p.data_ptr<float>(), probs, static_cast<size_t>(p.numel()) * sizeof(float));
            opts.probe->probs[static_cast<size_t>(l)] = p;
        }

        {
            const WeightMatrix* ws[] = {&L.wo};
            WeightMatrix::apply_raw(ws, 1, att, &o);
        }
        if (c.post_norms) decode_ops::rms_norm_rows(o, ptr(L.attn_post_norm), 1, E, c.rms_eps, o);
        add_into(x, o, E);
        decode_ops::rms_norm_rows(x, ptr(L.ffn_norm), 1, E, c.rms_eps, h);
        const int64_t F = L.w_gate.rows();
        float* gate = sized(b.gate, F);
        float* up = sized(b.up, F);
        {
            const WeightMatrix* ws[] = {&L.w_gate, &L.w_up};
            float* ys[] = {gate, up};
            WeightMatrix::apply_raw(ws, 2, h, ys);
        }
        if (c.ffn_act == FfnActivation::GeluTanh) {
            gelu_tanh_mul(gate, up, F);
        } else {
            silu_mul(gate, up, F);
        }
        {
            const WeightMatrix* ws[] = {&L.w_down};
            WeightMatrix::apply_raw(ws, 1, gate, &o);
        }
        if (c.post_norms) decode_ops::rms_norm_rows(o, ptr(L.ffn_post_norm), 1, E, c.rms_eps, o);
        add_into(x, o, E);
        if (opts.on_layer) opts.on_layer(l + 1, c.n_layer);
    }
    cache.set_n_past(pos + 1);
    decode_ops::rms_norm_rows(x, ptr(m_output_norm), 1, E, c.rms_eps, h);
    at::Tensor logits = at::empty({1, m_output.rows()}, at::TensorOptions().dtype(at::kFloat));  // [1, V]
    {
        const WeightMatrix* ws[] = {&m_output};
        float* ys[] = {logits.data_ptr<float>()};
        WeightMatrix::apply_raw(ws, 1, h, ys);
    }
    if (c.final_softcap > 0.0f) logits = at::tanh(logits / c.final_softcap) * c.final_softcap;  // gemma2
    return logits;
}

}  // namespace snapkv
