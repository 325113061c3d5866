// See prefill_ops.h.
#include "core/model/prefill_ops.h"

#include <algorithm>

#include "core/model/decode_ops.h"
#include "core/quant/qkernels.h"

namespace snapkv::prefill_ops {

namespace {

// Rows per chunk of a row-wise pass: about 64K floats, so a chunk is worth a trip to the counter.
int64_t grain_rows(int64_t row_len) { return std::max<int64_t>(1, 65536 / std::max<int64_t>(row_len, 1)); }

}  // namespace

bool applicable(const at::Tensor& x) {
    return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous();
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps) {
    // x: [T, E]; w: [E]
    const at::Tensor wc = w.contiguous();
    const int64_t T = x.size(0), E = x.size(1);
    at::Tensor y = at::empty({T, E}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = wc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    kernel_parallel_for(T, grain_rows(E), [&](int64_t b, int64_t e) {
        decode_ops::rms_norm_rows(xp + b * E, wp, e - b, E, eps, yp + b * E);
    });
    return y;
}

RopeTableRows rope_rows_for(const at::Tensor& pos, const model_ops::RopeTable& t) {
    if (t.max_pos > 0 && pos.numel() > 0) model_ops::check_rope_position(t, pos.max().item<int64_t>());
    // model_ops::apply_rope's operations: angles rounded once in float32, cos / sin in float32.
    at::Tensor ang = pos.cpu().to(at::kFloat).unsqueeze(1) * t.inv_freq.to(at::kCPU).unsqueeze(0);  // [T, half]
    at::Tensor cos = ang.cos(), sin = ang.sin();
    if (t.attn_factor != 1.0) {
        cos = cos * t.attn_factor;
        sin = sin * t.attn_factor;
    }
    return {cos.contiguous(), sin.contiguous()};
}

at::Tensor rope_to_heads(const at::Tensor& x, const RopeTableRows& r, const model_ops::RopeTable& t, int64_t row0) {
    // x: [T, h, D] with contiguous [h, D] per token -> [h, T, D]
    const int64_t T = x.size(0), h = x.size(1), D = x.size(2);
    TORCH_CHECK(x.stride(2) == 1 && x.stride(1) == D && row0 >= 0 && row0 + T <= r.cos.size(0),
                "rope: rows of [h, D] contiguous floats within the table's tokens expected");
    const int64_t tok_stride = x.stride(0), half = t.n_rot / 2, n_rot = t.n_rot;
    at::Tensor out = at::empty({h, T, D}, x.options());
    const float* xp = x.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const float* cp = r.cos.data_ptr<float>() + row0 * half;
    const float* sp = r.sin.data_ptr<float>() + row0 * half;
    const bool neox = t.neox;
    kernel_parallel_for(T, grain_rows(h * D), [&](int64_t b, int64_t e) {
        for (int64_t tok = b; tok < e; ++tok) {
            const float* c = cp + tok * half;
            const float* s = sp + tok * half;
            for (int64_t j = 0; j < h; ++j) {
                const float* src = xp + tok * tok_stride + j * D;
                float* dst = op + (j * T + tok) * D;
                // decode_ops::rope_rows's products, out of place.
                for (int64_t i = 0; i < half; ++i) {
                    const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
                    const float v0 = src[i0], v1 = src[i1];
                    dst[i0] = v0 * c[i] - v1 * s[i];
                    dst[i1] = neox ? v1 * c[i] + v0 * s[i] : v0 * s[i] + v1 * c[i];
                }
                for (int64_t i = n_rot; i < D; ++i) dst[i] = src[i];
            }
        }
    });
    return out;
}

void silu_mul(at::Tensor& gate, const at::Tensor& up) {
    float* g = gate.data_ptr<float>();
    const float* u = up.data_ptr<float>();
    kernel_parallel_for(gate.numel(), 65536, [&](int64_t b, int64_t e) { snapkv::silu_mul(g + b, u + b, e - b); });
}

void gelu_tanh_mul(at::Tensor& gate, const at::Tensor& up) {
    float* g = gate.data_ptr<float>();
    const float* u = up.data_ptr<float>();
    kernel_parallel_for(gate.numel(), 65536, [&](int64_t b, int64_t e) { snapkv::gelu_tanh_mul(g + b, u + b, e - b); });
}

}  // namespace snapkv::prefill_ops
