// What the evaluation CLI tests (needle, sweep, ruler, merge) share: a results file's rows without their
// timing (which differs run to run), and the check that two runs wrote the same rows. Test-only.
#pragma once

#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace snapkv::test::eval {

inline std::vector<nlohmann::json> rows_without_timing(const std::string& path) {
    std::vector<nlohmann::json> rows;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        nlohmann::json r = nlohmann::json::parse(line);
        r.erase("timing");
        rows.push_back(std::move(r));
    }
    return rows;
}

// `a` and `b` both hold `n` rows, equal row by row (a merge of shards against the unsharded run).
inline void check_same_rows(const std::vector<nlohmann::json>& a, const std::vector<nlohmann::json>& b, size_t n) {
    REQUIRE(a.size() == n);
    REQUIRE(b.size() == n);
    for (size_t i = 0; i < a.size(); ++i) {
        INFO("row " << i);
        CHECK(a[i] == b[i]);
    }
}

}  // namespace snapkv::test::eval
