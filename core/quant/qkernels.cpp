// Dispatch for qkernels.h: picks the kernel table of the active CPU path, computes the per-block
// sums of x that the formats with minimums need, and spreads rows over the kernel pool in chunks
// taken from a shared counter (a thread slowed by another process takes fewer chunks).
#include "core/quant/qkernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/common/errors.h"
#include "core/quant/kernel_pool.h"
#include "core/quant/qkernels_table.h"

namespace snapkv {

using namespace quant_detail;

namespace {

int format_of(const GgmlType& type) {
    switch (type.id) {
    case 0: return kF32;
    case 1: return kF16;
    case 30: return kBF16;
    case 8: return kQ8_0;
    case 2: return kQ4_0;
    case 3: return kQ4_1;
    case 6: return kQ5_0;
    case 7: return kQ5_1;
    case 10: return kQ2_K;
    case 11: return kQ3_K;
    case 12: return kQ4_K;
    case 13: return kQ5_K;
    case 14: return kQ6_K;
    case 20: return kIQ4_NL;
    case 23: return kIQ4_XS;
    default: return -1;
    }
}

// Sums of x over each 32-value block, then over each 16-value block: xs [C / 32 + C / 16].
void block_sums(const float* x, int64_t n_cols, float* xs) {
    for (int64_t b = 0; b < n_cols / 32; ++b) {
        float s = 0.0f;
        for (int j = 0; j < 32; ++j) s += x[32 * b + j];
        xs[b] = s;
    }
    float* xs16 = xs + n_cols / 32;
    for (int64_t b = 0; b < n_cols / 16; ++b) {
        float s = 0.0f;
        for (int j = 0; j < 16; ++j) s += x[16 * b + j];
        xs16[b] = s;
    }
}

bool needs_block_sums(int format) {
    return format == kQ4_0 || format == kQ4_1 || format == kQ5_1 || format == kQ2_K || format == kQ4_K ||
           format == kQ5_K;
}

// The per-32 block sums of one call's input x [n], computed once when a format needs them and
// shared by every row. The buffer lives per thread and is reused, so a call allocates nothing
// once warm.
struct BlockSums {
    const float* x = nullptr;
    int64_t n = 0;
    bool have = false;
    std::vector<float> xs;

    // Starts a call on input x [n]; what earlier calls computed is forgotten.
    static BlockSums& start(const float* x, int64_t n) {
        thread_local BlockSums in;
        in.x = x;
        in.n = n;
        in.have = false;
        return in;
    }
    void prepare(int format) {
        if (!needs_block_sums(format) || have) return;
        xs.resize(static_cast<size_t>(n / 32 + n / 16));
        block_sums(x, n, xs.data());
        have = true;
    }
    const float* sums() const { return have ? xs.data() : nullptr; }
};

// ---- 8-bit inputs (Activations::Q8) ----

// Which quantized form a format's 8-bit product reads: per 256 values (K-quants) or per 32.
enum class Q8Kind { None, PerK, Per32 };
Q8Kind q8_kind(int format) {
    switch (format) {
    case kQ2_K:
    case kQ3_K:
    case kQ4_K:
    case kQ5_K:
    case kQ6_K:
    case kIQ4_XS: return Q8Kind::PerK;
    case kQ8_0:
    case kQ4_0:
    case kQ4_1:
    case kQ5_0:
    case kQ5_1:
    case kIQ4_NL: return Q8Kind::Per32;
    default: return Q8Kind::None;
    }
}

// The quantized forms of `inputs` inputs of n values each, computed when a format of the call
// needs them. Buffers live per thread and are reused.
struct Q8Inputs {
    int64_t n = 0, inputs = 0;
    bool have_k = false, have_32 = false;
    std::vector<int8_t> qk, q32;
    std::vector<float> dk, d32, m32;
    std::vector<int16_t> bk;

