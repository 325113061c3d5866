// Gemma 3's 262,144-token SentencePiece vocabulary against llama.cpp's llama-tokenize on the
// strings of tests/data/reference/gemma3/tokenize.json (unicode, whitespace runs, code, numbers,
// special tokens), in its three modes: defaults (BOS, special tokens parsed), --no-bos and
// --no-parse-special. Needs models/gemma-3-270m-q4_k_m.gguf (the setup step fetches it).
#include "tests/tokenizer/tokenizer_test_util.h"

using namespace snapkv;
using namespace snapkv::test;

TEST_CASE("Gemma 3 tokenizes like llama.cpp's llama-tokenize", "[tokenizer][gemma3]") {
    const nlohmann::json ref = read_json(data_path("reference/gemma3/tokenize.json"));
    const auto tok = Tokenizer::create(vocab_of(gemma3_path()));
    REQUIRE(ref["strings"].size() >= 20);
    for (const auto& s : ref["strings"]) {
        const std::string text = s["text"].get<std::string>();
        INFO("string '" << s["name"].get<std::string>() << "'");
        CHECK(tok->encode(text, true, true) == s["ids"].get<std::vector<int32_t>>());
        CHECK(tok->encode(text, false, true) == s["ids_no_bos"].get<std::vector<int32_t>>());
        CHECK(tok->encode(text, true, false) == s["ids_no_parse_special"].get<std::vector<int32_t>>());
    }
}
