// What transformers does to a conversation before its chat template sees it (transformers 5.x,
// utils/chat_template_utils.py: _normalize_chat_messages, _alias_reasoning_fields), so callers
// can build the same `messages` variable. The rest of the context (tools, documents,
// add_generation_prompt, special tokens) is the caller's; nothing here renders.
#include "core/tokenizer/jinja.h"

namespace snapkv::jinja {

nlohmann::ordered_json transformers_messages(const nlohmann::ordered_json& messages) {
    if (!messages.is_array()) {
        throw TemplateError(std::string("messages must be a JSON array, got ") + messages.type_name(), 0);
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < messages.size(); ++i) {
        const nlohmann::ordered_json& m = messages[i];
        if (!m.is_object()) {
            throw TemplateError("messages[" + std::to_string(i) + "] must be a JSON object, got " + m.type_name(), 0);
        }
        // Keys whose value is None are dropped: many templates handle a missing key, not a null.
        nlohmann::ordered_json kept = nlohmann::ordered_json::object();
        for (auto it = m.begin(); it != m.end(); ++it) {
            if (!it.value().is_null()) kept[it.key()] = it.value();
        }
        const nlohmann::ordered_json* reasoning = nullptr;
        for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
            if (kept.contains(key)) {
                reasoning = &kept[key];
                break;
            }
        }
        if (reasoning != nullptr) {
            // {"thinking": r, **message, "reasoning_content": r}: a key already present keeps its
            // place (Python dict order), so only new keys go first or last.
            nlohmann::ordered_json aliased = nlohmann::ordered_json::object();
            aliased["thinking"] = *reasoning;
            for (auto it = kept.begin(); it != kept.end(); ++it) aliased[it.key()] = it.value();
            aliased["reasoning_content"] = *reasoning;
            kept = std::move(aliased);
        }
        out.push_back(std::move(kept));
    }
    return out;
}

}  // namespace snapkv::jinja