    static Q8Inputs& start(int64_t n, int64_t inputs) {
        thread_local Q8Inputs in;
        in.n = n;
        in.inputs = inputs;
        in.have_k = in.have_32 = false;
        return in;
    }
    // For x [inputs, n] and a format of the call.
    void prepare(int format, const float* x) {
        const Q8Kind kind = q8_kind(format);
        if (kind == Q8Kind::PerK && !have_k) {
            qk.resize(static_cast<size_t>(inputs * n));
            dk.resize(static_cast<size_t>(inputs * (n / 256)));
            bk.resize(static_cast<size_t>(inputs * (n / 16)));
            for (int64_t j = 0; j < inputs; ++j) {
                int8_t* q = qk.data() + j * n;
                quantize_q8_blocks(x + j * n, n, 256, q, dk.data() + j * (n / 256));
                int16_t* sums = bk.data() + j * (n / 16);
                for (int64_t b = 0; b < n / 16; ++b) {
                    int s = 0;
                    for (int i = 0; i < 16; ++i) s += q[16 * b + i];
                    sums[b] = static_cast<int16_t>(s);
                }
            }
            have_k = true;
        } else if (kind == Q8Kind::Per32 && !have_32) {
            q32.resize(static_cast<size_t>(inputs * n));
            d32.resize(static_cast<size_t>(inputs * (n / 32)));
            m32.resize(static_cast<size_t>(inputs * (n / 32)));
            for (int64_t j = 0; j < inputs; ++j) {
                int8_t* q = q32.data() + j * n;
                float* d = d32.data() + j * (n / 32);
                quantize_q8_blocks(x + j * n, n, 32, q, d);
                for (int64_t b = 0; b < n / 32; ++b) {
                    int s = 0;
                    for (int i = 0; i < 32; ++i) s += q[32 * b + i];
                    m32[static_cast<size_t>(j * (n / 32) + b)] = d[b] * static_cast<float>(s);
                }
            }
            have_32 = true;
        }
    }
    Q8Input input(int64_t j) const {
        Q8Input in;
        if (have_k) {
            in.qk = qk.data() + j * n;
            in.dk = dk.data() + j * (n / 256);
            in.bk = bk.data() + j * (n / 16);
        }
        if (have_32) {
            in.q32 = q32.data() + j * n;
            in.d32 = d32.data() + j * (n / 32);
            in.m32 = m32.data() + j * (n / 32);
        }
        return in;
    }
};

// Whether matrix w runs an 8-bit product on table t.
bool uses_q8(const BlockMatrix& w, const KernelTable& t) {
    return w.activations == Activations::Q8 && t.q8_matvec[format_of(*w.type)] != nullptr;
}

const KernelTable& table_for(CpuPath path) {
    switch (path) {
#if defined(SNAPKV_QUANT_X86)
    case CpuPath::Avx512: return avx512_kernels();
    case CpuPath::Avx2: return avx2_kernels();
#endif
    default: return scalar_kernels();
    }
}

std::mutex g_pool_mutex;
std::atomic<int> g_threads{0};  // 0: not set, use the core count
std::shared_ptr<KernelPool> g_pool;

std::shared_ptr<KernelPool> pool() {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    if (!g_pool) g_pool = std::make_shared<KernelPool>(kernel_threads());
    return g_pool;
}

// Runs body(begin, end) over [0, n) in chunks of about `chunk` from a shared counter, on the pool
// when there is more than one chunk.
template <class Body>
void for_chunks(int64_t n, int64_t chunk, bool spin, const Body& body) {
    if (n <= chunk) {
        body(int64_t(0), n);
        return;
    }
    std::atomic<int64_t> next{0};
    auto p = pool();
    p->run(
        [&](int) {
            for (;;) {
                const int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
                if (begin >= n) return;
                body(begin, std::min(n, begin + chunk));
            }
        },
        spin);
}

// The same with shrinking chunks: each take is a 1 / (2 x threads) share of what is left, at least
// min_chunk, so a job starts with few large takes and ends with small ones (the threads finish
// within about one small chunk of each other, with few trips to the shared counter).
template <class Body>
void for_guided(int64_t n, int64_t min_chunk, bool spin, const Body& body) {
    if (n <= min_chunk) {
        body(int64_t(0), n);
        return;
    }
    auto p = pool();
    if (p->size() == 1) {
        body(int64_t(0), n);
        return;
    }
    const int64_t share = 2 * static_cast<int64_t>(p->size());
    std::atomic<int64_t> next{0};
    p->run(
        [&](int) {
            int64_t begin = next.load(std::memory_order_relaxed);
            while (begin < n) {
                const int64_t end = std::min(n, begin + std::max(min_chunk, (n - begin) / share));
                if (next.compare_exchange_weak(begin, end, std::memory_order_relaxed)) {
                    body(begin, end);
                    begin = next.load(std::memory_order_relaxed);
                }
            }
        },
        spin);
}

// Below this many multiply-adds a job is not worth waking the other threads for.
bool small_work(int64_t macs) { return macs < 65536; }

// A chunk of n work units that gives each kernel thread about four, so a slow thread can be helped.
int64_t quarter_share(int64_t n) {
    const int64_t threads = std::max(1, kernel_threads());
    return (n + 4 * threads - 1) / (4 * threads);
}

// Rows per chunk: a few chunks per thread, never tiny ones.
int64_t row_chunk(int64_t n_rows, int64_t n_cols) {
    const int64_t min_rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(n_cols, 1));
    return std::max(min_rows, quarter_share(n_rows));
}

}  // namespace

