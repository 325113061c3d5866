// Typed, checked reads of one JSON object of a session file or of the saved settings: a key that is
// missing gives the fallback, a key of the wrong type or out of range throws snapkv::InputError
// naming the key's path, the value found and what is allowed ("params.window: \"abc\" is not a
// whole number"); and the bridge to core's JSON objects. No file access; the callers report the
// message.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace studio {

// Between Qt's JSON and core's (nlohmann), through the text, so that core's one reader and writer
// serve the app's files too.
QJsonObject toQtJson(const nlohmann::json& object);
nlohmann::json fromQtJson(const QJsonObject& object);

class JsonFields {
public:
    // prefix: where the object sits in the file, e.g. "params" (keys print as "params.window").
    JsonFields(const QJsonObject& object, const QString& prefix) : m_o(object), m_prefix(prefix) {}

    bool has(const char* key) const { return m_o.contains(QLatin1String(key)); }
    int64_t integer(const char* key, int64_t fallback, int64_t min, int64_t max) const;
    double number(const char* key, double fallback) const;
    bool boolean(const char* key, bool fallback) const;
    QString string(const char* key, const QString& fallback) const;
    // A string that must be one of `allowed`.
    QString choice(const char* key, const QString& fallback, const QStringList& allowed) const;
    QJsonObject object(const char* key) const;  // empty when missing

    [[noreturn]] void fail(const char* key, const QString& what) const;

private:
    QString path(const char* key) const;
    static QString shown(const QJsonValue& v);  // the value as the file has it, shortened

    QJsonObject m_o;
    QString m_prefix;
};

}  // namespace studio
