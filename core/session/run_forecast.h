// What a prefill will take before it starts: its memory (weights, KV cache in the model's cache
// type, capture, scorers, activations; the peak against the free memory) and its time, from this
// machine's measured speed, and when it does not fit the cheaper choices that would (another cache
// type, a shorter document); and the same for an evaluation grid, from its largest cell, with its
// decodes and its cell count. Plain arithmetic over Session's estimates and short measurements; it
// runs no prefill and refuses nothing itself (Session's own checks still do). Torch-free (the apps
// use it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/common/units.h"  // group_thousands, format_seconds (the CLI and the app print them)
#include "core/kv/kv_type.h"
#include "core/session/memory_estimate.h"
#include "core/session/run_plan.h"
#include "core/session/session.h"

namespace snapkv {

// This machine's prefill speed on the loaded model, measured by a calibration forward
// (measure_prefill_speed). The time model: a prompt of L tokens costs L * token_ms for everything
// that grows with the tokens alone (the weight products, 2 * active parameters FLOPs a token, and
// the norms, RoPE and MLP activations beside them) plus its causal attention FLOPs (Q.K and P.V
// over the keys each query sees, sliding windows included) at attention_flops_per_ms, plus the
// capture's extra passes and the scorers' build at that same rate.
struct PrefillSpeed {
    double token_ms = 0;                // per prompt token, all but attention
    double attention_flops_per_ms = 0;  // causal attention, as measured (decode's model uses it)
    // On the CPU: the attention kernel's own rate on the model's shape at 1024 causal tokens
    // (cpu_attention_flops_per_ms); when set, a prefill's attention is forecast at this rate and
    // the calibration's attention stage beyond the kernel counts per token. 0: unmeasured.
    double kernel_attention_flops_per_ms = 0;
    int64_t tokens = 0;         // the calibration forward's length
    double calibration_ms = 0;  // what the calibration took
    int threads = 0;            // LibTorch intra-op threads when measured
    // Measured / modelled time of this session's last prefill (1: none yet); the forecast is
    // multiplied by it, so a second run at a similar length is forecast from the first.
    double last_prefill_scale = 1.0;
    bool measured() const { return token_ms > 0 && attention_flops_per_ms > 0; }
};

// Causal attention FLOPs of one forward pass over n_tokens (4 * D per query-key pair and head:
// Q.K and P.V), each layer's sliding window applied.
double attention_flops(const ModelConfig& config, int64_t n_tokens);

// Milliseconds a prefill with capture of n_tokens takes at `speed` (the forward, the capture's
// extra passes and the scorers' build), without last_prefill_scale; < 0 when speed is unmeasured.
double modelled_prefill_ms(const ModelConfig& config, const PrefillSpeed& speed, int64_t n_tokens,
                           const PrefillSettings& settings);

// The CPU prefill attention kernel's FLOPs per millisecond on this model's attention shape (query
// heads, KV heads, head_dim) over `tokens` causal tokens: one timed call on synthetic data after a
// warm-up (tens of milliseconds for an 8B shape); 0 for a shape it cannot run.
double cpu_attention_flops_per_ms(const ModelConfig& config, int64_t tokens = 1024);

// Measures the loaded model's speed with a forward of `tokens` tokens (Session::bench with its
// stage profile: attention apart from the rest; a few seconds at most on the bundled models).
// Cached for the process per model file, weights, device, dtype and thread count, so a second
// forecast costs nothing.
PrefillSpeed measure_prefill_speed(Session& session, int64_t tokens = 128, CancelFlag cancel = nullptr);

// `speed` with last_prefill_scale from a finished prefill of this model (its summary, and the
// settings it ran with): measured time over modelled time, so the next forecast carries this
// machine's current load and what the model leaves out.
PrefillSpeed with_last_prefill(PrefillSpeed speed, const ModelConfig& config, const PrefillSummary& last,
                               const PrefillSettings& settings);

// One way to make a run that does not fit, fit.
struct CheaperChoice {
    enum class Kind { CacheType, ShorterDocument };
    Kind kind = Kind::CacheType;
    KvType cache_type = KvType::F32;  // CacheType: the type to switch to
    int64_t n_tokens = 0;             // the prompt's tokens with this choice
    int64_t document_tokens = 0;      // ShorterDocument: the document's tokens kept
    double document_share = 1.0;      // ShorterDocument: of the document's tokens, in (0, 1)
    int64_t peak_bytes = 0;           // weights + the run's peak with this choice
    double seconds = -1;              // its forecast time (< 0: unmeasured)
};

struct RunForecast {
    int64_t n_tokens = 0;   // the prompt's tokens
    int64_t n_context = 0;  // of which the context (template head + document)
    KvType cache_type = KvType::F32;
    MemoryEstimate memory;
    AvailableMemory available;
    double seconds = -1;  // forecast prefill time; < 0: no speed measured
    // When the run does not fit: every other cache type that fits (smallest peak first), then the
    // longest document that fits with the current type; empty when nothing helps.
    std::vector<CheaperChoice> choices;

