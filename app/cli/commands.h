// Subcommands of the `snapkv` CLI, registered on a CLI11 app; each runs in its parse callback.
#pragma once

#include <atomic>

namespace CLI {
class App;
}

namespace snapkv::cli {

void register_commands(CLI::App& app, const std::atomic<bool>* cancel);
void register_eval_commands(CLI::App& app, const std::atomic<bool>* cancel);   // commands_eval.cpp

}  // namespace snapkv::cli
