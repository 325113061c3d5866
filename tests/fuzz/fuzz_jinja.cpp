// libFuzzer target: a chat template through jinja::Template and render. The input is a template,
// or "TEMPLATE\n#context#\nJSON" to render it with that JSON object as the context; otherwise
// (and when the JSON is not an object) a fixed conversation with tools is the context. Any
// snapkv::InputError (TemplateError, TemplateRaised) is the expected outcome for bad input;
// anything else escapes and is a finding, as are crashes, hangs and sanitizer reports.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/errors.h"
#include "core/tokenizer/jinja.h"

namespace {

const nlohmann::ordered_json& fixed_context() {
    static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Weather in Paris? caf\u00e9 \ud83c\udf0d"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call1", "type": "function",
                "function": {"name": "get_weather", "arguments": {"location": "Paris", "n": 2.5}}}]},
            {"role": "tool", "tool_call_id": "call1", "name": "get_weather", "content": "{\"t\": 22}"},
            {"role": "assistant", "content": "22 C.", "reasoning_content": "think", "thinking": "think"},
            {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
            "required": ["location"]}}}],
        "documents": null,
        "add_generation_prompt": true,
        "bos_token": "<s>",
        "eos_token": "</s>"
    })");
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string k_separator = "\n#context#\n";
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::string source = input;
    nlohmann::ordered_json ctx = fixed_context();
    const size_t sep = input.find(k_separator);
    if (sep != std::string::npos) {
        source = input.substr(0, sep);
        nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(input.substr(sep + k_separator.size()), nullptr,
                                                                      false);
        if (parsed.is_object()) ctx = std::move(parsed);
    }
    snapkv::jinja::RenderOptions options;  // small limits: each input runs fast
    std::tm now{};
    now.tm_year = 2026 - 1900;
    now.tm_mon = 6;
    now.tm_mday = 26;
    options.now = now;
    options.max_steps = 200000;
    options.max_output_bytes = 1 << 20;
    options.max_string_bytes = 16 << 20;
    options.max_call_depth = 64;
    try {
        const snapkv::jinja::Template t(source);
        (void)t.render(ctx, options);
    } catch (const snapkv::InputError&) {}
    return 0;
}
