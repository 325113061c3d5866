// See text_file.h.
#include "app/gui/files/text_file.h"

#include <QFile>
#include <QFileInfo>

namespace studio {

std::optional<QString> readTextFile(const QString& path, QString* error) {
    const QFileInfo fi(path);
    if (!fi.exists()) {
        *error = QString("cannot open %1: no such file").arg(path);
        return std::nullopt;
    }
    if (fi.isDir()) {
        *error = QString("cannot open %1: it is a folder, not a text file").arg(path);
        return std::nullopt;
    }
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QString("cannot open %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    const QByteArray bytes = f.readAll();
    if (f.error() != QFileDevice::NoError) {
        *error = QString("cannot read %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    if (bytes.contains('\0')) {
        *error = QString("%1 looks like a binary file (it contains NUL bytes), not text").arg(path);
        return std::nullopt;
    }
    return QString::fromUtf8(bytes);
}

}  // namespace studio
