// LayerScorer: at construction, the softmax rows of the Wmax captured queries in blocks of B
// rows (CPU: core/quant's many-row score kernel and softmax_rows; CUDA: batched matmul and
// softmax), accumulated from the last row up into the checkpoint sums (every S rows); votes(W) =
// a checkpoint plus the few rows above it, recomputed and added in cache-sized column tiles. Nothing here pools or
// selects, and nothing materialises L x L attention. On CUDA captures with the kernels built,
// no checkpoints are kept and votes(W) calls the fused kernel (gpu_ops.h).
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, L = prompt tokens, Wmax = captured
// window, W = window, D = head_dim, S = checkpoint stride, Nc = checkpoints, B = rows per GEMM at
// construction, R = rows, N = key columns summed.
#include "core/snapkv/layer_scorer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "core/common/errors.h"
#include "core/quant/qkernels.h"
#include "core/snapkv/gpu_ops.h"

namespace snapkv {
namespace {

std::string shape_str(const at::Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i) {
        if (i) s += ", ";
        s += std::to_string(t.size(i));
    }
    return s + "]";
}

// True when the capture asks for SnapKV's own scoring: q.k^T / sqrt(D), no cap, no window.
bool plain_scoring(const LayerCapture& c, int64_t head_dim) {
    const bool default_scale = c.scale == 0.0 || std::fabs(c.scale * std::sqrt(double(head_dim)) - 1.0) < 1e-6;
    return default_scale && c.softcap <= 0.0 && c.sliding_window <= 0;
}

// Scales raw q.k^T scores, soft-caps them and applies the causal (and sliding-window) mask, in
// place, in the order of transformers' eager attention. scores: [N, R, L], query row i at
// absolute position first_pos + i (first_pos + R <= L). The default scale divides after the
// matmul, as the reference does (`/ math.sqrt(head_dim)`), for equal rounding.
void scale_and_mask(at::Tensor& scores, int64_t head_dim, const LayerCapture& c, int64_t first_pos) {
    const int64_t rows = scores.size(1);
    const int64_t n_tokens = scores.size(2);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    if (c.scale == 0.0 || std::fabs(c.scale * std::sqrt(double(head_dim)) - 1.0) < 1e-6)
        scores.div_(std::sqrt(static_cast<double>(head_dim)));
    else scores.mul_(c.scale);
    if (c.softcap > 0.0) scores.div_(c.softcap).tanh_().mul_(c.softcap);
    // Row i sees keys <= first_pos + i: of the keys [first_pos, L) it sees the lower triangle,
    // every earlier key is visible. -inf gives exact zeros after softmax (the reference adds
    // finfo.min, which underflows to the same zeros).
    const int64_t tail = n_tokens - first_pos;
    at::Tensor hidden = at::ones({rows, tail}, scores.options().dtype(at::kBool)).triu(1);  // [R, L - first_pos]
    scores.narrow(2, first_pos, tail).masked_fill_(hidden, neg_inf);
    if (c.sliding_window > 0) {
        // Row i also loses keys j <= first_pos + i - window.
        at::Tensor row_pos = at::arange(first_pos, first_pos + rows, scores.options().dtype(at::kLong));  // [R]
        at::Tensor key_pos = at::arange(0, n_tokens, scores.options().dtype(at::kLong));                  // [L]
        at::Tensor old = key_pos.unsqueeze(0).le(row_pos.unsqueeze(1) - c.sliding_window);                // [R, L]
        scores.masked_fill_(old, neg_inf);
    }
}

// Policy score tensors a scorer keeps (LayerScorer::cached_scores): the settings a user goes back
// and forth between while tuning.
constexpr size_t kCachedScores = 4;

// Column tile of the running sums: a tile of acc stays in L1/L2 while all rows are added to it.
constexpr int64_t kTile = 2048;

// For each head h: acc[h, :N] += rows[h, j, :N] for j = R - 1 down to 0 (the running sum's order,
// one float32 add per row and element, as acc.add_(row) does), in column tiles, heads and tiles
// on the intra-op threads. After the row that brings the sum to `done + i` rows (i = 1..R), when
// that count is a multiple of `stride` and at most `n_ckpt * stride`, the tile is copied to
// checkpoint (done + i) / stride - 1 of ckpt ([H, Nc, L]); ckpt may be null.
// rows: [H, R, L'] float32 contiguous with L' >= N; acc: [H, N'] float32 contiguous, N <= N'.
void add_rows_in_tiles(const at::Tensor& rows, at::Tensor& acc, int64_t n_cols, float* ckpt, int64_t ckpt_len,
                       int64_t done, int64_t stride, int64_t n_ckpt) {
    const int64_t H = rows.size(0), R = rows.size(1), row_len = rows.size(2), acc_len = acc.size(1);
    const float* src = rows.data_ptr<float>();
    float* dst = acc.data_ptr<float>();
    const int64_t n_tiles = (n_cols + kTile - 1) / kTile;
    kernel_parallel_for(H * n_tiles, 1, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            const int64_t h = item / n_tiles, c0 = (item % n_tiles) * kTile, n = std::min(kTile, n_cols - c0);
            float* a = dst + h * acc_len + c0;
            for (int64_t j = R - 1; j >= 0; --j) {
                const float* r = src + (h * R + j) * row_len + c0;
                for (int64_t t = 0; t < n; ++t) a[t] += r[t];
                const int64_t count = done + (R - j);
                if (ckpt && count % stride == 0 && count / stride <= n_ckpt)
                    std::copy(a, a + n, ckpt + (h * n_ckpt + count / stride - 1) * ckpt_len + c0);
            }
        }
    });
}

