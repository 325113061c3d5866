// The one API the GUI and the CLI use: load a model, build prompts, generate, prefill with
// capture, retune selections from the captured tensors, read heatmap rows, compare full and
// compressed generation, measure. Everything crosses this boundary as plain values (no LibTorch,
// no pointers into session state), so the header is cheap to include and safe to copy across
// threads. A Session belongs to one thread at a time; long calls take a progress callback and a
// cancel flag and throw snapkv::Cancelled when it is set.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/errors.h"
#include "core/compare/compare_types.h"
#include "core/io/model_config.h"
#include "core/session/memory_estimate.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv {

// (stage, done, total): stage is a short phrase ("loading weights", "prefill", "layer scores").
// "prefill" counts prompt tokens (the layers done, as a share of the prompt's tokens).
using ProgressFn = std::function<void(const std::string& stage, int64_t done, int64_t total)>;
using CancelFlag = const std::atomic<bool>*;

struct LoadOptions {
    std::string device = "cpu";     // "cpu" | "cuda" | "cuda:N"
    std::string dtype = "float32";  // "float32" | "float16" | "bfloat16" (the last two: CUDA)
    // "native": weight matrices stay in the file's format (quantized blocks, F16, BF16) on the
    // CPU, multiplied by kernels that dequantize in registers (activations stay float32, but see
    // native-q8); "f32": every weight dequantized to float32 at load. CUDA always dequantizes at load.
    // "native-q8": native, and single-token products (decode) quantize their input to 8 bits per
    // block first, as llama.cpp's CPU products do: faster decode, results differ slightly (formats
    // without such products, qkernels.h q8_supported, keep float32 inputs).
    std::string weights = "native";
    // How the KV cache stores keys and values: "f32" (exact, the default), "f16", "bf16" or "q8_0",
    // with llama.cpp's -ctk/-ctv meaning (core/kv/kv_type.h). Session::set_cache_type changes it.
    std::string cache_type = "f32";
};

struct TensorSummary {
    std::string name;
    std::string type;
    std::vector<int64_t> shape;
    int64_t bytes = 0;  // in the file, in its stored type
};

struct ModelInfo {
    std::string path;
    std::string format;
    ModelConfig config;
    std::string tokenizer_kind;
    std::string chat_template;                     // the model's default Jinja chat template; "" = none
    std::vector<std::string> chat_template_names;  // its named variants ("tool_use", ...)
    std::string device;
    std::string dtype;
    std::string weights;       // "native", "native-q8" or "f32": how the weights are held (see LoadOptions)
    std::string cache_type;    // the KV cache's storage type for the next prefill (LoadOptions)
    int64_t weight_bytes = 0;  // weights in memory as held (native: the file's bytes, mapped)
    std::vector<TensorSummary> tensors;
    std::vector<std::pair<std::string, std::string>> metadata;
};

// How a prompt is wrapped: as the user turn of a chat template (core/tokenizer/chat_template.h),
// after an optional system message. A model without a template and no template_text: raw.
struct ChatSettings {
    bool enabled = false;
    std::string system;         // the system message; "" = none (the template's default, if any)
    std::string template_text;  // Jinja text used instead of the model's own; "" = the model's
    std::string date;           // strftime_now's day (YYYY-MM-DD), for templates that print it; "" = today
};

// A prompt is either raw text or a document plus a question (optionally in the chat template).
struct PromptSpec {
    std::vector<int32_t> ids;  // token ids used verbatim when not empty (benchmarks)
    std::string text;          // raw prompt; used when document and question are empty
    std::string document;
    std::string question;
    ChatSettings chat;
    // Words the answer starts with (RULER's answer prefix), part of the question: after the chat
    // template's assistant header, or after the question and a space without a template.
    std::string answer_prefix;
};

// The token sequence of a prompt: context (template head + document) then question (question +
// template tail). Query-agnostic compression sees only the context.
struct PromptTokens {
    std::vector<int32_t> ids;              // all prompt ids (BOS included when the vocab adds one)
    int64_t n_context = 0;                 // ids[0, n_context) are the context; the rest the question
    std::string text;                      // what was tokenized: the rendered chat template or the raw prompt
    std::string template_source = "none";  // "model", "given" (ChatSettings::template_text) or "none"
    bool bos_added = false;                // the tokenizer put BOS in front of text
};

