// See kv_cache.h. Growth doubles the capacity; views returned by keys()/values() stay valid only
// until the next append. CUDA path: gather_cache gathers K and V with kernels/gather_kv
// (core/ops/gpu_gather.h) when the cache is on CUDA and the kernels are built.
#include "core/kv/kv_cache.h"

#include <cmath>
#include <cstring>
#include <utility>

#include <ATen/Parallel.h>

#include "core/common/errors.h"
#include "core/ops/gpu_gather.h"
#include "core/quant/qkernels.h"

namespace snapkv {

namespace {

at::ScalarType storage_dtype(KvType t, at::ScalarType compute) {
    switch (t) {
    case KvType::F32: return compute;
    case KvType::F16: return at::kHalf;
    case KvType::BF16: return at::kBFloat16;
    case KvType::Q8_0: return at::kChar;
    }
    return compute;
}

// kv_rotate_rows on a tensor x [..., D] of any device (float32 result), with the same operations in
// the same order (scale, then butterflies of span 1, 2, 4, ...), so CPU results are bit-identical.
at::Tensor rotate(const at::Tensor& x, int64_t n) {
    const int64_t D = x.size(-1);
    const std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    at::Tensor y = x.to(at::kFloat).mul(1.0f / std::sqrt(static_cast<float>(n))).reshape({-1, D / n, n});
    for (int64_t len = 1; len < n; len *= 2) {
        at::Tensor p = y.view({y.size(0), D / n, n / (2 * len), 2, len});  // [rows, blocks, pairs, 2, len]
        at::Tensor u = p.select(3, 0), v = p.select(3, 1);
        y = at::stack({u.add(v), u.sub(v)}, 3).view({y.size(0), D / n, n});
    }
    return y.view(shape);
}

// q8_0 of x [..., D] (D a multiple of 32) as ggml's x86 quantize_row_q8_0 writes it: per block of
// 32, d = amax / 127 stored as f16, quants round-to-nearest-even(x * (127 / amax)) (0 where amax is
// 0); with rot > 0, of x rotated first (kv_rotation). Returns {int8 quants [..., D], f16 scales
// [..., D / 32]}.
std::pair<at::Tensor, at::Tensor> quantize_q8_0(const at::Tensor& x, int64_t rot) {
    const int64_t D = x.size(-1);
    std::vector<int64_t> blocks(x.sizes().begin(), x.sizes().end());
    blocks.back() = D / kQ8_0Block;
    blocks.push_back(kQ8_0Block);
    at::Tensor xb = (rot > 0 ? rotate(x, rot) : x.to(at::kFloat)).reshape(blocks);  // [..., nb, 32]
    at::Tensor amax = xb.abs().amax(-1, /*keepdim=*/true);                          // [..., nb, 1]
    at::Tensor id = at::full_like(amax, 127.0f).div_(amax);                         // 127 / amax, as ggml divides
    id.masked_fill_(amax.eq(0), 0.0f);
    at::Tensor q = xb.mul(id).round_().to(at::kChar).view(x.sizes());  // ties to even
    at::Tensor d = amax.div(127.0f).to(at::kHalf).squeeze(-1);         // [..., nb]
    return {q, d};
}

// The float32 row of D values q8_0 quants q and scales d decode to (ggml: q * fp16_to_fp32(d)).
inline void dequant_q8_0_row(const int8_t* q, const at::Half* d, int64_t D, float* out) {
    for (int64_t b = 0; b < D / kQ8_0Block; ++b) {
        const float s = static_cast<float>(d[b]);
        for (int64_t j = 0; j < kQ8_0Block; ++j)
            out[b * kQ8_0Block + j] = static_cast<float>(q[b * kQ8_0Block + j]) * s;
    }
}

// One row of D floats quantized in place into q (int8) and d (one f16 scale per 32), as
// quantize_q8_0 above; the single-token decode path's version of it (no LibTorch calls): core/quant's
// 8-bit blocks, their scales rounded to f16.
inline void quantize_q8_0_row(const float* x, int64_t D, int8_t* q, at::Half* d) {
    for (int64_t b = 0; b < D / kQ8_0Block; ++b) {
        float scale = 0.0f;
        quantize_q8_blocks(x + b * kQ8_0Block, kQ8_0Block, kQ8_0Block, q + b * kQ8_0Block, &scale);
        d[b] = at::Half(scale);
    }
}

template <typename T>
void convert_row(const float* x, int64_t D, T* out) {
    for (int64_t i = 0; i < D; ++i) out[i] = T(x[i]);  // c10's conversions round to nearest even
}

// One row of D floats written at row index `row` of a plane ([Hc * cap] rows of data, + q8_0
// scales), rounded to the type (q8_0 after rotating a copy by rot, when rot > 0): the single-token
// decode path's write (no LibTorch calls).
void store_row(KvType type, const float* x, int64_t D, const at::Tensor& data, const at::Tensor& scale, int64_t row,
               int64_t rot) {
    if (rot > 0) {
        thread_local std::vector<float> buf;
        buf.assign(x, x + D);
        kv_rotate_rows(buf.data(), 1, D, rot);
        x = buf.data();
    }
    switch (type) {
    case KvType::F32: std::memcpy(data.data_ptr<float>() + row * D, x, static_cast<size_t>(D) * sizeof(float)); return;
    case KvType::F16: convert_row(x, D, data.data_ptr<at::Half>() + row * D); return;
    case KvType::BF16: convert_row(x, D, data.data_ptr<at::BFloat16>() + row * D); return;
    case KvType::Q8_0:
        quantize_q8_0_row(x, D, data.data_ptr<int8_t>() + row * D, scale.data_ptr<at::Half>() + row * (D / kQ8_0Block));
        return;
    }
}

// Rows [Hc, n, D] of stored data (+ q8_0 scales) as float32 at out; rot > 0 rotates each row back
// (the stored rows are rotated by rot).
void read_rows_f32(KvType type, const at::Tensor& data, const at::Tensor& scale, int64_t s0, int64_t n, float* out,
                   int64_t rot) {
    const int64_t Hc = data.size(0), cap = data.size(1), D = data.size(2);
    if (n <= 0) return;
    if (type == KvType::Q8_0) {
        const int8_t* q = data.data_ptr<int8_t>();
        const at::Half* d = scale.data_ptr<at::Half>();
        const int64_t nb = D / kQ8_0Block;
        at::parallel_for(0, Hc * n, 256, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t h = r / n, s = s0 + r % n;
                dequant_q8_0_row(q + (h * cap + s) * D, d + (h * cap + s) * nb, D, out + r * D);
                if (rot > 0) kv_rotate_rows(out + r * D, 1, D, rot);
            }
        });
        return;
    }
    at::from_blob(out, {Hc, n, D}, at::TensorOptions().dtype(at::kFloat)).copy_(data.narrow(1, s0, n));
}

}  // namespace

