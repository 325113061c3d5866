// StreamingLLM's positions (policy_streaming.cpp), declared for its tests: plain loops, no
// validation. Dimensions: P = prefix length L - W, k = prefix positions kept per head.
#pragma once

#include <cstdint>

namespace snapkv {

// StreamingLLM (Xiao et al. 2023; kvpress streaming_llm_press.py): the n_sink first prefix
// positions and the k - n_sink most recent ones. Requires 0 <= n_sink <= k <= P.
void streaming_positions(int64_t n_prefix, int64_t k, int64_t n_sink, int64_t* out);

}  // namespace snapkv
