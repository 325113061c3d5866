// A saved SnapKV Studio session: model path and load options, document, question, every
// parameter, display settings, focused head, current view and window layout, as JSON
// ("format": "snapkv-studio-session", version 1). Reading validates and reports in plain words.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>

#include "app/gui/state/display_settings.h"
#include "app/gui/state/param_state.h"
#include "core/session/session.h"

namespace studio {

struct SessionFile {
    QString modelPath;
    snapkv::LoadOptions load;
    QString document;
    QString documentPath;  // where the document came from, informational
    QString question;
    QString answerPrefix;  // the answer's first words (a RULER sample); "" = none
    bool chat = true;
    QString system;  // the system message in the chat template; "" = none
    ParamState params;
    DisplaySettings display;
    int layer = 0;
    int head = 0;
    QString view;  // the current view's name (a row of the view registry)
    int maxTokens = 64;
    bool ran = false;        // results were shown when saved: loading runs again
    QByteArray geometry;     // QMainWindow::saveGeometry
    QByteArray windowState;  // QMainWindow::saveState (docks, toolbars)

    QJsonObject toJson(const QString& relativeTo = QString()) const;
    // Throws nothing; returns nullopt and sets *error on a bad file. views: the view names a
    // session may name (the registry's, which files/ does not see), the first the default.
    static std::optional<SessionFile> fromJson(const QJsonObject& o, const QString& baseDir, const QStringList& views,
                                               QString* error);
    bool save(const QString& path, QString* error) const;
    static std::optional<SessionFile> read(const QString& path, const QStringList& views, QString* error);
};

}  // namespace studio
