// SessionFile JSON reading and writing.
#include "app/gui/files/session_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QRegularExpression>

#include "app/gui/files/atomic_write.h"
#include "app/gui/state/gui_types.h"
#include "app/gui/state/json_fields.h"
#include "core/common/errors.h"

namespace studio {

namespace {
constexpr const char* kFormat = "snapkv-studio-session";
constexpr int kVersion = 1;
constexpr qint64 kMaxSessionBytes = qint64(256) << 20;  // documents are at most a few MB

// A value from the file as messages quote it: at most 100 characters, so that a corrupt or hostile
// file (a megabyte-long string) cannot flood the error dialog.
QString quotedValue(const QJsonValue& v) {
    const QString s = v.toVariant().toString();
    return s.size() > 100 ? s.left(100) + QString("... (%1 characters)").arg(s.size()) : s;
}
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
    model["cache_type"] = QString::fromStdString(load.cache_type);
    o["model"] = model;
    QJsonObject prompt;
    prompt["document"] = document;
    prompt["document_path"] = documentPath;
    prompt["question"] = question;
    if (!answerPrefix.isEmpty()) prompt["answer_prefix"] = answerPrefix;
    prompt["chat"] = chat;
    if (!system.isEmpty()) prompt["system"] = system;
    o["prompt"] = prompt;
    o["params"] = params.toJson();
    o["display"] = display.toJson();
    QJsonObject focus;
    focus["layer"] = layer;
    focus["head"] = head;
    o["focus"] = focus;
    if (!view.isEmpty()) o["view"] = view;  // none: the reader takes the first view
    o["max_tokens"] = maxTokens;
    o["ran"] = ran;
    QJsonObject window;
    window["geometry"] = QString::fromLatin1(geometry.toBase64());
    window["state"] = QString::fromLatin1(windowState.toBase64());
    o["window"] = window;
    return o;
}

std::optional<SessionFile> SessionFile::fromJson(const QJsonObject& o, const QString& baseDir, const QStringList& views,
                                                 QString* error) {
    if (o["format"].toString() != kFormat) {
        *error = QString("not a SnapKV Studio session (the \"format\" field is %1, expected \"%2\")")
                     .arg(o.contains("format") ? "\"" + quotedValue(o["format"]) + "\"" : "missing", kFormat);
        return std::nullopt;
    }
    if (!o["version"].isDouble() || o["version"].toDouble() != kVersion) {
        *error = QString("session version %1 is not supported (this app reads version %2)")
                     .arg(o.contains("version") ? quotedValue(o["version"]) : "(missing)")
                     .arg(kVersion);
        return std::nullopt;
    }
    try {
        SessionFile s;
        const JsonFields top(o, QString());
        const JsonFields model(top.object("model"), "model");
        s.modelPath = model.string("path", QString());
        const QString rel = model.string("relative_path", QString());
        if (!QFileInfo::exists(s.modelPath) && !rel.isEmpty() && QFileInfo::exists(QDir(baseDir).filePath(rel)))
            s.modelPath = QDir::cleanPath(QDir(baseDir).filePath(rel));
        s.load.device = model.string("device", "cpu").toStdString();
        static const QRegularExpression kDevice("^(cpu|cuda|cuda:[0-9]{1,3})$");
        if (!kDevice.match(QString::fromStdString(s.load.device)).hasMatch())
            model.fail("device", "is not a device; allowed: cpu, cuda, cuda:N");
        s.load.dtype = model.choice("dtype", "float32", {"float32", "float16", "bfloat16"}).toStdString();
        s.load.weights = model.choice("weights", "native", {"native", "native-q8", "f32", "float32"}).toStdString();
        // A session saved before cache types existed ran with f32.
        QStringList cacheTypes;
        for (snapkv::KvType t : snapkv::all_kv_types()) cacheTypes << snapkv::kv_type_name(t);
        s.load.cache_type = model.choice("cache_type", "f32", cacheTypes).toStdString();
        const JsonFields prompt(top.object("prompt"), "prompt");
        s.document = prompt.string("document", QString());
        s.documentPath = prompt.string("document_path", QString());
        s.question = prompt.string("question", QString());
        s.answerPrefix = prompt.string("answer_prefix", QString());
        s.chat = prompt.boolean("chat", true);
        s.system = prompt.string("system", QString());
        s.params = ParamState::fromJson(top.object("params"), "params");
        s.display = DisplaySettings::fromJson(top.object("display"));
        const JsonFields focus(top.object("focus"), "focus");
        s.layer = static_cast<int>(focus.integer("layer", 0, 0, 1 << 20));
        s.head = static_cast<int>(focus.integer("head", 0, 0, 1 << 20));
        s.view = top.choice("view", views.value(0), views);
        s.maxTokens = static_cast<int>(top.integer("max_tokens", 64, 1, kMaxNewTokens));
        s.ran = top.boolean("ran", false);
        const JsonFields window(top.object("window"), "window");
        s.geometry = QByteArray::fromBase64(window.string("geometry", QString()).toLatin1());
        s.windowState = QByteArray::fromBase64(window.string("state", QString()).toLatin1());
        return s;
    } catch (const snapkv::Error& e) {
        *error = QString("bad value in the session: %1").arg(QString::fromUtf8(e.what()));
        return std::nullopt;
    }
}

bool SessionFile::save(const QString& path, QString* error) const {
    // Atomic: a failed save leaves the old session untouched.
    return saveBytes(path, QJsonDocument(toJson(QFileInfo(path).absolutePath())).toJson(QJsonDocument::Indented),
                     error);
}

std::optional<SessionFile> SessionFile::read(const QString& path, const QStringList& views, QString* error) {
    if (QFileInfo(path).isDir()) {
        *error = QString("cannot open the session %1: it is a folder, not a file").arg(path);
        return std::nullopt;
    }
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QString("cannot open the session %1: %2").arg(path, f.errorString());
        return std::nullopt;
    }
    const QByteArray bytes = f.read(kMaxSessionBytes + 1);
    if (bytes.size() > kMaxSessionBytes) {
        *error = QString("the session %1 is larger than %2 MiB; a session holds one document and its settings")
                     .arg(path)
                     .arg(kMaxSessionBytes >> 20);
        return std::nullopt;
    }
    if (bytes.trimmed().isEmpty()) {
        *error = QString("the session %1 is empty").arg(path);
        return std::nullopt;
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &pe);
    if (pe.error != QJsonParseError::NoError) {
        *error = QString("%1 is not valid JSON (%2 at byte %3)").arg(path, pe.errorString()).arg(pe.offset);
        return std::nullopt;
    }
    if (!doc.isObject()) {
        *error = QString("%1 is not a SnapKV Studio session: it holds a JSON %2, not an object")
                     .arg(path, doc.isArray() ? "array" : "value");
        return std::nullopt;
    }
    return fromJson(doc.object(), QFileInfo(path).absolutePath(), views, error);
}

}  // namespace studio
