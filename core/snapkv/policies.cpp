// Per-head steps of the eviction policies over raw CPU arrays (see policies.h). Top-k finds the
// k-th best score with std::nth_element, then keeps what lies above it and the ties the TieBreak
// asks for (earliest or latest) in branch-free passes: O(P) per head, no full sort. Does no validation of its own.
//
// Dimensions: Hs = heads selected, P = prefix length L - W, k = prefix positions kept per head.
#include "core/snapkv/policies.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace snapkv {
namespace {

// NaN ranks below every number.
inline float rank_key(float v) { return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v; }

// Among the i in [0, n) with mark[i] == 0, sets mark[i] = 1 for the k best: higher score first,
// on equal scores the lower index (Earlier) or the higher one (Later); for flat [Hs, P] indices that
// is the lower / higher head, then the earlier / later position. Finds the k-th best score with
// nth_element over plain floats, then one pass keeps everything above it and one pass in index
// order (Earlier) or reverse index order (Later) the first of the ties: O(n), and the tie rule holds
// exactly whatever nth_element does.
void mark_best(const float* scores, int64_t n, int64_t k, TieBreak tie, uint8_t* mark) {
    if (k <= 0) return;
    // Candidates' keys, compacted without branches (the loops below are branch-free or rarely
    // taken: random scores would otherwise mispredict on every other element).
    std::vector<float> keys(static_cast<size_t>(n));
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        keys[size_t(m)] = rank_key(scores[i]);
        m += mark[i] == 0;
    }
    if (k >= m) {
        std::fill(mark, mark + n, uint8_t{1});
        return;
    }
    std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.begin() + m, std::greater<float>());
    const float kth = keys[size_t(k - 1)];
    int64_t above = 0;  // only keys[0 .. k-1) can be above the k-th
    for (int64_t j = 0; j < k - 1; ++j) above += keys[size_t(j)] > kth;
    for (int64_t i = 0; i < n; ++i) mark[i] |= static_cast<uint8_t>(rank_key(scores[i]) > kth);
    // Then the first k - above of the ties in the tie order (those above kth are marked already,
    // so an unmarked candidate equal to kth is a tie).
    int64_t ties = k - above;
    auto take_tie = [&](int64_t i) {
        if (!mark[i] && rank_key(scores[i]) == kth) {
            mark[i] = 1;
            --ties;
        }
    };
    if (tie == TieBreak::Earlier)
        for (int64_t i = 0; i < n && ties > 0; ++i) take_tie(i);
    else
        for (int64_t i = n - 1; i >= 0 && ties > 0; --i) take_tie(i);
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Uniform in [0, n) without modulo bias (rejection of the short last bucket).
uint64_t below(uint64_t& state, uint64_t n) {
    const uint64_t threshold = (0 - n) % n;
    for (;;) {
        const uint64_t r = splitmix64(state);
        if (r >= threshold) return r % n;
    }
}

}  // namespace

void pool_row(const float* __restrict x, int64_t n_prefix, int64_t kernel, Pooling pooling, float* __restrict out) {
    const int64_t r = kernel / 2;
    switch (pooling) {
    case Pooling::Max: {
        // Without NaN: the maximum over the shifts -r..r, one vectorisable pass per shift (the
        // edges simply have fewer shifts: padding never wins). With NaN: window by window, NaN
        // propagating as in torch.
        bool has_nan = false;
        for (int64_t i = 0; i < n_prefix; ++i) has_nan = has_nan || std::isnan(x[i]);
        if (!has_nan) {
            std::copy(x, x + n_prefix, out);
            for (int64_t d = 1; d <= r; ++d) {
                for (int64_t i = d; i < n_prefix; ++i) out[i] = out[i] < x[i - d] ? x[i - d] : out[i];
                for (int64_t i = 0; i + d < n_prefix; ++i) out[i] = out[i] < x[i + d] ? x[i + d] : out[i];
            }
            return;
        }
        for (int64_t i = 0; i < n_prefix; ++i) {
            float m = -std::numeric_limits<float>::infinity();
            const int64_t hi = std::min(n_prefix - 1, i + r);
            for (int64_t j = std::max<int64_t>(0, i - r); j <= hi; ++j)
                if (std::isnan(x[j]) || x[j] > m) m = x[j];
            out[i] = m;
        }
        return;
    }
    case Pooling::Avg: {
        // Window sums from double prefix sums: O(P) whatever K, and no float drift.
        // (An inf or NaN would poison every later difference: then sum each window directly.)
        std::vector<double> prefix(static_cast<size_t>(n_prefix) + 1, 0.0);
        bool finite = true;
        for (int64_t i = 0; i < n_prefix; ++i) {
            prefix[size_t(i) + 1] = prefix[size_t(i)] + x[i];
            finite = finite && std::isfinite(x[i]);
        }
        for (int64_t i = 0; i < n_prefix; ++i) {
            const int64_t lo = std::max<int64_t>(0, i - r);
            const int64_t hi = std::min(n_prefix - 1, i + r);
            double sum = 0.0;
            if (finite) {
                sum = prefix[size_t(hi) + 1] - prefix[size_t(lo)];
            } else {
                for (int64_t j = lo; j <= hi; ++j) sum += x[j];
            }
            out[i] = static_cast<float>(sum / static_cast<double>(kernel));
        }
        return;
    }
    case Pooling::None: std::copy(x, x + n_prefix, out); return;
    }
}

