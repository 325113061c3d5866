// The chat formats, rendered as the models' own Jinja templates render them (HF
// apply_chat_template), recognised by marker strings in the template text. We do not interpret
// Jinja: a template outside these formats renders as Raw. BOS is never written at the start (the
// tokenizer adds it per add_bos); Llama 3.1's date header in the system turn is not produced.
#include "core/tokenizer/chat_template.h"

#include <algorithm>
#include <cctype>

#include "core/common/errors.h"

namespace snapkv {
namespace {

bool contains(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }

// Python's str.strip() / Jinja's trim for ASCII whitespace.
std::string strip(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return std::string();
    const size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

// The default system prompt a ChatML template inserts when the conversation has none: the literal
// text in "<|im_start|>system\n<TEXT><|im_end|>" (SmolLM2: "You are a helpful AI assistant named
// SmolLM, trained by Hugging Face"; Qwen2: "You are a helpful assistant."). The newline may be
// written as a Jinja escape ("\n", two characters) or as a real newline. Occurrences followed by
// an expression (a quote closing the literal, or "{") are the template's own system-message path.
std::string chatml_default_system(const std::string& tmpl) {
    const std::string head = "<|im_start|>system";
    for (size_t at = tmpl.find(head); at != std::string::npos; at = tmpl.find(head, at + 1)) {
        size_t p = at + head.size();
        if (tmpl.compare(p, 2, "\\n") == 0) p += 2;
        else if (p < tmpl.size() && tmpl[p] == '\n') p += 1;
        else continue;
        const size_t end = tmpl.find("<|im_end|>", p);
        if (end == std::string::npos) continue;
        const std::string text = tmpl.substr(p, end - p);
        if (text.empty() || text.find_first_of("'\"{}+") != std::string::npos) continue;
        return text;
    }
    return std::string();
}

// `first` is the index of turns[0] in the caller's message list (1 after a system message).
void check_alternation(const std::vector<ChatMessage>& turns, size_t first, const char* format) {
    for (size_t i = 0; i < turns.size(); ++i) {
        const char* expected = i % 2 == 0 ? "user" : "assistant";
        if (turns[i].role != expected) {
            throw InputError(std::string("chat template ") + format + ": message " + std::to_string(first + i) +
                             " has role '" + turns[i].role + "'; expected '" + expected +
                             "' (roles must alternate user/assistant after an optional "
                             "system message)");
        }
    }
}

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                          const std::string& tmpl) {
    std::string out;
    if (!messages.empty() && messages.front().role != "system") {
        const std::string sys = chatml_default_system(tmpl);
        if (!sys.empty()) out += "<|im_start|>system\n" + sys + "<|im_end|>\n";
    }
    for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

// An optional leading system message split off the user/assistant turns that follow it, as the
// [INST] templates (Llama 2, Mistral) treat it; the turns must alternate user/assistant.
struct SystemAndTurns {
    std::string system;
    bool has_system = false;
    std::vector<ChatMessage> turns;
};

SystemAndTurns split_system(const std::vector<ChatMessage>& messages, const char* format) {
    SystemAndTurns split;
    split.turns = messages;
    if (!split.turns.empty() && split.turns.front().role == "system") {
        split.system = split.turns.front().content;
        split.has_system = true;
        split.turns.erase(split.turns.begin());
    }
    check_alternation(split.turns, split.has_system ? 1 : 0, format);
    return split;
}

// Meta-Llama-3-8B-Instruct: each turn "<|start_header_id|>ROLE<|end_header_id|>\n\n" +
// content|trim + "<|eot_id|>"; the template's leading bos_token is left to the tokenizer.
std::string render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    std::string out;
    for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + strip(m.content) + "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

// Llama-2-chat: "[INST] <<SYS>>\nSYS\n<</SYS>>\n\nUSER [/INST] ASSISTANT </s><s>[INST] ..."
// Every user turn but the first starts with the "<s>" text (the first BOS is the tokenizer's).
std::string render_llama2(const std::vector<ChatMessage>& messages) {
    const SystemAndTurns split = split_system(messages, "llama2");
    const std::string& system = split.system;
    const bool has_system = split.has_system;
    const std::vector<ChatMessage>& turns = split.turns;
    std::string out;
    for (size_t i = 0; i < turns.size(); ++i) {
        std::string content = turns[i].content;
        if (i == 0 && has_system) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
        if (turns[i].role == "user") {
            if (i > 0) out += "<s>";
            out += "[INST] " + strip(content) + " [/INST]";
        } else {
            out += " " + strip(content) + " </s>";
        }
    }
    return out;
}

// Mistral-7B-Instruct v0.1/v0.2: "[INST] USER [/INST]ASSISTANT</s>[INST] ..." Those templates
// reject a system role; we put it before the first user message, separated by a blank line.
std::string render_mistral(const std::vector<ChatMessage>& messages) {
    const SystemAndTurns split = split_system(messages, "mistral");
    const std::string& system = split.system;
    const std::vector<ChatMessage>& turns = split.turns;
    std::string out;
    for (size_t i = 0; i < turns.size(); ++i) {
        if (turns[i].role == "user") {
            const std::string content = (i == 0 && !system.empty()) ? system + "\n\n" + turns[i].content
                                                                    : turns[i].content;
            out += "[INST] " + content + " [/INST]";
        } else {
            out += turns[i].content + "</s>";
        }
    }
    return out;
}

// Gemma 2/3: "<start_of_turn>ROLE\n" + content|trim + "<end_of_turn>\n", assistant written as
// "model"; a system message is prefixed to the first user turn with a blank line (Gemma 3's
// template; Gemma 2's raises on it).
std::string render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    const SystemAndTurns split = split_system(messages, "gemma");
    std::string out;
    for (size_t i = 0; i < split.turns.size(); ++i) {
        const ChatMessage& m = split.turns[i];
        const std::string role = m.role == "assistant" ? "model" : m.role;
        out += "<start_of_turn>" + role + "\n";
        if (i == 0 && split.has_system) out += split.system + "\n\n";
        out += strip(m.content) + "<end_of_turn>\n";
    }
    if (add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

// Phi-3 / Phi-3.5 mini: "<|ROLE|>\n" + content + "<|end|>\n" (an empty system message is left
// out); the generation prompt is "<|assistant|>\n", otherwise the template ends with eos_token.
std::string render_phi3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    std::string out;
    for (const ChatMessage& m : messages) {
        if (m.role == "system" && m.content.empty()) continue;
        if (m.role != "system" && m.role != "user" && m.role != "assistant") continue;
        out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
    }
    out += add_generation_prompt ? "<|assistant|>\n" : "<|endoftext|>";
    return out;
}

// No template: the contents one after another, one per line.
std::string render_raw(const std::vector<ChatMessage>& messages) {
    std::string out;
    for (size_t i = 0; i < messages.size(); ++i) {
        if (i > 0) out += "\n";
        out += messages[i].content;
    }
    return out;
}

}  // namespace

ChatFormat detect_chat_format(const std::string& template_text) {
    if (contains(template_text, "<|im_start|>")) return ChatFormat::ChatML;
    if (contains(template_text, "<start_of_turn>")) return ChatFormat::Gemma;
    if (contains(template_text, "<|user|>") && contains(template_text, "<|end|>")) return ChatFormat::Phi3;
    if (contains(template_text, "<|start_header_id|>")) return ChatFormat::Llama3;
    if (contains(template_text, "[INST]")) {
        return contains(template_text, "<<SYS>>") ? ChatFormat::Llama2 : ChatFormat::Mistral;
    }
    return ChatFormat::Raw;
}

std::string chat_format_name(ChatFormat f) {
    switch (f) {
    case ChatFormat::Raw: return "raw";
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Mistral: return "mistral";
    case ChatFormat::Gemma: return "gemma";
    case ChatFormat::Phi3: return "phi3";
    }
    return "raw";
}

ChatFormat parse_chat_format(const std::string& name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    for (ChatFormat f : {ChatFormat::Raw, ChatFormat::ChatML, ChatFormat::Llama2, ChatFormat::Llama3,
                         ChatFormat::Mistral, ChatFormat::Gemma, ChatFormat::Phi3}) {
        if (lower == chat_format_name(f)) return f;
    }
    throw InputError("chat format '" + name + "': unknown; allowed: raw, chatml, llama2, llama3, mistral, gemma, phi3");
}

std::string apply_chat_template(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                const std::string& template_text) {
    switch (f) {
    case ChatFormat::ChatML: return render_chatml(messages, add_generation_prompt, template_text);
    case ChatFormat::Llama3: return render_llama3(messages, add_generation_prompt);
    case ChatFormat::Llama2: return render_llama2(messages);
    case ChatFormat::Mistral: return render_mistral(messages);
    case ChatFormat::Gemma: return render_gemma(messages, add_generation_prompt);
    case ChatFormat::Phi3: return render_phi3(messages, add_generation_prompt);
    case ChatFormat::Raw: return render_raw(messages);
    }
    return render_raw(messages);
}

}  // namespace snapkv
