// saveBytes / saveImage over QSaveFile.
#include "app/gui/files/atomic_write.h"

#include <QBuffer>
#include <QImage>
#include <QSaveFile>

namespace studio {

bool saveBytes(const QString& path, const QByteArray& bytes, QString* error) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        *error = QString("cannot write %1: %2").arg(path, f.errorString());
        return false;
    }
    // flush() is checked before commit(): QSaveFile notices a failed write only when it happens in
    // write(), not when buffered bytes fail at the close inside commit() (a short file would then
    // be renamed over the target). Unflushed, the destructor removes the temporary file.
    if (f.write(bytes) != bytes.size() || !f.flush() || !f.commit()) {
        *error = QString("cannot write %1: %2 (the previous file, if any, is unchanged)").arg(path, f.errorString());
        f.cancelWriting();
        return false;
    }
    return true;
}

bool saveImage(const QImage& image, const QString& path, QString* error) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    if (image.isNull() || !buffer.open(QIODevice::WriteOnly) || !image.save(&buffer, "PNG")) {
        *error = QString("cannot encode the image for %1").arg(path);
        return false;
    }
    return saveBytes(path, bytes, error);
}

}  // namespace studio
