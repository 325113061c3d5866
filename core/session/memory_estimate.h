// How much memory a prefill, a generation or a perplexity chunk will need, computed from the model's
// hyperparameters before anything is allocated, and how much the machine has free (MemAvailable in
// /proc/meminfo on the CPU, the device's free memory on CUDA). Session refuses work that cannot
// fit with these numbers instead of being killed half-way. Estimates, not accounting: they follow
// the shapes the model, the KV cache and the scorers allocate (see llama_model.cpp, kv_cache.cpp,
// layer_scorer.h) and leave out allocator slack. Torch-free header.
#pragma once

#include <cstdint>
#include <string>

#include "core/common/units.h"  // format_bytes, used with the estimates
#include "core/io/model_config.h"

namespace snapkv {

// Bytes, by what holds them.
struct MemoryEstimate {
    int64_t weights = 0;      // resident once the model is loaded
    int64_t kv_cache = 0;     // K, V (+ slot positions) for every cache slot of every layer
    int64_t capture = 0;      // window queries, H2O scores and float32 key copies kept per layer
    int64_t scorer = 0;       // LayerScorer checkpoints + votes, and their build temporaries
    int64_t activations = 0;  // the largest temporaries of one forward pass (a layer at a time)
    int64_t extra() const { return kv_cache + capture + scorer + activations; }  // beyond weights
    int64_t total() const { return weights + extra(); }
    // "KV cache 377.0 MiB, capture 17.6 MiB, scorer 79.6 MiB, activations 702.3 MiB"
    std::string breakdown() const;
};

// What a run allocates beyond the weights.
struct RunShape {
    int64_t n_tokens = 0;      // tokens of the longest forward call (the prompt, or a chunk)
    int64_t cache_slots = 0;   // KV cache capacity (tokens)
    int64_t caches = 1;        // KV caches alive at once (compare: full + compressed)
    int64_t logit_rows = 1;    // rows of logits one forward call returns (perplexity: a half chunk)
    int64_t max_window = 0;    // > 0: prefill with capture of this many window queries
    bool h2o = false;          // capture H2O scores
    bool query_stats = false;  // capture query statistics and value norms (ExpectedAttention)
    bool two_parts = false;    // capture also the context alone (query-agnostic selection)
};

// elem_bytes: bytes per element of the model's dtype (4 for float32).
MemoryEstimate estimate_memory(const ModelConfig& config, int64_t weight_bytes, int64_t elem_bytes,
                               const RunShape& run);

struct AvailableMemory {
    int64_t bytes = -1;  // -1: unknown (no check is made)
    std::string source;  // "MemAvailable in /proc/meminfo", "free memory on cuda:0", ...
};

// Free memory for a device string ("cpu", "cuda", "cuda:N"). SNAPKV_MEMORY_LIMIT (bytes, or with a
// K/M/G/T suffix, powers of 1024) caps it, for machines shared with other work.
AvailableMemory available_memory(const std::string& device);

// Throws InputError unless estimate.extra() fits in the available memory: "<what> needs about X
// beyond the weights (<breakdown>) but only Y is available (<source>)<hint>".
void require_memory(const MemoryEstimate& estimate, const AvailableMemory& available, const std::string& what,
                    const std::string& hint);

}  // namespace snapkv
