// Display statistics derived from selections and attention rows (see head_stats.h).
#include "app/gui/state/head_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace studio {

double voteEntropy(const std::vector<float>& votes) {
    if (votes.size() < 2) return kNoValue;
    double sum = 0;
    for (float v : votes) sum += std::max(0.0f, v);
    if (sum <= 0) return kNoValue;
    double h = 0;
    for (float v : votes) {
        const double p = std::max(0.0f, v) / sum;
        if (p > 0) h -= p * std::log(p);
    }
    return h / std::log(static_cast<double>(votes.size()));
}

double sinkMass(const std::vector<float>& votes, int64_t nSink) {
    if (votes.empty()) return kNoValue;
    double sum = 0, sink = 0;
    for (size_t i = 0; i < votes.size(); ++i) {
        const double v = std::max(0.0f, votes[i]);
        sum += v;
        if (static_cast<int64_t>(i) < nSink) sink += v;
    }
    return sum > 0 ? sink / sum : kNoValue;
}

double overlapShare(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    if (a.empty()) return 1.0;
    size_t i = 0, j = 0, common = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i] == b[j]) {
            ++common, ++i, ++j;
        } else if (a[i] < b[j]) {
            ++i;
        } else {
            ++j;
        }
    }
    return double(common) / double(a.size());
}

std::vector<int64_t> ranks(const std::vector<float>& scores) {
    std::vector<int64_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
    std::vector<int64_t> rank(scores.size());
    for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<int64_t>(r);
    return rank;
}

std::vector<Cluster> clusters(const std::vector<int64_t>& kept) {
    std::vector<Cluster> out;
    for (int64_t p : kept) {
        if (!out.empty() && out.back().end == p) {
            out.back().end = p + 1;
        } else {
            out.push_back({p, p + 1});
        }
    }
    return out;
}

double keptThreshold(const std::vector<float>& pooled, const std::vector<int64_t>& kept) {
    double t = kNoValue;
    for (int64_t p : kept) {
        if (p < 0 || p >= static_cast<int64_t>(pooled.size())) continue;
        if (std::isnan(t) || pooled[p] < t) t = pooled[p];
    }
    return t;
}

std::vector<float> transformRows(const std::vector<float>& rows, int64_t W, int64_t L, int hideSinks,
                                 bool rowNormalise) {
    std::vector<float> out = rows;
    if (W <= 0 || L <= 0 || static_cast<int64_t>(rows.size()) < W * L) return out;
    const int64_t k = std::clamp<int64_t>(hideSinks, 0, L);
    for (int64_t r = 0; r < W; ++r) {
        float* row = out.data() + r * L;
        if (k > 0) {
            double rest = 0;
            for (int64_t c = 0; c < L; ++c) {
                if (c < k) {
                    row[c] = 0.f;
                } else {
                    rest += row[c];
                }
            }
            if (rest > 0)
                for (int64_t c = k; c < L; ++c) row[c] = static_cast<float>(row[c] / rest);
        }
        if (rowNormalise) {
            const float mx = *std::max_element(row, row + L);
            if (mx > 0)
                for (int64_t c = 0; c < L; ++c) row[c] /= mx;
        }
    }
    return out;
}

std::vector<float> maxDownsample(const std::vector<float>& rows, int64_t W, int64_t L, int64_t begin, int64_t end,
                                 int64_t nBins) {
    begin = std::clamp<int64_t>(begin, 0, L);
    end = std::clamp<int64_t>(end, begin, L);
    const int64_t n = end - begin;
    if (n == 0 || W <= 0) return {};
    if (nBins <= 0 || nBins >= n) {
        std::vector<float> out(static_cast<size_t>(W * n));
        for (int64_t r = 0; r < W; ++r)
            std::copy(rows.begin() + r * L + begin, rows.begin() + r * L + end, out.begin() + r * n);
        return out;
    }
    std::vector<float> out(static_cast<size_t>(W * nBins), 0.f);
    for (int64_t b = 0; b < nBins; ++b) {
        // Bin b covers [c0, c1): every column lands in exactly one bin.
        const int64_t c0 = begin + b * n / nBins;
        const int64_t c1 = std::max(c0 + 1, begin + (b + 1) * n / nBins);
        for (int64_t r = 0; r < W; ++r) {
            const float* row = rows.data() + r * L;
            out[r * nBins + b] = *std::max_element(row + c0, row + c1);
        }
    }
    return out;
}

std::vector<std::vector<double>> overviewGrid(OverviewStat stat, const snapkv::Selection* sel,
                                              const snapkv::Selection* other, const snapkv::CompareResult* cmp) {
    std::vector<std::vector<double>> grid;
    if (stat == OverviewStat::HitRate) {
        if (!cmp) return grid;
        for (const auto& layer : cmp->hit_rate) {
            std::vector<double> row;
            for (double h : layer) row.push_back(h < 0 ? kNoValue : h);
            grid.push_back(row);
        }
        return grid;
    }
    if (!sel) return grid;
    for (size_t l = 0; l < sel->layers.size(); ++l) {
        const auto& layer = sel->layers[l];
        std::vector<double> row;
        for (size_t h = 0; h < layer.heads.size(); ++h) {
            const auto& hs = layer.heads[h];
            double v = kNoValue;
            switch (stat) {
            case OverviewStat::KeptMass: v = hs.kept_mass; break;
            case OverviewStat::VoteEntropy: v = voteEntropy(hs.votes); break;
            case OverviewStat::SinkMass: v = sinkMass(hs.votes, sel->params.n_sink); break;
            case OverviewStat::Overlap:
                if (other && l < other->layers.size() && h < other->layers[l].heads.size())
                    v = overlapShare(hs.kept, other->layers[l].heads[h].kept);
                break;
            case OverviewStat::HitRate: break;
            }
            row.push_back(v);
        }
        grid.push_back(row);
    }
    return grid;
}

std::vector<float> keptShare(const snapkv::Selection& sel, int64_t layer) {
    const int64_t L = sel.n_tokens;
    const int64_t P = std::max<int64_t>(0, L - sel.window);
    std::vector<float> share(static_cast<size_t>(std::max<int64_t>(L, 0)), 0.f);
    int64_t nHeads = 0;
    for (const auto& ls : sel.layers) {
        if (layer >= 0 && ls.layer != layer) continue;
        for (const auto& hs : ls.heads) {
            ++nHeads;
            if (!ls.compressed) {
                for (int64_t p = 0; p < P; ++p) share[p] += 1.f;
            } else {
                for (int64_t p : hs.kept)
                    if (p >= 0 && p < P) share[p] += 1.f;
            }
        }
    }
    if (nHeads == 0) return share;
    for (int64_t p = 0; p < P; ++p) share[p] /= static_cast<float>(nHeads);
    for (int64_t p = P; p < L; ++p) share[p] = 1.f;
    return share;
}

}  // namespace studio
