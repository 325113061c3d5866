// SessionFile JSON reading and writing.
#include "app/gui/session_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>

namespace studio {

namespace {
constexpr const char* kFormat = "snapkv-studio-session";
constexpr int kVersion = 1;
}  // namespace

QJsonObject SessionFile::toJson(const QString& relativeTo) const {
    QJsonObject o;
    o["format"] = kFormat;
    o["version"] = kVersion;
    QJsonObject model;
    model["path"] = modelPath;
    if (!relativeTo.isEmpty() && !modelPath.isEmpty())
        model["relative_path"] = QDir(relativeTo).relativeFilePath(modelPath);
    model["device"] = QString::fromStdString(load.device);
    model["dtype"] = QString::fromStdString(load.dtype);
    model["weights"] = QString::fromStdString(load.weights);
    o["model"] = model;
    QJsonObject prompt;
    prompt["document"] = document;
    prompt["document_path"] = documentPath;
    prompt["question"] = question;
    prompt["chat"] = chat;
    o["prompt"] = prompt;
    o["params"] = params.toJson();
    o["display"] = display.toJson();
    QJsonObject focus;
    focus["layer"] = layer;
    focus["head"] = head;
    o["focus"] = focus;
    o["view"] = view;
    o["max_tokens"] = maxTokens;
    o["ran"] = ran;
    QJsonObject window;
    window["geometry"] = QString::fromLatin1(geometry.toBase64());
    window["state"] = QString::fromLatin1(windowState.toBase64());
    o["window"] = window;
    return o;
}

std::optional<SessionFile> SessionFile::fromJson(const QJsonObject& o, const QString& baseDir, QString* error) {
    if (o["format"].toString() != kFormat) {
        *error = QString("not a SnapKV Studio session (the \"format\" field is \"%1\", expected \"%2\")")
                     .arg(o["format"].toString(), kFormat);
        return std::nullopt;
    }
    if (o["version"].toInt() != kVersion) {
        *error = QString("session version %1 is not supported (this app reads version %2)")
                     .arg(o["version"].toInt())
                     .arg(kVersion);
        return std::nullopt;
    }
    SessionFile s;
    const QJsonObject model = o["model"].toObject();
    s.modelPath = model["path"].toString();
    const QString rel = model["relative_path"].toString();
    if (!QFileInfo::exists(s.modelPath) && !rel.isEmpty() && QFileInfo::exists(QDir(baseDir).filePath(rel)))
        s.modelPath = QDir::cleanPath(QDir(baseDir).filePath(rel));
    s.load.device = model["device"].toString("cpu").toStdString();
    s.load.dtype = model["dtype"].toString("float32").toStdString();
    s.load.weights = model["weights"].toString("native").toStdString();
    const QJsonObject prompt = o["prompt"].toObject();
    s.document = prompt["document"].toString();
    s.documentPath = prompt["document_path"].toString();
    s.question = prompt["question"].toString();
    s.chat = prompt["chat"].toBool(true);
    try {
        s.params = ParamState::fromJson(o["params"].toObject());
    } catch (const snapkv::Error& e) {
        *error = QString("bad parameter in the session: %1").arg(QString::fromUtf8(e.what()));
        return std::nullopt;
    }
    s.display = DisplaySettings::fromJson(o["display"].toObject());
    s.layer = o["focus"].toObject()["layer"].toInt();
    s.head = o["focus"].toObject()["head"].toInt();
    s.view = o["view"].toString("overview");
    s.maxTokens = o["max_tokens"].toInt(64);
    s.ran = o["ran"].toBool(false);
    s.geometry = QByteArray::fromBase64(o["window"].toObject()["geometry"].toString().toLatin1());
    s.windowState = QByteArray::fromBase64(o["window"].toObject()["state"].toString().toLatin1());
    return s;
}

bool SessionFile::save(const QString& path, QString* error) const {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        *error = QString("cannot write %1: %2").arg(path, f.errorString());
        return false;
    }
    f.write(QJsonDocument(toJson(QFileInfo(path).absolutePath())).toJson(QJsonDocument::Indented));
    if (!f.commit()) {
        *error = QString("cannot write %1: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

std::optional<SessionFile> SessionFile::read(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QString("cannot open %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
        *error = QString("%1 is not valid JSON (%2 at byte %3)").arg(path, pe.errorString()).arg(pe.offset);
        return std::nullopt;
    }
    return fromJson(doc.object(), QFileInfo(path).absolutePath(), error);
}

}  // namespace studio