void top_k_positions(const float* scores, int64_t n_prefix, int64_t k, TieBreak tie, int64_t* out) {
    if (k >= n_prefix) {
        std::iota(out, out + n_prefix, int64_t{0});
        return;
    }
    if (k <= 0) return;
    std::vector<uint8_t> keep(static_cast<size_t>(n_prefix), 0);
    mark_best(scores, n_prefix, k, tie, keep.data());
    // Emit in position order, branch-free into a scratch row (one slot past the last kept).
    std::vector<int64_t> rows(static_cast<size_t>(n_prefix) + 1);
    int64_t o = 0;
    for (int64_t t = 0; t < n_prefix; ++t) {
        rows[size_t(o)] = t;
        o += keep[size_t(t)];
    }
    std::copy(rows.begin(), rows.begin() + k, out);
}

void streaming_positions(int64_t n_prefix, int64_t k, int64_t n_sink, int64_t* out) {
    k = std::min(k, n_prefix);
    n_sink = std::min(n_sink, k);
    int64_t o = 0;
    for (int64_t t = 0; t < n_sink; ++t) out[o++] = t;
    for (int64_t t = n_prefix - (k - n_sink); t < n_prefix; ++t) out[o++] = t;
}

uint64_t random_stream_seed(uint64_t seed, int64_t layer, int64_t head) {
    uint64_t state = seed;
    uint64_t a = splitmix64(state) ^ static_cast<uint64_t>(layer);
    uint64_t b = splitmix64(a) ^ static_cast<uint64_t>(head);
    return splitmix64(b);
}

void random_positions(int64_t n_prefix, int64_t k, uint64_t seed, int64_t* out) {
    if (k >= n_prefix) {
        std::iota(out, out + n_prefix, int64_t{0});
        return;
    }
    if (k <= 0) return;
    // Floyd: for j = P - k .. P - 1 draw t in [0, j]; take t, or j if t was taken already. Every
    // k-subset is equally likely.
    std::vector<uint8_t> taken(static_cast<size_t>(n_prefix), 0);
    uint64_t state = seed;
    for (int64_t j = n_prefix - k; j < n_prefix; ++j) {
        const auto t = static_cast<int64_t>(below(state, static_cast<uint64_t>(j) + 1));
        taken[static_cast<size_t>(taken[static_cast<size_t>(t)] ? j : t)] = 1;
    }
    int64_t o = 0;
    for (int64_t t = 0; t < n_prefix; ++t)
        if (taken[static_cast<size_t>(t)]) out[o++] = t;
}

int64_t adakv_floor(int64_t k, double alpha) { return static_cast<int64_t>(static_cast<double>(k) * alpha); }

std::vector<std::vector<int64_t>> adakv_positions(const float* scores, int64_t n_heads, int64_t n_prefix, int64_t k,
                                                  double alpha, TieBreak tie) {
    k = std::min(k, n_prefix);
    const int64_t floor_k = std::min(adakv_floor(k, alpha), k);
    std::vector<uint8_t> keep(static_cast<size_t>(n_heads * n_prefix), 0);  // [Hs, P]
    // 1. Every head's own top floor_k (the reference's sorted_attn_score[..., :floor_capacity]).
    for (int64_t h = 0; h < n_heads; ++h)
        mark_best(scores + h * n_prefix, n_prefix, floor_k, tie, keep.data() + h * n_prefix);
    // 2. One top-k over what is left of all heads, Hs * (k - floor_k) slots (the reference's topk
    //    over sorted_attn_score[..., floor_capacity:] flattened across heads).
    mark_best(scores, n_heads * n_prefix, n_heads * (k - floor_k), tie, keep.data());

    std::vector<std::vector<int64_t>> kept(static_cast<size_t>(n_heads));
    for (int64_t h = 0; h < n_heads; ++h) {
        const uint8_t* f = keep.data() + h * n_prefix;
        auto& out = kept[size_t(h)];
        for (int64_t t = 0; t < n_prefix; ++t)
            if (f[t]) out.push_back(t);
    }
    return kept;
}

bool pyramid_is_graded(int64_t budget, int64_t window, int64_t n_tokens) {
    // update_kv: `if q_len < self.max_capacity_prompt` -> uncompressed;
    // `elif q_len < (self.max_capacity_prompt - self.window_size) * 2` -> uniform SnapKV.
    return n_tokens >= budget && n_tokens >= (budget - window) * 2;
}

std::vector<int64_t> pyramid_layer_budgets(int64_t budget, int64_t window, int64_t n_tokens, int64_t n_layer,
                                           int64_t beta) {
    std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(n_layer, 0)), budget);
    if (!pyramid_is_graded(budget, window, n_tokens)) return out;
    const int64_t base = budget - window;  // max_capacity_prompt - window_size
    int64_t min_num = base / beta;
    int64_t max_num = base * 2 - min_num;
    if (max_num >= n_tokens - window) {
        max_num = n_tokens - window;
        min_num = base * 2 - max_num;
    }
    // In this branch max_num >= min_num >= 0 (L >= C), so C++ division equals Python's //.
    const int64_t steps = n_layer > 1 ? (max_num - min_num) / (n_layer - 1) : 0;
    for (int64_t l = 0; l < n_layer; ++l) out[static_cast<size_t>(l)] = max_num - l * steps + window;
    return out;
}

}  // namespace snapkv
