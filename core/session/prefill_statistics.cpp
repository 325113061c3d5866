// The statistics a prefill records for the policies that declare them (see
// prefill_statistics_impl.h): query statistics merged with Chan et al.'s formula, value norms, and
// the averaged future RoPE from the model's own RoPE tables.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, D = head_dim.
#include "core/session/prefill_statistics_impl.h"

#include <algorithm>

#include "core/common/errors.h"
#include "core/model/model_ops.h"

namespace snapkv {
namespace {

// [D, D]: a RoPE table at positions first .. first + count - 1 averaged, as the row map
// x -> x R^T (row j: the rotation of the unit vector e_j), from the model's own RoPE (its pair
// layout, scaling and partial rotary dims). Undefined when a position is beyond the table.
at::Tensor future_rope(const model_ops::RopeTable& table, int64_t D, int64_t first, int64_t count) {
    const at::Tensor eye = at::eye(D, at::TensorOptions().dtype(at::kFloat));  // [D, D]
    at::Tensor sum = at::zeros({D, D}, at::TensorOptions().dtype(at::kDouble));
    try {
        for (int64_t p0 = first; p0 < first + count; p0 += 64) {
            const int64_t n = std::min<int64_t>(64, first + count - p0);
            at::Tensor x = eye.repeat({n, 1}).unsqueeze(0);  // [1, n*D, D]
            at::Tensor pos = at::arange(p0, p0 + n, at::TensorOptions().dtype(at::kLong)).repeat_interleave(D);
            sum += model_ops::apply_rope(x, pos, table).view({n, D, D}).sum(0).to(at::kDouble);
        }
    } catch (const InputError&) {
        return {};
    }
    return (sum / double(count)).to(at::kFloat);
}

}  // namespace

// Appends one forward call's query statistics (positions after those already in c) to c: the
// queries of the first positions are concatenated, the rest combined with Chan et al.'s formula
// for the centred sums, in double.
void add_query_stats(LayerCapture& c, const QueryStats& s) {
    if (s.head.defined()) c.query_head = c.query_head.defined() ? at::cat({c.query_head, s.head}, 1) : s.head;
    if (s.count == 0) return;
    if (c.query_count == 0) {
        c.query_count = s.count;
        c.query_mean = s.mean.clone();  // [H, D]
        c.query_m2 = s.m2.clone();      // [H, D, D]
        return;
    }
    const double na = double(c.query_count), nb = double(s.count), n = na + nb;
    const at::Tensor delta = s.mean - c.query_mean;  // [H, D]
    c.query_m2 = c.query_m2 + s.m2 + delta.unsqueeze(2) * delta.unsqueeze(1) * (na * nb / n);
    c.query_mean = c.query_mean + delta * (nb / n);
    c.query_count += s.count;
}

// The L2 norm of each of the layer's values: [Hkv, L] float32 (CPU).
at::Tensor value_norms(const KvCache& cache, int64_t layer) {
    at::Tensor v = cache.layer(layer).values().to(at::kFloat);                                 // [Hkv, L, D]
    return at::linalg_vector_norm(v, 2, {-1}, false, c10::nullopt).to(at::kCPU).contiguous();  // [Hkv, L]
}

const at::Tensor& FutureRopes::get(int64_t layer, int64_t n) {
    const std::pair<size_t, int64_t> key{m_model.rope_index(layer), n};
    auto it = m_done.find(key);
    if (it == m_done.end())
        it = m_done.emplace(key, future_rope(m_model.rope(key.first), m_model.config().head_dim, n, 512)).first;
    return it->second;  // [D, D]
}

}  // namespace snapkv
