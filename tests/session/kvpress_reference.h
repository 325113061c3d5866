// What the kvpress reference tests share: the references' kept-set encoding (a hex bitmask over
// positions: character i covers positions 4i..4i+3, position 4i+j in bit j; the scripts'
// encoding) and reading a reference file next to SmolLM2, failing with where each is expected.
#pragma once

#include <cstdint>
#include <fstream>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/test_util.h"

namespace snapkv::test {

inline std::set<int64_t> from_hex(const std::string& hex) {
    std::set<int64_t> out;
    for (size_t i = 0; i < hex.size(); ++i) {
        const int v = hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10;
        for (int b = 0; b < 4; ++b)
            if (v & (1 << b)) out.insert(int64_t(i) * 4 + b);
    }
    return out;
}

// tests/data/<rel> parsed, after checking that SmolLM2 (which the reference ran) is there. Call
// from a test case: REQUIRE fails it with the paths.
inline nlohmann::json smollm2_reference(const std::string& rel) {
    const std::string model = smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(file_exists(model));
    std::ifstream in(data_path(rel));
    INFO("reference " << data_path(rel));
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

}  // namespace snapkv::test
