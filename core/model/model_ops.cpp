// See model_ops.h. RoPE follows transformers' float32 arithmetic (modeling_rope_utils.py:
// _compute_default_rope_parameters, _compute_llama3_parameters, _compute_linear_scaling_rope_parameters,
// _compute_longrope_parameters, and the rotary embedding's forward) and llama.cpp's rope_freqs tensor.
#include "core/model/model_ops.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/common/errors.h"
#include "core/model/decode_ops.h"
#include "core/model/prefill_ops.h"

namespace snapkv::model_ops {

at::Tensor dense(const at::Tensor& x, const WeightMatrix& w, const at::Tensor& b) {
    at::Tensor y = w.apply(x);
    if (b.defined()) y.add_(b);
    return y;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps) {
    // One float32 token on the CPU: one fused pass (decode_ops.h) instead of six small ops.
    if (x.size(0) == 1 && x.device().is_cpu() && x.scalar_type() == at::kFloat)
        return decode_ops::rms_norm(x.reshape({-1, x.size(-1)}), w, eps).view(x.sizes());
    // Several float32 tokens on the CPU: the same arithmetic, rows spread over the kernel threads.
    if (prefill_ops::applicable(x) && w.device().is_cpu() && w.scalar_type() == at::kFloat)
        return prefill_ops::rms_norm(x.view({-1, x.size(-1)}), w, eps).view(x.sizes());
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor y = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return (y * w).to(x.scalar_type());
}

RopeTable rope_table(const ModelConfig& c, int64_t layer) {
    // transformers' float32 arithmetic, operation for operation (with peaky attention, angles that
    // differ by one float32 rounding move logits by ~1e-3): inv = 1 / base ** (arange(0, n, 2) / n)
    const LayerConfig& lc = c.layers.at(static_cast<size_t>(layer));
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    at::Tensor shape = at::arange(0, c.n_rot, 2, at::TensorOptions().dtype(at::kLong))
                           .to(at::kFloat)
                           .div(static_cast<double>(c.n_rot));                            // [n_rot/2]
    at::Tensor pow = at::pow(at::Scalar(static_cast<double>(lc.rope_freq_base)), shape);  // [n_rot/2]
    at::Tensor inv = at::reciprocal(pow);
    RopeTable t;
    t.n_rot = c.n_rot;
    t.neox = c.rope_neox;
    const RopeScaling& rs = c.rope_scaling;
    t.scaling = lc.rope_scaled ? rs.type : "none";
    auto factors = [&](const std::vector<float>& v) { return at::tensor(v, f32); };
    if (!lc.rope_scaled || rs.type == "none" || rs.type.empty()) {
        // plain RoPE
    } else if (rs.type == "llama3" && !rs.freq_factors.empty()) {
        // llama.cpp stores Llama 3.1's frequency factors as a tensor and divides theta by them.
        inv = inv / factors(rs.freq_factors);
    } else if (rs.type == "llama3") {
        // transformers' _compute_llama3_parameters.
        const double pi = 3.14159265358979323846;
        const double low_wavelen = double(rs.original_ctx) / rs.low_freq_factor;
        const double high_wavelen = double(rs.original_ctx) / rs.high_freq_factor;
        at::Tensor wavelen = at::reciprocal(inv) * (2 * pi);
        at::Tensor llama = at::where(wavelen > low_wavelen, inv / double(rs.factor), inv);
        at::Tensor smooth = (at::reciprocal(wavelen) * double(rs.original_ctx) - double(rs.low_freq_factor)) /
                            double(rs.high_freq_factor - rs.low_freq_factor);
        at::Tensor smoothed = (1 - smooth) * llama / double(rs.factor) + smooth * llama;
        at::Tensor medium = (wavelen < high_wavelen).logical_not().logical_and((wavelen > low_wavelen).logical_not());
        inv = at::where(medium, smoothed, llama);
    } else if (rs.type == "linear" && rs.factor > 0) {
        inv = inv / double(rs.factor);
    } else if (rs.type == "longrope") {
        // Short factors serve positions below the original context; transformers switches every
        // position to the long factors once a sequence passes it (and llama.cpp when the context
        // size does), which we do not implement: such positions are refused in apply_rope.
        inv = at::reciprocal(factors(rs.short_factor) * pow);
        t.attn_factor = rs.attn_factor;
        t.max_pos = rs.original_ctx;
    } else {
        throw FileError(FileError::Kind::Unsupported,
                        "model: RoPE scaling '" + rs.type + "' is not supported (none, linear, llama3, longrope)");
    }
    t.inv_freq = inv.contiguous();
    return t;
}

void check_rope_position(const RopeTable& t, int64_t position) {
    if (t.max_pos > 0 && position >= t.max_pos)
        throw InputError("model: position " + std::to_string(position) + " is beyond the original context of " +
                         std::to_string(t.max_pos) +
                         " tokens; longrope's long factors (needed past it) are not supported: "
                         "use a shorter document");
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& pos, const RopeTable& t) {
    // x: [h, T, D]; pos: [T] int64. Angles pos * inv_freq rounded once in float32 and cos/sin in
    // float32, as transformers' rotary embedding computes them.
    if (t.max_pos > 0 && pos.numel() > 0) check_rope_position(t, pos.max().item<int64_t>());
    const int64_t n_rot = t.n_rot;
    const int64_t half = n_rot / 2;
    const int64_t D = x.size(2);
    if (x.size(1) == 1 && x.device().is_cpu() && x.scalar_type() == at::kFloat) {
        // One float32 token on the CPU: one fused pass (decode_ops.h), the same float products.
        at::Tensor out = x.reshape({x.size(0), D}).clone();  // [h, D]
        decode_ops::rope_inplace(out, decode_ops::rope_angles(pos.item<int64_t>(), t.inv_freq, t.attn_factor), n_rot,
                                 t.neox);
        return out.view({x.size(0), 1, D});
    }
    at::Tensor ang = pos.cpu().to(at::kFloat).unsqueeze(1) * t.inv_freq.unsqueeze(0);  // [T, half]
    at::Tensor cos = ang.cos(), sin = ang.sin();
    if (t.attn_factor != 1.0) {
        cos = cos * t.attn_factor;
        sin = sin * t.attn_factor;
    }
    cos = cos.to(x.device()).unsqueeze(0);  // [1, T, half]
    sin = sin.to(x.device()).unsqueeze(0);  // [1, T, half]
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor rot = xf.narrow(2, 0, n_rot);
    at::Tensor out;
    if (t.neox) {
        at::Tensor x0 = rot.narrow(2, 0, half), x1 = rot.narrow(2, half, half);  // [h, T, half]
        out = at::cat({x0 * cos - x1 * sin, x1 * cos + x0 * sin}, 2);
    } else {
        at::Tensor pairs = rot.reshape({rot.size(0), rot.size(1), half, 2});  // [h, T, half, 2]
        at::Tensor x0 = pairs.select(3, 0), x1 = pairs.select(3, 1);          // [h, T, half]
        out = at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 3).reshape(rot.sizes());
    }
    if (n_rot < D) out = at::cat({out, xf.narrow(2, n_rot, D - n_rot)}, 2);
    return out.to(x.scalar_type());
}

}  // namespace snapkv::model_ops
