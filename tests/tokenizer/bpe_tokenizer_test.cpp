// Byte-level BPE on SmolLM2's real vocab against Hugging Face `tokenizers`
// (tests/data/tokenizer/smollm2_reference.json, made by make_reference.py): the smollm, gpt2,
// llama3 and qwen2 pre-tokenizers, the raw regex pieces, round trips, special tokens, speed.
// Needs models/SmolLM2-135M-Instruct.Q4_1.gguf from setup; fails (not skips) without it.
#include <algorithm>
#include <chrono>

#include "core/common/errors.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "tokenizer_test_util.h"

using namespace snapkv;
using namespace snapkv::test;

namespace {

const nlohmann::json& hf_reference() {
    static const nlohmann::json ref = read_json(data_path("tokenizer/smollm2_reference.json"));
    return ref;
}

}  // namespace

TEST_CASE("SmolLM2 vocab loads as byte-level BPE with the smollm pre-tokenizer", "[tokenizer]") {
    const Tokenizer& tok = smollm2_tokenizer();
    CHECK(tok.kind() == "byte-level BPE (smollm)");
    CHECK(tok.n_vocab() == hf_reference()["n_vocab"].get<int32_t>());
    CHECK_FALSE(tok.add_bos());  // SmolLM2: add_bos_token = false
    CHECK(tok.bos_id() == 1);
    CHECK(tok.eos_id() == 2);
    CHECK(tok.is_eog(2));  // <|im_end|>
    CHECK(tok.is_eog(0));  // <|endoftext|>
    CHECK(tok.is_control(1));
    CHECK(tok.token_text(905) == "\xC4\xA0world");  // "Ġworld"
}

TEST_CASE("SmolLM2 ids match Hugging Face tokenizers for every pre-tokenizer variant", "[tokenizer]") {
    const VocabData& base = smollm2_vocab();
    for (const auto& [name, variant] : hf_reference()["variants"].items()) {
        SECTION("variant " + name) {
            VocabData vocab = base;
            vocab.pre = variant["pre"].get<std::string>();
            const auto tok = Tokenizer::create(vocab);
            for (const auto& c : variant["cases"]) {
                const std::string text = c["text"];
                INFO("pre " << vocab.pre << ", text " << nlohmann::json(text).dump());
                const std::vector<int32_t> ids = tok->encode(text);
                CHECK(ids == ids_of(c["ids"]));
                CHECK(tok->decode(ids, true) == c["decoded"].get<std::string>());
            }
        }
    }
}

TEST_CASE("llama3 and qwen2 regexes cut text into the same pieces as Hugging Face's Split", "[tokenizer]") {
    for (const auto& [name, cases] : hf_reference()["pre_token_pieces"].items()) {
        const RegexSplitter splitter(pre_tokenizer_spec(name).regexes);
        for (const auto& c : cases) {
            const std::string text = c["text"];
            INFO(name << ": " << nlohmann::json(text).dump());
            std::vector<std::string> pieces;
            for (std::string_view p : splitter.split(text)) pieces.emplace_back(p);
            CHECK(pieces == c["pieces"].get<std::vector<std::string>>());
        }
    }
}

TEST_CASE("smollm pre-tokenizer splits digits first, then the GPT-2 pattern inside each piece", "[tokenizer]") {
    const RegexSplitter splitter(pre_tokenizer_spec("smollm").regexes);
    std::vector<std::string> pieces;
    for (std::string_view p : splitter.split("ab12 x")) pieces.emplace_back(p);
    CHECK(pieces == std::vector<std::string>{"ab", "1", "2", " x"});
    // A lookahead cannot see past its piece: "a " ends a piece, so its space stands alone.
    pieces.clear();
    for (std::string_view p : splitter.split("a 1")) pieces.emplace_back(p);
    CHECK(pieces == std::vector<std::string>{"a", " ", "1"});
}

