// Writing a whole file so that it is either complete or not there: the bytes go to a temporary
// file in the target's folder, every write, the flush and the close are checked, and only then is
// the temporary file renamed over the target. Used by session files, exports and screenshots.
// Not core/common/atomic_file.h (the CLI's): this one takes Qt's types, reports a QString for a
// dialog instead of throwing, and refuses a folder that does not exist rather than creating it
// (a path from a file dialog names an existing folder; a missing one is the user's mistake).
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