void kv_rotate_rows(float* x, int64_t rows, int64_t D, int64_t n) {
    // ggml-cpu ops.cpp ggml_compute_forward_fwht (a mul_mat by llama.cpp's Hadamard matrix with
    // GGML_HINT_SRC0_IS_HADAMARD): scale by 1 / sqrtf(n), then butterflies (u + v, u - v) of span
    // 1, 2, 4, ... n / 2, in this order; its SIMD passes compute u - v as fma(v, -1, u), the same.
    // core/quant's kernels do exactly these operations, whole vectors at a time.
    fwht_blocks(x, rows * (D / n), n);
}

LayerKv::LayerKv(int64_t n_heads, int64_t head_dim, int64_t capacity, at::TensorOptions opts, bool values, KvType type)
    : m_type(type), m_opts(opts), m_n_heads(n_heads), m_head_dim(head_dim), m_k_rot(kv_rotation(type, head_dim, false)),
      m_v_rot(kv_rotation(type, head_dim, true)) {
    if (!kv_type_fits(type, head_dim))
        throw InputError(std::string("kv: cache type ") + kv_type_name(type) + " stores blocks of " +
                         std::to_string(kQ8_0Block) + " values, but this model's head_dim is " +
                         std::to_string(head_dim) + " (use f32, f16 or bf16)");
    capacity = std::max<int64_t>(capacity, 1);
    const at::TensorOptions so = opts.dtype(storage_dtype(type, opts.dtype().toScalarType()));
    m_k = at::zeros({n_heads, capacity, head_dim}, so);
    if (type == KvType::Q8_0) m_ks = at::zeros({n_heads, capacity, head_dim / kQ8_0Block}, opts.dtype(at::kHalf));
    if (values) {
        m_v = at::zeros({n_heads, capacity, head_dim}, so);
        if (type == KvType::Q8_0) m_vs = at::zeros_like(m_ks);
    } else {
        m_values = Values::Deferred;
    }
    m_pos = at::full({n_heads, capacity}, kPadPosition, opts.dtype(at::kLong));
}