TEST_CASE("byte-level decode undoes encode on spaces, tabs, digits, emoji, CJK and code", "[tokenizer]") {
    const Tokenizer& tok = smollm2_tokenizer();
    const std::string text = GENERATE(as<std::string>{}, "multiple   spaces   here  ", "tabs\tand\nnewlines\r\n\n",
                                      "12345 3.14", "\xF0\x9F\x99\x82\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
                                      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87",
                                      "def f(x):\n    return x**2  # sq", " ", "",
                                      "invalid \xC3( utf-8 \x80 end \xE6\x97");
    INFO("text: " << nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    CHECK(tok.decode(tok.encode(text)) == text);
}

TEST_CASE("bytes the byte-level vocab has no token for are skipped, as llama.cpp does", "[tokenizer]") {
    // 0xFE / 0xFF never occur in UTF-8, so SmolLM2's vocab has no "Ã¾" / "Ã¿" symbol.
    const Tokenizer& tok = smollm2_tokenizer();
    CHECK(tok.encode("\xFF\xFE").empty());
    CHECK(tok.decode(tok.encode("a\xFF"
                                "b")) == "ab");
}

TEST_CASE("special tokens are parsed out of the text only when asked", "[tokenizer]") {
    const Tokenizer& tok = smollm2_tokenizer();
    const std::string text = "<|im_start|>user\nHi<|im_end|>";
    const std::vector<int32_t> ids = tok.encode(text);
    REQUIRE(ids.size() >= 3);
    CHECK(ids.front() == 1);  // <|im_start|>
    CHECK(ids.back() == 2);   // <|im_end|>
    CHECK(tok.decode(ids, true) == text);
    CHECK(tok.decode(ids, false) == "user\nHi");

    const std::vector<int32_t> plain = tok.encode(text, true, false);
    CHECK(std::find(plain.begin(), plain.end(), 1) == plain.end());
    CHECK(std::find(plain.begin(), plain.end(), 2) == plain.end());
    CHECK(tok.decode(plain) == text);
}

TEST_CASE("unknown vocab model or pre-tokenizer is refused with its name", "[tokenizer]") {
    VocabData v;
    v.tokens = {"a", "b"};
    v.model = "bert";
    CHECK_THROWS_MATCHES(Tokenizer::create(v), FileError, WhatContains({"'bert'"}));
    v.model = "gpt2";
    v.pre = "no-such-pre";
    try {
        Tokenizer::create(v);
        FAIL("expected FileError");
    } catch (const FileError& e) {
        CHECK(e.kind() == FileError::Kind::Unsupported);
        CHECK_THAT(e.what(), Catch::Matchers::Contains("'no-such-pre'") && Catch::Matchers::Contains("smollm"));
    }
}

TEST_CASE("inconsistent vocab data is refused with the item and the sizes", "[tokenizer]") {
    VocabData v;
    v.model = "gpt2";
    v.pre = "gpt2";
    v.tokens = {"a", "b", "ab"};
    v.merges = {"a b"};
    SECTION("scores of the wrong length") {
        v.scores = {0.0f};
        CHECK_THROWS_MATCHES(Tokenizer::create(v), FileError, WhatContains({"scores", "expected 0 or 3"}));
    }
    SECTION("a BOS id past the end") {
        v.bos_id = 7;
        CHECK_THROWS_MATCHES(Tokenizer::create(v), FileError, WhatContains({"bos_id 7", "0..2"}));
    }
    SECTION("a merge without a space") {
        v.merges = {"ab"};
        CHECK_THROWS_MATCHES(Tokenizer::create(v), FileError, WhatContains({"merge 0 'ab'"}));
    }
    SECTION("a tiny consistent vocab works") {
        const auto tok = Tokenizer::create(v);
        CHECK(tok->encode("ab") == std::vector<int32_t>{2});
        CHECK(tok->encode("ba") == std::vector<int32_t>{1, 0});
    }
}

TEST_CASE("byte-level BPE encodes a 100 KB document well under a second", "[tokenizer]") {
    const Tokenizer& tok = smollm2_tokenizer();
    const std::string doc = big_document(100 * 1024);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = tok.encode(doc);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    WARN("SmolLM2: " << doc.size() << " bytes -> " << ids.size() << " tokens in " << s * 1000 << " ms");
    CHECK(s < 0.5);
    CHECK(tok.decode(ids) == doc);
}
