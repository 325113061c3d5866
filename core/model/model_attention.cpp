// LlamaModel::attention: grouped-query attention of one layer's queries over its KV cache (on the
// CPU in float32 core/quant's blocked kernels, elsewhere ATen in query chunks; never L x L for all
// heads), with the architecture's scale, logit soft-cap and the
// layer's sliding window, in transformers' order (eager_attention_forward): scores * scale,
// soft-cap, mask, softmax in float32. Also fills the optional H2O sums and the last-query probe.
//
// Dimensions: T = queries in this call, H = n_head, Hc = heads held by the cache, g = H / Hc,
// D = head_dim, S = cache slots, tc = queries in a chunk, s = slots a chunk may see.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/model/decode_ops.h"
#include "core/model/llama_model.h"
#include "core/quant/qkernels.h"

namespace snapkv {

void LlamaModel::attend_one(const float* q, const LayerKv& kv, int64_t q_pos, int64_t layer, float* probs,
                            float* out) const {
    // q [H, D]; probs [Hc, g, S]; out [H, D]. The core/quant kernels read each cache head's rows in
    // place (heads capacity * D apart) instead of BLAS packing them; scale, mask and softmax in
    // core/quant's one kernel, rows over the kernel threads (with a soft-cap, decode_ops' pass and
    // core/quant's softmax on the caller).
    const int64_t H = m_config.n_head, D = m_config.head_dim;
    const int64_t Hc = kv.n_heads(), g = H / Hc, S = kv.size(), cap = kv.capacity(), head_stride = cap * D;
    const int64_t window = m_config.layers[static_cast<size_t>(layer)].sliding_window;
    // A sliding-window layer keeps every position of a plain run (prefill, generation) but the
    // query sees only the last `window` of them: start at the first slot any head can see. Each
    // head's slots before its first visible one are invisible by construction, so this needs no
    // ordering of the cache; the rest is masked by position as before. At 4K tokens on Gemma 3
    // (15 of 18 layers with a 512 window) this skips 7/8 of those layers' keys and values.
    int64_t s0 = 0;
    if (window > 0) {
        s0 = S;
        const int64_t oldest = q_pos - window + 1;
        for (int64_t h = 0; h < Hc && s0 > 0; ++h) {
            const int64_t* ph = kv.position_data() + h * cap;
            int64_t s = 0;
            while (s < s0 && ph[s] < oldest) ++s;
            s0 = std::min(s0, s);
        }
        if (s0 == S) s0 = 0;  // nothing visible (cannot happen after an append): let the mask say so
    }
    const int64_t n = S - s0;
    // The cache's rows are read in place, in their stored format: f32; f16 or bf16, widened exactly
    // as the kernels load them; q8_0 as int8 x f16 scale, as the cache's own decoder gives them (the
    // bits of a float32 copy, at a half or a quarter of its bytes). Rows a q8_0 cache stores rotated
    // (kv_rotation) stay rotated, and so does the attention, as in llama.cpp: the query is rotated
    // like the keys and the output rotated back like the values (one row per head instead of every
    // slot's; the transform is orthonormal, so only float rounding differs from rotating the rows
    // back).
    TORCH_CHECK(kv.cpu_readable(), "attention: the single-token CPU step needs a contiguous CPU cache");
    const KvType t = kv.type();
    const RowFormat rows = t == KvType::F16    ? RowFormat::F16
                           : t == KvType::BF16 ? RowFormat::BF16
                           : t == KvType::Q8_0 ? RowFormat::Q8_0
                                               : RowFormat::F32;
    const void* keys = nullptr;
    const void* vals = nullptr;
    Q8Rows kq{}, vq{};
    if (rows == RowFormat::Q8_0) {
        kq = {static_cast<const int8_t*>(kv.key_rows()) + s0 * D, kv.key_scales() + s0 * D / kQ8_0Block};
        vq = {static_cast<const int8_t*>(kv.value_rows()) + s0 * D, kv.value_scales() + s0 * D / kQ8_0Block};
        keys = &kq;
        vals = &vq;
    } else {
        const size_t skip = static_cast<size_t>(s0 * D) * (rows == RowFormat::F32 ? 4 : 2);
        keys = static_cast<const uint8_t*>(kv.key_rows()) + skip;
        vals = static_cast<const uint8_t*>(kv.value_rows()) + skip;
    }
    const int64_t k_rot = kv.key_rotation(), v_rot = kv.value_rotation();
    thread_local std::vector<float> qbuf;
    if (k_rot > 0) {
        qbuf.assign(q, q + H * D);
        kv_rotate_rows(qbuf.data(), H, D, k_rot);
        q = qbuf.data();
    }
    attention_scores(q, keys, rows, head_stride, Hc, g, n, D, probs);
    if (m_config.attn_softcap > 0.0) {
        decode_ops::scale_mask_rows(probs, Hc, g, n, kv.position_data() + s0, cap, 1, q_pos, m_config.attn_scale,
                                    m_config.attn_softcap, window);
        softmax_rows(probs, Hc * g, n);
    } else {
        attention_softmax(probs, Hc, g, n, kv.position_data() + s0, cap, q_pos, static_cast<float>(m_config.attn_scale),
                          window);
    }
    attention_values(probs, vals, rows, head_stride, Hc, g, n, D, out);
    if (v_rot > 0) kv_rotate_rows(out, H, D, v_rot);
    if (s0 > 0) {
        // Rows of n probabilities -> rows of S with zeros for the skipped slots, last row first
        // (each row moves to a higher address).
        for (int64_t r = Hc * g - 1; r >= 0; --r) {
            std::memmove(probs + r * S + s0, probs + r * n, static_cast<size_t>(n) * sizeof(float));
            std::fill(probs + r * S, probs + r * S + s0, 0.0f);
        }
    }
}

at::Tensor LlamaModel::attention(const at::Tensor& q, LayerKv& kv, const at::Tensor& q_pos, int64_t layer,
                                 const ForwardOptions& opts) const {
    // q: [H, T, D], rows of D contiguous; the cache already holds this call's keys; q_pos: [T] int64.
    const int64_t H = q.size(0), T = q.size(1), D = q.size(2);
    const int64_t Hc = kv.n_heads();
    const int64_t g = H / Hc;
    const int64_t S = kv.size();
    const int64_t window = m_config.layers[static_cast<size_t>(layer)].sliding_window;  // 0: none
    const double softcap = m_config.attn_softcap;
    at::Tensor P = kv.positions();  // [Hc, S]
    at::Tensor qpos = q_pos.to(P.device());
    const double scale = m_config.attn_scale;
    if (T == 1 && q.device().is_cpu() && q.scalar_type() == at::kFloat && !(opts.capture && opts.capture->h2o) &&
        kv.cpu_readable()) {
        // One float32 query per head on the CPU (decode with a capture; forward_one otherwise).
        const at::Tensor qc = q.contiguous();
        at::Tensor probs = at::empty({H, S}, qc.options());  // [H, S]
        at::Tensor o = at::empty({H, T, D}, qc.options());   // [H, 1, D]
        attend_one(qc.data_ptr<float>(), kv, q_pos.item<int64_t>(), layer, probs.data_ptr<float>(),
                   o.data_ptr<float>());
        if (opts.probe) opts.probe->probs[static_cast<size_t>(layer)] = probs;
        return o.view({T, H * D});
    }
    if (T > 1 && q.device().is_cpu() && q.scalar_type() == at::kFloat && q.stride(2) == 1 && kv.cpu_readable() &&
        !opts.probe) {
        // Prefill on the CPU in float32: core/quant's blocked attention with an online softmax,
        // never a [T, S] score matrix (H2O's sums from a second pass over the keys); written
        // straight in the [T, H * D] layout wo reads. The chunked ATen path below serves CUDA,
        // other dtypes and the last-query probe.
        const at::Tensor qp = q_pos.to(at::kLong).contiguous();
        at::Tensor o = at::empty({T, H * D}, q.options());  // [T, H*D]
        PrefillAttention pa;
        pa.q = q.data_ptr<float>();  // [H, T, D], rows of D contiguous
        pa.q_head_stride = q.stride(0);
        pa.q_tok_stride = q.stride(1);
        // f32 storage is read in place; other types are decoded for this call, one layer's K and
        // V in float32 (the scratch the memory estimate counts for non-f32 caches).
        at::Tensor k32, v32;
        if (kv.cpu_float()) {
            pa.k = kv.key_data();
            pa.v = kv.value_data();
            pa.kv_head_stride = kv.capacity() * D;
        } else {
            k32 = at::empty({Hc, S, D}, q.options());  // [Hc, S, D]
            v32 = at::empty({Hc, S, D}, q.options());
            kv.read_keys_f32(0, S, k32.data_ptr<float>());
            kv.read_values_f32(0, S, v32.data_ptr<float>());
            pa.k = k32.data_ptr<float>();
            pa.v = v32.data_ptr<float>();
            pa.kv_head_stride = S * D;
        }
        pa.kpos = kv.position_data();
        pa.kpos_head_stride = kv.capacity();
        pa.kpos_ascending = true;
        for (int64_t h = 0; h < Hc && pa.kpos_ascending; ++h) {
            const int64_t* ph = pa.kpos + h * pa.kpos_head_stride;
            for (int64_t s = 1; s < S && pa.kpos_ascending; ++s) pa.kpos_ascending = ph[s] >= ph[s - 1];
        }
        pa.qpos = qp.data_ptr<int64_t>();
        pa.Hc = Hc;
        pa.g = g;
        pa.T = T;
        pa.S = S;
        pa.D = D;
        pa.scale = static_cast<float>(scale);
        pa.softcap = static_cast<float>(softcap);
        pa.window = window;
        pa.out = o.data_ptr<float>();
        pa.out_head_stride = D;
        pa.out_tok_stride = H * D;
        at::Tensor h2o;
        if (opts.capture && opts.capture->h2o) {
            h2o = at::zeros({H, S}, q.options());  // [H, S]
            pa.h2o = h2o.data_ptr<float>();
        }
        attention_prefill(pa);
        if (h2o.defined()) opts.capture->h2o_scores[static_cast<size_t>(layer)] = h2o;
        return o;
    }
    // Decoded here, not above: for a non-f32 cache keys() / values() are copies the CPU paths do
    // not read.
    at::Tensor K = kv.keys();    // [Hc, S, D]
    at::Tensor V = kv.values();  // [Hc, S, D]
    at::Tensor qg = q.contiguous().view({Hc, g, T, D});
    at::Tensor out = at::empty({Hc, g, T, D}, q.options());
    const int64_t chunk = std::max<int64_t>(1, opts.attn_chunk);
    at::Tensor h2o;
    if (opts.capture && opts.capture->h2o) h2o = at::zeros({H, S}, q.options().dtype(at::kFloat));
    // Slots already in the cache before this call hold past positions unless the cache has padding
    // (AdaKV) or was filled out of order: then every column is masked by position, else only the
    // columns of this call's own slots need the causal mask (a third of prefill's memory traffic).
    // A sliding window may hide old slots too, so its layers mask every column.
    const int64_t s_old = S - T;
    const bool old_visible = window == 0 && !kv.has_padding() &&
                             (s_old == 0 || P.narrow(1, 0, s_old).max().item<int64_t>() < q_pos.min().item<int64_t>());
    const int64_t mask_from = old_visible ? s_old : 0;
    // A sliding-window layer whose slots hold ascending positions (a prefill's cache, or one
    // compressed in position order) lets each chunk skip the slots older than its first query's
    // window: they are masked for every query of the chunk (queries come in position order).
    // Those columns would be exp(-inf) = 0, so the result is the same up to summation order.
    bool skip_old = false;
    if (window > 0 && !kv.has_padding() && S > 1 && qpos.dim() == 1 && T > 1)
        skip_old = P.narrow(1, 1, S - 1).ge(P.narrow(1, 0, S - 1)).all().item<bool>() &&
                   qpos.narrow(0, 1, T - 1).gt(qpos.narrow(0, 0, T - 1)).all().item<bool>();
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t tc = std::min(chunk, T - t0);
        // Slots appended after this chunk's last query are in its future: skip them.
        const int64_t s_lim = S - (T - (t0 + tc));
        // Slots before s0 are older than the window of the chunk's first query, in every head.
        int64_t s0 = 0;
        if (skip_old) {
            const int64_t oldest_visible = qpos[t0].item<int64_t>() - window + 1;
            s0 = P.narrow(1, 0, s_lim).lt(oldest_visible).sum(1).min().item<int64_t>();
        }
        const int64_t s = s_lim - s0;
        at::Tensor qc = qg.narrow(2, t0, tc).reshape({Hc, g * tc, D});                   // [Hc, g*tc, D]
        at::Tensor Kc = K.narrow(1, s0, s);                                              // [Hc, s, D]
        at::Tensor scores = at::bmm(qc, Kc.transpose(1, 2)).to(at::kFloat).mul_(scale);  // [Hc, g*tc, s]
        if (softcap > 0.0) scores.div_(softcap).tanh_().mul_(softcap);                   // gemma2
        at::Tensor rows_pos = qpos.narrow(0, t0, tc).repeat({g}).view({1, g * tc, 1});   // [1, g*tc, 1]
        const int64_t n_mask = s_lim - std::max(mask_from, s0);
        at::Tensor cols = P.narrow(1, s_lim - n_mask, n_mask).unsqueeze(1);  // [Hc, 1, n]
        at::Tensor mask = cols.gt(rows_pos);                                 // future (and padding)
        if (window > 0) mask.logical_or_(cols.le(rows_pos - window));        // older than the window
        scores.narrow(2, s - n_mask, n_mask).masked_fill_(mask, -std::numeric_limits<float>::infinity());
        at::Tensor probs = at::softmax(scores, -1);                             // [Hc, g*tc, s]
        at::Tensor o = at::bmm(probs.to(q.scalar_type()), V.narrow(1, s0, s));  // [Hc, g*tc, D]
        out.narrow(2, t0, tc).copy_(o.view({Hc, g, tc, D}));
        at::Tensor p4 = probs.view({Hc, g, tc, s});  // [Hc, g, tc, s]
        if (h2o.defined()) h2o.narrow(1, s0, s).add_(p4.sum(2).reshape({H, s}));
        if (opts.probe && t0 + tc == T) {
            at::Tensor last = at::zeros({H, s_lim}, probs.options());  // [H, s_lim]
            last.narrow(1, s0, s).copy_(p4.select(2, tc - 1).reshape({H, s}));
            opts.probe->probs[static_cast<size_t>(layer)] = last;
        }
    }
    if (h2o.defined()) opts.capture->h2o_scores[static_cast<size_t>(layer)] = h2o;
    return out.view({H, T, D}).transpose(0, 1).reshape({T, H * D});
}

}  // namespace snapkv
