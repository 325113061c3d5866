// tokenizer.json reading: files written here from the GGUF vocabularies (stories260K as a
// SentencePiece-style BPE file, SmolLM2 as a byte-level one) must tokenize exactly like the GGUF
// (and so like llama.cpp / HF); small files check pre-tokenizer detection and every error kind.
#include <algorithm>
#include <functional>

#include "core/common/errors.h"
#include "core/io/tokenizer_json.h"
#include "core/tokenizer/unicode_util.h"
#include "tests/common/hf_format.h"
#include "tokenizer_test_util.h"

using namespace snapkv;
using namespace snapkv::test;
using nlohmann::json;

namespace {

// A tiny byte-level file with the given pre_tokenizer and post_processor.
json tiny_byte_level(const json& pre_tokenizer, const json& post_processor = nullptr) {
    json tj = json::parse(R"({
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3}, "merges": ["a b"]}
    })");
    tj["added_tokens"] = json::array({added_token(4, "<|begin_of_text|>"), added_token(5, "<|endoftext|>")});
    tj["pre_tokenizer"] = pre_tokenizer;
    tj["post_processor"] = post_processor;
    return tj;
}

json split_then_byte_level(const std::string& regex) {
    json pre = json::parse(R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})");
    pre["pretokenizers"][0]["pattern"] = {{"Regex", regex}};
    return pre;
}

VocabData read_tiny(const json& tj, const std::string& name) {
    return read_tokenizer_json(write_file(name, tj.dump()), "");
}

FileError::Kind error_kind(const std::function<void()>& f) {
    try {
        f();
    } catch (const FileError& e) {
        return e.kind();
    }
    FAIL("expected a FileError");
    return FileError::Kind::Io;
}

}  // namespace

TEST_CASE("a SentencePiece-style tokenizer.json tokenizes exactly like the stories260K GGUF", "[tokenizer]") {
    const VocabData& gguf = stories_vocab();
    const std::string tok_path = write_file("spm_tokenizer.json", spm_tokenizer_json(gguf).dump());
    const std::string cfg_path = write_file(
        "spm_tokenizer_config.json",
        R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "add_bos_token": true,
            "add_eos_token": false, "chat_template": "{{ '[INST] <<SYS>>' }}"})");
    const VocabData v = read_tokenizer_json(tok_path, cfg_path);
    CHECK(v.model == "llama");
    CHECK(v.tokens == gguf.tokens);
    CHECK(v.bos_id == 1);
    CHECK(v.eos_id == 2);
    CHECK(v.unk_id == 0);
    CHECK(v.add_bos);
    CHECK_FALSE(v.add_eos);
    CHECK(v.add_space_prefix);
    CHECK(v.types[3] == 6);  // <0x00> is a byte token
    CHECK(v.types[1] == 3);  // <s> is control
    CHECK(v.types[0] == 2);  // <unk> is unknown
    CHECK(v.chat_template == "{{ '[INST] <<SYS>>' }}");

    const auto from_json = Tokenizer::create(v);
    const Tokenizer& from_gguf = stories_tokenizer();
    const json ref = read_json(data_path("reference/llamacpp-reference.json"));
    std::vector<std::string> texts;
    for (const auto& c : ref["tokenizer_edge_cases"]["cases"]) texts.push_back(c["text"]);
    for (const auto& p : ref["prompts"]) texts.push_back(p["prompt"]);
    texts.push_back(big_document(20000));
    for (const std::string& text : texts) {
        INFO("text: " << json(text).dump().substr(0, 80));
        CHECK(from_json->encode(text) == from_gguf.encode(text));
        CHECK(from_json->encode(text, false, false) == from_gguf.encode(text, false, false));
    }
}

