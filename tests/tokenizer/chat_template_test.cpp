// Chat templates against jinja2 renders of the models' real templates
// (tests/data/tokenizer/chat_reference.json, made by make_chat_reference.py), format detection
// on SmolLM2's template as its GGUF stores it, names and errors. No tokenization here.
#include "core/tokenizer/chat_template.h"
#include "core/common/errors.h"
#include "tokenizer_test_util.h"

using namespace snapkv;
using namespace snapkv::test;

TEST_CASE("rendered chats match the models' own Jinja templates", "[chat]") {
    const nlohmann::json ref = read_json(data_path("tokenizer/chat_reference.json"));
    REQUIRE(ref["cases"].size() >= 15);
    for (const auto& c : ref["cases"]) {
        const std::string tmpl = c["template"];
        std::vector<ChatMessage> messages;
        for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
        const ChatFormat format = parse_chat_format(c["format"].get<std::string>());
        INFO(c["model"].get<std::string>() << " " << c["messages"].dump());
        CHECK(detect_chat_format(tmpl) == format);
        // Our contract leaves the leading BOS to the tokenizer; the template writes it as text.
        std::string expected = c["rendered"];
        const std::string bos = c["bos_token"];
        if (format != ChatFormat::ChatML && expected.compare(0, bos.size(), bos) == 0) {
            expected.erase(0, bos.size());
        }
        CHECK(apply_chat_template(format, messages, c["add_generation_prompt"].get<bool>(), tmpl) == expected);
    }
}

TEST_CASE("SmolLM2's GGUF template is ChatML with its default system prompt", "[chat]") {
    const std::string& tmpl = smollm2_vocab().chat_template;
    REQUIRE_FALSE(tmpl.empty());
    CHECK(detect_chat_format(tmpl) == ChatFormat::ChatML);
    CHECK(apply_chat_template(ChatFormat::ChatML, {{"user", "Hi"}}, true, tmpl) ==
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
          "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    // Without the template text there is no default system prompt.
    CHECK(apply_chat_template(ChatFormat::ChatML, {{"user", "Hi"}}, false) == "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("a rendered ChatML prompt tokenizes its markers as control tokens", "[chat]") {
    const Tokenizer& tok = smollm2_tokenizer();
    const std::string text = apply_chat_template(ChatFormat::ChatML, {{"user", "Hi"}}, true,
                                                 smollm2_vocab().chat_template);
    const std::vector<int32_t> ids = tok.encode(text);
    CHECK(std::count(ids.begin(), ids.end(), 1) == 3);  // <|im_start|> x3
    CHECK(std::count(ids.begin(), ids.end(), 2) == 2);  // <|im_end|> x2
    CHECK(tok.decode(ids, true) == text);
}

TEST_CASE("chat format detection falls back to raw", "[chat]") {
    CHECK(detect_chat_format("") == ChatFormat::Raw);
    CHECK(detect_chat_format("{{ messages[0]['content'] }}") == ChatFormat::Raw);
    CHECK(detect_chat_format("{{ '[INST] ' + x + ' [/INST]' }}") == ChatFormat::Mistral);
    CHECK(detect_chat_format("<<SYS>> [INST]") == ChatFormat::Llama2);
}

TEST_CASE("raw and Mistral-with-system renders follow our documented choices", "[chat]") {
    const std::vector<ChatMessage> msgs = {{"system", "Be brief."}, {"user", "Hi"}};
    CHECK(apply_chat_template(ChatFormat::Raw, msgs, true) == "Be brief.\nHi");
    // Mistral v0.1 has no system role: it goes in front of the first user message.
    CHECK(apply_chat_template(ChatFormat::Mistral, msgs, true) == "[INST] Be brief.\n\nHi [/INST]");
}

TEST_CASE("chat format names round-trip and unknown names are refused", "[chat]") {
    for (ChatFormat f :
         {ChatFormat::Raw, ChatFormat::ChatML, ChatFormat::Llama2, ChatFormat::Llama3, ChatFormat::Mistral}) {
        CHECK(parse_chat_format(chat_format_name(f)) == f);
    }
    CHECK(parse_chat_format("ChatML") == ChatFormat::ChatML);
    CHECK_THROWS_MATCHES(parse_chat_format("vicuna"), InputError,
                         WhatContains({"'vicuna'", "raw, chatml, llama2, llama3, mistral"}));
}

TEST_CASE("Llama 2 and Mistral refuse turns that do not alternate", "[chat]") {
    const std::vector<ChatMessage> msgs = {{"user", "a"}, {"user", "b"}};
    CHECK_THROWS_MATCHES(apply_chat_template(ChatFormat::Llama2, msgs, true), InputError,
                         WhatContains({"message 1", "'assistant'"}));
    CHECK_THROWS_AS(apply_chat_template(ChatFormat::Mistral, msgs, true), InputError);
}
