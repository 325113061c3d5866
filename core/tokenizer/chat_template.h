// Chat templates: a model's own Jinja chat template rendered as transformers' apply_chat_template
// renders it (the interpreter is core/tokenizer/jinja.h), with the variables transformers passes
// (messages, tools, documents, add_generation_prompt, bos_token, eos_token, strftime_now's clock).
// Does not tokenize and does not decide whether the tokenizer adds BOS (Session::build_prompt
// does: not when the rendered text already starts with it). No marker guessing: a model without
// a template is prompted raw by the caller.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/jinja.h"  // jinja::TemplateRaised, jinja::TemplateError: what render throws

namespace snapkv {

struct ChatMessage {
    std::string role;  // "system" | "user" | "assistant" | "tool" | ...
    std::string content;
};

struct ChatRequest {
    // [{"role": ..., "content": string | [{"type": "text", "text": ...}] | null, "tool_calls"?...}]
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    nlohmann::ordered_json tools;  // a list of tool schemas, or null: none (transformers: tools=None)
    bool add_generation_prompt = true;
    std::optional<std::string> bos_token;  // unset: undefined in the template (the model has none)
    std::optional<std::string> eos_token;
    std::string date;  // "YYYY-MM-DD": strftime_now reads that day at 00:00:00; "" = the local time now
};

// [{"role", "content"}...] in order.
nlohmann::ordered_json chat_messages(const std::vector<ChatMessage>& messages);

// Checks a conversation read from a user's file: a list of objects, each with a string "role"
// and a "content" that is a string, null or a list of parts. Throws InputError naming the message
// index and the key (where names the file).
void check_chat_messages(const nlohmann::ordered_json& messages, const std::string& where);
// "YYYY-MM-DD" (a real calendar day) or throws InputError naming the value.
void check_chat_date(const std::string& date);

// The rendered text, exactly (no added newline, BOS only where the template writes it).
// Throws jinja::TemplateRaised (an InputError whose what() is the template's own message) when the
// template calls raise_exception, jinja::TemplateError (an InputError naming the template line)
// for a template we cannot parse or run, InputError for a bad request.
std::string render_chat_template(const std::string& template_text, const ChatRequest& request);

}  // namespace snapkv
