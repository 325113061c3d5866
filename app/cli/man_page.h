// snapkv(1) in roff, written from the CLI11 definitions that --help prints (every subcommand's
// options, defaults and descriptions), so the manual cannot drift from the program. The build runs
// `snapkv --man-page` and installs the result; nothing here parses or runs a command.
#pragma once

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace snapkv::cli {

void write_man_page(const CLI::App& app, const std::string& version, std::ostream& out);

}  // namespace snapkv::cli