void LayerKv::drop_values() {
    m_v = at::Tensor();
    m_vs = at::Tensor();
    m_values = Values::Dropped;
}

void LayerKv::require_values() const {
    if (m_values == Values::Dropped)
        throw InputError(
            "kv: this cache kept keys only (an analysis prefill drops each layer's values once "
            "scored); prefill again to generate");
}

void LayerKv::ensure_values() {
    require_values();
    if (m_values == Values::Held) return;
    m_v = at::zeros(m_k.sizes(), m_k.options());
    if (m_ks.defined()) m_vs = at::zeros(m_ks.sizes(), m_ks.options());
    m_values = Values::Held;
}

void LayerKv::reserve(int64_t capacity) {
    if (!m_k.defined() || capacity <= m_k.size(1)) return;
    auto grow = [&](const at::Tensor& t, const at::Tensor& fill) {
        at::Tensor bigger = fill;
        bigger.narrow(1, 0, m_size).copy_(t.narrow(1, 0, m_size));
        return bigger;
    };
    auto sized = [&](const at::Tensor& t) {
        std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
        shape[1] = capacity;
        return grow(t, at::zeros(shape, t.options()));
    };
    m_k = sized(m_k);
    if (m_ks.defined()) m_ks = sized(m_ks);
    if (m_values == Values::Held) {
        m_v = sized(m_v);
        if (m_vs.defined()) m_vs = sized(m_vs);
    }
    m_pos = grow(m_pos, at::full({m_n_heads, capacity}, kPadPosition, m_pos.options()));
}

void LayerKv::write_rows(int64_t s, const at::Tensor& k, const at::Tensor& v) {
    const int64_t t = k.size(1);
    if (m_type == KvType::Q8_0 && cpu_readable() && k.device().is_cpu() && v.device().is_cpu()) {
        // On the CPU row by row, as decode's append_one writes them, over LibTorch's threads: the
        // tensor form below (a dozen whole-tensor operations and the rotation's stacked copies)
        // took 15 ns a value, 11 % of a 2048-token SmolLM2 prefill. The same bits for finite
        // rows (a block holding inf or NaN stores a NaN scale, as decode's rows do).
        const at::Tensor kc = k.to(at::kFloat).contiguous(), vc = v.to(at::kFloat).contiguous();
        const float* kp = kc.data_ptr<float>();
        const float* vp = vc.data_ptr<float>();
        const int64_t cap = m_k.size(1), D = m_head_dim;
        at::parallel_for(0, k.size(0) * t, 64, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t row = (r / t) * cap + s + r % t;
                store_row(m_type, kp + r * D, D, m_k, m_ks, row, m_k_rot);
                store_row(m_type, vp + r * D, D, m_v, m_vs, row, m_v_rot);
            }
        });
        return;
    }
    if (m_type == KvType::Q8_0) {  // CUDA, and CPU caches the kernels cannot read
        auto [kq, kd] = quantize_q8_0(k, m_k_rot);
        auto [vq, vd] = quantize_q8_0(v, m_v_rot);
        m_k.narrow(1, s, t).copy_(kq);
        m_ks.narrow(1, s, t).copy_(kd);
        m_v.narrow(1, s, t).copy_(vq);
        m_vs.narrow(1, s, t).copy_(vd);
        return;
    }
    // f32 / f16 / bf16: copy_ converts, rounding to nearest even as ggml's conversions do.
    m_k.narrow(1, s, t).copy_(k);
    m_v.narrow(1, s, t).copy_(v);
}

