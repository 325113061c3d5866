// See kv_cache.h. Growth doubles the capacity; views returned by keys()/values() stay valid only
// until the next append. CUDA path: gather_cache gathers K and V with kernels/gather_kv
// (core/ops/gpu_gather.h) when the cache is on CUDA and the kernels are built.
#include "core/kv/kv_cache.h"

#include <cstring>

#include "core/common/errors.h"
#include "core/ops/gpu_gather.h"

namespace snapkv {

LayerKv::LayerKv(int64_t n_heads, int64_t head_dim, int64_t capacity, at::TensorOptions opts, bool values)
    : m_n_heads(n_heads), m_head_dim(head_dim) {
    capacity = std::max<int64_t>(capacity, 1);
    m_k = at::zeros({n_heads, capacity, head_dim}, opts);
    if (values) m_v = at::zeros({n_heads, capacity, head_dim}, opts);
    else m_values = Values::Deferred;
    m_pos = at::full({n_heads, capacity}, kPadPosition, opts.dtype(at::kLong));
}

void LayerKv::drop_values() {
    m_v = at::Tensor();
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
    m_values = Values::Held;
}

void LayerKv::reserve(int64_t capacity) {
    if (!m_k.defined() || capacity <= m_k.size(1)) return;
    auto grow = [&](const at::Tensor& t, const at::Tensor& fill) {
        at::Tensor bigger = fill;
        bigger.narrow(1, 0, m_size).copy_(t.narrow(1, 0, m_size));
        return bigger;
    };
    auto opts = m_k.options();
    m_k = grow(m_k, at::zeros({m_n_heads, capacity, m_head_dim}, opts));
    if (m_values == Values::Held) m_v = grow(m_v, at::zeros({m_n_heads, capacity, m_head_dim}, opts));
    m_pos = grow(m_pos, at::full({m_n_heads, capacity}, kPadPosition, m_pos.options()));
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
    if (t == 1 && cpu_float() && k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat &&
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
    m_k.narrow(1, m_size, t).copy_(kk);
    m_v.narrow(1, m_size, t).copy_(vv);
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
    m_k.narrow(1, 0, s).copy_(k);
    m_v.narrow(1, 0, s).copy_(v);
    m_pos.narrow(1, 0, s).copy_(pos);
    if (m_k.size(1) > s) m_pos.narrow(1, s, m_k.size(1) - s).fill_(kPadPosition);
    m_size = s;
    m_padding = pos.ge(kPadPosition).sum().item<int64_t>();
}

bool LayerKv::cpu_float() const {
    return m_k.defined() && m_k.device().is_cpu() && m_k.scalar_type() == at::kFloat && m_k.is_contiguous() &&
           (!m_v.defined() || m_v.is_contiguous()) && m_pos.is_contiguous();
}

void LayerKv::append_one(const float* k, int64_t k_head_stride, const float* v, int64_t v_head_stride, int64_t hkv,
                         int64_t pos) {
    TORCH_CHECK(cpu_float(), "kv: append_one needs a contiguous float32 CPU cache");
    TORCH_CHECK(hkv > 0 && m_n_heads % hkv == 0, "kv: cache heads ", m_n_heads, " not a multiple of ", hkv);
    if (m_size + 1 > m_k.size(1)) reserve(std::max(m_size + 1, 2 * m_k.size(1)));
    ensure_values();
    const int64_t g = m_n_heads / hkv;
    float* kd = m_k.data_ptr<float>();
    float* vd = m_v.data_ptr<float>();
    int64_t* pd = m_pos.data_ptr<int64_t>();
    const int64_t cap = m_k.size(1), D = m_head_dim;
    for (int64_t h = 0; h < m_n_heads; ++h) {
        const int64_t src = h / g;  // query-head caches repeat each KV head over its group
        std::memcpy(kd + (h * cap + m_size) * D, k + src * k_head_stride, static_cast<size_t>(D) * sizeof(float));
        std::memcpy(vd + (h * cap + m_size) * D, v + src * v_head_stride, static_cast<size_t>(D) * sizeof(float));
        pd[h * cap + m_size] = pos;
    }
    m_size += 1;
}

const float* LayerKv::key_data() const { return m_k.data_ptr<float>(); }
const float* LayerKv::value_data() const { return values().data_ptr<float>(); }
const int64_t* LayerKv::position_data() const { return m_pos.data_ptr<int64_t>(); }
int64_t LayerKv::capacity() const { return m_k.defined() ? m_k.size(1) : 0; }

at::Tensor LayerKv::keys() const { return m_k.narrow(1, 0, m_size); }
at::Tensor LayerKv::values() const {
    require_values();
    if (m_values == Values::Deferred) return at::zeros({m_n_heads, 0, m_head_dim}, m_k.options());
    return m_v.narrow(1, 0, m_size);
}
at::Tensor LayerKv::positions() const { return m_pos.narrow(1, 0, m_size); }

int64_t LayerKv::used_slots() const { return m_n_heads * m_size - m_padding; }

int64_t LayerKv::bytes() const {
    if (!m_k.defined()) return 0;
    return used_slots() * m_head_dim * 2 * static_cast<int64_t>(m_k.element_size());
}

KvCache::KvCache(int64_t n_layer, int64_t n_heads, int64_t head_dim, at::TensorOptions opts, int64_t capacity,
                 bool values) {
    m_layers.reserve(static_cast<size_t>(n_layer));
    for (int64_t l = 0; l < n_layer; ++l) m_layers.emplace_back(n_heads, head_dim, capacity, opts, values);
}

void KvCache::reserve(int64_t extra_tokens) {
    for (auto& l : m_layers) l.reserve(l.size() + extra_tokens);
}

int64_t KvCache::bytes() const {
    int64_t total = 0;
    for (const auto& l : m_layers) total += l.bytes();
    return total;
}

namespace {

// A deep copy of the first n slots of a layer, with room for `extra` more.
LayerKv copy_slots(const LayerKv& l, int64_t n, int64_t extra) {
    TORCH_CHECK(n <= l.size(), "kv: copy of ", n, " slots from a layer of ", l.size());
    LayerKv copy(l.n_heads(), l.keys().size(2), std::max<int64_t>(n + extra, 1), l.keys().options());
    if (n > 0) copy.assign(l.keys().narrow(1, 0, n), l.values().narrow(1, 0, n), l.positions().narrow(1, 0, n));
    return copy;
}

}  // namespace

KvCache::KvCache(std::vector<LayerKv> layers, int64_t n_past) : m_layers(std::move(layers)), m_n_past(n_past) {}

KvCache KvCache::clone() const {
    std::vector<LayerKv> layers;
    for (const auto& l : m_layers) layers.push_back(copy_slots(l, l.size(), 0));
    return KvCache(std::move(layers), m_n_past);
}

KvCache KvCache::prefix(int64_t n) const {
    std::vector<LayerKv> layers;
    for (const auto& l : m_layers) layers.push_back(copy_slots(l, n, 0));
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
            out.push_back(copy_slots(in, limit, extra_capacity));
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
        at::Tensor index = at::tensor(idx, at::kLong).view({hs, m}).to(in.keys().device());  // [Hs, M]
        at::Tensor is_pad = at::tensor(pad, at::kLong).view({hs, m}).to(in.keys().device()).to(at::kBool);
        at::Tensor k = in.keys(), v = in.values(), p = in.positions();  // [Hc, S, D], [Hc, S]
#ifdef SNAPKV_HAVE_CUDA
        // CUDA path: the kernel repeats heads to their group and zero-fills padding rows (index -1)
        // itself, reading the cache buffers in place; positions stay a LibTorch gather.
        const auto st = k.scalar_type();
        if (k.is_cuda() && m > 0 && gpu_kernels_available() && v.scalar_type() == st &&
            (st == at::kFloat || st == at::kHalf || st == at::kBFloat16)) {
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
#endif
        if (g > 1) {
            k = k.repeat_interleave(g, 0);
            v = v.repeat_interleave(g, 0);
            p = p.repeat_interleave(g, 0);
        }
        const int64_t d = k.size(2);
        at::Tensor idx3 = index.unsqueeze(2).expand({hs, m, d});  // [Hs, M, D]
        at::Tensor kk = k.gather(1, idx3).masked_fill(is_pad.unsqueeze(2), 0);
        at::Tensor vv = v.gather(1, idx3).masked_fill(is_pad.unsqueeze(2), 0);
        at::Tensor pp = p.gather(1, index).masked_fill(is_pad, kPadPosition);
        LayerKv layer(hs, d, m + extra_capacity, k.options());
        layer.assign(kk, vv, pp);
        out.push_back(std::move(layer));
    }
    return KvCache(std::move(out), n_slots >= 0 ? n_slots : src.n_past());
}

}  // namespace snapkv
