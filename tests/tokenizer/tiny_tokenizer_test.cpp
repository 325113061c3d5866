// The tokenizers and chat templates of the tiny models (tests/data/tiny) against transformers'
// fast tokenizer, which wrote the expected ids (make_tiny_models.py): a byte-level BPE with the
// Llama 3 and the Qwen2 split regex, and SentencePiece-style BPE with (Llama/Mistral/Phi-3) and
// without (Gemma) the leading space, each read from the GGUF and from tokenizer.json. The chat
// cases render the model's own template with our Jinja interpreter and compare the ids of the
// whole prompt (transformers tokenizes a rendered chat without adding special tokens, so the
// template's own BOS text is the only BOS).
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
    for (const std::string name : {"llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}) {
        const nlohmann::json ref = tiny::ref(name);
        for (const char* fmt : {"gguf", "hf"}) {
            const auto file = ModelFile::open(tiny::path(name, fmt));
            const VocabData& vocab = file->vocab();
            const auto tok = Tokenizer::create(vocab);
            REQUIRE_FALSE(vocab.chat_template.empty());
            int compared = 0;
            for (const auto& c : ref["chat_cases"]) {
                if (c.contains("error")) continue;  // the model's template refuses it (system turn)
                ChatRequest req;
                req.messages = nlohmann::ordered_json::parse(c["messages"].dump());
                if (vocab.bos_id >= 0) req.bos_token = tok->token_text(vocab.bos_id);
                if (vocab.eos_id >= 0) req.eos_token = tok->token_text(vocab.eos_id);
                INFO(name << " " << fmt << ": " << c["messages"].dump());
                const std::string text = render_chat_template(vocab.chat_template, req);
                CHECK(text == c["text"].get<std::string>());
                CHECK(tok->encode(text, false, true) == c["ids"].get<std::vector<int32_t>>());
                ++compared;
            }
            CHECK(compared >= 2);
        }
    }
}
