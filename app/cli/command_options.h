// What the `snapkv` subcommands over one prompt share (generate, perplexity, bench, analyze,
// compare, info, tokenize): the option structs and their registration (model, prompt, selection,
// generation), the checks made before a model is loaded, prompt and parameter building from the
// options, JSON output, progress on stderr and opening the session. Each command is in its own
// commands_*.cpp; the evaluation grids (needle, sweep, ruler) have their own options (eval_cli.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/common/path_checks.h"
#include "core/session/session.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv::cli {

using json = nlohmann::json;

struct Common {
    std::string model;
    std::string device = "cpu";
    std::string dtype = "float32";
    std::string weights = "native";
    std::string cache_type = "f32";  // --cache-type: how the KV cache stores keys and values
};

struct PromptOpts {
    std::string prompt, prompt_file, doc, question;
    bool chat = false;
    std::string system;                       // --system: a system message before the prompt (with --chat)
    std::string chat_template_file;           // --chat-template: a Jinja file used instead of the model's template
    std::string chat_date;                    // --chat-date: strftime_now's day, YYYY-MM-DD
    const CLI::Option* prompt_opt = nullptr;  // to tell --prompt "" from no --prompt
    bool prompt_given() const { return prompt_opt != nullptr && prompt_opt->count() > 0; }
};

// Starts from core's default_params(), as the app and the evaluation grid do: per KV head, so that
// on a GQA model the cache really shrinks; query-head (the official code's choice) is one option away.
struct SelectOpts {
    int64_t window = default_params().window;
    int64_t kernel = default_params().kernel;
    std::string pooling = pooling_name(default_params().pooling);
    int64_t budget = default_params().budget;
    double ratio = default_params().ratio;
    std::string policy = policy_name(default_params().policy);
    std::string gqa = gqa_mode_name(default_params().gqa);
    std::string tie_break = tie_break_name(default_params().tie_break);
    bool query_agnostic = false;
    int64_t sink = default_params().n_sink;
    uint64_t seed = default_params().seed;
    int64_t max_window = 0;  // 0: max(128, W)
};

// Compression while generating (--decode-budget, --decode-interval; compare also --no-prefill-compression).
struct DecodeOpts {
    int64_t budget = 0;     // 0: off
    int64_t interval = 32;  // decoding steps between events
    bool no_prefill = false;
};

// Upper bounds that only catch absurd values (a real setting is far below them).
constexpr int64_t kMaxBudgetOption = int64_t(1) << 40;
constexpr int64_t kMaxLengthOption = int64_t(1) << 26;  // the largest context arch_tensors allows

// Writes j, indented, to out ("" or "-": stdout) through write_output.
void write_json(const json& j, const std::string& out);
// Options that contradict each other, checked before the model is loaded (exit code 2): core's
// check_params without the prompt, naming the options.
void check_select(const SelectOpts& o);
// Queries captured per layer: --max-window, or max(128, W).
int64_t max_window_of(const SelectOpts& o);

void add_common(CLI::App* c, Common& o);
// --cache-type (f32, f16, bf16, q8_0); add_common registers it, and `logits` on its own.
void add_cache_type(CLI::App* c, std::string& type);
// with_doc: --doc and --question besides --prompt and --prompt-file.
void add_prompt(CLI::App* c, PromptOpts& o, bool with_doc);
void add_select(CLI::App* c, SelectOpts& o);
// --decode-budget and --decode-interval; with_prefill_switch: --no-prefill-compression too.
void add_decode(CLI::App* c, DecodeOpts& o, bool with_prefill_switch);
DecodeCompressionSettings make_decode(const DecodeOpts& o);
// core's check_decode_settings before the model is loaded (exit code 2), naming the options.
void check_decode(const SelectOpts& so, const DecodeOpts& o);
// min_tokens: 0 for generate (prompt only), 1 for compare (something to compare).
void add_gen(CLI::App* c, GenerationSettings& o, int64_t min_tokens);
// Sampling by default (the CLI's --greedy turns it off), 64 new tokens.
GenerationSettings cli_generation_defaults();

// What a prompt-taking command reads, for check_output_not_input.
std::vector<NamedPath> inputs_of(const Common& c, const PromptOpts& o);
PromptSpec make_prompt(const PromptOpts& o);
SelectionParams make_params(const SelectOpts& o);
// The checks of a command that writes a selection's JSON to out (analyze, compare), all before the
// model is loaded: out is none of the inputs, the selection options agree, the prompt can be read,
// out's folder exists (created). Returns the prompt.
PromptSpec checked_json_run(const Common& c, const PromptOpts& po, const SelectOpts& so, const std::string& out);

// Stage and count on one stderr line, or nothing when quiet or stderr is not a terminal.
ProgressFn stderr_progress(bool quiet);
std::unique_ptr<Session> open_session(const Common& c, bool quiet);
// Why the compressed cache (comp bytes) is larger than the full one, or "".
std::string growth_note(Session& s, const Selection& sel, int64_t full, int64_t comp);

}  // namespace snapkv::cli
