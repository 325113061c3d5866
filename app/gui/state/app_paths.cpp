// See app_paths.h.
#include "app/gui/state/app_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include "core/eval/datasets.h"

#ifndef SNAPKV_SOURCE_DIR
#define SNAPKV_SOURCE_DIR ""
#endif

namespace studio {

namespace {

QStringList searchRoots() {
    QStringList roots;
    roots << QDir::currentPath();
    const QString exe = QCoreApplication::applicationDirPath();
    if (!exe.isEmpty()) roots << exe << exe + "/.." << exe + "/../.." << exe + "/../../..";
    if (QString(SNAPKV_SOURCE_DIR).size()) roots << QString(SNAPKV_SOURCE_DIR);
    return roots;
}

}  // namespace

QString defaultModelFileName() { return "SmolLM2-135M-Instruct.Q4_1.gguf"; }

QString defaultModelPath() {
    const QString env = qEnvironmentVariable("SNAPKV_MODEL");
    if (!env.isEmpty() && QFileInfo::exists(env)) return QFileInfo(env).absoluteFilePath();
    QStringList dirs;
    for (const QString& root : searchRoots()) dirs << QDir(root).filePath("models");
    dirs << userModelsDir();  // where snapkv-fetch-model puts it for an installed copy
    for (const QString& dir : dirs) {
        const QString p = QDir(dir).filePath(defaultModelFileName());
        if (!dir.isEmpty() && QFileInfo::exists(p)) return QFileInfo(p).canonicalFilePath();
    }
    return {};
}

QString userModelsDir() { return QString::fromStdString(snapkv::eval::user_models_dir()); }
QStringList modelFolders() {
    QStringList folders;
    for (const QString& root : searchRoots()) {
        const QFileInfo fi(QDir(root).filePath("models"));
        if (fi.isDir() && !folders.contains(fi.canonicalFilePath())) folders << fi.canonicalFilePath();
    }
    const QFileInfo user(userModelsDir());  // an installed copy's fetched models
    if (user.isDir() && !folders.contains(user.canonicalFilePath())) folders << user.canonicalFilePath();
    return folders;
}

QString findDatasetFile(const QString& name) {
    // The CLI's lookup first ($SNAPKV_DATASETS, ./datasets, the installed copy, the source tree),
    // then next to the executable (a build folder moved with its sources).
    QStringList dirs;
    for (const std::string& r : snapkv::eval::dataset_roots(SNAPKV_SOURCE_DIR)) dirs << QString::fromStdString(r);
    for (const QString& root : searchRoots()) dirs << QDir(root).filePath("datasets");
    for (const QString& dir : dirs) {
        const QString p = QDir(dir).filePath(name);
        if (QFileInfo::exists(p)) return QFileInfo(p).canonicalFilePath();
    }
    return {};
}

}  // namespace studio
