// See cli_checks.h.
#include "app/cli/cli_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/common/atomic_file.h"
#include "core/common/errors.h"

namespace snapkv::cli {
namespace {

std::string fmt(double v) {
    std::ostringstream ss;
    ss << v;
    return ss.str();
}

}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi) {
    const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    return CLI::Validator(
        [lo, hi, range](std::string& s) -> std::string {
            errno = 0;
            char* end = nullptr;
            const long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
            if (s.empty() || end == s.c_str() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
                return "must be " + range + " (got '" + s + "')";
            return {};
        },
        "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open) {
    const std::string range = std::string(lo_open ? "(" : "[") + fmt(lo) + ", " + fmt(hi) + (hi_open ? ")" : "]");
    return CLI::Validator(
        [=](std::string& s) -> std::string {
            char* end = nullptr;
            const double v = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
            const bool ok = !s.empty() && end != s.c_str() && *end == '\0' && std::isfinite(v) &&
                            (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
            if (!ok) return "must be a number in " + range + " (got '" + s + "')";
            return {};
        },
        "NUMBER in " + range);
}

CLI::Validator one_of(const std::vector<std::string>& names) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return CLI::Validator(
        [names, list](std::string& s) -> std::string {
            for (const auto& n : names)
                if (s == n) return {};
            return "must be one of " + list + " (got '" + s + "')";
        },
        "{" + list + "}");
}

void usage_error(const std::string& option, const std::string& message) { throw CLI::ValidationError(option, message); }

void check_output_not_input(const std::string& option, const std::string& output,
                            const std::vector<NamedPath>& inputs) {
    if (const std::optional<NamedPath> hit = clobbered_input(output, inputs))
        usage_error(option, clobber_message(output, *hit));
}

std::string read_text_file(const std::string& path, const std::string& what) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) throw InputError(what + " '" + path + "' does not exist");
    if (fs::is_directory(st)) throw InputError(what + " '" + path + "' is a folder; expected a text file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(what + " '" + path + "' cannot be opened: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw InputError(what + " '" + path + "' cannot be read: " + std::strerror(errno));
    std::string text = ss.str();
    if (const size_t nul = text.find('\0'); nul != std::string::npos)
        throw InputError(what + " '" + path + "' looks like a binary file, not text (a NUL byte at offset " +
                         std::to_string(nul) + ")");
    return text;
}

void write_output(const std::string& path, const std::string& text) {
    if (path.empty() || path == "-") {
        std::cout << text << std::flush;
        if (!std::cout)
            throw FileError(FileError::Kind::Io, "cannot write to standard output: " +
                                                     std::string(errno ? std::strerror(errno) : "stream error"));
        return;
    }
    write_file_atomic(path, text);
}

}  // namespace snapkv::cli
