// See path_checks.h. weakly_canonical resolves what exists of a path (symlinks included) and
// normalises the rest, so an output that does not exist yet still compares correctly.
#include "core/common/path_checks.h"

#include <filesystem>
#include <system_error>

namespace snapkv {

namespace fs = std::filesystem;

namespace {

fs::path resolved(const std::string& p) {
    std::error_code ec;
    fs::path abs = fs::absolute(p, ec);
    if (ec) abs = fs::path(p);
    fs::path r = fs::weakly_canonical(abs, ec);
    return ec ? abs.lexically_normal() : r;
}

bool present(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

bool same_entity(const fs::path& a, const fs::path& b) {
    std::error_code ec;
    const bool same = fs::equivalent(a, b, ec);
    return !ec && same;
}

bool is_folder(const std::string& p) {
    std::error_code ec;
    return fs::is_directory(p, ec);
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    if (present(a) && present(b)) return same_entity(a, b);
    return resolved(a) == resolved(b);
}

std::optional<NamedPath> clobbered_input(const std::string& output, const std::vector<NamedPath>& inputs) {
    if (output.empty() || output == "-") return std::nullopt;
    const fs::path out = resolved(output);
    for (const NamedPath& in : inputs) {
        if (in.path.empty() || in.path == "-") continue;
        if (same_file(output, in.path)) return in;
        if (!is_folder(in.path) || !present(out)) continue;
        // An existing file inside the folder: walk up from the output and compare each ancestor.
        for (fs::path dir = out.parent_path(); !dir.empty(); dir = dir.parent_path()) {
            if (same_entity(dir, in.path)) return in;
            if (dir == dir.root_path()) break;
        }
    }
    return std::nullopt;
}

std::string clobber_message(const std::string& output, const NamedPath& input) {
    const bool inside = is_folder(input.path) && !same_file(output, input.path);
    std::string msg = "'" + output + (inside ? "' is a file inside " : "' is ") + input.label;
    if (input.path != output) msg += " ('" + input.path + "')";
    return msg + "; an output never replaces an input: choose another file";
}

}  // namespace snapkv
