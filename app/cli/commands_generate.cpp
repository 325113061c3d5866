// `snapkv generate` (text with the full cache, streamed or as JSON) and `snapkv perplexity`
// (llama.cpp-style chunks, or a continuation with the full and a compressed cache).
#include "app/cli/commands.h"

#include <iomanip>
#include <iostream>

#include "app/cli/cli_checks.h"
#include "app/cli/command_options.h"
#include "app/cli/plan_cli.h"
#include "core/session/compare_json.h"
#include "core/session/run_plan.h"
#include "core/snapkv/params_json.h"

namespace snapkv::cli {
namespace {

void cmd_generate(const Common& c, const PromptOpts& po, const SelectOpts& so, const DecodeOpts& dopt,
                  const GenerationSettings& go, bool as_json, bool plan, const std::atomic<bool>* cancel) {
    check_decode(so, dopt);
    auto s = open_session(c, as_json);
    TokenFn stream;
    if (!as_json)
        stream = [](int32_t, const std::string& piece) {
            std::cout << piece << std::flush;
            return true;
        };
    PromptSpec spec = make_prompt(po);
    if (spec.text.empty() && spec.document.empty() && !spec.chat.enabled) {
        // An empty prompt starts from BOS alone, as llama.cpp does (llama2.c's golden output is
        // defined that way); a model that adds no BOS has nothing to start from.
        spec.ids = s->tokenize("", true, true);
        if (spec.ids.empty())
            throw InputError(
                "the prompt is empty and this model adds no BOS token, so there is nothing to "
                "generate from; give a prompt");
    }
    // A plain prefill: nothing captured beyond the window of one query, no selection after it.
    RunFlags flags;
    flags.new_tokens = go.max_tokens;
    if (show_plan(*s, spec, plan_run({}, flags), plan, cancel)) return;
    const DecodeCompressionSettings decode = make_decode(dopt);
    const SelectionParams params = make_params(so);
    GenerationOutput out = s->generate(spec, go, stream, cancel, params, decode);
    if (as_json) {
        json j = {{"prompt_ids", out.prompt_ids},
                  {"ids", out.ids},
                  {"text", out.text},
                  {"prefill_ms", out.prefill_ms},
                  {"decode_ms", out.decode_ms},
                  {"decode_tok_s", out.decode_tok_s},
                  {"stop", out.stop_reason}};
        if (decode.enabled()) {
            j["decode_compression"] = {{"budget", decode.budget},
                                       {"interval", decode.interval},
                                       {"params", params_to_json(params, false)},
                                       {"cache_tokens", out.cache_tokens},
                                       {"events", decode_events_to_json(out.decode_events)}};
        }
        write_json(j, "");
    } else {
        std::cout << std::endl;
        std::cerr << "[" << out.prompt_ids.size() << " prompt tokens, " << out.ids.size() << " generated; prefill "
                  << std::fixed << std::setprecision(1) << out.prefill_ms << " ms, decode " << out.decode_tok_s
                  << " tok/s; stop: " << out.stop_reason;
        if (decode.enabled())
            std::cerr << "; " << out.decode_events.size() << " decoding compression events, cache "
                      << (out.cache_tokens.empty() ? out.prompt_ids.size() : out.cache_tokens.back())
                      << " tokens per head at the end";
        std::cerr << "]\n";
    }
}

// Split a text at the whitespace nearest to its middle: context | continuation.
std::pair<std::string, std::string> split_text(const std::string& t) {
    size_t mid = t.size() / 2;
    size_t at = t.find_first_of(" \n", mid);
    if (at == std::string::npos) at = mid;
    return {t.substr(0, at), t.substr(at)};
}

void cmd_perplexity(const Common& c, const std::string& file, int64_t ctx, bool compress, const SelectOpts& so,
                    bool as_json, const std::atomic<bool>* cancel) {
    auto s = open_session(c, as_json);
    const std::string text = read_text_file(file, "text file");
    if (compress) {
        auto [context, continuation] = split_text(text);
        SelectionParams p = make_params(so);
        auto [full, comp] = s->continuation_perplexity(context, continuation, p, stderr_progress(as_json), cancel);
        if (as_json) {
            write_json({{"ppl_full", full},
                        {"ppl_compressed", comp},
                        {"params", params_to_json(p, false)},
                        {"context_chars", context.size()},
                        {"continuation_chars", continuation.size()}},
                       "");
        } else {
            std::cout << std::fixed << std::setprecision(4) << "continuation perplexity: full " << full
                      << ", compressed " << comp << "\n";
        }
        return;
    }
    PerplexityOutput r = s->perplexity(text, ctx, stderr_progress(as_json), cancel);
    if (as_json) {
        write_json(
            {{"ppl", r.ppl}, {"chunks", r.chunks}, {"running", r.running}, {"n_tokens", r.n_tokens}, {"ctx", r.ctx}},
            "");
        return;
    }
    for (size_t i = 0; i < r.running.size(); ++i)
        std::cout << "[" << i + 1 << "]" << std::fixed << std::setprecision(4) << r.running[i]
                  << (i + 1 < r.running.size() ? "," : "\n");
    std::cout << "Final estimate: PPL = " << std::setprecision(4) << r.ppl << "  (" << r.n_tokens << " tokens, ctx "
              << r.ctx << ", " << r.chunks.size() << " chunks)\n";
}

}  // namespace

void register_generate_commands(CLI::App& app, const std::atomic<bool>* cancel) {
    // Options live as long as the app: one static block per subcommand.
    {
        static Common c;
        static PromptOpts po;
        static GenerationSettings go = cli_generation_defaults();
        static SelectOpts so;
        static DecodeOpts dopt;
        static bool as_json = false, plan = false;
        auto* cmd = app.add_subcommand(
            "generate", "Generate text with the full cache, or compressing it while generating (--decode-budget)");
        add_common(cmd, c);
        add_prompt(cmd, po, false);
        add_gen(cmd, go, 0);
        // The policy and its settings, for --decode-budget: the prompt itself is never compressed
        // here, so the prefill's own budget options are left out.
        add_select(cmd, so);
        for (const char* name : {"--budget", "--ratio", "--query-agnostic", "--max-window"})
            cmd->remove_option(cmd->get_option(name));
        add_decode(cmd, dopt, false);
        cmd->add_flag("--json", as_json,
                      "Print JSON with prompt_ids, ids, text, prefill_ms, decode_ms (and decode_compression)");
        add_plan(cmd, plan);
        cmd->callback([cancel] { cmd_generate(c, po, so, dopt, go, as_json, plan, cancel); });
    }
    {
        static Common c;
        static std::string file;
        static int64_t ctx = 512;
        static bool as_json = false, compress = false;
        static SelectOpts so;
        auto* cmd = app.add_subcommand("perplexity",
                                       "llama.cpp-style perplexity, or of a continuation under compression");
        add_common(cmd, c);
        cmd->add_option("--file,-f", file, "Text file")->required();
        cmd->add_option("--ctx,-c", ctx, "Chunk size in tokens")
            ->capture_default_str()
            ->check(integer_in(4, kMaxLengthOption));
        cmd->add_flag("--compress", compress,
                      "Split the text at its middle; score the second half after the first, with the full cache and "
                      "with the first half's cache compressed by the selection options");
        add_select(cmd, so);
        cmd->add_flag("--json", as_json, "Print JSON");
        cmd->callback([cancel] {
            if (compress) check_select(so);
            cmd_perplexity(c, file, ctx, compress, so, as_json, cancel);
        });
    }
}

}  // namespace snapkv::cli