void LayerKv::append(const at::Tensor& k, const at::Tensor& v, const at::Tensor& pos) {
    // k, v: [Hkv, T, D]; pos: [T]
    TORCH_CHECK(k.dim() == 3 && k.size(2) == m_head_dim, "kv: appended keys must be [Hkv, T, D]");
    const int64_t t = k.size(1);
    const int64_t hkv = k.size(0);
    TORCH_CHECK(m_n_heads % hkv == 0, "kv: cache heads ", m_n_heads, " not a multiple of ", hkv);
    if (m_size + t > m_k.size(1)) reserve(std::max(m_size + t, 2 * m_k.size(1)));
    ensure_values();
    const int64_t g = m_n_heads / hkv;
    if (t == 1 && cpu_readable() && k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat &&
        k.device().is_cpu() && v.device().is_cpu() && k.stride(2) == 1 && v.stride(2) == 1) {
        // One token on the CPU (decode): copy the rows directly; a dozen small LibTorch calls
        // per layer cost more than the copy itself.
        append_one(k.data_ptr<float>(), k.stride(0), v.data_ptr<float>(), v.stride(0), hkv,
                   pos.to(at::kCPU).item<int64_t>());
        return;
    }
    at::Tensor kk = k, vv = v;  // [Hc, T, D]
    if (g > 1) {
        kk = k.repeat_interleave(g, 0);
        vv = v.repeat_interleave(g, 0);
    }
    write_rows(m_size, kk, vv);
    m_pos.narrow(1, m_size, t).copy_(pos.to(m_pos.device()).view({1, t}).expand({m_n_heads, t}));
    m_size += t;
}

void LayerKv::assign(const at::Tensor& k, const at::Tensor& v, const at::Tensor& pos) {
    // k, v: [Hc, S, D]; pos: [Hc, S]
    TORCH_CHECK(k.dim() == 3 && k.size(0) == m_n_heads && k.size(2) == m_head_dim,
                "kv: assigned keys must be [Hc, S, D]");
    const int64_t s = k.size(1);
    if (s > m_k.size(1)) reserve(s);
    ensure_values();
    write_rows(0, k, v);
    m_pos.narrow(1, 0, s).copy_(pos);
    if (m_k.size(1) > s) m_pos.narrow(1, s, m_k.size(1) - s).fill_(kPadPosition);
    m_size = s;
    m_padding = pos.ge(kPadPosition).sum().item<int64_t>();
}

bool LayerKv::cpu_readable() const {
    return m_k.defined() && m_k.device().is_cpu() && m_opts.dtype().toScalarType() == at::kFloat &&
           m_k.is_contiguous() && (!m_v.defined() || m_v.is_contiguous()) && m_pos.is_contiguous();
}

bool LayerKv::cpu_float() const { return cpu_readable() && m_k.scalar_type() == at::kFloat; }

void LayerKv::append_one(const float* k, int64_t k_head_stride, const float* v, int64_t v_head_stride, int64_t hkv,
                         int64_t pos) {
    TORCH_CHECK(cpu_readable(), "kv: append_one needs a contiguous CPU cache of float32 compute");
    TORCH_CHECK(hkv > 0 && m_n_heads % hkv == 0, "kv: cache heads ", m_n_heads, " not a multiple of ", hkv);
    if (m_size + 1 > m_k.size(1)) reserve(std::max(m_size + 1, 2 * m_k.size(1)));
    ensure_values();
    const int64_t g = m_n_heads / hkv;
    int64_t* pd = m_pos.data_ptr<int64_t>();
    const int64_t cap = m_k.size(1), D = m_head_dim;
    for (int64_t h = 0; h < m_n_heads; ++h) {
        const int64_t src = h / g;  // query-head caches repeat each KV head over its group
        const float* ks = k + src * k_head_stride;
        const float* vs = v + src * v_head_stride;
        const int64_t row = h * cap + m_size;
        store_row(m_type, ks, D, m_k, m_ks, row, m_k_rot);
        store_row(m_type, vs, D, m_v, m_vs, row, m_v_rot);
        pd[row] = pos;
    }
    m_size += 1;
}

