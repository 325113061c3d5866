// LayerScorer: at construction, the softmax rows of the Wmax captured queries in blocks of S
// rows (one batched matmul + softmax each), accumulated from the last row up into the checkpoint
// sums; votes(W) = a checkpoint plus the few rows above it, recomputed. Nothing here pools or
// selects, and nothing materialises L x L attention. On CUDA captures with the kernels built,
// no checkpoints are kept and votes(W) calls the fused kernel (gpu_ops.h).
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, L = prompt tokens, Wmax = captured
// window, W = window, D = head_dim, S = checkpoint stride, Nc = checkpoints, R = rows.
#include "core/snapkv/layer_scorer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include <c10/core/InferenceMode.h>

#include "core/common/errors.h"
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

}  // namespace

struct LayerScorer::LastVotes {
    std::mutex mutex;
    int64_t window = 0;
    at::Tensor votes;  // [H, L - window]
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

    // Checkpoints, from the last query row up in blocks of S rows: the running sum gets rows
    // Wmax - 1, Wmax - 2, ... added one at a time (acc += row), the order of a full running sum.
    m_stride = stride_for(m_max_window);
    const int64_t n_ckpt = checkpoints_for(m_max_window);
    if (n_ckpt == 0) return;
    m_checkpoints = at::empty({m_n_head, n_ckpt, m_n_tokens}, q.options().dtype(at::kFloat));  // [H, Nc, L]
    at::Tensor acc = at::zeros({m_n_head, m_n_tokens}, m_checkpoints.options());               // [H, L]
    for (int64_t m = 1; m <= n_ckpt; ++m) {
        const at::Tensor rows = window_rows(m_max_window - m * m_stride, m_stride);  // [H, S, L]
        for (int64_t j = m_stride - 1; j >= 0; --j) acc.add_(rows.select(1, j));
        m_checkpoints.select(1, m - 1).copy_(acc);
    }
}

int64_t LayerScorer::stride_for(int64_t max_window) {
    // At most 4 checkpoints: S = 32 up to Wmax = 128 (the usual windows 32, 64, 96, 128 read one
    // without recomputing a row), then Wmax / 4 rounded up. With quantized weights in memory, 8
    // checkpoints made capture + scorer 27 % of weights + full KV for SmolLM2 at 8K tokens.
    return std::max<int64_t>(32, (max_window + 3) / 4);
}

int64_t LayerScorer::cache_bytes() const {
    int64_t bytes = m_checkpoints.defined() ? m_checkpoints.numel() * 4 : 0;
    std::lock_guard<std::mutex> lock(m_last->mutex);
    if (m_last->votes.defined()) bytes += m_last->votes.numel() * 4;
    return bytes;
}

at::Tensor LayerScorer::window_rows(int64_t first, int64_t count) const {
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

at::Tensor LayerScorer::compute_votes(int64_t window) const {
#ifdef SNAPKV_HAVE_CUDA
    if (m_fused_votes)                                                                   // CUDA path
        return gpu_votes(m_capture.window_queries, m_capture.keys, m_n_tokens, window);  // [H, L - W]
#endif
    // W = m * S + r: checkpoint m (the last m * S rows) plus the r rows above it, added from the
    // bottom up as the running sum would have.
    const int64_t m = window / m_stride;
    const int64_t r = window - m * m_stride;
    at::Tensor acc = m > 0 ? m_checkpoints.select(1, m - 1).clone()  // [H, L]
                           : at::zeros({m_n_head, m_n_tokens}, m_capture.keys.options().dtype(at::kFloat));
    if (r > 0) {
        const at::Tensor rows = window_rows(m_max_window - window, r);  // [H, r, L]
        for (int64_t j = r - 1; j >= 0; --j) acc.add_(rows.select(1, j));
    }
    return acc.narrow(1, 0, m_n_tokens - window).contiguous();  // [H, L - W]
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
