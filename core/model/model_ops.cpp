// See model_ops.h. RoPE angles are pos * inv_freq computed in double and cast once; the scaling
// formulas follow transformers' modeling_rope_utils.py (_compute_llama3_parameters,
// _compute_linear_scaling_rope_parameters, _compute_longrope_parameters) and llama.cpp's
// rope_freqs / rope_factors tensors.
#include "core/model/model_ops.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/common/errors.h"

namespace snapkv::model_ops {

at::Tensor dense(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    // For a single token the product is a matrix-vector one: at::linear would call a GEMM that
    // first packs (copies) the whole weight matrix, which made decode 2-3x slower than streaming
    // the weights once through GEMV.
    if (x.size(0) != 1 || !x.device().is_cpu()) return at::linear(x, w, b);
    at::Tensor y = at::mv(w, x.select(0, 0));
    if (b.defined()) y.add_(b);
    return y.unsqueeze(0);
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps) {
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor y = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return (y * w).to(x.scalar_type());
}

RopeTable rope_table(const ModelConfig& c, int64_t layer) {
    const LayerConfig& lc = c.layers.at(static_cast<size_t>(layer));
    const int64_t half = c.n_rot / 2;
    std::vector<double> inv(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
        inv[static_cast<size_t>(i)] =
            std::pow(static_cast<double>(lc.rope_freq_base), -2.0 * static_cast<double>(i) / c.n_rot);
    RopeTable t;
    t.n_rot = c.n_rot;
    t.neox = c.rope_neox;
    const RopeScaling& rs = c.rope_scaling;
    t.scaling = lc.rope_scaled ? rs.type : "none";
    if (!lc.rope_scaled || rs.type == "none" || rs.type.empty()) {
        // plain RoPE
    } else if (rs.type == "llama3" && !rs.freq_factors.empty()) {
        // llama.cpp stores Llama 3.1 frequency factors as a tensor and divides theta by them.
        for (int64_t i = 0; i < half; ++i) inv[static_cast<size_t>(i)] /= rs.freq_factors[static_cast<size_t>(i)];
    } else if (rs.type == "llama3") {
        // transformers' _compute_llama3_parameters.
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
    } else if (rs.type == "longrope") {
        // Short factors serve positions below the original context; transformers switches every
        // position to the long factors once a sequence passes it (and llama.cpp when the context
        // size does), which we do not implement: such positions are refused in apply_rope.
        for (int64_t i = 0; i < half; ++i) inv[static_cast<size_t>(i)] /= rs.short_factor.at(static_cast<size_t>(i));
        t.attn_factor = rs.attn_factor;
        t.max_pos = rs.original_ctx;
    } else {
        throw FileError(FileError::Kind::Unsupported,
                        "model: RoPE scaling '" + rs.type + "' is not supported (none, linear, llama3, longrope)");
    }
    t.inv_freq = at::tensor(inv, at::kDouble);
    return t;
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& pos, const RopeTable& t) {
    // x: [h, T, D]; pos: [T] int64. Angles in double, then float: [T, n_rot/2].
    if (t.max_pos > 0 && pos.numel() > 0 && pos.max().item<int64_t>() >= t.max_pos)
        throw InputError("model: position " + std::to_string(pos.max().item<int64_t>()) +
                         " is beyond the original context of " + std::to_string(t.max_pos) +
                         " tokens; longrope's long factors (needed past it) are not supported: "
                         "use a shorter document");
    const int64_t n_rot = t.n_rot;
    const int64_t half = n_rot / 2;
    const int64_t D = x.size(2);
    at::Tensor ang = pos.to(at::kDouble).cpu().unsqueeze(1) * t.inv_freq.unsqueeze(0);      // [T, half]
    at::Tensor cos = (ang.cos() * t.attn_factor).to(x.device(), at::kFloat).unsqueeze(0);  // [1, T, half]
    at::Tensor sin = (ang.sin() * t.attn_factor).to(x.device(), at::kFloat).unsqueeze(0);  // [1, T, half]
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor rot = xf.narrow(2, 0, n_rot);
    at::Tensor out;
    if (t.neox) {
        at::Tensor x0 = rot.narrow(2, 0, half), x1 = rot.narrow(2, half, half);           // [h, T, half]
        out = at::cat({x0 * cos - x1 * sin, x1 * cos + x0 * sin}, 2);
    } else {
        at::Tensor pairs = rot.reshape({rot.size(0), rot.size(1), half, 2});               // [h, T, half, 2]
        at::Tensor x0 = pairs.select(3, 0), x1 = pairs.select(3, 1);                       // [h, T, half]
        out = at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 3).reshape(rot.sizes());
    }
    if (n_rot < D) out = at::cat({out, xf.narrow(2, n_rot, D - n_rot)}, 2);
    return out.to(x.scalar_type());
}

}  // namespace snapkv::model_ops
