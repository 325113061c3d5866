// See weight_matrix.h. Dense storage keeps the old products: GEMV for one token on the CPU (a GEMM
// would first pack the whole matrix), at::linear otherwise.
#include "core/model/weight_matrix.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "core/common/errors.h"
#include "core/io/mapped_file.h"
#include "core/quant/qkernels.h"

namespace snapkv {

namespace {

// Values per dequantized tile in the multi-token path: 16 MB of float32 scratch at most per
// thread, which holds every matrix of a small model whole and bounds the memory of large ones.
std::atomic<int64_t> g_tile_values{int64_t(4) << 20};
std::atomic<int64_t> g_dequant_ns{0};

// dequantize() with its time added to g_dequant_ns.
void timed_dequantize(const BlockMatrix& m, int64_t row0, int64_t n, float* out) {
    const auto t0 = std::chrono::steady_clock::now();
    dequantize(m, row0, n, out);
    g_dequant_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

BlockMatrix view(const TensorBytes& b, bool q8) {
    BlockMatrix m;
    m.activations = q8 ? Activations::Q8 : Activations::F32;
    m.type = b.type;
    m.data = b.data;
    m.n_rows = b.n_rows;
    m.n_cols = b.row_len;
    m.row_bytes = b.row_bytes;
    return m;
}

// A float32 buffer reused by every multi-token product on this thread.
float* scratch(int64_t values) {
    thread_local std::vector<float> buf;
    if (static_cast<int64_t>(buf.size()) < values) {
        buf.clear();
        buf.shrink_to_fit();
        buf.resize(static_cast<size_t>(values));
    }
    return buf.data();
}

void check_input(const at::Tensor& x, int64_t cols, const char* what) {
    TORCH_CHECK(x.dim() == 2 && x.size(1) == cols, "weights: ", what, " input must be [T, ", cols, "], got ",
                x.sizes());
}

}  // namespace

WeightMatrix::WeightMatrix(at::Tensor w) : m_dense(std::move(w)) {
    TORCH_CHECK(m_dense.dim() == 2, "weights: a weight matrix must be 2-D, got ", m_dense.sizes());
    m_rows = m_dense.size(0);
    m_cols = m_dense.size(1);
}

WeightMatrix::WeightMatrix(TensorBytes bytes) : m_bytes(std::move(bytes)) {
    block_matrix(*m_bytes.type, m_bytes.data, m_bytes.n_rows, m_bytes.row_len);  // validates
    m_rows = m_bytes.n_rows;
    m_cols = m_bytes.row_len;
}

std::string WeightMatrix::type_name() const {
    if (m_dense.defined()) return c10::toString(m_dense.scalar_type());
    return m_bytes.type != nullptr ? m_bytes.type->name : "";
}

int64_t WeightMatrix::bytes() const {
    if (m_dense.defined()) return m_dense.numel() * static_cast<int64_t>(m_dense.element_size());
    return static_cast<int64_t>(m_bytes.row_bytes) * m_bytes.n_rows;
}

at::Tensor WeightMatrix::apply(const at::Tensor& x) const {
    // x: [T, I] -> [T, O]
    if (m_dense.defined()) {
        if (x.size(0) != 1 || !x.device().is_cpu()) return at::linear(x, m_dense);
        return at::mv(m_dense, x.select(0, 0)).unsqueeze(0);
    }
    return apply_many({this}, x)[0];
}

bool WeightMatrix::raw_ready() const {
    return native() || (m_dense.defined() && m_dense.device().is_cpu() && m_dense.scalar_type() == at::kFloat &&
                        m_dense.is_contiguous());
}

void WeightMatrix::apply_raw(const WeightMatrix* const* ws, int count, const float* x, float* const* ys) {
    if (count <= 0) return;
    const int64_t cols = ws[0]->cols();
    BlockMatrix ms[8];
    TORCH_CHECK(count <= 8, "weights: apply_raw takes at most 8 matrices");
    bool all_native = true;
    for (int i = 0; i < count; ++i) {
        TORCH_CHECK(ws[i]->raw_ready() && ws[i]->cols() == cols,
                    "weights: apply_raw needs native or float32 CPU matrices of one width");
        all_native = all_native && ws[i]->native();
        if (ws[i]->native()) ms[i] = view(ws[i]->m_bytes, ws[i]->m_q8);
    }
    if (all_native) {
        matvec_many(ms, ys, count, x);
        return;
    }
    // Dense float32: the same at::mv as apply(), on the caller's buffers.
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    const at::Tensor xt = at::from_blob(const_cast<float*>(x), {cols}, f32);
    for (int i = 0; i < count; ++i) {
        if (ws[i]->native()) {
            matvec(ms[i], x, ys[i]);
        } else {
            at::Tensor y = at::from_blob(ys[i], {ws[i]->rows()}, f32);
            at::mv_out(y, ws[i]->m_dense, xt);
        }
    }
}

void WeightMatrix::apply_raw_batch(const WeightMatrix* const* ws, int count, const float* x, int64_t n,
                                   float* const* ys) {
    if (count <= 0 || n <= 0) return;
    TORCH_CHECK(count <= 8, "weights: apply_raw_batch takes at most 8 matrices");
    const int64_t cols = ws[0]->cols();
    bool all_native = true;
    BlockMatrix ms[8];
    for (int i = 0; i < count; ++i) {
        all_native = all_native && ws[i]->native() && ws[i]->cols() == cols;
        if (ws[i]->native()) ms[i] = view(ws[i]->m_bytes, ws[i]->m_q8);
    }
    if (all_native && n > 1) {
        matvec_many_batch(ms, ys, count, x, n);
        return;
    }
    float* yj[8];
    for (int64_t j = 0; j < n; ++j) {
        for (int i = 0; i < count; ++i) yj[i] = ys[i] + j * ws[i]->rows();
        apply_raw(ws, count, x + j * cols, yj);
    }
}

std::vector<at::Tensor> WeightMatrix::apply_many(const std::vector<const WeightMatrix*>& ws, const at::Tensor& x) {
    // x: [T, I] -> [T, O_i] per matrix
    std::vector<at::Tensor> out;
    out.reserve(ws.size());
    const bool all_native = std::all_of(ws.begin(), ws.end(), [](const WeightMatrix* w) { return w->native(); });
    if (!all_native) {
        for (const WeightMatrix* w : ws) out.push_back(w->apply(x));
        return out;
    }
    const int64_t cols = ws.front()->cols();
    check_input(x, cols, "native");
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat,
                "weights: native weights need float32 CPU inputs, got ", x.scalar_type(), " on ", x.device());
    const at::Tensor xc = x.contiguous();
    const int64_t T = xc.size(0);
    if (T == 1) {
        std::vector<float*> ys;
        for (const WeightMatrix* w : ws) {
            out.push_back(at::empty({1, w->rows()}, xc.options()));
            ys.push_back(out.back().data_ptr<float>());
        }
        apply_raw(ws.data(), static_cast<int>(ws.size()), xc.data_ptr<float>(), ys.data());
        return out;
    }
    for (const WeightMatrix* w : ws) {
        const BlockMatrix m = view(w->m_bytes, false);  // dequantized: the flag plays no part
        const int64_t tile = std::max<int64_t>(1,
                                               std::min(m.n_rows, g_tile_values.load() / std::max<int64_t>(cols, 1)));
        float* buf = scratch(tile * cols);
        if (tile == m.n_rows) {
            timed_dequantize(m, 0, m.n_rows, buf);
            out.push_back(at::linear(xc, at::from_blob(buf, {m.n_rows, cols}, xc.options())));
            continue;
        }
        at::Tensor y = at::empty({T, m.n_rows}, xc.options());  // [T, O]
        for (int64_t r0 = 0; r0 < m.n_rows; r0 += tile) {
            const int64_t n = std::min(tile, m.n_rows - r0);
            timed_dequantize(m, r0, n, buf);
            y.narrow(1, r0, n).copy_(at::linear(xc, at::from_blob(buf, {n, cols}, xc.options())));
        }
        out.push_back(y);
    }
    return out;
}

at::Tensor WeightMatrix::gather_rows(const at::Tensor& ids) const {
    // ids: [n] -> [n, I]
    if (m_dense.defined()) return m_dense.index_select(0, ids.to(m_dense.device()));
    const at::Tensor idc = ids.to(at::kCPU, at::kLong).contiguous();
    const int64_t n = idc.numel();
    at::Tensor out = at::empty({n, m_cols}, at::TensorOptions().dtype(at::kFloat));
    const BlockMatrix m = view(m_bytes, false);  // dequantized: the flag plays no part
    const int64_t* id = idc.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
        TORCH_CHECK(id[i] >= 0 && id[i] < m_rows, "weights: row ", id[i], " outside 0..", m_rows - 1);
        dequantize(m, id[i], 1, out.data_ptr<float>() + i * m_cols);
    }
    return out;
}

