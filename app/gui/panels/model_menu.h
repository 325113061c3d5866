// The Model menu's contents: the models found in the models/ folders next to the app's data (the
// folders datasets/fetch_model.sh fills), one entry each, or an entry saying where models come
// from. Lists files and folders only: it opens nothing itself and never reads a model's contents.
#pragma once

#include <QFileInfoList>
#include <QString>
#include <QStringList>

#include <functional>

class QMenu;

namespace studio {

// The models in `folder`: *.gguf files and Hugging Face folders (holding config.json), by name.
// Half-written downloads (*.part) and anything else are left out.
QFileInfoList listModels(const QString& folder);

// Clears `menu` and lists the models of `folders` (canonical paths; a section per folder when there
// are several), the entry of `currentModel` checked, the default model marked. Each entry calls
// open(path). With no model at all, disabled entries say where models come from.
void fillModelMenu(QMenu* menu, const QStringList& folders, const QString& currentModel,
                   const std::function<void(const QString&)>& open);

}  // namespace studio