bool kernel_supports(const GgmlType& type) { return format_of(type) >= 0; }

void quantize_q8_blocks(const float* x, int64_t n, int block, int8_t* q, float* d) {
    for (int64_t b = 0; b < n / block; ++b) {
        const float* xb = x + b * block;
        int8_t* qb = q + b * block;
        float amax = 0.0f;
        bool finite = true;
        for (int i = 0; i < block; ++i) {
            const float a = std::fabs(xb[i]);
            if (!(a <= std::numeric_limits<float>::max())) finite = false;
            else amax = std::max(amax, a);
        }
        if (!finite || amax == 0.0f) {
            d[b] = finite ? 0.0f : std::numeric_limits<float>::quiet_NaN();
            std::fill(qb, qb + block, int8_t(0));
            continue;
        }
        d[b] = amax / 127.0f;
        const float id = 127.0f / amax;
        // Round to nearest, ties to even (as nearbyint in the default mode, without a library
        // call): adding and taking away 1.5 x 2^23 leaves no fraction bits for |v| < 2^22.
        constexpr float kRound = 12582912.0f;
        for (int i = 0; i < block; ++i) {
            const float v = std::clamp(xb[i] * id, -127.0f, 127.0f);
            qb[i] = static_cast<int8_t>(static_cast<int>((v + kRound) - kRound));
        }
    }
}

bool q8_supported(const GgmlType& type) {
    const int f = format_of(type);
    return f >= 0 && q8_kind(f) != Q8Kind::None;
}

BlockMatrix block_matrix(const GgmlType& type, const uint8_t* data, int64_t n_rows, int64_t n_cols) {
    if (!kernel_supports(type))
        throw InputError(std::string("weights: type ") + type.name +
                         " has no kernel (supported: " + readable_ggml_type_names() + ")");
    if (n_rows < 0 || n_cols < 0 || n_cols % type.block_size != 0)
        throw InputError(std::string("weights: a ") + type.name + " matrix of " + std::to_string(n_rows) + " x " +
                         std::to_string(n_cols) + " values: rows must be whole blocks of " +
                         std::to_string(type.block_size));
    BlockMatrix w;
    w.type = &type;
    w.data = data;
    w.n_rows = n_rows;
    w.n_cols = n_cols;
    w.row_bytes = static_cast<size_t>(n_cols / type.block_size) * type.block_bytes;
    return w;
}

void matvec_on(CpuPath path, const BlockMatrix& w, const float* x, float* y, int64_t row0, int64_t row1) {
    const int f = format_of(*w.type);
    const KernelTable& table = table_for(path);
    if (uses_q8(w, table)) {
        Q8Inputs& q = Q8Inputs::start(w.n_cols, 1);
        q.prepare(f, x);
        table.q8_matvec[f](w.data + static_cast<size_t>(row0) * w.row_bytes, w.row_bytes, row1 - row0, w.n_cols,
                           q.input(0), y);
        return;
    }
    BlockSums& in = BlockSums::start(x, w.n_cols);
    in.prepare(f);
    table.matvec[f](w.data + static_cast<size_t>(row0) * w.row_bytes, w.row_bytes, row1 - row0, w.n_cols, x, in.sums(),
                    y);
}

void dequantize_on(CpuPath path, const BlockMatrix& w, float* out, int64_t row0, int64_t row1) {
    table_for(path).dequant[format_of(*w.type)](w.data + static_cast<size_t>(row0) * w.row_bytes, w.row_bytes,
                                                row1 - row0, w.n_cols, out);
}

void matvec(const BlockMatrix& w, const float* x, float* y) {
    float* ys[] = {y};
    matvec_many(&w, ys, 1, x);
}

