// LlamaModel::long_prompt_layer: one layer of a prompt longer than kLayerChunk tokens on the CPU
// in float32, with forward()'s operations chunk by chunk: a chunk's keys and values join the
// cache, then its queries attend over the cache so far (causal: nothing later is needed), then
// its output projection and feed-forward. Only x [T, E] is held whole, plus what a capture asks
// for; every other intermediate exists for one chunk at a time.
// Not here: CUDA and other dtypes (forward() runs the whole prompt at once there).
//
// Dimensions: T = tokens, n = tokens in a chunk, E = n_embd, H = n_head, Hkv = n_head_kv,
// D = head_dim, F = n_ff.
#include <algorithm>
#include <utility>

#include "core/model/forward_parts.h"
#include "core/model/llama_model.h"
#include "core/model/prefill_ops.h"

namespace snapkv {

namespace {

// A layer's matrix as a long prompt's chunks multiply it: dequantized once for all chunks when it
// fits WeightMatrix's tile (the products are then the ones WeightMatrix::apply computes for one
// tile), else left to WeightMatrix::apply, tile by tile per chunk, so that a large model's
// matrices are never held whole in float32.
class ChunkMatrix {
public:
    explicit ChunkMatrix(const WeightMatrix& w) : m_w(w) {
        if (!w.native() || w.rows() * w.cols() <= WeightMatrix::tile_values()) m_f = w.to_float();  // [O, I]
    }
    at::Tensor apply(const at::Tensor& x) const {  // [n, I] -> [n, O]
        return m_f.defined() ? at::linear(x, m_f) : m_w.apply(x);
    }

private:
    const WeightMatrix& m_w;
    at::Tensor m_f;
};

}  // namespace

void LlamaModel::long_prompt_layer(int64_t l, at::Tensor& x, LayerKv& kv, const at::Tensor& pos, int64_t pos0,
                                   const prefill_ops::RopeTableRows& rope, const ForwardOptions& opts,
                                   StageClock& clk) const {
    using S = ForwardProfile;
    using model_ops::rms_norm;
    const ModelConfig& c = m_config;
    const Layer& L = m_layers[static_cast<size_t>(l)];
    const model_ops::RopeTable& rt = m_ropes[L.rope];
    const int64_t T = x.size(0), H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim;
    PrefillCapture* cap = opts.capture;
    // Chunks of equal size up to one token, at most kLayerChunk: no one-token remainder (whose
    // products BLAS may sum in another order).
    const int64_t n_chunks = (T + kLayerChunk - 1) / kLayerChunk, chunk = (T + n_chunks - 1) / n_chunks;

    // What the capture keeps of the whole layer: ExpectedAttention's statistics read every
    // pre-RoPE query at once (one product, as kvpress); the window's post-RoPE queries; H2O's sums
    // over every query (the chunks' sums added up).
    at::Tensor q_all = cap && cap->query_stats ? at::empty({T, H, D}, x.options()) : at::Tensor();  // [T, H, D]
    const int64_t w = cap && cap->max_window > 0 ? std::min(cap->max_window, T) : 0;
    at::Tensor window = w > 0 ? at::empty({H, w, D}, x.options()) : at::Tensor();                  // [H, W, D]
    at::Tensor h2o = cap && cap->h2o ? at::zeros({H, kv.size() + T}, x.options()) : at::Tensor();  // [H, S]

    const ChunkMatrix wq(L.wq), wk(L.wk), wv(L.wv), wo(L.wo);
    clk.lap(S::QkvProj);
    const ChunkMatrix w_gate(L.w_gate), w_up(L.w_up), w_down(L.w_down);
    clk.lap(S::FfnProj);
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t n = std::min(chunk, T - t0);
        if (t0 > 0) check_cancel(opts.cancel);
        at::Tensor xc = x.narrow(0, t0, n);                   // [n, E] view
        at::Tensor h = rms_norm(xc, L.attn_norm, c.rms_eps);  // [n, E]
        clk.lap(S::Norms);
        at::Tensor qc = wq.apply(h), kc = wk.apply(h), vc = wv.apply(h);  // [n, H*D], [n, Hkv*D] x 2
        if (L.bq.defined()) {
            qc.add_(L.bq);
            kc.add_(L.bk);
            vc.add_(L.bv);
        }
        clk.lap(S::QkvProj);
        at::Tensor qh = qc.view({n, H, D}), kh = kc.view({n, Hkv, D});
        if (c.qk_norm) {  // per head, before RoPE
            qh = rms_norm(qh, L.q_norm, c.rms_eps);
            kh = rms_norm(kh, L.k_norm, c.rms_eps);
            clk.lap(S::Norms);
        }
        if (q_all.defined()) q_all.narrow(0, t0, n).copy_(qh);
        const at::Tensor qr = prefill_ops::rope_to_heads(qh, rope, rt, t0);  // [H, n, D]
        const at::Tensor kr = prefill_ops::rope_to_heads(kh, rope, rt, t0);  // [Hkv, n, D]
        clk.lap(S::Rope);
        // The chunk's keys and values join the cache before its attention (causal: a chunk's
        // queries see the earlier chunks and their own earlier tokens).
        kv.append(kr, vc.view({n, Hkv, D}).transpose(0, 1), pos.narrow(0, t0, n));
        h = at::Tensor();
        qc = kc = vc = at::Tensor();
        clk.lap(S::KvAppend);
        if (w > 0 && t0 + n > T - w) {
            const int64_t from = std::max(t0, T - w);  // first window token here
            window.narrow(1, from - (T - w), t0 + n - from).copy_(qr.narrow(1, from - t0, t0 + n - from));
            clk.lap(S::Capture);
        }
        ForwardOptions chunk_opts = opts;
        PrefillCapture chunk_cap;
        if (h2o.defined()) {
            chunk_cap.h2o = true;
            chunk_cap.h2o_scores.assign(static_cast<size_t>(l) + 1, at::Tensor());
            chunk_opts.capture = &chunk_cap;
        } else {
            chunk_opts.capture = nullptr;
        }
        at::Tensor a = attention(qr, kv, pos.narrow(0, t0, n), l, chunk_opts);  // [n, H*D]
        if (h2o.defined()) {
            const at::Tensor& part = chunk_cap.h2o_scores[static_cast<size_t>(l)];  // [H, S so far]
            h2o.narrow(1, 0, part.size(1)).add_(part);
        }
        clk.lap(S::Attention);
        const at::Tensor o = wo.apply(a);  // [n, E]
        a = at::Tensor();
        clk.lap(S::OutProj);
        add_residual(xc, o, L.attn_post_norm, c.rms_eps, clk);
        h = rms_norm(xc, L.ffn_norm, c.rms_eps);  // [n, E]
        clk.lap(S::Norms);
        at::Tensor gate = w_gate.apply(h);    // [n, F]
        const at::Tensor up = w_up.apply(h);  // [n, F]
        clk.lap(S::FfnProj);
        if (c.ffn_act == FfnActivation::GeluTanh) prefill_ops::gelu_tanh_mul(gate, up);
        else prefill_ops::silu_mul(gate, up);
        clk.lap(S::Activation);
        const at::Tensor ff = w_down.apply(gate);  // [n, E]
        clk.lap(S::FfnProj);
        add_residual(xc, ff, L.ffn_post_norm, c.rms_eps, clk);
    }
    if (q_all.defined()) cap->queries[static_cast<size_t>(l)] = query_stats(q_all, pos0);
    if (window.defined()) cap->window_queries[static_cast<size_t>(l)] = window;
    if (h2o.defined()) cap->h2o_scores[static_cast<size_t>(l)] = h2o;
    clk.lap(S::Capture);
}

}  // namespace snapkv
