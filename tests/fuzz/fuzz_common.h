// Shared by the libFuzzer targets: the readers take paths (they map files), so each input is
// written to one scratch file per process first. Errors the parsers throw on purpose
// (snapkv::Error) are the expected outcome for bad input; anything else escapes and is a finding,
// as are crashes, hangs and sanitizer reports. Built only with -DSNAPKV_FUZZ=ON (clang).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace snapkv::fuzz {

// A per-process scratch folder under $TMPDIR (or /tmp), created once.
inline const std::string& scratch_dir() {
    static const std::string dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::string d = std::string(tmp && *tmp ? tmp : "/tmp") + "/snapkv_fuzz_" + std::to_string(::getpid());
        std::string cmd = "mkdir -p '" + d + "'";
        if (std::system(cmd.c_str()) != 0) std::abort();
        return d;
    }();
    return dir;
}

// Writes data to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
    const std::string path = scratch_dir() + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    if (std::fclose(f) != 0) std::abort();
    return path;
}

}  // namespace snapkv::fuzz