    bool fits() const { return available.bytes < 0 || memory.extra() <= available.bytes; }
    int64_t peak() const { return memory.total(); }
    // "4,096 tokens, KV f16 96.0 MiB, capture 12.0 MiB, scorers 20.0 MiB, peak 1.1 GiB of which
    // 103.0 MiB weights, 18.2 GiB free; about 41 s on this machine"
    std::string summary() const;
    // The choices in words, "" when there are none: "--cache-type q8_0 (peak 2.1 GiB) or a
    // document of at most 12,000 tokens (41 % of it)"; flag_names: the CLI's spelling, else
    // "cache type q8_0 (...)".
    std::string choices_text(bool flag_names) const;
};

// The forecast of a prefill with capture of `prompt` with `settings` on the loaded model, in its
// cache type; choices are filled only when it does not fit. speed: from measure_prefill_speed
// (an unmeasured one leaves seconds < 0). decodes: an evaluation grid's cell, whose memory (and
// the choices') counts the decodes after the prefill (run_plan.h grid_cell_run_shape); its time
// stays the prefill's (forecast_grid adds the decodes').
RunForecast forecast_prefill(const Session& session, const PromptTokens& prompt, const PrefillSettings& settings,
                             const PrefillSpeed& speed, const GridDecodes* decodes = nullptr);

// This machine's decode speed on the loaded model: one step at a short context (Session::bench's
// decode row): the pass over the weights and all but a long cache's attention. A step over a cache
// of n tokens adds its attention (4 * D FLOPs per key and head, each layer's sliding window
// applied) at PrefillSpeed::attention_flops_per_ms.
struct DecodeSpeed {
    double step_ms = 0;  // one decode step at `tokens` of context
    int64_t tokens = 0;
    bool measured() const { return step_ms > 0; }
};

// Measures `steps` decode steps after a `tokens`-token prefill (no capture); cached for the process
// as measure_prefill_speed is.
DecodeSpeed measure_decode_speed(Session& session, int64_t tokens = 128, int64_t steps = 8,
                                 CancelFlag cancel = nullptr);

// Milliseconds of `steps` decode steps of sequences decoded together (one pass over the weights a
// step, as Session::compare_many_to_reference does), each over a cache of kept[i] tokens; < 0 when
// either speed is unmeasured.
double modelled_decode_ms(const ModelConfig& config, const PrefillSpeed& prefill, const DecodeSpeed& decode,
                          const std::vector<int64_t>& kept, int64_t steps);

// One cell of a grid as the forecast sees it: its prompt and how the front end names it
// ("length 32000 depth 0").
struct GridCell {
    PromptSpec prompt;
    std::string label;
};

// What an evaluation grid (needle, sweep, RULER: per cell one prefill with capture, one full-cache
// decode, then every configuration's compressed decode together) will take, from its largest cell:
// each cell still to run is counted at that cell's cost, so the total is an upper bound.
struct GridForecast {
    RunForecast largest;         // the prefill of the longest prompt still to run
    int64_t largest_cell = -1;   // which cell that is (-1: nothing to run)
    std::string largest_label;   // GridCell::label of it
    int64_t cells = 0;           // cells still to run (after resume)
    int64_t answer_tokens = 0;   // decode steps per answer
    int64_t configs = 0;         // compressed configurations decoded together after the full cache
    double decode_seconds = -1;  // the largest cell's decodes; < 0: not forecast

    bool fits() const { return largest.fits(); }
    // The largest cell's prefill and decodes (the prefill alone when the decodes are not
    // forecast); < 0: the prefill's speed was not measured.
    double cell_seconds() const;
    double total_seconds() const { return cell_seconds() < 0 ? -1 : cell_seconds() * static_cast<double>(cells); }
    // "largest cell length 32000 depth 0: 32,000 tokens, KV f16 ..., peak 1.6 GiB (...), 90.1 GiB
    // free; about 2 min 10 s a prefill + 4.1 s of decodes (32 tokens: full cache, then 2
    // configurations together); 3 cells to run, about 6 min 42 s in all"
    std::string summary() const;
};

// The forecast of a grid whose `cells` cells still to run include `candidates` (those whose prompt
// may be the longest: cell_of builds each; the longest in tokens is forecast), prefilled with the
// capture of the decodes' configurations (plan_run, as the runner), then decoded as `decodes`
// says (its memory at the larger of the prefill's and the decodes' peaks). Times come from
// a short calibration (measure_prefill_speed, measure_decode_speed) unless the largest cell does not
// fit or the calibration itself cannot run: the forecast then gives memory alone. No candidates:
// largest_cell stays -1.
GridForecast forecast_grid(Session& session, const std::vector<int64_t>& candidates,
                           const std::function<GridCell(int64_t cell)>& cell_of, int64_t cells,
                           const GridDecodes& decodes, CancelFlag cancel = nullptr);

}  // namespace snapkv