void matvec_many(const BlockMatrix* ws, float* const* ys, int count, const float* x) {
    if (count <= 0) return;
    const KernelTable& table = table_for(active_cpu_path());
    const int64_t n_cols = ws[0].n_cols;
    int64_t total = 0;
    BlockSums& in = BlockSums::start(x, n_cols);
    Q8Inputs& q8 = Q8Inputs::start(n_cols, 1);
    for (int i = 0; i < count; ++i) {
        if (ws[i].n_cols != n_cols)
            throw InputError("weights: matvec_many needs matrices of one width (" + std::to_string(n_cols) + " and " +
                             std::to_string(ws[i].n_cols) + ")");
        total += ws[i].n_rows;
        if (uses_q8(ws[i], table)) q8.prepare(format_of(*ws[i].type), x);
        else in.prepare(format_of(*ws[i].type));
    }
    const Q8Input q8_in = q8.input(0);
    // Rows of the matrices taken as one list: chunk [begin, end) may span several matrices.
    const int64_t min_rows = std::max<int64_t>(4, 8192 / std::max<int64_t>(n_cols, 1));
    for_guided(total, min_rows, /*spin=*/true, [&](int64_t begin, int64_t end) {
        int64_t base = 0;
        for (int i = 0; i < count && begin < end; ++i) {
            const BlockMatrix& w = ws[i];
            const int64_t lo = std::max(begin, base), hi = std::min(end, base + w.n_rows);
            const int f = format_of(*w.type);
            const uint8_t* rows = w.data + static_cast<size_t>(lo - base) * w.row_bytes;
            if (lo < hi && uses_q8(w, table))
                table.q8_matvec[f](rows, w.row_bytes, hi - lo, n_cols, q8_in, ys[i] + (lo - base));
            else if (lo < hi) table.matvec[f](rows, w.row_bytes, hi - lo, n_cols, x, in.sums(), ys[i] + (lo - base));
            base += w.n_rows;
        }
    });
}

void matvec_many_batch(const BlockMatrix* ws, float* const* ys, int count, const float* x, int64_t n) {
    if (count <= 0 || n <= 0) return;
    if (n == 1) {
        matvec_many(ws, ys, count, x);
        return;
    }
    const KernelTable& table = table_for(active_cpu_path());
    const int64_t n_cols = ws[0].n_cols;
    int64_t total = 0;
    bool sums = false;
    size_t max_row_bytes = 1;
    for (int i = 0; i < count; ++i) {
        if (ws[i].n_cols != n_cols)
            throw InputError("weights: matvec_many_batch needs matrices of one width (" + std::to_string(n_cols) +
                             " and " + std::to_string(ws[i].n_cols) + ")");
        total += ws[i].n_rows;
        sums = sums || (!uses_q8(ws[i], table) && needs_block_sums(format_of(*ws[i].type)));
        max_row_bytes = std::max(max_row_bytes, ws[i].row_bytes);
    }
    // Every input quantized once, as matvec_many's would be, for the matrices with 8-bit products.
    Q8Inputs& q8 = Q8Inputs::start(n_cols, n);
    for (int i = 0; i < count; ++i)
        if (uses_q8(ws[i], table)) q8.prepare(format_of(*ws[i].type), x);
    // Every input's block sums, computed once as matvec_many's BlockSums would.
    const int64_t per = n_cols / 32 + n_cols / 16;
    thread_local std::vector<float> xs;
    if (sums) {
        xs.resize(static_cast<size_t>(n * per));
        for (int64_t j = 0; j < n; ++j) block_sums(x + j * n_cols, n_cols, xs.data() + j * per);
    }
    const float* xs_data = xs.data();
    // Rows per tile: about 16 KiB of weights, which the inputs then read from L1; a multiple of 4
    // when it holds 4 rows or more (the widest batch kernel takes rows 4 at a time).
    int64_t tile = std::max<int64_t>(1, static_cast<int64_t>((16u << 10) / max_row_bytes));
    if (tile >= 4) tile = (tile + 3) / 4 * 4;
    const int64_t min_rows = std::max<int64_t>(tile, 8192 / std::max<int64_t>(n_cols, 1));
    for_guided(total, min_rows, /*spin=*/true, [&](int64_t begin, int64_t end) {
        int64_t base = 0;
        for (int i = 0; i < count && begin < end; ++i) {
            const BlockMatrix& w = ws[i];
            const int64_t lo = std::max(begin, base), hi = std::min(end, base + w.n_rows);
            const MatvecFn fn = table.matvec[format_of(*w.type)];
            const MatvecBatchFn batch = table.matvec_batch[format_of(*w.type)];
            const bool q8_rows = uses_q8(w, table);
            for (int64_t r0 = lo; r0 < hi; r0 += tile) {
                const int64_t r1 = std::min(hi, r0 + tile);
                const uint8_t* rows = w.data + static_cast<size_t>(r0 - base) * w.row_bytes;
                if (q8_rows) {
                    const Q8MatvecFn q8_fn = table.q8_matvec[format_of(*w.type)];
                    for (int64_t j = 0; j < n; ++j)
                        q8_fn(rows, w.row_bytes, r1 - r0, n_cols, q8.input(j), ys[i] + j * w.n_rows + (r0 - base));
                    continue;
                }
                if (batch != nullptr) {
                    batch(rows, w.row_bytes, r1 - r0, n_cols, x, n, sums ? xs_data : nullptr, per, ys[i] + (r0 - base),
                          w.n_rows);
                    continue;
                }
                for (int64_t j = 0; j < n; ++j)
                    fn(rows, w.row_bytes, r1 - r0, n_cols, x + j * n_cols, sums ? xs_data + j * per : nullptr,
                       ys[i] + j * w.n_rows + (r0 - base));
            }
            base += w.n_rows;
        }
    });
}

