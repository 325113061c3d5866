// Where the app looks for what the user did not name: the default model, the models/ folders the
// Model menu lists, the bundled datasets (sample document and question, the fetch script). Paths
// only: it reads no file's contents, writes nothing and knows no widget.
#pragma once

#include <QString>
#include <QStringList>

namespace studio {

// Default model: $SNAPKV_MODEL, then models/<default> under the working directory, next to the
// executable (../ and ../../, and the build tree's source dir), then userModelsDir(). Empty if none.
QString defaultModelPath();
// Where snapkv-fetch-model (and Help > Get a Model) puts models: ~/.local/share/snapkv-studio/models.
QString userModelsDir();
QString defaultModelFileName();
// The models/ folders (working directory, next to the executable, the source tree) and
// userModelsDir(): those that exist, canonical, each once, in that order. The Model menu lists
// their models.
QStringList modelFolders();
// A file under datasets/: core's lookup (SNAPKV_DATASETS, ./datasets, the installed copy, the
// source tree), then next to the executable; empty if not found.
QString findDatasetFile(const QString& name);

}  // namespace studio
