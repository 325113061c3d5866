// A deliberately naive SnapKV reference for the tests: plain loops over std::vector in double,
// one softmax row at a time with the causal window mask, sums, pooling and a full-sort top-k,
// written from the description in FasterDecoding/SnapKV snapkv_utils.py, independently of core.
// It is slow (O(H * W * L * D)) and only meant for small random captures.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, L = prompt tokens, Wmax = captured window,
// W = window, D = head_dim, P = L - W.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <ATen/ATen.h>

#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv_test {

using Rows = std::vector<std::vector<double>>;  // [rows][P]

struct NaiveCapture {
    int64_t H = 0, Hkv = 0, Wmax = 0, L = 0, D = 0;
    std::vector<float> q;    // [H, Wmax, D]
    std::vector<float> k;    // [Hkv, L, D]
    std::vector<float> h2o;  // [H, L]
    // The layer's scoring rules (LayerCapture): scale 0 = 1/sqrt(D); softcap 0 = none; a query at
    // p sees keys p - sliding_window + 1 .. p when sliding_window > 0.
    double scale = 0.0, softcap = 0.0;
    int64_t sliding_window = 0;
};

inline NaiveCapture random_capture(int64_t H, int64_t Hkv, int64_t Wmax, int64_t L, int64_t D, unsigned seed,
                                   float q_scale = 1.5f) {
    NaiveCapture c;
    c.H = H;
    c.Hkv = Hkv;
    c.Wmax = Wmax;
    c.L = L;
    c.D = D;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 10.0f);
    c.q.resize(static_cast<size_t>(H * Wmax * D));
    c.k.resize(static_cast<size_t>(Hkv * L * D));
    c.h2o.resize(static_cast<size_t>(H * L));
    for (auto& v : c.q) v = q_scale * normal(rng);
    for (auto& v : c.k) v = normal(rng);
    for (auto& v : c.h2o) v = uniform(rng);
    return c;
}

inline at::Tensor to_tensor(const std::vector<float>& v, std::vector<int64_t> shape) {
    return at::from_blob(const_cast<float*>(v.data()), shape, at::kFloat).clone();
}

inline snapkv::LayerCapture to_layer_capture(const NaiveCapture& c, bool with_h2o = true) {
    snapkv::LayerCapture cap;
    cap.window_queries = to_tensor(c.q, {c.H, c.Wmax, c.D});
    cap.keys = to_tensor(c.k, {c.Hkv, c.L, c.D});
    if (with_h2o) cap.h2o = to_tensor(c.h2o, {c.H, c.L});
    cap.scale = c.scale;
    cap.softcap = c.softcap;
    cap.sliding_window = c.sliding_window;
    return cap;
}

// Softmax row of query head h, window-query row qi (of Wmax), over all L keys; zeros where masked.
inline std::vector<double> naive_attention_row(const NaiveCapture& c, int64_t h, int64_t qi) {
    const int64_t kv = h / (c.H / c.Hkv);
    const int64_t abs_pos = c.L - c.Wmax + qi;  // the query's absolute position
    std::vector<double> logits(static_cast<size_t>(c.L), -std::numeric_limits<double>::infinity());
    double mx = -std::numeric_limits<double>::infinity();
    const int64_t first = c.sliding_window > 0 ? std::max<int64_t>(0, abs_pos - c.sliding_window + 1) : 0;
    for (int64_t t = first; t <= abs_pos; ++t) {
        double dot = 0.0;
        for (int64_t d = 0; d < c.D; ++d)
            dot += double(c.q[size_t((h * c.Wmax + qi) * c.D + d)]) * double(c.k[size_t((kv * c.L + t) * c.D + d)]);
        double score = c.scale > 0.0 ? dot * c.scale : dot / std::sqrt(double(c.D));
        if (c.softcap > 0.0) score = c.softcap * std::tanh(score / c.softcap);
        logits[size_t(t)] = score;
        mx = std::max(mx, logits[size_t(t)]);
    }
    double sum = 0.0;
    std::vector<double> p(static_cast<size_t>(c.L), 0.0);
    for (int64_t t = first; t <= abs_pos; ++t) sum += (p[size_t(t)] = std::exp(logits[size_t(t)] - mx));
    for (auto& v : p) v /= sum;
    return p;
}

