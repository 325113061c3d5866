// Model menu entries (see model_menu.h).
#include "app/gui/panels/model_menu.h"

#include <QAction>
#include <QDir>
#include <QLocale>
#include <QMenu>

#include "app/gui/state/app_paths.h"

namespace studio {

QFileInfoList listModels(const QString& folder) {
    QFileInfoList models;
    const QDir dir(folder);
    for (const QFileInfo& fi : dir.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable,
                                                 QDir::Name | QDir::IgnoreCase)) {
        if (fi.isDir() ? QFileInfo::exists(QDir(fi.filePath()).filePath("config.json"))
                       : fi.suffix().compare("gguf", Qt::CaseInsensitive) == 0)
            models << fi;
    }
    return models;
}

void fillModelMenu(QMenu* menu, const QStringList& folders, const QString& currentModel,
                   const std::function<void(const QString&)>& open) {
    menu->clear();
    const QString current = currentModel.isEmpty() ? QString() : QFileInfo(currentModel).canonicalFilePath();
    int listed = 0;
    for (const QString& folder : folders) {
        const QFileInfoList models = listModels(folder);
        if (models.isEmpty()) continue;
        if (folders.size() > 1) menu->addSection(QDir::toNativeSeparators(folder));
        for (const QFileInfo& fi : models) {
            QString text = fi.fileName();
            if (fi.isFile()) text += QString(" (%1)").arg(QLocale().formattedDataSize(fi.size(), 0));
            else text += " (Hugging Face folder)";
            if (fi.fileName() == defaultModelFileName()) text += " — default";
            QAction* a = menu->addAction(text);
            // Opened as listed (a link in models/ stays models/NAME in titles and recent lists);
            // checked when it is the open model, however either path was spelled.
            const QString path = fi.absoluteFilePath();
            a->setObjectName("modelEntry");
            a->setData(path);
            a->setToolTip(path);
            a->setStatusTip("Open " + QDir::toNativeSeparators(path));
            a->setCheckable(true);
            a->setChecked(!current.isEmpty() && fi.canonicalFilePath() == current);
            QObject::connect(a, &QAction::triggered, menu, [open, path] { open(path); });
            ++listed;
        }
    }
    if (listed > 0) return;
    const QString where = folders.isEmpty() ? QString("No models/ folder next to the app")
                                            : QString("No models in %1").arg(QDir::toNativeSeparators(folders.first()));
    for (const QString& line : {where, QString("datasets/fetch_model.sh [smollm2|gemma3|all] fetches them"),
                                QString("(SmolLM2-135M-Instruct and Gemma 3 270M; scripts/setup.sh runs it)")}) {
        QAction* a = menu->addAction(line);
        a->setObjectName("modelEmptyState");
        a->setEnabled(false);
    }
}

}  // namespace studio