void dequantize(const BlockMatrix& w, int64_t row0, int64_t n, float* out) {
    const DequantFn fn = table_for(active_cpu_path()).dequant[format_of(*w.type)];
    for_chunks(n, row_chunk(n, w.n_cols), /*spin=*/false, [&](int64_t begin, int64_t end) {
        fn(w.data + static_cast<size_t>(row0 + begin) * w.row_bytes, w.row_bytes, end - begin, w.n_cols,
           out + begin * w.n_cols);
    });
}

namespace {

// Cache head h's rows: h * head_stride elements of the format past rows (q8_0: quants and scales
// both, in a Q8Rows of its own).
struct HeadRows {
    HeadRows(const void* rows, RowFormat f, int64_t head_stride, int64_t h) {
        if (f == RowFormat::Q8_0) {
            const auto* r = static_cast<const Q8Rows*>(rows);
            q8 = {r->q + h * head_stride, r->d + h * head_stride / 32};
            p = &q8;
            return;
        }
        const size_t elem = f == RowFormat::F32 ? 4 : 2;
        p = static_cast<const uint8_t*>(rows) + static_cast<size_t>(h * head_stride) * elem;
    }
    HeadRows(const HeadRows&) = delete;
    HeadRows& operator=(const HeadRows&) = delete;
    Q8Rows q8{};
    const void* p = nullptr;
};

}  // namespace

void attention_scores_on(CpuPath path, const float* q, const void* k, RowFormat k_format, int64_t k_head_stride,
                         int64_t Hc, int64_t g, int64_t S, int64_t D, float* scores) {
    const AttnScoresFn fn = table_for(path).attn_scores;
    for (int64_t h = 0; h < Hc; ++h)
        fn(q + h * g * D, HeadRows(k, k_format, k_head_stride, h).p, static_cast<int>(k_format), g, S, D, 0, S,
           scores + h * g * S);
}

void attention_values_on(CpuPath path, const float* p, const void* v, RowFormat v_format, int64_t v_head_stride,
                         int64_t Hc, int64_t g, int64_t S, int64_t D, float* out) {
    const AttnValuesFn fn = table_for(path).attn_values;
    std::fill(out, out + Hc * g * D, 0.0f);
    for (int64_t h = 0; h < Hc; ++h)
        fn(p + h * g * S, HeadRows(v, v_format, v_head_stride, h).p, static_cast<int>(v_format), g, S, D, 0, S,
           out + h * g * D);
}

void attention_scores(const float* q, const void* k, RowFormat k_format, int64_t k_head_stride, int64_t Hc, int64_t g,
                      int64_t S, int64_t D, float* scores) {
    const AttnScoresFn fn = table_for(active_cpu_path()).attn_scores;
    // Work items are (head, slot range) pairs, numbered head-major. Long ranges (up to 1024 slots,
    // about four items a thread) keep each thread's reads one long stream: ranges of 64 slots left
    // a 1B-shape decode's key pass at 15 GB/s on a Zen 4 EPYC, 1024 reach 27 (each score is its own
    // dot product: the ranges change no result).
    const int64_t chunk = std::clamp<int64_t>(quarter_share(Hc * S), 64, 1024);
    const int64_t per_head = (S + chunk - 1) / chunk;
    const int64_t items = Hc * per_head;
    for_chunks(items, small_work(Hc * g * S * D) ? items : 1, /*spin=*/true, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t h = i / per_head, s0 = (i % per_head) * chunk;
            fn(q + h * g * D, HeadRows(k, k_format, k_head_stride, h).p, static_cast<int>(k_format), g, S, D, s0,
               std::min(S, s0 + chunk), scores + h * g * S);
        }
    });
}

namespace {

float* row_scores_scratch(const KernelTable& tab, int64_t g, int64_t D) {
    thread_local std::vector<float> buf;
    const auto need = static_cast<size_t>(tab.attn_row_scratch(g, D) + 16);
    if (buf.size() < need) buf.resize(need);
    auto p = reinterpret_cast<uintptr_t>(buf.data());  // 64-byte aligned: tiles load whole vectors
    return reinterpret_cast<float*>((p + 63) & ~uintptr_t(63));
}

void score_rows_items(const KernelTable& tab, const float* q, const void* k, RowFormat kf, int64_t k_head_stride,
                      int64_t g, int64_t S, int64_t D, float* scores, int64_t n_blocks, int64_t begin, int64_t end) {
    float* scratch = row_scores_scratch(tab, g, D);
    const size_t elem = kf == RowFormat::F32 ? 4 : 2;
    for (int64_t i = begin; i < end; ++i) {
        const int64_t h = i / n_blocks, b0 = (i % n_blocks) * kAttnKeyBlock;
        const void* kh = static_cast<const uint8_t*>(k) + static_cast<size_t>(h * k_head_stride) * elem;
        tab.attn_row_scores(q + h * g * D, kh, static_cast<int>(kf), g, S, D, b0, scores + h * g * S, scratch);
    }
}

}  // namespace

