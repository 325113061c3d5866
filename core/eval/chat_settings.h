// How an evaluation task wraps its prompts in the model's chat template, as its results rows
// record it ({"chat", "system", "chat_date"} inside the task's settings), and read back from
// them. Grids always use the model's own template (a template from a file is for single prompts);
// the date strftime_now prints is fixed when the task is made, so a resumed grid renders the
// same prompts on another day.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/session/session.h"

namespace snapkv::eval {

// enabled only when the model has a template; the date pinned to today when none was given.
ChatSettings task_chat(const Session& s, ChatSettings chat);
// Adds chat, system and chat_date to a task's settings object.
void add_chat_settings(nlohmann::json& settings, const ChatSettings& chat);
// Reads them back; rows written before the system message and date were recorded read as none.
ChatSettings chat_settings_from(const nlohmann::json& settings);
// Today's local date as YYYY-MM-DD.
std::string today_date();

}  // namespace snapkv::eval
