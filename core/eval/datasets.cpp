// See datasets.h.
#include "core/eval/datasets.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/common/errors.h"

// The data folder relative to the executables' folder, from CMake's install layout
// (CMAKE_INSTALL_BINDIR -> CMAKE_INSTALL_DATADIR/snapkv-studio), so both always agree.
#ifndef SNAPKV_INSTALL_DATA_REL
#define SNAPKV_INSTALL_DATA_REL "../share/snapkv-studio"
#endif

namespace snapkv::eval {

namespace fs = std::filesystem;

std::string installed_data_dir() {
    std::error_code ec;
    // Linux: the real executable, whatever the symlinks or PATH entry that started it.
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec || exe.empty()) return {};
    const fs::path dir = (exe.parent_path() / SNAPKV_INSTALL_DATA_REL).lexically_normal();
    if (!fs::is_directory(dir / "datasets", ec)) return {};
    return dir.string();
}

std::vector<std::string> dataset_roots(const std::string& source_dir) {
    std::vector<std::string> roots;
    if (const char* env = std::getenv("SNAPKV_DATASETS"); env && *env) roots.emplace_back(env);
    roots.emplace_back("datasets");
    if (const std::string inst = installed_data_dir(); !inst.empty()) roots.push_back(inst + "/datasets");
    if (!source_dir.empty()) roots.push_back((fs::path(source_dir) / "datasets").string());
    return roots;
}

std::string bundled_dataset(const std::string& relative, const std::string& source_dir, const std::string& option) {
    std::string looked;
    for (const auto& r : dataset_roots(source_dir)) {
        std::error_code ec;
        const fs::path p = fs::path(r) / relative;
        if (fs::exists(p, ec)) return p.string();
        looked += (looked.empty() ? "" : ", ") + p.string();
    }
    throw InputError("the bundled file datasets/" + relative + " was not found (looked in " + looked +
                     "); set SNAPKV_DATASETS to the datasets folder or pass " + option);
}

std::vector<std::string> bundled_haystack(const std::string& source_dir, const std::string& option) {
    return {bundled_dataset("sample_document.md", source_dir, option),
            bundled_dataset("documents", source_dir, option)};
}

std::string user_models_dir() {
    if (const char* env = std::getenv("SNAPKV_MODELS_DIR"); env && *env) return env;
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        return (fs::path(xdg) / "snapkv-studio" / "models").string();
    if (const char* home = std::getenv("HOME"); home && *home)
        return (fs::path(home) / ".local/share/snapkv-studio/models").string();
    return {};
}

}  // namespace snapkv::eval