TEST_CASE("a byte-level tokenizer.json tokenizes exactly like the SmolLM2 GGUF", "[tokenizer]") {
    const VocabData& gguf = smollm2_vocab();
    const std::string tok_path = write_file("bpe_tokenizer.json", byte_level_tokenizer_json(gguf).dump());
    json cfg = json::parse(R"({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                               "pad_token": "<|im_end|>", "unk_token": "<|endoftext|>"})");
    cfg["chat_template"] = gguf.chat_template;
    const std::string cfg_path = write_file("bpe_tokenizer_config.json", cfg.dump());
    const VocabData v = read_tokenizer_json(tok_path, cfg_path);
    CHECK(v.model == "gpt2");
    CHECK(v.pre == "smollm");
    CHECK(v.tokens == gguf.tokens);
    CHECK(v.merges == gguf.merges);
    CHECK(v.bos_id == 1);
    CHECK(v.eos_id == 2);
    CHECK(v.pad_id == 2);
    CHECK_FALSE(v.add_bos);
    CHECK(std::find(v.eog_ids.begin(), v.eog_ids.end(), 0) != v.eog_ids.end());  // <|endoftext|>
    CHECK(v.chat_template == gguf.chat_template);

    const auto from_json = Tokenizer::create(v);
    const json ref = read_json(data_path("tokenizer/smollm2_reference.json"));
    for (const auto& c : ref["variants"]["smollm"]["cases"]) {
        const std::string text = c["text"];
        INFO("text: " << json(text).dump());
        CHECK(from_json->encode(text) == ids_of(c["ids"]));
    }
    const std::string doc = big_document(20000);
    CHECK(from_json->encode(doc) == smollm2_tokenizer().encode(doc));
}

TEST_CASE("the byte-level pre-tokenizer name is recognised from tokenizer.json", "[tokenizer]") {
    const std::string llama3 =
        R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
    const std::string qwen2 =
        R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
    CHECK(read_tiny(tiny_byte_level({{"type", "ByteLevel"}, {"use_regex", true}}), "gpt2.json").pre == "gpt-2");
    CHECK(read_tiny(tiny_byte_level(split_then_byte_level(llama3)), "llama3.json").pre == "llama-bpe");
    CHECK(read_tiny(tiny_byte_level(split_then_byte_level(qwen2)), "qwen2.json").pre == "qwen2");

    // Llama 3 style: BOS comes from the post_processor template when there is no config.
    const json post = json::parse(R"({"type": "Sequence", "processors": [
        {"type": "ByteLevel"},
        {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]}]})");
    const VocabData v = read_tiny(tiny_byte_level(split_then_byte_level(llama3), post), "llama3_bos.json");
    CHECK(v.add_bos);
    CHECK(v.bos_id == 4);
    CHECK(v.eos_id == 5);  // <|endoftext|> by default
    const auto tok = Tokenizer::create(v);
    CHECK(tok->kind() == "byte-level BPE (llama3)");
    CHECK(tok->encode("ab a") == std::vector<int32_t>{4, 2, 3, 0});
}

