// Helpers of the Jinja tests: the golden data folder tests/data/chat_templates (a missing file
// fails the test and names it), JSON read with member order kept, and the pinned clock of the
// goldens. Holds no expected values.
#pragma once

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace snapkv::test {

inline std::string chat_templates_path(const std::string& rel) {
    return std::string(SNAPKV_TEST_DATA) + "/chat_templates/" + rel;
}

// The file's bytes, unchanged (templates end in "\n" or not, and that matters). Missing -> FAIL.
inline std::string read_bytes(const std::string& path) {
    if (!std::filesystem::is_regular_file(path)) {
        FAIL("golden data file missing: " << path
                                          << " (written by tests/data/chat_templates/make_constructs.py and "
                                             "make_renders.py; see PROVENANCE.md there)");
    }
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline nlohmann::ordered_json read_ordered_json(const std::string& path) {
    return nlohmann::ordered_json::parse(read_bytes(path));
}

// "2026-07-26T00:00:00" -> local civil time fields.
inline std::tm parse_iso_time(const std::string& s) {
    std::tm tm{};
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &sec) != 6) {
        FAIL("not an ISO date-time: " << s);
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return tm;
}

}  // namespace snapkv::test
