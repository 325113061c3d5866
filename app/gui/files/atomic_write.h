// Writing a whole file so that it is either complete or not there, for session files, exports and
// screenshots: Qt's types over core/common/atomic_file.h's write_file_atomic (the one atomic write of
// core, the CLI and the app), reporting a QString for a dialog instead of throwing. Unlike the CLI it
// refuses a folder that does not exist rather than creating it (a path from a file dialog names an
// existing folder; a missing one is the user's mistake).
#pragma once

#include <QByteArray>
#include <QString>

class QImage;

namespace studio {

// On failure: false, *error names the path and the reason, and the old file at path is untouched.
bool saveBytes(const QString& path, const QByteArray& bytes, QString* error);
// The image as PNG, through saveBytes.
bool saveImage(const QImage& image, const QString& path, QString* error);

}  // namespace studio