const float* LayerKv::key_data() const {
    TORCH_CHECK(cpu_float(), "kv: key_data needs an f32 CPU cache");
    return m_k.data_ptr<float>();
}
const float* LayerKv::value_data() const {
    TORCH_CHECK(cpu_float(), "kv: value_data needs an f32 CPU cache");
    return values().data_ptr<float>();
}
const void* LayerKv::key_rows() const {
    TORCH_CHECK(cpu_readable(), "kv: key_rows needs a CPU cache");
    return m_k.data_ptr();
}
const void* LayerKv::value_rows() const {
    require_values();
    TORCH_CHECK(cpu_readable() && m_values == Values::Held, "kv: value_rows needs the values of a CPU cache");
    return m_v.data_ptr();
}
const uint16_t* LayerKv::key_scales() const {
    TORCH_CHECK(cpu_readable() && m_type == KvType::Q8_0, "kv: key_scales needs a q8_0 CPU cache");
    return reinterpret_cast<const uint16_t*>(m_ks.data_ptr<at::Half>());
}
const uint16_t* LayerKv::value_scales() const {
    require_values();
    TORCH_CHECK(cpu_readable() && m_type == KvType::Q8_0 && m_values == Values::Held,
                "kv: value_scales needs the values of a q8_0 CPU cache");
    return reinterpret_cast<const uint16_t*>(m_vs.data_ptr<at::Half>());
}
const int64_t* LayerKv::position_data() const { return m_pos.data_ptr<int64_t>(); }
int64_t LayerKv::capacity() const { return m_k.defined() ? m_k.size(1) : 0; }

void LayerKv::read_keys_f32(int64_t s0, int64_t n, float* out, bool rotated) const {
    TORCH_CHECK(cpu_readable() && s0 >= 0 && s0 + n <= m_size, "kv: read_keys_f32 of slots outside the cache");
    read_rows_f32(m_type, m_k, m_ks, s0, n, out, rotated ? 0 : m_k_rot);
}

void LayerKv::read_values_f32(int64_t s0, int64_t n, float* out, bool rotated) const {
    require_values();
    TORCH_CHECK(cpu_readable() && m_values == Values::Held && s0 >= 0 && s0 + n <= m_size,
                "kv: read_values_f32 of slots outside the cache");
    read_rows_f32(m_type, m_v, m_vs, s0, n, out, rotated ? 0 : m_v_rot);
}

namespace {

// [Hc, n, D] stored rows (+ scales) decoded to the compute dtype (rotated back by rot > 0).
at::Tensor decode_rows(KvType type, const at::Tensor& data, const at::Tensor& scale, at::ScalarType compute,
                       int64_t rot) {
    if (type == KvType::F32) return data;
    if (type != KvType::Q8_0) return data.to(compute);
    const int64_t Hc = data.size(0), n = data.size(1), D = data.size(2);
    at::Tensor x = data.to(at::kFloat).view({Hc, n, D / kQ8_0Block, kQ8_0Block});
    x = x.mul_(scale.to(at::kFloat).unsqueeze(-1)).view({Hc, n, D});
    if (rot > 0) x = rotate(x, rot);
    return x.to(compute);
}

}  // namespace

at::Tensor LayerKv::keys() const {
    const at::ScalarType ct = m_opts.dtype().toScalarType();
    return decode_rows(m_type, m_k.narrow(1, 0, m_size), m_ks.defined() ? m_ks.narrow(1, 0, m_size) : at::Tensor(), ct,
                       m_k_rot);
}
at::Tensor LayerKv::stored_keys() const {
    if ((m_type == KvType::F32 || m_type == KvType::F16 || m_type == KvType::BF16) && m_k_rot == 0)
        return m_k.narrow(1, 0, m_size);
    return keys();
}
at::Tensor LayerKv::values() const {
    require_values();
    const at::ScalarType ct = m_opts.dtype().toScalarType();
    if (m_values == Values::Deferred) return at::zeros({m_n_heads, 0, m_head_dim}, m_opts);
    return decode_rows(m_type, m_v.narrow(1, 0, m_size), m_vs.defined() ? m_vs.narrow(1, 0, m_size) : at::Tensor(), ct,
                       m_v_rot);
}
at::Tensor LayerKv::positions() const { return m_pos.narrow(1, 0, m_size); }

int64_t LayerKv::used_slots() const { return m_n_heads * m_size - m_padding; }

