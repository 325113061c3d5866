// Runs the `snapkv` binary (or any shell command line) the way a shell script would and captures
// stdout, stderr and the exit code, for the CLI tests. An optional shell prefix sets the environment or limits first
// ("SNAPKV_MEMORY_LIMIT=1M", "ulimit -f 1;"). Test-only.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <string>

#include <catch2/catch.hpp>

#include "common/test_util.h"

namespace snapkv::test::cli {

struct Result {
    int code = -1;
    std::string out;
    std::string err;
};

// Runs a shell command line (in a subshell) and captures its stdout, stderr and exit code.
inline Result run_shell(const std::string& cmd) {
    const std::string err_file = "/tmp/snapkv_cli_test_" + std::to_string(::getpid()) + ".err";
    Result r;
    FILE* p = ::popen(("(" + cmd + ") 2>" + err_file).c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = snapkv::test::read_text(err_file);
    std::remove(err_file.c_str());
    return r;
}

// Run the CLI with arguments (already shell-quoted) after `prefix` (shell text, may be empty).
inline Result run_with(const std::string& prefix, const std::string& args) {
    return run_shell(prefix + " " + std::string(SNAPKV_CLI_PATH) + " " + args);
}

inline Result run(const std::string& args) { return run_with("", args); }

inline std::string q(const std::string& s) {  // single-quote for the shell
    std::string o = "'";
    for (char c : s) o += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    return o + "'";
}

}  // namespace snapkv::test::cli
