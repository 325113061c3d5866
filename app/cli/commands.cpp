// Registers every `snapkv` subcommand, in the order `snapkv --help` and the man page list them.
// Each subcommand lives in its own commands_*.cpp; the prompt commands share command_options.h.
#include "app/cli/commands.h"

#include <CLI/CLI.hpp>

namespace snapkv::cli {

void register_commands(CLI::App& app, const std::atomic<bool>* cancel) {
    register_model_commands(app, cancel);     // logits, info, tokenize
    register_chat_command(app);               // chat-template
    register_generate_commands(app, cancel);  // generate, perplexity
    register_bench_command(app, cancel);
    register_analyze_command(app, cancel);
    register_compare_command(app, cancel);
    register_eval_commands(app, cancel);  // needle, sweep, merge
    register_ruler_commands(app, cancel);
}

}  // namespace snapkv::cli