int64_t LayerKv::row_bytes() const {
    if (m_type == KvType::F32) return m_head_dim * static_cast<int64_t>(m_k.defined() ? m_k.element_size() : 4);
    return kv_row_bytes(m_type, m_head_dim);
}

int64_t LayerKv::bytes() const {
    if (!m_k.defined()) return 0;
    return used_slots() * 2 * row_bytes();
}

LayerKv LayerKv::copy_prefix(int64_t n, int64_t extra) const {
    TORCH_CHECK(n <= m_size, "kv: copy of ", n, " slots from a layer of ", m_size);
    LayerKv copy(m_n_heads, m_head_dim, std::max<int64_t>(n + extra, 1), m_opts, m_values == Values::Held, m_type);
    if (m_values == Values::Dropped) copy.drop_values();
    if (n > 0) {
        copy.m_k.narrow(1, 0, n).copy_(m_k.narrow(1, 0, n));
        if (m_ks.defined()) copy.m_ks.narrow(1, 0, n).copy_(m_ks.narrow(1, 0, n));
        if (m_values == Values::Held) {
            copy.m_v.narrow(1, 0, n).copy_(m_v.narrow(1, 0, n));
            if (m_vs.defined()) copy.m_vs.narrow(1, 0, n).copy_(m_vs.narrow(1, 0, n));
        }
        copy.m_pos.narrow(1, 0, n).copy_(m_pos.narrow(1, 0, n));
        copy.m_padding = copy.m_pos.narrow(1, 0, n).ge(kPadPosition).sum().item<int64_t>();
    }
    copy.m_size = n;
    return copy;
}

LayerKv LayerKv::gathered(const at::Tensor& index, const at::Tensor& is_pad, int64_t g, int64_t extra) const {
    // index, is_pad: [Hs, M] (padding points at slot 0 and is masked by position).
    require_values();
    const int64_t hs = index.size(0), m = index.size(1);
    LayerKv out(hs, m_head_dim, m + extra, m_opts, true, m_type);
    auto gather_rows = [&](at::Tensor src, at::Tensor& dst) {  // src [Hc, cap, w] -> dst [Hs, cap', w]
        src = src.narrow(1, 0, m_size);
        if (g > 1) src = src.repeat_interleave(g, 0);
        const int64_t w = src.size(2);
        at::Tensor rows = src.gather(1, index.unsqueeze(2).expand({hs, m, w})).masked_fill(is_pad.unsqueeze(2), 0);
        dst.narrow(1, 0, m).copy_(rows);
    };
    if (m > 0) {
        gather_rows(m_k, out.m_k);
        gather_rows(m_v, out.m_v);
        if (m_ks.defined()) {
            gather_rows(m_ks, out.m_ks);
            gather_rows(m_vs, out.m_vs);
        }
        at::Tensor p = positions();
        if (g > 1) p = p.repeat_interleave(g, 0);
        out.m_pos.narrow(1, 0, m).copy_(p.gather(1, index).masked_fill(is_pad, kPadPosition));
        out.m_padding = out.m_pos.narrow(1, 0, m).ge(kPadPosition).sum().item<int64_t>();
    }
    out.m_size = m;
    return out;
}

KvCache::KvCache(int64_t n_layer, int64_t n_heads, int64_t head_dim, at::TensorOptions opts, int64_t capacity,
                 bool values, KvType type) {
    m_layers.reserve(static_cast<size_t>(n_layer));
    for (int64_t l = 0; l < n_layer; ++l) m_layers.emplace_back(n_heads, head_dim, capacity, opts, values, type);
}

void KvCache::reserve(int64_t extra_tokens) {
    for (auto& l : m_layers) l.reserve(l.size() + extra_tokens);
}

int64_t KvCache::bytes() const {
    int64_t total = 0;
    for (const auto& l : m_layers) total += l.bytes();
    return total;
}

KvCache::KvCache(std::vector<LayerKv> layers, int64_t n_past) : m_layers(std::move(layers)), m_n_past(n_past) {}

KvCache KvCache::clone() const {
    std::vector<LayerKv> layers;
    for (const auto& l : m_layers) layers.push_back(l.copy_prefix(l.size(), 0));
    return KvCache(std::move(layers), m_n_past);
}

