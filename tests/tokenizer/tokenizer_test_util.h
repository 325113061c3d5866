// Helpers shared by the tokenizer tests: vocab loading through ModelFile (cached per process),
// the SmolLM2 model path that fails loudly when setup has not fetched it, JSON fixtures.
// Not a test itself; holds no expected values.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/io/model_file.h"
#include "core/tokenizer/tokenizer.h"

namespace snapkv::test {

inline std::string data_path(const std::string& rel) { return std::string(SNAPKV_TEST_DATA) + "/" + rel; }

inline nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

// VocabData of a model file, opened once per process with ModelFile::open.
inline const VocabData& vocab_of(const std::string& path) {
    static std::map<std::string, VocabData> cache;
    auto it = cache.find(path);
    if (it == cache.end()) it = cache.emplace(path, ModelFile::open(path)->vocab()).first;
    return it->second;
}

inline const VocabData& stories_vocab() { return vocab_of(data_path("stories260K.gguf")); }

// The SmolLM2 GGUF that the setup step downloads. Missing -> the test fails and says why.
inline std::string smollm2_path() {
    const std::string path = std::string(SNAPKV_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (!std::filesystem::is_regular_file(path)) {
        FAIL("SmolLM2 model not found at " << path << ": run the setup step (it fetches models/) before the tests");
    }
    return path;
}

inline const VocabData& smollm2_vocab() { return vocab_of(smollm2_path()); }

// Gemma 3 270M (datasets/fetch_model.sh; SNAPKV_GEMMA3 overrides). Missing -> fails and says why.
inline std::string gemma3_path() {
    const char* env = std::getenv("SNAPKV_GEMMA3");
    const std::string path = env ? env : std::string(SNAPKV_MODELS_DIR) + "/gemma-3-270m-q4_k_m.gguf";
    if (!std::filesystem::is_regular_file(path))
        FAIL("Gemma 3 270M not found at " << path << ": run the setup step (datasets/fetch_model.sh) first");
    return path;
}

// Tokenizers built once per process (construction of the 49K-token one takes a few ms).
inline const Tokenizer& stories_tokenizer() {
    static const std::unique_ptr<Tokenizer> tok = Tokenizer::create(stories_vocab());
    return *tok;
}

inline const Tokenizer& smollm2_tokenizer() {
    static std::unique_ptr<Tokenizer> tok;
    if (!tok) tok = Tokenizer::create(smollm2_vocab());
    return *tok;
}

// Matches an exception whose what() contains every one of the given parts; use with
// CHECK_THROWS_MATCHES(expr, FileError, WhatContains({"'bert'", "supported"})).
class WhatContains : public Catch::MatcherBase<std::exception> {
public:
    explicit WhatContains(std::vector<std::string> parts) : m_parts(std::move(parts)) {}
    bool match(const std::exception& e) const override {
        const std::string what = e.what();
        for (const std::string& p : m_parts) {
            if (what.find(p) == std::string::npos) return false;
        }
        return true;
    }
    std::string describe() const override {
        std::string d = "message contains";
        for (const std::string& p : m_parts) d += " \"" + p + "\"";
        return d;
    }

private:
    std::vector<std::string> m_parts;
};

inline std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

// A scratch folder unique to this process under the system temp dir, removed at exit.
inline std::filesystem::path scratch_dir() {
    struct Dir {
        std::filesystem::path path;
        Dir() : path(std::filesystem::temp_directory_path() / ("snapkv_tokenizer_test_" + std::to_string(::getpid()))) {
            std::filesystem::create_directories(path);
        }
        ~Dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const Dir dir;
    return dir.path;
}

inline std::string write_file(const std::string& name, const std::string& text) {
    const std::string path = (scratch_dir() / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// A document of at least `bytes` bytes: the perplexity text plus numbers, code, emoji and CJK.
inline std::string big_document(size_t bytes) {
    std::ifstream in(data_path("reference/ppl-text.txt"));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string prose = ss.str();
    std::string doc;
    while (doc.size() < bytes) {
        doc += prose;
        doc += "\n12345 3.14 def f(x):\n    return x**2  # sq \xF0\x9F\x99\x82 \xE6\x97\xA5\xE6\x9C\xAC\n";
    }
    return doc;
}

}  // namespace snapkv::test