TEST_CASE("tokenizer.json errors name the file, the key and the problem", "[tokenizer]") {
    SECTION("a file that does not exist") {
        const std::string missing = (scratch_dir() / "no_such_tokenizer.json").string();
        CHECK(error_kind([&] { read_tokenizer_json(missing, ""); }) == FileError::Kind::Io);
        CHECK_THROWS_WITH(read_tokenizer_json(missing, ""), Catch::Matchers::Contains(missing));
    }
    SECTION("malformed JSON") {
        const std::string path = write_file("truncated.json", R"({"model": {"type": "BPE", "vocab": {"a": 0)");
        CHECK(error_kind([&] { read_tokenizer_json(path, ""); }) == FileError::Kind::BadJson);
        CHECK_THROWS_WITH(read_tokenizer_json(path, ""),
                          Catch::Matchers::Contains(path) && Catch::Matchers::Contains("not valid JSON"));
    }
    SECTION("no model") {
        const std::string path = write_file("no_model.json", R"({"added_tokens": []})");
        CHECK(error_kind([&] { read_tokenizer_json(path, ""); }) == FileError::Kind::BadJson);
        CHECK_THROWS_WITH(read_tokenizer_json(path, ""),
                          Catch::Matchers::Contains("key 'model'") && Catch::Matchers::Contains("missing"));
    }
    SECTION("a vocab that is not an object") {
        json tj = tiny_byte_level({{"type", "ByteLevel"}});
        tj["model"]["vocab"] = json::array({"a", "b"});
        CHECK_THROWS_WITH(
            read_tiny(tj, "vocab_array.json"),
            Catch::Matchers::Contains("'model.vocab'") && Catch::Matchers::Contains("expected an object, found array"));
    }
    SECTION("a merge that is neither spelling") {
        json tj = tiny_byte_level({{"type", "ByteLevel"}});
        tj["model"]["merges"] = json::array({42});
        CHECK_THROWS_WITH(read_tiny(tj, "merge_number.json"), Catch::Matchers::Contains("'model.merges[0]'"));
    }
    SECTION("an unknown model type") {
        json tj = tiny_byte_level({{"type", "ByteLevel"}});
        tj["model"]["type"] = "Unigram";
        CHECK(error_kind([&] { read_tiny(tj, "unigram.json"); }) == FileError::Kind::Unsupported);
        CHECK_THROWS_WITH(read_tiny(tj, "unigram.json"), Catch::Matchers::Contains("'Unigram'"));
    }
    SECTION("a BPE that is neither byte-level nor SentencePiece-style") {
        json tj = tiny_byte_level({{"type", "Whitespace"}});
        tj["decoder"] = nullptr;
        CHECK(error_kind([&] { read_tiny(tj, "wordlevel.json"); }) == FileError::Kind::Unsupported);
    }
    SECTION("a config naming a BOS the vocab lacks") {
        const std::string tok = write_file("ok.json", tiny_byte_level({{"type", "ByteLevel"}}).dump());
        const std::string cfg = write_file("bad_bos_config.json", R"({"bos_token": "<s>"})");
        CHECK(error_kind([&] { read_tokenizer_json(tok, cfg); }) == FileError::Kind::BadValue);
        CHECK_THROWS_WITH(read_tokenizer_json(tok, cfg),
                          Catch::Matchers::Contains("bos_token") && Catch::Matchers::Contains("'<s>'"));
    }
    SECTION("a malformed config") {
        const std::string tok = write_file("ok.json", tiny_byte_level({{"type", "ByteLevel"}}).dump());
        const std::string cfg = write_file("bad_config.json", R"({"add_bos_token": "yes"})");
        CHECK(error_kind([&] { read_tokenizer_json(tok, cfg); }) == FileError::Kind::BadJson);
        CHECK_THROWS_WITH(read_tokenizer_json(tok, cfg), Catch::Matchers::Contains("tokenizer_config.json") &&
                                                             Catch::Matchers::Contains("'add_bos_token'"));
    }
    SECTION("a missing config is fine") {
        const std::string tok = write_file("ok.json", tiny_byte_level({{"type", "ByteLevel"}}).dump());
        CHECK(read_tokenizer_json(tok, (scratch_dir() / "none.json").string()).model == "gpt2");
    }
}

