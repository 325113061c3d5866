// See decode_ops.h.
#include "core/model/decode_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "core/quant/qkernels.h"

namespace snapkv::decode_ops {

void rms_norm_rows(const float* x, const float* w, int64_t n, int64_t E, float eps, float* y) {
    for (int64_t r = 0; r < n; ++r, x += E, y += E) {
        double sum = 0.0;  // ggml_rms_norm sums the squares in double
        for (int64_t i = 0; i < E; ++i) sum += static_cast<double>(x[i] * x[i]);
        const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(E)) + eps);
        for (int64_t i = 0; i < E; ++i) y[i] = (x[i] * scale) * w[i];
    }
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps) {
    // x: [n, E]; w: [E] -> [n, E]
    const at::Tensor xc = x.contiguous();
    const at::Tensor wc = w.contiguous();
    at::Tensor y = at::empty({xc.size(0), xc.size(1)}, xc.options());
    rms_norm_rows(xc.data_ptr<float>(), wc.data_ptr<float>(), xc.size(0), xc.size(1), eps, y.data_ptr<float>());
    return y;
}

const RopeAngles& rope_angles(int64_t pos, const at::Tensor& inv_freq, double attn_factor) {
    // Every layer of a decode step asks for the same angles (twice: q and k), and a batched step
    // asks again for each sequence: keep the last few per thread, keyed by the position, the
    // factor and the frequencies themselves. A few, not one: models with a local and a global
    // RoPE base (Gemma 3) alternate between two tables layer by layer.
    struct Entry {
        int64_t pos = -1;
        double attn_factor = 0.0;
        std::vector<float> inv;
        RopeAngles angles;
    };
    constexpr size_t kEntries = 4;
    thread_local std::array<Entry, kEntries> cache;
    thread_local size_t next = 0;
    const at::Tensor f = inv_freq.to(at::kCPU).contiguous();
    const float* fp = f.data_ptr<float>();
    const auto half = static_cast<size_t>(f.numel());
    for (const Entry& e : cache)
        if (e.pos == pos && e.attn_factor == attn_factor && e.inv.size() == half &&
            std::equal(e.inv.begin(), e.inv.end(), fp))
            return e.angles;
    // The tensor operations of model_ops::apply_rope's general path, so the angles are the same
    // bits: pos * inv_freq rounded in float32, cos / sin in float32, then the factor.
    const at::Tensor ang = at::full({1, 1}, pos, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) *
                           f.unsqueeze(0);  // [1, half]
    at::Tensor cos = ang.cos(), sin = ang.sin();
    if (attn_factor != 1.0) {
        cos = cos * attn_factor;
        sin = sin * attn_factor;
    }
    cos = cos.contiguous();
    sin = sin.contiguous();
    Entry& e = cache[next];
    next = (next + 1) % kEntries;
    e.pos = pos;
    e.attn_factor = attn_factor;
    e.inv.assign(fp, fp + half);
    e.angles.cos.assign(cos.data_ptr<float>(), cos.data_ptr<float>() + cos.numel());
    e.angles.sin.assign(sin.data_ptr<float>(), sin.data_ptr<float>() + sin.numel());
    return e.angles;
}

void rope_rows(float* p, int64_t rows, int64_t D, const RopeAngles& a, int64_t n_rot, bool neox) {
    const int64_t half = n_rot / 2;
    for (int64_t r = 0; r < rows; ++r, p += D) {
        for (int64_t i = 0; i < half; ++i) {
            const float c = a.cos[static_cast<size_t>(i)], s = a.sin[static_cast<size_t>(i)];
            float* x0 = neox ? p + i : p + 2 * i;
            float* x1 = neox ? p + i + half : p + 2 * i + 1;
            const float v0 = *x0, v1 = *x1;
            *x0 = v0 * c - v1 * s;
            *x1 = neox ? v1 * c + v0 * s : v0 * s + v1 * c;
        }
    }
}

void rope_inplace(at::Tensor& x, const RopeAngles& a, int64_t n_rot, bool neox) {
    // x: [rows, D]
    rope_rows(x.data_ptr<float>(), x.size(0), x.size(1), a, n_rot, neox);
}

void scale_mask_rows(float* sp, int64_t Hc, int64_t g, int64_t S, const int64_t* pp, int64_t hs, int64_t ss,
                     int64_t q_pos, double scale, double softcap, int64_t window) {
    const float fscale = static_cast<float>(scale), fsoftcap = static_cast<float>(softcap);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    // Which slots a head's query sees, found once for its g rows; the rows' loops then have no
    // position loads or branches (they vectorize), and a head that sees every slot (a plain
    // decode without a window) only scales.
    thread_local std::vector<uint8_t> seen;
    seen.resize(static_cast<size_t>(S));
    for (int64_t h = 0; h < Hc; ++h) {
        const int64_t* ph = pp + h * hs;
        uint8_t all = 1;
        for (int64_t s = 0; s < S; ++s) {
            const int64_t p = ph[s * ss];
            const uint8_t v = !(p > q_pos || (window > 0 && p <= q_pos - window));
            seen[static_cast<size_t>(s)] = v;
            all &= v;
        }
        const uint8_t* vis = seen.data();
        for (int64_t j = 0; j < g; ++j) {
            float* row = sp + (h * g + j) * S;
            if (softcap > 0.0) {
                for (int64_t s = 0; s < S; ++s) {
                    const float v = std::tanh(row[s] * fscale / fsoftcap) * fsoftcap;
                    row[s] = vis[s] ? v : neg_inf;
                }
            } else if (all) {
                for (int64_t s = 0; s < S; ++s) row[s] *= fscale;
            } else {
                for (int64_t s = 0; s < S; ++s) row[s] = vis[s] ? row[s] * fscale : neg_inf;
            }
        }
    }
}

void scale_mask(at::Tensor& scores, const at::Tensor& positions, int64_t q_pos, double scale, double softcap,
                int64_t window) {
    // scores: [Hc, g, S]; positions: [Hc, S]
    scale_mask_rows(scores.data_ptr<float>(), scores.size(0), scores.size(1), scores.size(2),
                    positions.data_ptr<int64_t>(), positions.stride(0), positions.stride(1), q_pos, scale, softcap,
                    window);
}

void silu_mul_inplace(at::Tensor& gate, const at::Tensor& up) {
    silu_mul(gate.data_ptr<float>(), up.data_ptr<float>(), gate.numel());
}

}  // namespace snapkv::decode_ops
