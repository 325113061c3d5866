// A model's chat template rendered by our Jinja interpreter with the variables transformers'
// render_jinja_template passes (chat_template_utils.py): messages prepared as apply_chat_template
// prepares them (jinja::transformers_messages), tools (None when there are none), documents
// (None), add_generation_prompt, and the special tokens as keyword arguments.
// Parsed templates are kept (keyed by their text): a grid renders the same template per cell.
// Does not check roles or their order: the template does that itself, with raise_exception.
#include "core/tokenizer/chat_template.h"

#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>

#include "core/common/errors.h"
#include "core/tokenizer/jinja.h"

namespace snapkv {
namespace {

using ojson = nlohmann::ordered_json;

// Templates parsed so far (a model has one or two; a fuzz run many: the cache stays small).
std::shared_ptr<const jinja::Template> parsed(const std::string& text) {
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<const jinja::Template>> cache;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        const auto it = cache.find(text);
        if (it != cache.end()) return it->second;
    }
    auto t = std::make_shared<const jinja::Template>(text);  // throws TemplateError; not cached
    const std::lock_guard<std::mutex> lock(mutex);
    if (cache.size() >= 16) cache.clear();
    cache.emplace(text, t);
    return t;
}

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

std::tm parse_date(const std::string& date) {
    int y = 0, m = 0, d = 0;
    char tail = 0;
    const bool shape = date.size() == 10 && date[4] == '-' && date[7] == '-' &&
                       std::sscanf(date.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) == 3;
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!shape || y < 1 || m < 1 || m > 12 || d < 1 || d > days[m - 1] + (m == 2 && is_leap(y) ? 1 : 0))
        throw InputError("chat template date '" + date + "': expected a calendar day as YYYY-MM-DD");
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = m - 1;
    tm.tm_mday = d;
    tm.tm_isdst = -1;
    // Day of the week and of the year, as Python's datetime knows them (timegm: no time zone).
    const time_t t = timegm(&tm);
    std::tm norm{};
    gmtime_r(&t, &norm);
    return norm;
}

}  // namespace

ojson chat_messages(const std::vector<ChatMessage>& messages) {
    ojson out = ojson::array();
    for (const ChatMessage& m : messages) out.push_back(ojson{{"role", m.role}, {"content", m.content}});
    return out;
}

void check_chat_messages(const ojson& messages, const std::string& where) {
    if (!messages.is_array())
        throw InputError(where + ": expected a list of messages, found " + std::string(messages.type_name()));
    for (size_t i = 0; i < messages.size(); ++i) {
        const ojson& m = messages[i];
        const std::string at = where + ": message " + std::to_string(i);
        if (!m.is_object()) throw InputError(at + ": expected an object, found " + std::string(m.type_name()));
        if (!m.contains("role") || !m["role"].is_string())
            throw InputError(at + ": 'role' must be a string (system, user, assistant, tool...)");
        if (!m.contains("content")) continue;  // assistant turns with tool_calls may leave it out
        const ojson& c = m["content"];
        if (c.is_string() || c.is_null()) continue;
        if (!c.is_array())
            throw InputError(at + ": 'content' must be a string, null or a list of parts, found " +
                             std::string(c.type_name()));
        for (size_t k = 0; k < c.size(); ++k)
            if (!c[k].is_object())
                throw InputError(at + ": content part " + std::to_string(k) +
                                 " must be an object such as {\"type\": \"text\", \"text\": ...}");
    }
}

void check_chat_date(const std::string& date) { parse_date(date); }

std::string render_chat_template(const std::string& template_text, const ChatRequest& request) {
    check_chat_messages(request.messages, "chat messages");
    if (!request.tools.is_null() && !request.tools.is_array())
        throw InputError("chat tools: expected a list of tool schemas, found " +
                         std::string(request.tools.type_name()));
    jinja::RenderOptions options;
    if (!request.date.empty()) options.now = parse_date(request.date);
    ojson context = ojson::object();
    context["messages"] = jinja::transformers_messages(request.messages);
    context["tools"] = request.tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = request.add_generation_prompt;
    if (request.bos_token) context["bos_token"] = *request.bos_token;
    if (request.eos_token) context["eos_token"] = *request.eos_token;
    return parsed(template_text)->render(context, options);
}

}  // namespace snapkv
