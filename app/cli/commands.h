// Subcommands of the `snapkv` CLI, registered on a CLI11 app; each runs in its parse callback.
#pragma once

#include <atomic>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/io/model_config.h"

namespace CLI {
class App;
}

namespace snapkv::cli {

// All of them (commands.cpp), in the order of the help text.
void register_commands(CLI::App& app, const std::atomic<bool>* cancel);
void register_generate_commands(CLI::App& app, const std::atomic<bool>* cancel);  // commands_generate.cpp
void register_bench_command(CLI::App& app, const std::atomic<bool>* cancel);      // commands_bench.cpp
void register_analyze_command(CLI::App& app, const std::atomic<bool>* cancel);    // commands_analyze.cpp
void register_compare_command(CLI::App& app, const std::atomic<bool>* cancel);    // commands_compare.cpp
void register_eval_commands(CLI::App& app, const std::atomic<bool>* cancel);      // commands_eval.cpp
void register_ruler_commands(CLI::App& app, const std::atomic<bool>* cancel);     // commands_ruler.cpp
void register_chat_command(CLI::App& app);                                        // commands_chat.cpp

// commands_model.cpp: `logits`, `info`, `tokenize`, and the architecture part of `info` (text
// lines / JSON object).
void register_model_commands(CLI::App& app, const std::atomic<bool>* cancel);
std::string arch_text(const ModelConfig& config);
nlohmann::json arch_json(const ModelConfig& config);

}  // namespace snapkv::cli
