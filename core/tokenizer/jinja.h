// A Jinja2 interpreter for model chat templates: renders a template the way Hugging Face
// transformers does (jinja2 3.1 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, {% generation %}, json.dumps-style tojson). Deliberately not all of Jinja2: no
// template inheritance, includes or imports, no autoescaping, no big integers (64-bit ints;
// an overflow is a TemplateError).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/errors.h"

namespace snapkv::jinja {

// A template that cannot be parsed or uses a construct we do not implement, or a runtime error
// (type errors, undefined attribute of an undefined, security refusals, limits): message
// "template line N: ..." naming the construct or value.
class TemplateError : public snapkv::InputError {
public:
    TemplateError(const std::string& msg, int line);
    int line() const { return m_line; }

private:
    int m_line;
};

// raise_exception(msg) called by the template: what() is exactly msg.
class TemplateRaised : public snapkv::InputError {
public:
    using InputError::InputError;
};

struct RenderOptions {
    // strftime_now's clock: local civil time fields; unset = the current local time.
    std::optional<std::tm> now;
    size_t max_output_bytes = 64u << 20;  // rendering past this is a TemplateError
    int max_call_depth = 200;             // macro/call recursion
    uint64_t max_steps = 50'000'000;      // evaluation steps (loop iterations, node evaluations): no hang
    // Bytes of all strings built while rendering (concatenations, filters, macro output) and of
    // the objects that live until the render ends (namespaces, loops, macro scopes), so a template
    // cannot grow memory without bound even when its output stays small.
    uint64_t max_string_bytes = uint64_t(256) << 20;
};

struct Program;

class Template {
public:
    explicit Template(const std::string& source);  // parses; throws TemplateError (line-numbered)
    // context: a JSON object whose members are the template's variables (JSON null = Python None;
    // a name not in it is Undefined). Object member order is kept (items(), tojson).
    std::string render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

private:
    std::shared_ptr<const Program> m_program;
};

// The `messages` transformers hands a chat template (apply_chat_template ->
// render_jinja_template): each message's keys whose value is null dropped, then a message with
// reasoning (the first non-null of reasoning_content, thinking, reasoning) rebuilt as
// {"thinking": r, ...message, "reasoning_content": r}. Messages must be objects.
nlohmann::ordered_json transformers_messages(const nlohmann::ordered_json& messages);

}  // namespace snapkv::jinja