// scale_and_mask's arithmetic on one row of raw scores on the CPU, then its softmax: x [L], the
// query at absolute position pos. The default scale divides by sqrt(D) in float32 (as div_ does).
void scale_mask_softmax_row(float* x, int64_t n_tokens, int64_t head_dim, const LayerCapture& c, int64_t pos) {
    const float neg_inf = -std::numeric_limits<float>::infinity();
    if (c.scale == 0.0 || std::fabs(c.scale * std::sqrt(double(head_dim)) - 1.0) < 1e-6) {
        const float d = static_cast<float>(std::sqrt(static_cast<double>(head_dim)));
        for (int64_t s = 0; s < n_tokens; ++s) x[s] = x[s] / d;
    } else {
        const float m = static_cast<float>(c.scale);
        for (int64_t s = 0; s < n_tokens; ++s) x[s] = x[s] * m;
    }
    if (c.softcap > 0.0) {
        const float cap = static_cast<float>(c.softcap);
        for (int64_t s = 0; s < n_tokens; ++s) x[s] = std::tanh(x[s] / cap) * cap;
    }
    for (int64_t s = pos + 1; s < n_tokens; ++s) x[s] = neg_inf;
    if (c.sliding_window > 0)
        for (int64_t s = 0; s <= pos - c.sliding_window && s < n_tokens; ++s) x[s] = neg_inf;
    softmax_rows(x, 1, n_tokens);
}

}  // namespace

struct LayerScorer::LastVotes {
    std::mutex mutex;
    int64_t window = 0;
    at::Tensor votes;  // [H, L - window]
    // cached_scores, most recently asked last; at most kCachedScores (a window slider dragged
    // over a policy with scores would otherwise keep one [Hs, P] tensor per window it passed).
    std::vector<std::pair<std::string, at::Tensor>> scores;
    // cached_derived's tensors, under a lock of their own (they are made inside a cached_scores
    // make, which holds `mutex`); never evicted.
    std::mutex derived_mutex;
    std::vector<std::pair<std::string, at::Tensor>> derived;
};

