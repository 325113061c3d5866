// The shared ranking maths (see ranking.h). Top-k finds the k-th best score with std::nth_element,
// then keeps what lies above it and the ties the TieBreak asks for (earliest or latest) in
// branch-free passes: O(P) per head, no full sort. Does no validation of its own.
//
// Dimensions: P = prefix length L - W, k = prefix positions kept per head, n = entries ranked.
#include "core/snapkv/ranking.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace snapkv {
namespace {

// NaN ranks below every number.
inline float rank_key(float v) { return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v; }

}  // namespace

// Finds the k-th best score with nth_element over plain floats, then one pass keeps everything
// above it and one pass in index order (Earlier) or reverse index order (Later) the first of the
// ties.
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

}  // namespace snapkv
