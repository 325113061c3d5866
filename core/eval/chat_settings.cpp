// The chat settings of an evaluation task in its results rows (chat_settings.h).
#include "core/eval/chat_settings.h"

#include <ctime>

#include "core/common/errors.h"

namespace snapkv::eval {

using json = nlohmann::json;

std::string today_date() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &local);
    return buf;
}

ChatSettings task_chat(const Session& s, ChatSettings chat) {
    if (!chat.template_text.empty())
        throw InputError("evaluation grids use the model's own chat template; a template text was given");
    chat.enabled = chat.enabled && !s.model_info().chat_template.empty();
    if (!chat.enabled) return ChatSettings{};  // raw: no system message, no date to record
    if (chat.date.empty()) chat.date = today_date();
    return chat;
}

void add_chat_settings(json& settings, const ChatSettings& chat) {
    settings["chat"] = chat.enabled;
    settings["system"] = chat.system;
    settings["chat_date"] = chat.date;
}

ChatSettings chat_settings_from(const json& settings) {
    ChatSettings c;
    try {
        c.enabled = settings.at("chat").get<bool>();
        c.system = settings.value("system", std::string());
        c.date = settings.value("chat_date", std::string());
    } catch (const json::exception& e) {
        throw InputError(std::string("the chat settings of the results are incomplete: ") + e.what());
    }
    return c;
}

}  // namespace snapkv::eval