LayerScorer::LayerScorer(LayerCapture capture) : m_capture(std::move(capture)) {
    c10::InferenceMode guard;
    const at::Tensor& q = m_capture.window_queries;  // [H, Wmax, D]
    const at::Tensor& k = m_capture.keys;            // [Hkv, L, D]
    if (!q.defined() || !k.defined())
        throw InputError("LayerCapture: window_queries and keys must both be set (got " +
                         std::string(q.defined() ? "" : "no window_queries ") + (k.defined() ? "" : "no keys") + ")");
    if (q.dim() != 3 || k.dim() != 3)
        throw InputError("LayerCapture: window_queries " + shape_str(q) + " and keys " + shape_str(k) +
                         " must both be 3-D: [H, Wmax, D] and [Hkv, L, D]");
    if (!q.is_floating_point() || !k.is_floating_point())
        throw InputError("LayerCapture: window_queries and keys must be floating point tensors");
    if (q.device() != k.device())
        throw InputError("LayerCapture: window_queries on " + q.device().str() + " but keys on " + k.device().str() +
                         "; both must be on one device");
    m_n_head = q.size(0);
    m_max_window = q.size(1);
    m_head_dim = q.size(2);
    m_n_head_kv = k.size(0);
    m_n_tokens = k.size(1);
    if (m_n_head < 1 || m_n_head_kv < 1 || m_head_dim < 1 || m_max_window < 1 || m_n_tokens < 1)
        throw InputError("LayerCapture: empty tensors: window_queries " + shape_str(q) + ", keys " + shape_str(k));
    if (k.size(2) != m_head_dim)
        throw InputError("LayerCapture: keys " + shape_str(k) + " have head_dim " + std::to_string(k.size(2)) +
                         " but window_queries " + shape_str(q) + " have " + std::to_string(m_head_dim));
    if (m_n_head % m_n_head_kv != 0)
        throw InputError("LayerCapture: n_head " + std::to_string(m_n_head) + " is not a multiple of n_head_kv " +
                         std::to_string(m_n_head_kv));
    if (m_max_window > m_n_tokens)
        throw InputError("LayerCapture: captured window " + std::to_string(m_max_window) +
                         " is longer than the prompt (" + std::to_string(m_n_tokens) + " tokens)");
    if (m_capture.h2o.defined()) {
        const at::Tensor& h = m_capture.h2o;  // [H, L]
        if (h.dim() != 2 || h.size(0) != m_n_head || h.size(1) != m_n_tokens)
            throw InputError("LayerCapture: h2o " + shape_str(h) + ", expected [" + std::to_string(m_n_head) + ", " +
                             std::to_string(m_n_tokens) + "]");
    }

    m_last = std::make_shared<LastVotes>();
    // CUDA path: votes(W) runs kernels/window_votes on the capture; no checkpoints.
    // (The kernel takes head_dim up to 256; larger heads keep the LibTorch path.)
    // (The kernel implements SnapKV's own scoring only: other layers stay on the LibTorch path.)
    if (q.is_cuda() && gpu_kernels_available() && m_head_dim <= 256 && plain_scoring(m_capture, m_head_dim)) {
        m_fused_votes = true;
        return;
    }

    // Checkpoints, from the last query row up in blocks of B rows: the running sum gets rows
    // Wmax - 1, Wmax - 2, ... added one at a time (acc += row), the order of a full running sum,
    // and is copied out every S rows.
    m_stride = stride_for(m_max_window, m_n_tokens);
    const int64_t block = block_rows_for(m_max_window);
    const int64_t n_ckpt = checkpoints_for(m_max_window, m_n_tokens);
    if (n_ckpt == 0) return;
    m_checkpoints = at::empty({m_n_head, n_ckpt, m_n_tokens}, q.options().dtype(at::kFloat));  // [H, Nc, L]
    at::Tensor acc = at::zeros({m_n_head, m_n_tokens}, m_checkpoints.options());               // [H, L]
    for (int64_t done = 0; done < n_ckpt * m_stride; done += block) {
        const int64_t first = std::max<int64_t>(0, m_max_window - done - block);
        const at::Tensor rows = window_rows(first, m_max_window - done - first).contiguous();  // [H, B, L]
        add_rows_in_tiles(rows, acc, m_n_tokens, m_checkpoints.data_ptr<float>(), m_n_tokens, done, m_stride, n_ckpt);
    }
}

int64_t LayerScorer::block_rows_for(int64_t max_window) {
    // Up to Wmax = 128 a GEMM of 32 rows per query head (the usual windows 32, 64, 96, 128 read
    // sums of these blocks), then Wmax / 4 rounded up.
    return std::max<int64_t>(32, (max_window + 3) / 4);
}

int64_t LayerScorer::stride_for(int64_t max_window, int64_t n_tokens) {
    // Checkpoints per block by prompt length: a recomputed row costs H * L * D multiply-adds and
    // a read of all L keys, a checkpoint H * L floats; so the stride shrinks as L grows, keeping
    // the rows recomputed times L (the first retune's cost) within 8 * 32K. Short prompts keep
    // one checkpoint per block (SmolLM2 at 8K: capture within a quarter of weights + KV).
    const int64_t per_block = n_tokens >= 32768 ? 4 : n_tokens >= 16384 ? 2 : 1;
    const int64_t block = block_rows_for(max_window);
    return (block + per_block - 1) / per_block;
}

int64_t LayerScorer::cache_bytes() const {
    int64_t bytes = m_checkpoints.defined() ? m_checkpoints.numel() * 4 : 0;
    std::lock_guard<std::mutex> lock(m_last->mutex);
    if (m_last->votes.defined()) bytes += m_last->votes.numel() * 4;
    for (const auto& kv : m_last->scores)
        if (kv.second.defined()) bytes += kv.second.numel() * int64_t(kv.second.element_size());
    std::lock_guard<std::mutex> derived_lock(m_last->derived_mutex);  // always taken after `mutex`
    for (const auto& kv : m_last->derived) bytes += kv.second.numel() * int64_t(kv.second.element_size());
    return bytes;
}

