// One full-cache decode scored against by many compressed decodes from the same prefill (the
// evaluation runners' inner loop). run_full_reference() decodes the full cache once and keeps what
// scoring needs: the first kl_steps next-token distributions and, per generated token, which prefix
// positions its attention marked important (> θ, paper §4). run_against_reference() then decodes
// only the compressed cache and fills a CompareResult as run_lockstep() would, except that each run
// stops at its own end-of-generation (lockstep stops both when either ends).
//
// Dimensions: N = generated tokens that were fed back (the full run's length - 1), H = n_head,
// P = prefix length (prompt tokens before the window), V = n_vocab.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "core/compare/compare_types.h"
#include "core/compare/decode_compression.h"
#include "core/compare/lockstep.h"

namespace snapkv {

struct FullReference {
    RunOutput run;                        // ids, text, pieces, decode timing (kv_bytes: caller)
    std::vector<at::Tensor> step_logits;  // first kl_steps steps, each [V] float32
    std::vector<at::Tensor> important;    // per layer [N, H, P] bool (empty when P == 0)
    int64_t prefix = 0;                   // P
    double threshold = 0.05;              // θ
};

FullReference run_full_reference(const LlamaModel& model, const Tokenizer& tok, LockstepRun full,
                                 const GenerationSettings& gen, int64_t prefix, double threshold, int64_t kl_steps,
                                 const std::function<void(int64_t, int64_t)>& progress = {},
                                 const std::atomic<bool>* cancel = nullptr);

// prefix: the selection's P (<= ref.prefix); kept: per layer [H, P] bool masks of the prefix
// positions the selection kept for each query head (undefined for a layer kept whole), as for
// run_lockstep's HitRateSpec. Steps cover the first
// min(kl_steps, both lengths) tokens; first_divergence is the first step where the ids differ or
// where one run ended and the other did not.
CompareResult run_against_reference(const LlamaModel& model, const Tokenizer& tok, const FullReference& ref,
                                    LockstepRun comp, const GenerationSettings& gen, int64_t prefix,
                                    const std::vector<at::Tensor>& kept,
                                    const std::function<void(int64_t, int64_t)>& progress = {},
                                    const std::atomic<bool>* cancel = nullptr);

// A compressed run for runs_against_reference: its cache and logits after the prompt, with its
// selection's prefix and kept masks as run_against_reference takes them.
struct AgainstReference {
    LockstepRun run;
    int64_t prefix = 0;
    std::vector<at::Tensor> kept;
    // When set, the run compresses while it generates (decode_compression.h); its result gets
    // cache_tokens, the events and the settings.
    std::shared_ptr<DecodeCompressor> decode;
};

// run_against_reference for several compressed runs of the same prompt, decoded together: each
// step feeds every unfinished run's token through one LlamaModel::forward_batch, so the weights
// are read once for all of them. Each result equals run_against_reference's for that run alone
// (the ids and scores bit for bit); decode_ms is the run's equal share of each batched step it
// took part in, and RunOutput::batch the number of runs. progress(step, max_tokens).
std::vector<CompareResult> runs_against_reference(const LlamaModel& model, const Tokenizer& tok,
                                                  const FullReference& ref, std::vector<AgainstReference> runs,
                                                  const GenerationSettings& gen,
                                                  const std::function<void(int64_t, int64_t)>& progress = {},
                                                  const std::atomic<bool>* cancel = nullptr);

}  // namespace snapkv