void attention_score_rows_on(CpuPath path, const float* q, const void* k, RowFormat k_format, int64_t k_head_stride,
                             int64_t Hc, int64_t g, int64_t S, int64_t D, float* scores) {
    if (k_format == RowFormat::Q8_0) throw std::invalid_argument("attention_score_rows: no q8_0 rows (decode's only)");
    const int64_t n_blocks = (S + kAttnKeyBlock - 1) / kAttnKeyBlock;
    score_rows_items(table_for(path), q, k, k_format, k_head_stride, g, S, D, scores, n_blocks, 0, Hc * n_blocks);
}

void attention_score_rows(const float* q, const void* k, RowFormat k_format, int64_t k_head_stride, int64_t Hc,
                          int64_t g, int64_t S, int64_t D, float* scores) {
    if (k_format == RowFormat::Q8_0) throw std::invalid_argument("attention_score_rows: no q8_0 rows (decode's only)");
    const KernelTable& tab = table_for(active_cpu_path());
    const int64_t n_blocks = (S + kAttnKeyBlock - 1) / kAttnKeyBlock;
    const int64_t items = Hc * n_blocks;
    for_chunks(items, small_work(Hc * g * S * D) ? items : 4, /*spin=*/false, [&](int64_t begin, int64_t end) {
        score_rows_items(tab, q, k, k_format, k_head_stride, g, S, D, scores, n_blocks, begin, end);
    });
}

void attention_values(const float* p, const void* v, RowFormat v_format, int64_t v_head_stride, int64_t Hc, int64_t g,
                      int64_t S, int64_t D, float* out) {
    const AttnValuesFn fn = table_for(active_cpu_path()).attn_values;
    // Fixed slot ranges, each summed into its own partial output, then added in range order:
    // the result does not depend on which thread took which range.
    const int64_t chunk = std::max<int64_t>(64, 16384 / std::max<int64_t>(g * D, 1));
    const int64_t n_ranges = (S + chunk - 1) / chunk;
    const int64_t out_n = Hc * g * D;
    thread_local std::vector<float> partial;
    partial.assign(static_cast<size_t>(n_ranges * out_n), 0.0f);
    float* part = partial.data();
    // A thread takes runs of consecutive ranges (up to 1024 slots, about four takes a thread) and
    // walks them head by head, so that it reads each head's values as one stream; which thread
    // computes a (range, head) partial, and when, changes none of them.
    const int64_t take = std::clamp<int64_t>(quarter_share(n_ranges), 1, std::max<int64_t>(1, 1024 / chunk));
    for_chunks(n_ranges, small_work(Hc * g * S * D) ? n_ranges : take, /*spin=*/true, [&](int64_t begin, int64_t end) {
        for (int64_t h = 0; h < Hc; ++h)
            for (int64_t r = begin; r < end; ++r) {
                const int64_t s0 = r * chunk, s1 = std::min(S, s0 + chunk);
                fn(p + h * g * S, HeadRows(v, v_format, v_head_stride, h).p, static_cast<int>(v_format), g, S, D, s0,
                   s1, part + r * out_n + h * g * D);
            }
    });
    std::copy(part, part + out_n, out);
    for (int64_t r = 1; r < n_ranges; ++r)
        for (int64_t i = 0; i < out_n; ++i) out[i] += part[r * out_n + i];
}

