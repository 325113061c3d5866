// `snapkv chat-template`: a conversation rendered by a model's chat template (or a template file)
// exactly as transformers' apply_chat_template renders it, printed to stdout as is (no newline
// added). A template that raises prints its own message on stderr and exits 1. Reads only the
// model's vocabulary and template, never its weights.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/cli_checks.h"
#include "app/cli/commands.h"
#include "core/common/errors.h"
#include "core/session/session.h"
#include "core/tokenizer/chat_template.h"

namespace snapkv::cli {
namespace {

struct ChatTemplateOpts {
    std::string model, template_file, template_name, messages, tools, bos, eos, date;
    bool no_generation_prompt = false;
    const CLI::Option* bos_opt = nullptr;  // given, even as "" (which differs from undefined)
    const CLI::Option* eos_opt = nullptr;
};

nlohmann::ordered_json read_json_file(const std::string& path, const std::string& what, const std::string& option) {
    const std::string text = read_text_file(path, what);
    try {
        return nlohmann::ordered_json::parse(text);  // keeps the keys' order, as Python's json does
    } catch (const nlohmann::json::parse_error& e) {
        throw InputError(option + ": " + what + " '" + path + "' is not JSON: " + e.what());
    }
}

void cmd_chat_template(const ChatTemplateOpts& o) {
    ChatRequest req;
    req.messages = read_json_file(o.messages, "messages file", "--messages");
    check_chat_messages(req.messages, "--messages '" + o.messages + "'");
    if (!o.tools.empty()) {
        req.tools = read_json_file(o.tools, "tools file", "--tools");
        if (!req.tools.is_array())
            usage_error("--tools", "'" + o.tools + "' must hold a JSON list of tool schemas, found " +
                                       std::string(req.tools.type_name()));
    }
    req.add_generation_prompt = !o.no_generation_prompt;
    if (!o.date.empty()) {
        try {
            check_chat_date(o.date);
        } catch (const InputError& e) {
            usage_error("--date", e.what());
        }
        req.date = o.date;
    }
    std::string text;
    if (!o.model.empty()) {
        const ModelChatTemplate t = read_model_chat_template(o.model, o.template_name);
        if (t.text.empty())
            throw InputError("model '" + o.model +
                             "' has no chat template (its prompts are used raw); give one with "
                             "--template-file");
        text = t.text;
        req.bos_token = t.bos_token;
        req.eos_token = t.eos_token;
    } else {
        text = read_text_file(o.template_file, "template file");
    }
    if (o.bos_opt->count() > 0) req.bos_token = o.bos;
    if (o.eos_opt->count() > 0) req.eos_token = o.eos;
    std::string rendered;
    try {
        rendered = render_chat_template(text, req);
    } catch (const jinja::TemplateRaised& e) {
        // The template's own message (raise_exception), alone on stderr, as transformers raises it.
        std::cerr << e.what() << "\n";
        std::cerr.flush();
        std::exit(1);
    }
    std::cout.write(rendered.data(), static_cast<std::streamsize>(rendered.size()));
    std::cout.flush();
}

}  // namespace

void register_chat_command(CLI::App& app) {
    static ChatTemplateOpts o;
    auto* cmd = app.add_subcommand(
        "chat-template", "Render a conversation with a model's chat template (as transformers does) to stdout");
    auto* model = cmd->add_option("--model,-m", o.model,
                                  "Model (GGUF file or Hugging Face folder) whose template to use");
    auto* file = cmd->add_option("--template-file", o.template_file, "A Jinja chat template file");
    model->excludes(file);
    file->excludes(model);
    cmd->add_option("--template-name", o.template_name,
                    "A named template of the model (e.g. tool_use) instead of its default one")
        ->needs(model);
    cmd->add_option("--messages", o.messages,
                    "JSON file: a list of {\"role\", \"content\"} (content a string or a list of "
                    "{\"type\": \"text\", \"text\"} parts; optional tool_calls)")
        ->required();
    cmd->add_option("--tools", o.tools, "JSON file: a list of tool schemas (the template's `tools`)");
    cmd->add_flag("--no-generation-prompt", o.no_generation_prompt,
                  "Leave out the assistant header that asks the model to answer");
    o.bos_opt = cmd->add_option("--bos-token", o.bos, "bos_token's text (default: the model's; undefined with a file)");
    o.eos_opt = cmd->add_option("--eos-token", o.eos, "eos_token's text (default: the model's; undefined with a file)");
    cmd->add_option("--date", o.date, "The day strftime_now reads, YYYY-MM-DD (default: now, local time)");
    cmd->callback([model, file] {
        if (model->count() == 0 && file->count() == 0) usage_error("--model", "give --model or --template-file");
        cmd_chat_template(o);
    });
}

}  // namespace snapkv::cli
