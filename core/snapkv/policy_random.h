// The random baseline's positions and seed streams (policy_random.cpp), declared for its tests:
// plain loops, no validation. Dimensions: P = prefix length L - W, k = prefix positions kept per head.
#pragma once

#include <cstdint>

namespace snapkv {

// k distinct positions drawn uniformly from [0, P) (Floyd's algorithm over a splitmix64 stream),
// in increasing order. Same seed, same positions, on every platform (no std:: distributions).
void random_positions(int64_t n_prefix, int64_t k, uint64_t seed, int64_t* out);
// The seed of one head's stream: params.seed mixed with the layer and head index.
uint64_t random_stream_seed(uint64_t seed, int64_t layer, int64_t head);

}  // namespace snapkv