KvCache KvCache::prefix(int64_t n) const {
    std::vector<LayerKv> layers;
    for (const auto& l : m_layers) layers.push_back(l.copy_prefix(n, 0));
    return KvCache(std::move(layers), n);
}

KvCache gather_cache(const KvCache& src, const std::vector<LayerKeep>& keep, int64_t extra_capacity, int64_t n_slots) {
    TORCH_CHECK(static_cast<int64_t>(keep.size()) == src.n_layer(), "kv: gather needs one entry per layer");
    std::vector<LayerKv> out;
    for (int64_t l = 0; l < src.n_layer(); ++l) {
        const LayerKeep& heads = keep[static_cast<size_t>(l)];
        const LayerKv& in = src.layer(l);
        const int64_t limit = n_slots >= 0 ? n_slots : in.size();  // source slots [0, limit)
        TORCH_CHECK(limit <= in.size(), "kv: the first ", limit, " slots of a layer of ", in.size());
        if (heads.empty()) {
            out.push_back(in.copy_prefix(limit, extra_capacity));
            continue;
        }
        const auto hs = static_cast<int64_t>(heads.size());
        TORCH_CHECK(hs % in.n_heads() == 0, "kv: ", hs, " heads cannot be gathered from ", in.n_heads());
        const int64_t g = hs / in.n_heads();
        size_t longest = 0;
        for (const auto& h : heads) longest = std::max(longest, h.size());
        const auto m = static_cast<int64_t>(longest);
        // Slot indices [Hs, M] (padding points at slot 0 and is masked by position below).
        std::vector<int64_t> idx(static_cast<size_t>(hs * m), 0), pad(static_cast<size_t>(hs * m), 1);
        for (int64_t h = 0; h < hs; ++h) {
            const auto& list = heads[static_cast<size_t>(h)];
            for (size_t j = 0; j < list.size(); ++j) {
                TORCH_CHECK(list[j] >= 0 && list[j] < limit, "kv: slot ", list[j], " out of range");
                idx[static_cast<size_t>(h * m) + j] = list[j];
                pad[static_cast<size_t>(h * m) + j] = 0;
            }
        }
        const at::Device dev = in.positions().device();
        at::Tensor index = at::tensor(idx, at::kLong).view({hs, m}).to(dev);  // [Hs, M]
        at::Tensor is_pad = at::tensor(pad, at::kLong).view({hs, m}).to(dev).to(at::kBool);
#ifdef SNAPKV_HAVE_CUDA
        // CUDA path: the kernel repeats heads to their group and zero-fills padding rows (index -1)
        // itself, reading the cache buffers in place; positions stay a LibTorch gather. Only for
        // caches stored in the compute dtype (f32); the other types take the LibTorch gather.
        if (in.type() == KvType::F32 && dev.is_cuda() && m > 0 && gpu_kernels_available()) {
            at::Tensor k = in.keys(), v = in.values(), p = in.positions();  // [Hc, S, D], [Hc, S]
            const auto st = k.scalar_type();
            if (v.scalar_type() == st && (st == at::kFloat || st == at::kHalf || st == at::kBFloat16)) {
                at::Tensor gidx = index.masked_fill(is_pad, -1);             // [Hs, M]
                at::Tensor kk = at::empty({hs, m, k.size(2)}, k.options());  // [Hs, M, D]
                at::Tensor vv = at::empty({hs, m, k.size(2)}, v.options());  // [Hs, M, D]
                gpu_gather(k, gidx, kk);
                gpu_gather(v, gidx, vv);
                if (g > 1) p = p.repeat_interleave(g, 0);                              // [Hs, S]
                at::Tensor pp = p.gather(1, index).masked_fill(is_pad, kPadPosition);  // [Hs, M]
                LayerKv layer(hs, k.size(2), m + extra_capacity, k.options());
                layer.assign(kk, vv, pp);
                out.push_back(std::move(layer));
                continue;
            }
        }
#endif
        out.push_back(in.gathered(index, is_pad, g, extra_capacity));
    }
    return KvCache(std::move(out), n_slots >= 0 ? n_slots : src.n_past());
}

}  // namespace snapkv
