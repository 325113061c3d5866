// Where the bundled evaluation data lives (haystack prose, needles, the question set): the folder
// named by $SNAPKV_DATASETS, else ./datasets, else the installed copy (<prefix>/share/snapkv-studio,
// found from the running executable), else <source tree>/datasets. The one lookup both apps use for
// data and for the user's models folder. No downloads.
#pragma once

#include <string>
#include <vector>

namespace snapkv::eval {

// <prefix>/share/snapkv-studio when the running executable is <prefix>/bin/... and that folder
// exists (an installed copy), else "".
std::string installed_data_dir();
// Folders that may hold datasets/<relative>, in the order they are searched.
std::vector<std::string> dataset_roots(const std::string& source_dir);
// Path of datasets/<relative>; throws InputError saying where it looked and what to pass instead
// (`option`, as the caller names it: "--needles", "a needles file").
std::string bundled_dataset(const std::string& relative, const std::string& source_dir, const std::string& option);
// The default needle haystack: sample_document.md, then the documents/ folder.
std::vector<std::string> bundled_haystack(const std::string& source_dir,
                                          const std::string& option = "haystack files or folders");
// Where snapkv-fetch-model puts models for an installed copy: $SNAPKV_MODELS_DIR, else
// $XDG_DATA_HOME/snapkv-studio/models, else ~/.local/share/snapkv-studio/models ("" without HOME).
std::string user_models_dir();

}  // namespace snapkv::eval
