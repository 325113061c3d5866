// Private state of a Session (LibTorch inside; never included by the apps).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "core/compare/lockstep.h"
#include "core/io/model_file.h"
#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"
#include "core/session/runtime.h"
#include "core/session/session.h"
#include "core/snapkv/layer_scorer.h"
#include "core/tokenizer/tokenizer.h"

namespace snapkv {

// Everything one prefill-with-capture produced.
struct PrefillState {
    PromptTokens prompt;
    KvCache cache;                       // full cache after the whole prompt
    at::Tensor last_logits;              // [1, V] after the whole prompt
    std::vector<LayerCapture> aware;     // whole prompt: window = last Wmax prompt tokens
    std::vector<LayerCapture> agnostic;  // context only (empty when there is no question)
    double prefill_ms = 0;
    // With a preview (PrefillSettings::preview) the scorers are built layer by layer during the
    // forward pass (agnostic ones only when the preview selects query-agnostic); else empty and
    // Session::prefill builds them after it. scorer_ms: the time spent building them.
    std::vector<LayerScorer> aware_scorers;
    std::vector<LayerScorer> agnostic_scorers;
    double scorer_ms = 0;
};

struct FullReference;

// A compressed cache ready to decode: the selection applied to the prefill's cache (and, in
// query-agnostic mode, the question fed to it), with the hit-rate masks of the selection.
struct CompressedStart {
    LockstepRun run;
    std::vector<at::Tensor> kept;  // per layer [H, P] bool, undefined for a layer kept whole
    bool query_agnostic = false;
};

struct Session::Impl {
    std::unique_ptr<ModelFile> file;
    std::shared_ptr<const LlamaModel> model;
    std::unique_ptr<Tokenizer> tok;
    ModelInfo info;

    std::optional<PrefillState> state;
    PrefillSummary summary;
    std::vector<LayerScorer> aware_scorers;
    std::vector<LayerScorer> agnostic_scorers;  // built on first use
    std::shared_ptr<FullReference> reference;   // decode_reference() of the current prefill
    CompareSettings reference_settings;

    void require_model() const;
    void require_prefill() const;
    void require_values() const;  // require_prefill, and a cache that kept its values (not an analysis)
    // Estimate of a run on the loaded model (memory_estimate.h), its caches in the model's cache
    // type, or in `as` when given (the forecast's other choices, run_forecast.h).
    MemoryEstimate estimate(const RunShape& run, std::optional<KvType> as = std::nullopt) const;
    // Throws InputError, before anything is allocated, when n_prompt tokens (plus n_new to be
    // generated; n_new < 0: none) exceed the model's context, or when the run's estimate exceeds
    // the free memory. what: "the prompt", "a chunk"; hint ends the message (": shorten ...").
    void check_fits(int64_t n_prompt, int64_t n_new, const MemoryEstimate& estimate, const std::string& what,
                    const std::string& hint) const;
    // check_fits for max_tokens (>= 1) generated after the prefill, by a full and a compressed
    // cache at once (compare, evaluation grids).
    void check_generation_fits(int64_t n_prompt, int64_t max_tokens) const;
    PrefillState run_prefill(const PromptTokens& prompt, const PrefillSettings& settings, const ProgressFn& progress,
                             CancelFlag cancel) const;
    const std::vector<LayerScorer>& scorers(bool query_agnostic);
    // The compressed run of a selection of the current prefill, with room for max_tokens more (the
    // caches and masks come from core/snapkv/compressed_cache.h).
    CompressedStart start_compressed(const Selection& sel, int64_t max_tokens, CancelFlag cancel) const;
    std::string piece(int32_t id) const;
};

std::vector<LayerScorer> build_scorers(const std::vector<LayerCapture>& captures);
// Bytes a prefill state keeps for retunes beyond its cache: window queries, the recorded
// statistics, key copies that are not views of the cache, the scorers' caches (session_prefill.cpp).
int64_t capture_bytes(const PrefillState& st, const std::vector<LayerScorer>& scorers);

// Runs f; an allocation failure from LibTorch (CPU or device) becomes a snapkv::Error that keeps
// the numbers (bytes requested, free) and says what to try instead, not "[enforce fail at
// alloc_cpu.cpp]". Other errors pass unchanged.
template <typename F>
auto with_oom_report(const char* what, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const c10::Error& e) {
        const std::string oom = out_of_memory_text(e.what_without_backtrace());
        if (oom.empty()) throw;
        throw Error(std::string("out of memory while ") + what + ": " + oom +
                    ". Free memory, or try a shorter prompt, a smaller model, or float16/bfloat16 on a GPU.");
    }
}

}  // namespace snapkv