WeightMatrix WeightMatrix::slice_rows(int64_t begin, int64_t n) const {
    TORCH_CHECK(begin >= 0 && n >= 0 && begin + n <= m_rows, "weights: rows [", begin, ", ", begin + n,
                ") outside a matrix of ", m_rows, " rows");
    if (m_dense.defined()) return WeightMatrix(m_dense.narrow(0, begin, n));
    TensorBytes b = m_bytes;
    b.data += static_cast<size_t>(begin) * b.row_bytes;
    b.n_rows = n;
    WeightMatrix w(std::move(b));
    w.m_q8 = m_q8;
    return w;
}

at::Tensor WeightMatrix::to_float() const {
    if (m_dense.defined()) return m_dense.to(at::kCPU, at::kFloat);
    at::Tensor out = at::empty({m_rows, m_cols}, at::TensorOptions().dtype(at::kFloat));
    dequantize(view(m_bytes, false), 0, m_rows, out.data_ptr<float>());
    return out;
}

void WeightMatrix::release_pages() const {
    if (native()) snapkv::release_pages(m_bytes.data, static_cast<size_t>(bytes()));
}

int64_t WeightMatrix::dequant_ns() { return g_dequant_ns.load(); }

int64_t WeightMatrix::tile_values() { return g_tile_values.load(); }

int64_t WeightMatrix::set_tile_values(int64_t values) { return g_tile_values.exchange(std::max<int64_t>(1, values)); }

}  // namespace snapkv