TEST_CASE("tokenizer.json parts we cannot reproduce are refused by name, never skipped", "[tokenizer]") {
    // Wrong tokens make every later number wrong. An unknown normalizer or decoder, or a Split
    // regex that does not compile, was once skipped: a bogus normalizer turned a 5-token prompt
    // into 7 tokens with exit code 0.
    struct Case {
        const char* what;
        std::function<void(json&)> edit;
        FileError::Kind kind;
        std::vector<std::string> pieces;
    };
    const std::vector<Case> cases = {
        {"an unknown normalizer",
         [](json& tj) {
             tj["normalizer"] = {{"type", "Bogus"}};
         },
         FileError::Kind::Unsupported,
         {"key 'normalizer'", "normalizer type 'Bogus' is not supported"}},
        {"an unknown normalizer inside a Sequence",
         [](json& tj) {
             tj["normalizer"] = json::parse(
                 R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]})");
         },
         FileError::Kind::Unsupported,
         {"key 'normalizer.normalizers[1]'", "'Lowercase'"}},
        {"a Prepend of something other than the SentencePiece space",
         [](json& tj) {
             tj["normalizer"] = {{"type", "Prepend"}, {"prepend", "x"}};
         },
         FileError::Kind::Unsupported,
         {"key 'normalizer'", "Prepend of \"x\""}},
        {"a normalizer that is not an object",
         [](json& tj) { tj["normalizer"] = "NFC"; },
         FileError::Kind::BadJson,
         {"key 'normalizer'", "expected an object or null, found string"}},
        {"an unknown decoder",
         [](json& tj) {
             tj["decoder"] = {{"type", "WordPiece"}};
         },
         FileError::Kind::Unsupported,
         {"key 'decoder'", "decoder type 'WordPiece' is not supported"}},
        {"an unknown pre-tokenizer",
         [](json& tj) {
             tj["pre_tokenizer"] = {{"type", "Whitespace"}};
         },
         FileError::Kind::Unsupported,
         {"key 'pre_tokenizer'", "pre-tokenizer type 'Whitespace' is not supported"}},
        {"a Split regex that does not compile",
         [](json& tj) { tj["pre_tokenizer"] = split_then_byte_level("(?i:'s|\\p{L}+"); },
         FileError::Kind::BadValue,
         {"key 'pre_tokenizer.pretokenizers[0].pattern.Regex'", "does not compile (at offset"}},
        {"a Split regex that compiles but is neither Llama 3's nor Qwen2's",
         [](json& tj) { tj["pre_tokenizer"] = split_then_byte_level("\\s+"); },
         FileError::Kind::Unsupported,
         {"key 'pre_tokenizer'", "Split + ByteLevel cannot be reproduced"}},
        {"a Split without a pattern",
         [](json& tj) {
             tj["pre_tokenizer"] = {{"type", "Split"}, {"behavior", "Isolated"}};
         },
         FileError::Kind::BadJson,
         {"key 'pre_tokenizer.pattern'", "expected {\"Regex\": string}"}},
        {"an id that would leave millions of holes",
         [](json& tj) { tj["model"]["vocab"]["far"] = 16000000; },
         FileError::Kind::BadValue,
         {"key 'model.vocab': the highest id is 16000000 but there are 7 tokens", "allowed at most 65536"}},
        {"a type name of 5000 bytes is quoted cut",
         [](json& tj) {
             tj["decoder"] = {{"type", std::string(5000, 'd')}};
         },
         FileError::Kind::Unsupported,
         {"decoder type 'ddd", "... (5000 bytes)'"}},
    };
    for (const Case& c : cases) {
        SECTION(c.what) {
            json tj = tiny_byte_level({{"type", "ByteLevel"}});
            c.edit(tj);
            const std::string path = write_file("refused.json", tj.dump());
            CHECK(error_kind([&] { read_tokenizer_json(path, ""); }) == c.kind);
            try {
                read_tokenizer_json(path, "");
            } catch (const FileError& e) {
                const std::string msg = e.what();
                INFO("message: " << msg);
                CHECK(msg.size() < 600);
                for (const std::string& p : c.pieces) CHECK_THAT(msg, Catch::Matchers::Contains(p));
            }
        }
    }
    SECTION("NFC (Qwen2's normalizer) is accepted: llama.cpp's converter drops it too") {
        json tj = tiny_byte_level({{"type", "ByteLevel"}, {"use_regex", true}});
        tj["normalizer"] = {{"type", "NFC"}};
        CHECK(read_tiny(tj, "nfc.json").pre == "gpt-2");
    }
}