// The chat template of a model file and its special tokens, read without loading the weights
// (`snapkv chat-template --model`). name: "" = the default template, else a named variant.
struct ModelChatTemplate {
    std::string text;                      // "" when the model has none
    std::optional<std::string> bos_token;  // unset when the vocabulary has none
    std::optional<std::string> eos_token;
    std::vector<std::string> names;  // the named variants the file has
};
ModelChatTemplate read_model_chat_template(const std::string& model_path, const std::string& name = "");

struct GenerationOutput {
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> ids;  // generated ids only
    std::string text;
    std::string stop_reason;
    double prefill_ms = 0;
    double decode_ms = 0;
    double decode_tok_s = 0;
    // With decoding compression (generate's decode argument): tokens per head in the cache after
    // each generated token was fed back, and the compression events.
    std::vector<int64_t> cache_tokens;
    std::vector<DecodeCompressionEvent> decode_events;
};

struct PerplexityOutput {
    double ppl = 0;
    std::vector<double> chunks;   // per-chunk perplexity
    std::vector<double> running;  // running perplexity after each chunk
    int64_t n_tokens = 0;
    int64_t ctx = 0;
};

// Logits at every position of a prompt, from an empty cache (`snapkv logits`).
struct LogitsOutput {
    std::vector<int32_t> ids;  // the prompt's token ids
    int64_t n_vocab = 0;
    std::vector<float> logits;  // float32 [ids.size(), n_vocab], row-major
};

// Called with (token id, decoded piece) as each token is generated; return false to stop.
using TokenFn = std::function<bool(int32_t, const std::string&)>;

// ---- A prefill's layers as they finish (the app's overview fills in while a long prefill runs) ----
// A prefill runs each layer for the whole prompt before the next (LlamaModel::forward_parts, at
// every prompt length: a long prompt's layer runs in token chunks, but still all of it), so a
// layer's scores are final as soon as it has run. A preview hands that layer's selection out then,
// as values, on the prefill's thread. A cancelled or failed prefill sends no more previews and
// commits nothing (the previous prefill stays).
struct PrefillLayerPreview {
    int64_t layer = 0;  // the layer that has just run for the whole prompt (0 .. n_layer - 1, in order)
    int64_t n_layer = 0;
    int64_t n_tokens = 0;   // L
    double elapsed_ms = 0;  // since the prefill started
    // Per PrefillPreview::params, in order: exactly select(params[i], query_agnostic,
    // with_scores).layers[layer] of the prefill once it commits; unset when params[i] cannot be
    // selected (select() then says why).
    std::vector<std::optional<LayerSelection>> selections;
};
struct PrefillPreview {
    std::vector<SelectionParams> params;  // the selections to preview (may be empty: progress only)
    bool query_agnostic = false;
    bool with_scores = true;
    // Unset: no preview. Set: each layer's scorer is built as soon as the layer has run (instead of
    // after the forward pass), so it sits next to the pass's temporaries; the memory check counts it.
    std::function<void(const PrefillLayerPreview&)> on_layer;
};

// What a prefill records. run_plan.h works these out from the selections to be made (plan_run) or
// for every policy (plan_all_policies); the defaults are the latter's.
struct PrefillSettings {
    int64_t max_window = 128;  // queries captured per layer: windows up to this retune freely
    // CaptureBit set (policy_table.h): what prefill records beyond keys and window queries (H2O's
    // column sums, query statistics, value norms, future RoPE); the policies' rows declare theirs.
    uint32_t captures = kAllCaptures;
    int64_t new_tokens = 0;  // tokens to generate after this prefill (compare): the prompt
                             // plus these must fit the context, checked before prefill
    // false: analysis only (`snapkv analyze`): each layer's values are dropped once the layer has
    // run for the whole prompt, and its weights' pages go back to the kernel (read again from the
    // file when next needed), so peak memory holds the keys, one layer's values and one layer's
    // weights; selections, votes and heatmaps work as before, generating from this prefill throws
    // InputError.
    bool keep_values = true;
    PrefillPreview preview;  // each layer's selection as it finishes (unset: none)
};