at::Tensor LayerScorer::cached_derived(const std::string& key, const std::function<at::Tensor()>& make) const {
    std::lock_guard<std::mutex> lock(m_last->derived_mutex);
    auto& cache = m_last->derived;
    auto it = std::find_if(cache.begin(), cache.end(), [&](const auto& e) { return e.first == key; });
    if (it != cache.end()) return it->second;
    at::Tensor t = make();
    if (t.defined()) cache.emplace_back(key, t);
    return t;
}

at::Tensor LayerScorer::cached_scores(const std::string& key, const std::function<at::Tensor()>& make) const {
    std::lock_guard<std::mutex> lock(m_last->mutex);
    auto& cache = m_last->scores;
    auto it = std::find_if(cache.begin(), cache.end(), [&](const auto& e) { return e.first == key; });
    if (it != cache.end()) {
        std::rotate(it, it + 1, cache.end());  // now the most recent
        return cache.back().second;
    }
    at::Tensor t = make();
    if (!t.defined()) return t;  // nothing to keep: the tensors kept stay (a policy scoring in score())
    if (cache.size() >= kCachedScores) cache.erase(cache.begin());
    cache.emplace_back(key, t);
    return t;
}

at::Tensor LayerScorer::window_rows(int64_t first, int64_t count) const {
    if (!m_capture.keys.is_cuda()) return cpu_rows(first, count);
    const int64_t group = m_n_head / m_n_head_kv;
    // Query head h = kv * G + g, so [H, R, D] viewed as [Hkv, G * R, D] multiplies against its own
    // KV head without repeating the keys (the reference repeats them with repeat_kv).
    at::Tensor qf = m_capture.window_queries.narrow(1, first, count)
                        .to(at::kFloat)
                        .contiguous()
                        .view({m_n_head_kv, group * count, m_head_dim});  // [Hkv, G*R, D]
    at::Tensor kf = m_capture.keys.to(at::kFloat);                        // [Hkv, L, D]
    at::Tensor scores = at::bmm(qf, kf.transpose(1, 2))                   // [Hkv, G*R, L]
                            .view({m_n_head, count, m_n_tokens});         // [H, R, L]
    scale_and_mask(scores, m_head_dim, m_capture, m_n_tokens - m_max_window + first);
    return at::softmax(scores, -1);  // [H, R, L]
}

at::Tensor LayerScorer::cpu_rows(int64_t first, int64_t count) const {
    const int64_t group = m_n_head / m_n_head_kv;
    // Query head h = kv * G + g: [H, R, D] is [Hkv, G * R, D], each KV head's rows against its keys.
    const at::Tensor q = m_capture.window_queries.narrow(1, first, count).to(at::kFloat).contiguous();  // [H, R, D]
    // [Hkv, L, D] with rows of D contiguous values (a cache view keeps its head stride); float32,
    // or a 16-bit cache's own rows, widened by the kernel as it reads them.
    at::Tensor k = m_capture.keys;
    const at::ScalarType kt = k.scalar_type();
    const bool readable = kt == at::kFloat || kt == at::kHalf || kt == at::kBFloat16;
    if (!readable || k.stride(2) != 1 || k.stride(1) != m_head_dim) k = k.to(at::kFloat).contiguous();
    const RowFormat kf = k.scalar_type() == at::kHalf       ? RowFormat::F16
                         : k.scalar_type() == at::kBFloat16 ? RowFormat::BF16
                                                            : RowFormat::F32;
    at::Tensor rows = at::empty({m_n_head, count, m_n_tokens}, q.options());  // [H, R, L]
    attention_score_rows(q.data_ptr<float>(), k.data_ptr(), kf, k.stride(0), m_n_head_kv, group * count, m_n_tokens,
                         m_head_dim, rows.data_ptr<float>());
    float* r = rows.data_ptr<float>();
    const int64_t first_pos = m_n_tokens - m_max_window + first;
    kernel_parallel_for(m_n_head * count, 4, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            scale_mask_softmax_row(r + i * m_n_tokens, m_n_tokens, m_head_dim, m_capture, first_pos + i % count);
    });
    return rows;
}

