// Reading a text file the user named (a document, a question): UTF-8, refused when it is missing,
// a folder, unreadable or binary, with a message naming the path. Reads only; no dialogs.
#pragma once

#include <QString>

#include <optional>

namespace studio {

// nullopt with *error on failure (missing, a folder, unreadable, binary).
std::optional<QString> readTextFile(const QString& path, QString* error);

}  // namespace studio
