// Helpers shared by the core/io tests: whole-file read/write, a float buffer comparison that
// reports max abs/rel error and the first mismatch, and a check that a call throws FileError of a
// given kind whose message contains given pieces. data_path and TempDir come from tests/common.
// Test-only code.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/errors.h"
#include "tests/common/temp_dir.h"
#include "tests/common/test_util.h"  // data_path

namespace snapkv::test {

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

inline void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
}

inline std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Result of comparing two float buffers: worst absolute and relative error and the first index
// whose error exceeds the tolerance given by the caller (-1 if none).
struct FloatDiff {
    double max_abs = 0.0;
    double max_rel = 0.0;
    int64_t first_bad = -1;
    float got_at_bad = 0.0f;
    float want_at_bad = 0.0f;
    std::string text() const {
        std::ostringstream os;
        os << "max abs err " << max_abs << ", max rel err " << max_rel;
        if (first_bad >= 0)
            os << ", first mismatch at " << first_bad << ": got " << got_at_bad << ", want " << want_at_bad;
        return os.str();
    }
};

// tol(i, want) gives the allowed absolute error for element i.
inline FloatDiff compare_floats(const float* got, const float* want, int64_t n,
                                const std::function<double(int64_t, float)>& tol) {
    FloatDiff d;
    for (int64_t i = 0; i < n; ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        const bool nan_mismatch = std::isnan(got[i]) != std::isnan(want[i]);
        d.max_abs = std::max(d.max_abs, err);
        if (want[i] != 0.0f) d.max_rel = std::max(d.max_rel, err / std::fabs(want[i]));
        if ((nan_mismatch || err > tol(i, want[i])) && d.first_bad < 0) {
            d.first_bad = i;
            d.got_at_bad = got[i];
            d.want_at_bad = want[i];
        }
    }
    return d;
}

inline FloatDiff compare_exact(const float* got, const float* want, int64_t n) {
    return compare_floats(got, want, n, [](int64_t, float) { return 0.0; });
}

// Runs fn, requires a FileError of the given kind whose message contains every piece.
inline void require_file_error(const std::function<void()>& fn, FileError::Kind kind,
                               std::initializer_list<std::string> pieces) {
    try {
        fn();
    } catch (const FileError& e) {
        const std::string msg = e.what();
        INFO("message: " << msg);
        CHECK(static_cast<int>(e.kind()) == static_cast<int>(kind));
        for (const std::string& p : pieces) {
            INFO("expected piece: " << p);
            CHECK(msg.find(p) != std::string::npos);
        }
        return;
    }
    FAIL("no FileError thrown");
}

}  // namespace snapkv::test