namespace {

// Query tokens per attention item: about 96 query rows (g heads x tokens) per block, so a block's
// output and queries (2 x 96 x D floats) stay in L2 while its keys and values stream past.
int64_t prefill_query_block(int64_t g) { return std::max<int64_t>(1, (96 + g - 1) / g); }

// Slots a block of queries [t0, t1) may see in cache head h: none of the later tokens of this
// call (the last T slots hold the call's tokens in order), none older than the block's first
// window when positions ascend.
std::pair<int64_t, int64_t> prefill_slots(const PrefillAttention& a, int64_t h, int64_t t0, int64_t t1) {
    const int64_t s1 = a.S - (a.T - t1);
    int64_t s0 = 0;
    if (a.window > 0 && a.kpos_ascending) {
        int64_t qmin = a.qpos[t0];
        for (int64_t t = t0 + 1; t < t1; ++t) qmin = std::min(qmin, a.qpos[t]);
        const int64_t* ph = a.kpos + h * a.kpos_head_stride;
        s0 = std::lower_bound(ph, ph + s1, qmin - a.window + 1) - ph;
        s0 = s0 / kAttnKeyBlock * kAttnKeyBlock;  // whole key blocks (the mask hides the rest)
    }
    return {s0, s1};
}

float* prefill_scratch(const KernelTable& tab, int64_t rows, int64_t D) {
    thread_local std::vector<float> buf;
    const auto need = static_cast<size_t>(tab.attn_scratch(rows, D) + 16);
    if (buf.size() < need) buf.resize(need);
    // 64-byte aligned start: the tiles are loaded a vector at a time.
    auto p = reinterpret_cast<uintptr_t>(buf.data());
    return reinterpret_cast<float*>((p + 63) & ~uintptr_t(63));
}

// Every cache head's keys transposed once per call, per key block: kt [Hc, S / B, D, LD] with
// B = kAttnKeyBlock and LD = kAttnKeyLd, slot s of head h at block s / B, column s % B; zeros past
// the last slot and in the padding columns. A query block then reads a key block's columns straight
// into vectors from 36 KB (at D 64) of contiguous memory, instead of transposing it again for every
// item.
struct TransposedKeys {
    std::unique_ptr<float[]> kt;  // every float is written below: no zero fill first
    int64_t head_floats = 0;      // S / B * D * LD
};

TransposedKeys transpose_keys(const KernelTable& tab, const PrefillAttention& a, bool threads) {
    constexpr int64_t B = kAttnKeyBlock, LD = kAttnKeyLd;
    TransposedKeys t;
    const int64_t n_blocks = (a.S + B - 1) / B;
    t.head_floats = n_blocks * a.D * LD;
    t.kt.reset(new float[static_cast<size_t>(a.Hc * t.head_floats)]);
    auto body = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t h = i / n_blocks, b = i % n_blocks, s0 = b * B, s1 = std::min(a.S, s0 + B);
            tab.attn_transpose(a.k + h * a.kv_head_stride + s0 * a.D, s1 - s0, a.D,
                               t.kt.get() + h * t.head_floats + b * a.D * LD);
        }
    };
    // A few hundred thousand floats take the caller less time than waking the workers; above that
    // they share it and wait awake for the attention job that follows at once.
    if (threads && a.Hc * a.S * a.D >= (int64_t{1} << 20)) for_chunks(a.Hc * n_blocks, 4, /*spin=*/true, body);
    else body(0, a.Hc * n_blocks);
    return t;
}

void run_prefill_item(const KernelTable& tab, const PrefillAttention& a, const TransposedKeys& kt, int64_t item,
                      int64_t n_blocks, int64_t bq) {
    // Items run latest query block first: they see the most slots, so the shortest ones end a job.
    const int64_t h = item % a.Hc, b = n_blocks - 1 - item / a.Hc;
    const int64_t t0 = b * bq, t1 = std::min(a.T, t0 + bq);
    const auto [s0, s1] = prefill_slots(a, h, t0, t1);
    tab.attn_block(a, h, t0, t1, s0, s1, kt.kt.get() + h * kt.head_floats, prefill_scratch(tab, a.g * (t1 - t0), a.D));
}

// The whole prefill attention on one path, on the kernel threads or the caller alone.
void prefill_attention(const KernelTable& tab, const PrefillAttention& args, bool threads) {
    PrefillAttention a = args;
    std::vector<float> rows;
    if (a.h2o != nullptr) {
        rows.resize(static_cast<size_t>(2 * a.Hc * a.g * a.T));
        a.row_max = rows.data();
        a.row_sum = rows.data() + a.Hc * a.g * a.T;
    }
    const TransposedKeys kt = transpose_keys(tab, a, threads);
    const int64_t bq = prefill_query_block(a.g), n_blocks = (a.T + bq - 1) / bq, items = a.Hc * n_blocks;
    auto attend = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) run_prefill_item(tab, a, kt, i, n_blocks, bq);
    };
    if (threads) for_chunks(items, 1, /*spin=*/false, attend);
    else attend(0, items);
    if (a.h2o == nullptr) return;
    // Items (head, key block), earliest key block first: it is seen by the most queries.
    const int64_t key_blocks = (a.S + kAttnKeyBlock - 1) / kAttnKeyBlock;
    auto sums = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t h = i % a.Hc, b = i / a.Hc;
            tab.attn_h2o(a, h, b * kAttnKeyBlock, bq, kt.kt.get() + h * kt.head_floats,
                         prefill_scratch(tab, a.g * bq, a.D));
        }
    };
    if (threads) for_chunks(a.Hc * key_blocks, 1, /*spin=*/false, sums);
    else sums(0, a.Hc * key_blocks);
}

}  // namespace

