// The tokenizers and chat templates of the tiny models (tests/data/tiny) against transformers'
// fast tokenizer, which wrote the expected ids (make_tiny_models.py): a byte-level BPE with the
// Llama 3 and the Qwen2 split regex, and SentencePiece-style BPE with (Llama/Mistral/Phi-3) and
// without (Gemma) the leading space, each read from the GGUF and from tokenizer.json. The chat
// cases render with our template for the family and compare the ids of the whole prompt.
#include <string>
#include <vector>

#include "common/tiny_models.h"
#include "core/tokenizer/chat_template.h"
#include "tokenizer_test_util.h"

using namespace snapkv;
namespace tiny = snapkv::test::tiny;

TEST_CASE("tiny models tokenize like transformers' fast tokenizer in GGUF and HF form", "[tokenizer][arch]") {
    for (const std::string& name : tiny::names()) {
        const nlohmann::json ref = tiny::ref(name);
        for (const char* format : {"gguf", "hf"}) {
            const auto file = ModelFile::open(tiny::path(name, format));
            const auto tok = Tokenizer::create(file->vocab());
            for (const auto& c : ref["tokenizer_cases"]) {
                const std::string text = c["text"];
                INFO(name << " " << format << ": '" << text << "'");
                CHECK(tok->encode(text, true, true) == c["ids"].get<std::vector<int32_t>>());
            }
        }
    }
}

TEST_CASE("tiny models' chat prompts tokenize like transformers' apply_chat_template", "[tokenizer][chat][arch]") {
    const std::vector<std::pair<std::string, ChatFormat>> expected_format = {
        {"llama3", ChatFormat::Llama3}, {"mistral", ChatFormat::Mistral}, {"qwen2", ChatFormat::ChatML},
        {"qwen3", ChatFormat::ChatML},  {"gemma2", ChatFormat::Gemma},    {"gemma3", ChatFormat::Gemma},
        {"phi3", ChatFormat::Phi3}};
    for (const auto& [name, format] : expected_format) {
        const nlohmann::json ref = tiny::ref(name);
        for (const char* fmt : {"gguf", "hf"}) {
            const auto file = ModelFile::open(tiny::path(name, fmt));
            const VocabData& vocab = file->vocab();
            const auto tok = Tokenizer::create(vocab);
            REQUIRE(detect_chat_format(vocab.chat_template) == format);
            int compared = 0;
            for (const auto& c : ref["chat_cases"]) {
                if (c.contains("error")) continue;  // the model's template refuses it (system turn)
                std::vector<ChatMessage> messages;
                for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
                INFO(name << " " << fmt << ": " << c["messages"].dump());
                const std::string text = apply_chat_template(format, messages, true, vocab.chat_template);
                CHECK(tok->encode(text, true, true) == c["ids"].get<std::vector<int32_t>>());
                ++compared;
            }
            CHECK(compared >= 2);
        }
    }
}