// What a prefill produced, for display.
struct PrefillSummary {
    int64_t n_tokens = 0;   // L
    int64_t n_context = 0;  // tokens before the question
    int64_t max_window = 0;
    double prefill_ms = 0;
    double scorer_ms = 0;  // building the per-layer score caches
    int64_t kv_bytes_full = 0;
    int64_t capture_bytes = 0;  // kept for retunes: window queries, H2O scores, float32 key
                                // copies and the scorers' caches (measured, all layers)
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;  // display text of each token
    std::vector<uint8_t> special;     // 1 where a token is a control token (BOS, <|im_start|>, ...)
    std::string prompt_text;          // the prompt as the model sees it (PromptTokens::text)
    std::string template_source;      // PromptTokens::template_source
};

// One compressed run's decoding compression in an evaluation (compare_many_to_reference).
struct DecodeRun {
    DecodeCompressionSettings settings;  // off by default
    bool compress_prefill = true;        // false: the run starts from the full cache
};

struct CompareSettings {
    GenerationSettings generation;
    bool query_agnostic = false;  // compress the context alone, then feed the question
    double hit_threshold = 0.05;  // θ for hit rates (paper §4)
    // Compression while generating (compare_types.h), with the selection's policy and settings.
    DecodeCompressionSettings decode;
    // false: the compressed run starts from the full cache (decoding compression alone).
    bool compress_prefill = true;
    // Record what the Timeline view draws (CompareResult::start_kept, step_attention).
    bool record_timeline = false;
};

struct BenchRow {
    std::string what;  // "prefill 512", "decode @512", ...
    int64_t tokens = 0;
    double ms = 0;
    double tok_s = 0;
    // Prefill rows of bench(..., profile = true): {stage, ms} in forward order, then
    // {"(dequantize)", ms} (part of the projections).
    std::vector<std::pair<std::string, double>> stages;
};

class Session {
public:
    Session();
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // ---- model ----
    void load_model(const std::string& path, const LoadOptions& opts = {}, const ProgressFn& progress = {},
                    CancelFlag cancel = nullptr);
    bool has_model() const;
    ModelInfo model_info() const;  // throws InputError if no model
    // The KV cache type of every run from now on ("f32", "f16", "bf16", "q8_0"); the current
    // prefill (made with the old type) is dropped. InputError for an unknown name or a type the
    // model's head_dim does not fit (q8_0 needs a multiple of 32), naming both; nothing changes then.
    void set_cache_type(const std::string& type);
    static bool cuda_available();

    // ---- tokens ----
    std::vector<int32_t> tokenize(const std::string& text, bool add_special = true, bool parse_special = true) const;
    std::string token_piece(int32_t id) const;  // bytes of a token (special tokens rendered)
    std::string token_text(int32_t id) const;   // vocabulary string
    std::string decode(const std::vector<int32_t>& ids) const;
    PromptTokens build_prompt(const PromptSpec& spec) const;

    // ---- memory ----
    // What a prefill with capture of n_tokens would allocate (weights already resident; the shape is
    // run_plan.h's prefill_run_shape, the one run_prefill checks), and the free memory of the
    // model's device. two_parts: the prompt has a question after its context (its context is
    // captured alone too). prefill(), generate(), perplexity(), bench() and compare() check their
    // own estimate against it and throw InputError, with the numbers, before allocating anything
    // that would not fit.
    MemoryEstimate estimate_prefill_memory(int64_t n_tokens, const PrefillSettings& settings = {},
                                           bool two_parts = false) const;
    // The same with the caches stored in cache_type instead of the model's current type: what the
    // run would take after set_cache_type (the forecast's cheaper choices, run_forecast.h).
    MemoryEstimate estimate_prefill_memory(int64_t n_tokens, const PrefillSettings& settings, bool two_parts,
                                           KvType cache_type) const;
    // Any run's estimate on the loaded model with its caches in cache_type (an evaluation grid's
    // cell with its decodes: run_plan.h grid_cell_run_shape).
    MemoryEstimate estimate_memory(const RunShape& shape, KvType cache_type) const;
    AvailableMemory available_memory() const;

