// Where the bundled evaluation data lives (haystack prose, needles, the question set): the folder
// named by $SNAPKV_DATASETS, else ./datasets, else <source tree>/datasets. No downloads.
#pragma once

#include <string>
#include <vector>

namespace snapkv::eval {

// Path of datasets/<relative>; throws InputError saying where it looked and what to pass instead.
std::string bundled_dataset(const std::string& relative, const std::string& source_dir, const std::string& option);
// The default needle haystack: sample_document.md, then the documents/ folder.
std::vector<std::string> bundled_haystack(const std::string& source_dir);

}  // namespace snapkv::eval
