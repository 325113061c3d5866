// How much memory a prefill, a generation or a perplexity chunk will need, computed from the model's
// hyperparameters before anything is allocated, and how much the machine has free (MemAvailable in
// /proc/meminfo on the CPU, the device's free memory on CUDA). Session refuses work that cannot
// fit with these numbers instead of being killed half-way. Estimates, not accounting: they follow
// the shapes the model, the KV cache and the scorers allocate (see llama_model.cpp, kv_cache.cpp,
// layer_scorer.h) and leave out allocator slack. Torch-free header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/units.h"  // format_bytes, used with the estimates
#include "core/io/model_config.h"
#include "core/kv/kv_type.h"

namespace snapkv {

// Bytes, by what holds them.
struct MemoryEstimate {
    int64_t weights = 0;   // resident once the model is loaded
    int64_t kv_cache = 0;  // K, V (+ slot positions) for every cache slot of every layer
    int64_t capture = 0;   // window queries, H2O scores and float32 key copies kept per layer
    int64_t scorer = 0;    // LayerScorer checkpoints + votes, and their build temporaries
    // Float32 copies of the keys the scorers read when the cache does not hold float32 (a 16-bit
    // model dtype, or a cache type other than f32). Measured alive at the forward pass's peak
    // (test_memory_estimate, f16 and q8_0), so they count beside the activations.
    int64_t key_copies = 0;
    int64_t activations = 0;  // the largest temporaries of one forward pass (a layer at a time)
    // A grid cell's decodes after its prefill (RunShape::answer_tokens), at their peak: the full
    // cache's copy grown by the answer with the reference's attention marks and logits, or the
    // compressed caches decoded together; the prefill's cache, capture and scorers stay alive.
    int64_t decode = 0;
    KvType kv_type = KvType::F32;  // what kv_cache was counted in (RunShape::kv_type)
    // Beyond the weights, at the peak: the scorers are built once the forward pass has returned
    // and freed its temporaries, so only the larger of the two counts; the decodes come after
    // both, next to the scorers.
    int64_t extra() const { return kv_cache + capture + key_copies + std::max(scorer + decode, activations); }
    int64_t total() const { return weights + extra(); }
    // "KV cache 377.0 MiB, capture 17.6 MiB, scorer 79.6 MiB, activations 702.3 MiB" (the cache
    // as "KV cache (q8_0) ..." when it is not f32)
    std::string breakdown() const;
};

// One compressed run of a grid cell's lockstep decode (Session::compare_many_to_reference).
struct DecodeCacheShape {
    int64_t kept = 0;          // prompt tokens per cache head it starts with (its budget, window
                               // included; the whole prompt with prefill compression off)
    int64_t fed = 0;           // tokens fed to it before the answer (query-agnostic: the question)
    bool query_heads = false;  // one cache head per query head (GqaMode::QueryHead), else per KV head
};

// What a run allocates beyond the weights.
struct RunShape {
    int64_t n_tokens = 0;     // tokens of the longest forward call (the prompt, or a chunk)
    int64_t cache_slots = 0;  // KV cache capacity (tokens)
    int64_t caches = 1;       // KV caches alive at once (compare: full + compressed)
    int64_t logit_rows = 1;   // rows of logits one forward call returns (perplexity: a half chunk)
    int64_t max_window = 0;   // > 0: prefill with capture of this many window queries
    uint32_t captures = 0;    // with max_window > 0: CaptureBit set (policy_table.h) recorded
    bool two_parts = false;   // capture also the context alone (query-agnostic selection)
    bool values_kept = true;  // false: an analysis prefill, one layer's values alive at a time
    // How the caches store K and V (kv_type.h): f32 keeps the model's dtype (elem_bytes); the
    // others take kv_row_bytes per head and slot, and a CPU forward decodes one layer's K and V
    // to float32 while it runs.
    KvType kv_type = KvType::F32;
    // Scorer sets built during the forward pass, next to its temporaries (a prefill preview: 1, or 2
    // with the context's own); 0: built after it, when the temporaries are gone.
    int64_t scorer_sets_in_forward = 0;
    // > 0: an evaluation grid's cell (core/eval): after the prefill, the full cache decodes this
    // many answer tokens (a copy of it, sliding layers trimmed to their window, keeping the
    // first kl_steps logits and the attention marks [N, H, L] bool per layer), then the
    // `compressed` runs decode together (their caches with room for the answer, kept masks [H, L]
    // per layer, a logits row each). MemoryEstimate::decode is the larger of the two phases.
    int64_t answer_tokens = 0;
    int64_t kl_steps = 0;
    std::vector<DecodeCacheShape> compressed;
};

// How the loaded model runs a forward pass, which decides its temporaries.
struct ForwardPath {
    // Float32 on the CPU: core/quant's blocked attention (no score matrix) and, for a call of more
    // than 1024 tokens, each layer in token chunks (long_prompt_layer.cpp). Else ATen's attention
    // in chunks of 512 queries over a [H, 512, S] score matrix.
    bool cpu_float32 = false;
    // Weights in the file's format: a long prompt's layer dequantizes its matrices of at most
    // tile_values values to float32 while it runs (ChunkMatrix).
    bool native_weights = false;
    int64_t tile_values = 0;  // WeightMatrix::tile_values()
};

// elem_bytes: bytes per element of the model's dtype (4 for float32).
MemoryEstimate estimate_memory(const ModelConfig& config, int64_t weight_bytes, int64_t elem_bytes, const RunShape& run,
                               const ForwardPath& path = {});

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
