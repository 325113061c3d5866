// saveBytes / saveImage over core's write_file_atomic.
#include "app/gui/files/atomic_write.h"

#include <QBuffer>
#include <QFileInfo>
#include <QImage>

#include <string_view>

#include "core/common/atomic_file.h"
#include "core/common/errors.h"

namespace studio {

bool saveBytes(const QString& path, const QByteArray& bytes, QString* error) {
    const QFileInfo folder(QFileInfo(path).absolutePath());
    if (!folder.isDir()) {
        *error = QString("cannot write '%1': the folder '%2' does not exist").arg(path, folder.filePath());
        return false;
    }
    try {
        snapkv::write_file_atomic(path.toStdString(),
                                  std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    } catch (const snapkv::Error& e) {
        *error = QString::fromUtf8(e.what());
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
