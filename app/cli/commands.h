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

void register_commands(CLI::App& app, const std::atomic<bool>* cancel);
void register_eval_commands(CLI::App& app, const std::atomic<bool>* cancel);   // commands_eval.cpp
void register_ruler_commands(CLI::App& app, const std::atomic<bool>* cancel);  // commands_ruler.cpp

// commands_model.cpp: `logits`, and the architecture part of `info` (text lines / JSON object).
void register_model_commands(CLI::App& app, const std::atomic<bool>* cancel);
std::string arch_text(const ModelConfig& config);
nlohmann::json arch_json(const ModelConfig& config);

}  // namespace snapkv::cli