// [H][P]: the window's attention on the prefix, summed over the W window queries.
inline Rows naive_votes(const NaiveCapture& c, int64_t W) {
    const int64_t P = c.L - W;
    Rows votes(size_t(c.H), std::vector<double>(size_t(P), 0.0));
    for (int64_t h = 0; h < c.H; ++h)
        for (int64_t i = 0; i < W; ++i) {
            const std::vector<double> p = naive_attention_row(c, h, c.Wmax - W + i);
            for (int64_t t = 0; t < P; ++t) votes[size_t(h)][size_t(t)] += p[size_t(t)];
        }
    return votes;
}

inline std::vector<double> naive_pool(const std::vector<double>& x, int64_t K, snapkv::Pooling pooling) {
    const auto P = static_cast<int64_t>(x.size());
    if (pooling == snapkv::Pooling::None) return x;
    std::vector<double> out(static_cast<size_t>(P));
    for (int64_t i = 0; i < P; ++i) {
        double m = -std::numeric_limits<double>::infinity();
        double s = 0.0;
        for (int64_t j = i - K / 2; j <= i + K / 2; ++j) {
            if (j < 0 || j >= P) continue;  // max: padding never wins; avg: padding adds zero
            m = std::max(m, x[size_t(j)]);
            s += x[size_t(j)];
        }
        out[size_t(i)] = pooling == snapkv::Pooling::Max ? m : s / double(K);
    }
    return out;
}

// [H][P] -> [Hs][P]: identity, or the mean over each group of H / Hkv consecutive heads.
inline Rows naive_group(const Rows& rows, int64_t Hkv, snapkv::GqaMode mode) {
    if (mode == snapkv::GqaMode::QueryHead) return rows;
    const auto H = static_cast<int64_t>(rows.size());
    const int64_t G = H / Hkv;
    Rows out(size_t(Hkv), std::vector<double>(rows[0].size(), 0.0));
    for (int64_t h = 0; h < H; ++h)
        for (size_t t = 0; t < rows[0].size(); ++t) out[size_t(h / G)][t] += rows[size_t(h)][t] / double(G);
    return out;
}

// Full sort by (score desc, position asc for TieBreak::Earlier / desc for Later), first k, back in
// position order.
inline std::vector<int64_t> naive_top_k(const std::vector<double>& s, int64_t k,
                                        snapkv::TieBreak tie = snapkv::TieBreak::Later) {
    std::vector<int64_t> idx(s.size());
    std::iota(idx.begin(), idx.end(), int64_t{0});
    const bool later = tie == snapkv::TieBreak::Later;
    std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
        return s[size_t(a)] > s[size_t(b)] || (s[size_t(a)] == s[size_t(b)] && (later ? a > b : a < b));
    });
    idx.resize(size_t(std::min<int64_t>(k, int64_t(s.size()))));
    std::sort(idx.begin(), idx.end());
    return idx;
}

// Whether `got` is a top-k of the reference scores: equal to naive_top_k except for positions whose
// reference score lies within eps of the k-th best score (float vs double rounding may order near
// ties either way). `near_ties` counts those exceptions.
inline bool same_top_k(const std::vector<int64_t>& got, const std::vector<double>& ref, int64_t k, double eps,
                       int64_t* near_ties = nullptr, snapkv::TieBreak tie = snapkv::TieBreak::Later) {
    const std::vector<int64_t> want = naive_top_k(ref, k, tie);
    if (got.size() != want.size()) return false;
    double kth = std::numeric_limits<double>::infinity();
    for (int64_t p : want) kth = std::min(kth, ref[size_t(p)]);
    std::vector<int64_t> diff;
    std::set_symmetric_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(diff));
    for (int64_t p : diff)
        if (std::fabs(ref[size_t(p)] - kth) > eps) return false;
    if (near_ties) *near_ties += int64_t(diff.size());
    return true;
}

inline at::Tensor rows_to_tensor(const Rows& rows) {
    at::Tensor t = at::empty({int64_t(rows.size()), int64_t(rows[0].size())}, at::kDouble);
    double* dst = t.data_ptr<double>();
    for (const auto& row : rows) dst = std::copy(row.begin(), row.end(), dst);
    return t;
}

inline at::Tensor vec_to_tensor(const std::vector<float>& v) {
    return at::from_blob(const_cast<float*>(v.data()), {int64_t(v.size())}, at::kFloat).clone();
}

}  // namespace snapkv_test
