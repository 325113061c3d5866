// Plain result types of the full-vs-compressed comparison (no LibTorch), shared by core/compare,
// core/session and the apps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapkv/snapkv_params.h"

namespace snapkv {

struct GenerationSettings {
    int64_t max_tokens = 128;
    bool greedy = true;
    float temperature = 0.8f;  // <= 0: greedy, as llama.cpp (its sampler takes the argmax then)
    // Every run reads this, never `greedy` alone, so temperature 0 means the same everywhere.
    bool is_greedy() const { return greedy || temperature <= 0.0f; }
    int64_t top_k = 40;
    float top_p = 0.95f;
    uint64_t seed = 42;
    bool stop_at_eog = true;
};

struct RunOutput {
    std::vector<int32_t> ids;
    std::string text;
    std::vector<std::string> pieces;
    int64_t kv_bytes = 0;  // right after prefill (and compression)
    double decode_ms = 0;
    double decode_tok_s = 0;
    int64_t batch = 1;  // runs decoded together (decode_ms is this run's share of their steps)
};

struct CompareStep {
    double kl = 0;  // KL(full || compressed) of the next-token distributions
    bool top1_agree = true;
    int64_t rank = 0;  // rank of the full run's token under the compressed run (0 = top)
};

struct CompareResult {
    SelectionParams params;
    bool query_agnostic = false;
    double prefill_ms = 0;
    RunOutput full;
    RunOutput compressed;
    std::vector<CompareStep> steps;
    int64_t first_divergence = -1;              // step index, -1 if none
    std::vector<std::vector<double>> hit_rate;  // [layer][query head], NaN-free: -1 when undefined
    std::string note;
};

}  // namespace snapkv
