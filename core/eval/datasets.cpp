// See datasets.h.
#include "core/eval/datasets.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/common/errors.h"

namespace snapkv::eval {

std::string bundled_dataset(const std::string& relative, const std::string& source_dir, const std::string& option) {
    namespace fs = std::filesystem;
    std::vector<fs::path> roots;
    if (const char* env = std::getenv("SNAPKV_DATASETS"); env && *env) roots.emplace_back(env);
    roots.emplace_back("datasets");
    if (!source_dir.empty()) roots.push_back(fs::path(source_dir) / "datasets");
    std::string looked;
    for (const auto& r : roots) {
        std::error_code ec;
        const fs::path p = r / relative;
        if (fs::exists(p, ec)) return p.string();
        looked += (looked.empty() ? "" : ", ") + p.string();
    }
    throw InputError("the bundled file datasets/" + relative + " was not found (looked in " + looked +
                     "); set SNAPKV_DATASETS to the datasets folder or pass " + option);
}

std::vector<std::string> bundled_haystack(const std::string& source_dir) {
    return {bundled_dataset("sample_document.md", source_dir, "--haystack"),
            bundled_dataset("documents", source_dir, "--haystack")};
}

}  // namespace snapkv::eval