    // ---- plain runtime ----
    // Stops at the model's context: the cache is sized for min(max_tokens, context - prompt).
    // decode.enabled(): the cache is compressed while generating, with decode_params's policy and
    // settings (core/compare/decode_compression.h); the prompt itself is never compressed here.
    GenerationOutput generate(const PromptSpec& prompt, const GenerationSettings& settings,
                              const TokenFn& on_token = {}, CancelFlag cancel = nullptr,
                              const SelectionParams& decode_params = {}, const DecodeCompressionSettings& decode = {});
    PerplexityOutput perplexity(const std::string& text, int64_t ctx, const ProgressFn& progress = {},
                                CancelFlag cancel = nullptr);
    // One forward pass over the prompt (ids verbatim, or text with the vocab's BOS), every position.
    LogitsOutput logits(const PromptSpec& prompt, CancelFlag cancel = nullptr);
    // Perplexity of `continuation` after `context`, with the full cache and with the context's
    // cache compressed by `params` (window = the last W context tokens): {full, compressed}.
    std::pair<double, double> continuation_perplexity(const std::string& context, const std::string& continuation,
                                                      const SelectionParams& params, const ProgressFn& progress = {},
                                                      CancelFlag cancel = nullptr);
    std::vector<BenchRow> bench(const std::vector<int64_t>& prompt_lengths, int64_t decode_tokens,
                                const ProgressFn& progress = {}, CancelFlag cancel = nullptr, bool profile = false);

    // ---- prefill with capture, selection, comparison ----
    // Prefill with capture: one pass gives both the query-aware (whole prompt) and the
    // query-agnostic (context only) captures.
    PrefillSummary prefill(const PromptSpec& prompt, const PrefillSettings& settings = {},
                           const ProgressFn& progress = {}, CancelFlag cancel = nullptr);
    bool has_prefill() const;
    const PrefillSummary& prefill_summary() const;
    // Re-select from the captured tensors (no prefill). Throws InputError for invalid parameters.
    Selection select(const SelectionParams& params, bool query_agnostic = false, bool with_scores = true);
    // Softmax rows of the window queries of one query head over all keys: W rows of L floats,
    // row-major; keys beyond the causal limit are 0.
    std::vector<float> window_attention(int64_t layer, int64_t head, int64_t window, bool query_agnostic = false);
    // Bytes of the full cache and of a cache compressed with this selection.
    std::pair<int64_t, int64_t> kv_bytes(const Selection& sel) const;
    CompareResult compare(const SelectionParams& params, const CompareSettings& settings,
                          const ProgressFn& progress = {}, CancelFlag cancel = nullptr);
    // Evaluation (core/eval): one full-cache decode scored against by many selections of the same
    // prefill. decode_reference() decodes the full cache once and keeps the first kl_steps
    // next-token distributions and the attention hit masks; compare_to_reference() then decodes only
    // the compressed cache of `sel` (a select() of this prefill). Each run stops at its own end.
    RunOutput decode_reference(const CompareSettings& settings, int64_t kl_steps, const ProgressFn& progress = {},
                               CancelFlag cancel = nullptr);
    CompareResult compare_to_reference(const Selection& sel, const ProgressFn& progress = {},
                                       CancelFlag cancel = nullptr);
    // compare_to_reference for several selections of this prefill, their compressed caches decoded
    // together (runs_against_reference, in batches that fit a quarter of the free memory): each
    // result equals compare_to_reference's for that selection, but for decode_ms, its share of the
    // batched steps. Results in the order of sels.
    // decode: per selection its decoding compression (empty: none for any).
    std::vector<CompareResult> compare_many_to_reference(const std::vector<Selection>& sels,
                                                         const ProgressFn& progress = {}, CancelFlag cancel = nullptr,
                                                         const std::vector<DecodeRun>& decode = {});
    std::string retune_benchmark(const SelectionParams& base);

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

}  // namespace snapkv