at::Tensor LayerScorer::compute_votes(int64_t window) const {
#ifdef SNAPKV_HAVE_CUDA
    if (m_fused_votes)                                                                   // CUDA path
        return gpu_votes(m_capture.window_queries, m_capture.keys, m_n_tokens, window);  // [H, L - W]
#endif
    // W = m * S + r: checkpoint m (the last m * S rows) plus the r rows above it, added from the
    // bottom up as the running sum would have; only the prefix columns [0, L - W) are summed.
    const int64_t m = window / m_stride;
    const int64_t r = window - m * m_stride;
    const int64_t n_prefix = m_n_tokens - window;
    at::Tensor acc = m > 0 ? m_checkpoints.select(1, m - 1).narrow(1, 0, n_prefix).contiguous()  // [H, L - W]
                           : at::zeros({m_n_head, n_prefix}, m_capture.keys.options().dtype(at::kFloat));
    if (r > 0) add_rows(m_max_window - window, r, acc);
    return acc;  // [H, L - W]
}

void LayerScorer::add_rows(int64_t first, int64_t count, at::Tensor& acc) const {
    // CPU: all rows at once on the kernels (cpu_rows), then added in the running sum's order.
    // CUDA (captures the fused kernel cannot take): one KV head at a time, its G query heads' rows
    // [G, R, L] scored, softmaxed and added while they are in cache, the same arithmetic as
    // window_rows per element (a head's slice of the batched GEMM is the same GEMM).
    if (!m_capture.keys.is_cuda()) {
        const at::Tensor rows = cpu_rows(first, count);  // [H, R, L]
        add_rows_in_tiles(rows, acc, acc.size(1), nullptr, 0, 0, 1, 0);
        return;
    }
    const int64_t group = m_n_head / m_n_head_kv;
    const at::Tensor q = m_capture.window_queries.narrow(1, first, count).to(at::kFloat);  // [H, R, D]
    for (int64_t kv = 0; kv < m_n_head_kv; ++kv) {
        const at::Tensor qg = q.narrow(0, kv * group, group).contiguous().view({group * count, m_head_dim});  // [G*R, D]
        const at::Tensor k = m_capture.keys.select(0, kv).to(at::kFloat);                                     // [L, D]
        at::Tensor scores = at::mm(qg, k.t()).view({group, count, m_n_tokens});  // [G, R, L]
        scale_and_mask(scores, m_head_dim, m_capture, m_n_tokens - m_max_window + first);
        const at::Tensor rows = at::softmax(scores, -1);     // [G, R, L]
        at::Tensor part = acc.narrow(0, kv * group, group);  // contiguous: acc is, cut along dim 0
        add_rows_in_tiles(rows, part, acc.size(1), nullptr, 0, 0, 1, 0);
    }
}

void LayerScorer::check_window(int64_t window, const char* where) const {
    if (window < 1 || window > m_max_window || window >= m_n_tokens)
        throw InputError(std::string(where) + ": window " + std::to_string(window) + " is out of range; allowed 1.." +
                         std::to_string(std::min(m_max_window, m_n_tokens - 1)) + " (at most the captured window " +
                         std::to_string(m_max_window) + " and less than the prompt length " +
                         std::to_string(m_n_tokens) + ")");
}

at::Tensor LayerScorer::votes(int64_t window) const {
    check_window(window, "votes");
    c10::InferenceMode guard;
    std::lock_guard<std::mutex> lock(m_last->mutex);
    if (m_last->window != window || !m_last->votes.defined()) {
        m_last->votes = at::Tensor();  // free the old window's votes first
        m_last->votes = compute_votes(window);
        m_last->window = window;
    }
    return m_last->votes;
}

at::Tensor LayerScorer::window_attention(int64_t head, int64_t window) const {
    check_window(window, "window_attention");
    if (head < 0 || head >= m_n_head)
        throw InputError("window_attention: head " + std::to_string(head) + " is out of range; allowed 0.." +
                         std::to_string(m_n_head - 1));
    c10::InferenceMode guard;
    const int64_t group = m_n_head / m_n_head_kv;
    at::Tensor q = m_capture.window_queries.select(0, head)
                       .narrow(0, m_max_window - window, window)
                       .to(at::kFloat)
                       .unsqueeze(0);                                                   // [1, W, D]
    at::Tensor k = m_capture.keys.select(0, head / group).to(at::kFloat).unsqueeze(0);  // [1, L, D]
    at::Tensor scores = at::bmm(q, k.transpose(1, 2));                                  // [1, W, L]
    scale_and_mask(scores, m_head_dim, m_capture, m_n_tokens - window);
    return at::softmax(scores, -1).squeeze(0);  // [W, L]
}

}  // namespace snapkv