void attention_prefill(const PrefillAttention& a) { prefill_attention(table_for(active_cpu_path()), a, true); }

void attention_prefill_on(CpuPath path, const PrefillAttention& a) { prefill_attention(table_for(path), a, false); }

std::pair<int64_t, int64_t> transpose_key_block_on(CpuPath path, const float* k, int64_t n, int64_t D, float* dst) {
    if (n < 0 || n > kAttnKeyBlock || D < 1) throw InputError("transpose_key_block_on: n must be in [0, 128], D >= 1");
    table_for(path).attn_transpose(k, n, D, dst);
    return {kAttnKeyLd, kAttnKeyBlock};
}

void kernel_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    for_chunks(n, std::max<int64_t>(1, grain), /*spin=*/false, body);
}

namespace {
// The visible positions of attention_softmax: above lo and not above hi.
std::pair<int64_t, int64_t> visible_range(int64_t q_pos, int64_t window) {
    return {window > 0 ? q_pos - window : std::numeric_limits<int64_t>::min(), q_pos};
}
}  // namespace

void attention_softmax(float* scores, int64_t Hc, int64_t g, int64_t S, const int64_t* pos, int64_t pos_head_stride,
                       int64_t q_pos, float scale, int64_t window) {
    const AttnSoftmaxFn fn = table_for(active_cpu_path()).attn_softmax;
    const auto [lo, hi] = visible_range(q_pos, window);
    // Takes of whole cache heads (their rows share one pass over the positions, which a long
    // cache's step finds in memory, not in cache) and at least 4096 scores: at SmolLM2's 9 rows of
    // 4K slots, masking and softmax on the caller alone were ~6 % of a step while the other kernel
    // threads waited.
    const int64_t per_head = Hc > 1 ? g : 1;
    const int64_t grain = per_head * std::max<int64_t>(1, 4096 / std::max<int64_t>(per_head * S, 1));
    for_chunks(Hc * g, grain, /*spin=*/true,
               [&](int64_t r0, int64_t r1) { fn(scores, r0, r1, g, S, pos, pos_head_stride, hi, lo, scale); });
}
void attention_softmax_on(CpuPath path, float* scores, int64_t Hc, int64_t g, int64_t S, const int64_t* pos,
                          int64_t pos_head_stride, int64_t q_pos, float scale, int64_t window) {
    const auto [lo, hi] = visible_range(q_pos, window);
    table_for(path).attn_softmax(scores, 0, Hc * g, g, S, pos, pos_head_stride, hi, lo, scale);
}

namespace {
void check_fwht(int64_t blocks, int64_t n) {
    if (n < 2 || (n & (n - 1)) != 0 || blocks < 0)
        throw InputError("fwht_blocks: n must be a power of two >= 2 (got " + std::to_string(n) + "), blocks >= 0");
}
}  // namespace

void fwht_blocks(float* x, int64_t blocks, int64_t n) {
    check_fwht(blocks, n);
    table_for(active_cpu_path()).fwht(x, blocks, n);
}
void fwht_blocks_on(CpuPath path, float* x, int64_t blocks, int64_t n) {
    check_fwht(blocks, n);
    table_for(path).fwht(x, blocks, n);
}

void softmax_rows(float* x, int64_t rows, int64_t n) { table_for(active_cpu_path()).softmax_rows(x, rows, n); }
void softmax_rows_on(CpuPath path, float* x, int64_t rows, int64_t n) { table_for(path).softmax_rows(x, rows, n); }
void silu_mul(float* gate, const float* up, int64_t n) { table_for(active_cpu_path()).silu_mul(gate, up, n); }
void silu_mul_on(CpuPath path, float* gate, const float* up, int64_t n) { table_for(path).silu_mul(gate, up, n); }
void gelu_tanh_mul(float* gate, const float* up, int64_t n) { table_for(active_cpu_path()).gelu_tanh_mul(gate, up, n); }
void gelu_tanh_mul_on(CpuPath path, float* gate, const float* up, int64_t n) {
    table_for(path).gelu_tanh_mul(gate, up, n);
}

void set_kernel_threads(int n) {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    const int want = std::max(1, n);
    if (want == g_threads && g_pool) return;
    g_threads = want;
    g_pool.reset();  // a run in flight keeps its own reference
}

int kernel_threads() {
    if (const int n = g_threads.load(); n > 0) return n;
    return static_cast<int>(std::max(1u, std::min(std::thread::hardware_concurrency(), 64u)));
}

}  // namespace snapkv
