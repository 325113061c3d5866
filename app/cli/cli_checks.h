// Option checks and file handling shared by the `snapkv` subcommands: CLI11 validators that run
// on an option's text before it is converted (so '' or 'nan' never becomes a number), usage
// errors for options that contradict each other (exit code 2, like every parse error), reading
// the text files options name, and checked output (atomic files, stdout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/common/path_checks.h"

namespace snapkv::cli {

// An integer in [lo, hi]: "must be an integer from lo to hi (got 'x')".
CLI::Validator integer_in(int64_t lo, int64_t hi);
// A finite number in the range; open ends exclude the bound.
CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open);
// One of the names: "must be one of a, b, c (got 'x')".
CLI::Validator one_of(const std::vector<std::string>& names);

// Throws CLI::ValidationError ("<option>: <message>"), which main turns into exit code 2.
[[noreturn]] void usage_error(const std::string& option, const std::string& message);

// Refuses (usage error, exit 2) an output path that names one of the inputs, before any work:
// "--json: 'doc.md' is the document (--doc); an output never replaces an input: ...".
void check_output_not_input(const std::string& option, const std::string& output, const std::vector<NamedPath>& inputs);

// The whole text file named by an option. Throws InputError naming `what` and the path when it
// does not exist, is a folder, cannot be read, or holds NUL bytes (a binary file, refused like
// the GUI refuses it).
std::string read_text_file(const std::string& path, const std::string& what);

// Writes text to path ("-" or "": stdout) and checks that it all arrived: files through
// write_file_atomic (missing folders created; on failure the old file stays), stdout flushed
// and its state checked. Throws FileError with the reason.
void write_output(const std::string& path, const std::string& text);

}  // namespace snapkv::cli
