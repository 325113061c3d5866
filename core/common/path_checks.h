// Outputs never replace inputs: whether an output path names a file a command reads (model,
// document, prompt file, question set, results being merged). Paths are compared resolved
// (symlinks followed, "..", "." and relative paths normalised) and, when both exist, by identity
// (std::filesystem::equivalent: hard links too). Reads nothing and creates nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace snapkv {

struct NamedPath {
    std::string label;  // how messages name it: "the document (--doc)"
    std::string path;   // as given; empty entries are skipped
};

// True when a and b name the same file (or folder).
bool same_file(const std::string& a, const std::string& b);

// The input that writing `output` would replace, or nullopt. A folder input (a Hugging Face model
// folder, a haystack folder) is replaced by an output that is the folder or an existing file
// anywhere inside it; a new file in it is fine. "-" and "" (standard output) replace nothing.
std::optional<NamedPath> clobbered_input(const std::string& output, const std::vector<NamedPath>& inputs);

// "'out.json' is the document (--doc)" (the path as the user wrote it), for refusals.
std::string clobber_message(const std::string& output, const NamedPath& input);

}  // namespace snapkv
