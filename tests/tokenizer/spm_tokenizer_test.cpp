// SentencePiece-style BPE against llama.cpp itself: every prompt and edge case that llama-tokenize
// produced for stories260K (tests/data/reference/llamacpp-reference.json), ids with and without
// BOS and pieces; then round trips, decoding rules, errors and speed. No byte-level BPE here.
#include <chrono>

#include "core/common/errors.h"
#include "tokenizer_test_util.h"

using namespace snapkv;
using namespace snapkv::test;

namespace {

const nlohmann::json& llamacpp_reference() {
    static const nlohmann::json ref = read_json(data_path("reference/llamacpp-reference.json"));
    return ref;
}

}  // namespace

TEST_CASE("stories260K vocab loads as SentencePiece BPE with llama.cpp's defaults", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    CHECK(tok.kind() == "SentencePiece BPE");
    CHECK(tok.n_vocab() == 512);
    CHECK(tok.bos_id() == 1);
    CHECK(tok.eos_id() == 2);
    CHECK(tok.add_bos());
    CHECK(tok.is_eog(2));
    CHECK_FALSE(tok.is_eog(1));
    CHECK(tok.is_control(1));
    CHECK_FALSE(tok.is_control(410));
    CHECK(tok.token_text(410) == "\xE2\x96\x81");  // "▁"
}

TEST_CASE("stories260K prompts tokenize exactly as llama.cpp's llama-tokenize", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    for (const auto& p : llamacpp_reference()["prompts"]) {
        const std::string prompt = p["prompt"];
        INFO("prompt: '" << prompt << "'");
        CHECK(tok.encode(prompt) == ids_of(p["token_ids"]));
    }
}

TEST_CASE("stories260K edge cases match llama.cpp with and without BOS, pieces included", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    const auto& cases = llamacpp_reference()["tokenizer_edge_cases"]["cases"];
    REQUIRE(cases.size() >= 11);
    for (const auto& c : cases) {
        const std::string text = c["text"];
        INFO("text: " << nlohmann::json(text).dump());
        SECTION("case " + nlohmann::json(text).dump()) {
            const std::vector<int32_t> with_bos = tok.encode(text, true, true);
            CHECK(with_bos == ids_of(c["ids_with_bos"]));
            CHECK(tok.encode(text, false, true) == ids_of(c["ids_no_bos"]));
            std::vector<std::string> pieces;
            for (int32_t id : with_bos) pieces.push_back(tok.token_text(id));
            CHECK(pieces == c["pieces"].get<std::vector<std::string>>());
            if (c.contains("ids_with_bos_no_parse_special")) {
                CHECK(tok.encode(text, true, false) == ids_of(c["ids_with_bos_no_parse_special"]));
            }
        }
    }
}

TEST_CASE("SentencePiece decode undoes encode, leading space and byte fallback included", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    const std::string text = GENERATE(as<std::string>{}, "Hello world", "  leading spaces", "tabs\tand\nnewlines",
                                      "UTF-8: caf\xC3\xA9, na\xC3\xAFve, \xE6\x97\xA5\xE6\x9C\xAC",
                                      "emoji \xF0\x9F\x99\x82\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "numbers 12345 3.14",
                                      " ", "\n", "trailing  ", "def f(x):\n    return x**2  # sq");
    INFO("text: " << nlohmann::json(text).dump());
    CHECK(tok.decode(tok.encode(text)) == text);
    CHECK(tok.decode(tok.encode(text, false)) == text);
    // Without stripping, the space encode added is visible.
    CHECK(tok.decode(tok.encode(text, false), false, false) == " " + text);
}

TEST_CASE("SentencePiece pieces: byte tokens become bytes, control tokens render on request", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    CHECK(tok.token_to_piece(13) == "\n");    // <0x0A>
    CHECK(tok.token_to_piece(346) == " He");  // ▁He
    CHECK(tok.token_to_piece(1, true) == "<s>");
    CHECK(tok.token_to_piece(1, false).empty());
    // After a special token encode starts a new run with its own space; decode removes it too.
    const std::vector<int32_t> ids = tok.encode("<s>Hello</s>");
    CHECK(tok.decode(ids) == "Hello");
    CHECK(tok.decode(ids, true) == "<s><s>Hello</s>");
}

TEST_CASE("SentencePiece tokenizer rejects ids outside the vocab", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    CHECK_THROWS_MATCHES(tok.token_text(512), InputError, WhatContains({"token id 512", "0..511"}));
    CHECK_THROWS_AS(tok.decode({1, -1}), InputError);
    CHECK_THROWS_AS(tok.token_to_piece(9999), InputError);
}

TEST_CASE("SentencePiece encodes a 100 KB document well under a second", "[tokenizer]") {
    const Tokenizer& tok = stories_tokenizer();
    const std::string doc = big_document(100 * 1024);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = tok.encode(doc);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    WARN("stories260K: " << doc.size() << " bytes -> " << ids.size() << " tokens in " << s * 1000 << " ms");
    CHECK(s < 0.5);
    CHECK(tok.decode(ids) == doc);
}
