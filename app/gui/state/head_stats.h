// Small display computations over the values core returns: per-head statistics for the overview
// grid, ranks, kept clusters, the budget threshold, heatmap transforms (sink hiding, row
// normalisation) and max-downsampling of heatmap columns. Pure functions, no Qt widgets, no
// inference: everything here is derived from Selection / window_attention results.
// Dimension letters: W window queries, L keys (prompt tokens), P = L - W prefix positions.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "app/gui/state/display_settings.h"
#include "core/session/session.h"

namespace studio {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// Shannon entropy of votes / sum(votes), divided by log(P): 0 = one key gets every vote, 1 = flat.
double voteEntropy(const std::vector<float>& votes);  // votes: [P]
// Share of the votes that fall on the first nSink positions.
double sinkMass(const std::vector<float>& votes, int64_t nSink);
// |a ∩ b| / |a| for sorted position lists (1 when a is empty).
double overlapShare(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Rank of every position by score, 0 = highest; ties broken by position.
std::vector<int64_t> ranks(const std::vector<float>& scores);  // [P] -> [P]

struct Cluster {
    int64_t begin = 0;  // first kept position
    int64_t end = 0;    // one past the last
};
// Runs of consecutive kept positions (kept must be sorted).
std::vector<Cluster> clusters(const std::vector<int64_t>& kept);
// The lowest pooled score that was kept: the budget's cut-off. NaN if nothing is kept.
double keptThreshold(const std::vector<float>& pooled, const std::vector<int64_t>& kept);

// Heatmap rows as displayed: with hideSinks > 0 the first hideSinks keys are zeroed and each row
// renormalised to sum 1 over the rest; with rowNormalise each row is divided by its maximum.
std::vector<float> transformRows(const std::vector<float>& rows, int64_t W, int64_t L, int hideSinks,
                                 bool rowNormalise);  // [W, L] -> [W, L]
// Columns [begin, end) of a [W, L] matrix reduced to nBins columns by maximum, so a single strong key
// never disappears at any zoom. nBins >= end - begin returns the columns unchanged.
std::vector<float> maxDownsample(const std::vector<float>& rows, int64_t W, int64_t L, int64_t begin, int64_t end,
                                 int64_t nBins);  // -> [W, nBins]

// One value per (layer, head) for the overview grid; NaN where undefined. Hit rates come per query
// head from a comparison, everything else per selection head.
std::vector<std::vector<double>> overviewGrid(OverviewStat stat, const snapkv::Selection* sel,
                                              const snapkv::Selection* other, const snapkv::CompareResult* cmp);

// For every prompt position < sel.n_tokens: the share of heads keeping it (window positions count
// as kept). layer < 0: over all layers.
std::vector<float> keptShare(const snapkv::Selection& sel, int64_t layer);

}  // namespace studio
