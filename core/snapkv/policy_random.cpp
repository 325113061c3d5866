// Random eviction, the baseline (kvpress random_press.py): k distinct prefix positions per head,
// uniformly, from a stream seeded by (seed, layer, head) so that a retune or a rerun keeps the same
// positions. No scores.
#include "core/snapkv/policy_random.h"

#include <numeric>
#include <vector>

#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

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

class RandomRule : public PolicyRule {
public:
    void choose(const Choice& c, const SelectionParams& p, int64_t* out) const override {
        const int64_t R = c.n_prefix - c.reach;
        for (int64_t h = 0; h < c.n_sel; ++h) {
            int64_t* row = out + h * c.k;
            random_positions(R, c.k, random_stream_seed(p.seed, c.layer, h), row);
            for (int64_t i = 0; i < c.k; ++i) row[i] += c.reach;
        }
    }
};

}  // namespace

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

const PolicyRule& random_rule() {
    static const RandomRule rule;
    return rule;
}

}  // namespace snapkv
