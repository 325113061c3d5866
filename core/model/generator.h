// Token generation on top of LlamaModel: prefill a prompt, then decode one token at a time at
// absolute positions, greedy or sampled, stopping at end-of-generation, the length limit, the
// model's context, a callback's request or a cancel flag. Also llama.cpp-style perplexity.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"
#include "core/model/sampler.h"

namespace snapkv {

class Tokenizer;

struct GenerateOptions {
    int64_t max_tokens = 128;
    SamplingParams sampling;
    bool stop_at_eog = true;
    std::function<bool(int32_t id)> on_token;  // after each token; return false to stop
    const std::atomic<bool>* cancel = nullptr;
    // After each fed-back token's forward, with the cache and that forward's last_queries (per
    // layer [1, H, D]; empty unless want_queries): decoding-time compression hooks in here.
    std::function<void(KvCache& cache, const std::vector<at::Tensor>& queries)> after_forward;
    bool want_queries = false;
};

struct GenerateResult {
    std::vector<int32_t> ids;  // generated ids only
    std::string stop_reason;   // "eog", "length", "context", "callback", "cancelled"
    double prefill_ms = 0;
    double decode_ms = 0;
    double decode_tok_s() const { return decode_ms > 0 ? 1000.0 * ids.size() / decode_ms : 0.0; }
};

// Prefill `prompt` into `cache` (which may already hold a prefix) and generate.
GenerateResult generate(const LlamaModel& model, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                        KvCache& cache, const GenerateOptions& opts);
// Continue from the logits of the last prefilled token ([1, V]); the cache holds everything before.
GenerateResult generate_from(const LlamaModel& model, const Tokenizer& tok, at::Tensor last_logits, KvCache& cache,
                             const GenerateOptions& opts);

struct PerplexityResult {
    double ppl = 0;
    std::vector<double> chunk_ppl;    // per chunk
    std::vector<double> running_ppl;  // after each chunk, as llama-perplexity prints
    int64_t n_tokens = 0;
    int64_t scored_per_chunk = 0;
};

// llama.cpp's llama-perplexity: tokens cut into n_ctx-token chunks, each evaluated from an empty
// cache with its first token replaced by bos_id (pass -1 when the model does not add BOS: llama.cpp
// replaces it only when llama_vocab_get_add_bos says so); the second half is scored.
PerplexityResult perplexity(const LlamaModel& model, const std::vector<int32_t>& tokens, int32_t bos_id, int64_t n_ctx,
                            const std::function<void(int64_t, int64_t)>& progress = {},
                            const std::atomic<bool>* cancel = nullptr);

// -log p(target) under logits [V] (float32), computed in double.
double token_nll(const at::Tensor& logits, int32_t target);

}  // namespace snapkv
