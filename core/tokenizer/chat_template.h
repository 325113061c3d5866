// Chat templates: the handful of formats the supported models use, recognised from the model's
// Jinja template text (we do not interpret Jinja) and overridable by the user.
#pragma once

#include <string>
#include <vector>

namespace snapkv {

enum class ChatFormat { Raw, ChatML, Llama2, Llama3, Mistral, Gemma, Phi3 };

struct ChatMessage {
    std::string role;  // "system" | "user" | "assistant"
    std::string content;
};

// Guess the format from a template's text; Raw when empty or unrecognised.
ChatFormat detect_chat_format(const std::string& template_text);
// "raw", "chatml", "llama2", "llama3", "mistral", "gemma", "phi3"; parse throws InputError naming the
// allowed names.
std::string chat_format_name(ChatFormat f);
ChatFormat parse_chat_format(const std::string& name);

// Render messages as the model expects; add_generation_prompt appends the assistant header.
// BOS is NOT included (the tokenizer adds it per the vocab's add_bos); templates that need BOS
// text inside (Llama 2 between turns) include it as "<s>" which parse_special turns into BOS.
// The default system prompt of a template (SmolLM2's "You are a helpful AI assistant named SmolLM,
// trained by Hugging Face") is added when the template text has one and no system message is given.
// Gemma: a system message becomes the first user turn's prefix, as Gemma 3's template does (Gemma 2's
// refuses one). Phi-3 without a generation prompt ends with "<|endoftext|>", its eos_token.
std::string apply_chat_template(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                const std::string& template_text = "");

}  // namespace snapkv
