// JsonFields: typed reads with messages that name the key, the value and what is allowed.
#include "app/gui/state/json_fields.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonValue>

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/common/errors.h"

namespace studio {

QJsonObject toQtJson(const nlohmann::json& object) {
    const std::string text = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
}

nlohmann::json fromQtJson(const QJsonObject& object) {
    return nlohmann::json::parse(QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString());
}

QString JsonFields::path(const char* key) const {
    return m_prefix.isEmpty() ? QString::fromLatin1(key) : m_prefix + "." + QLatin1String(key);
}

QString JsonFields::shown(const QJsonValue& v) {
    QString s;
    switch (v.type()) {
    case QJsonValue::Null: return "null";
    case QJsonValue::Bool: return v.toBool() ? "true" : "false";
    case QJsonValue::Double: return QString::number(v.toDouble(), 'g', 17);
    case QJsonValue::String: s = "\"" + v.toString() + "\""; break;
    case QJsonValue::Array: s = QString::fromUtf8(QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)); break;
    case QJsonValue::Object: s = QString::fromUtf8(QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact)); break;
    default: return "undefined";
    }
    return s.size() > 60 ? s.left(57) + "..." : s;
}

void JsonFields::fail(const char* key, const QString& what) const {
    throw snapkv::InputError((path(key) + ": " + shown(m_o.value(QLatin1String(key))) + " " + what).toStdString());
}

int64_t JsonFields::integer(const char* key, int64_t fallback, int64_t min, int64_t max) const {
    const QJsonValue v = m_o.value(QLatin1String(key));
    if (v.isUndefined()) return fallback;
    const double d = v.toDouble();
    if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15)
        fail(key, "is not a whole number");
    const auto i = static_cast<int64_t>(d);
    if (i < min || i > max) fail(key, QString("is out of range; allowed %1..%2").arg(min).arg(max));
    return i;
}

double JsonFields::number(const char* key, double fallback) const {
    const QJsonValue v = m_o.value(QLatin1String(key));
    if (v.isUndefined()) return fallback;
    if (!v.isDouble() || !std::isfinite(v.toDouble())) fail(key, "is not a number");
    return v.toDouble();
}

bool JsonFields::boolean(const char* key, bool fallback) const {
    const QJsonValue v = m_o.value(QLatin1String(key));
    if (v.isUndefined()) return fallback;
    if (!v.isBool()) fail(key, "is not true or false");
    return v.toBool();
}

QString JsonFields::string(const char* key, const QString& fallback) const {
    const QJsonValue v = m_o.value(QLatin1String(key));
    if (v.isUndefined()) return fallback;
    if (!v.isString()) fail(key, "is not a string");
    return v.toString();
}

QString JsonFields::choice(const char* key, const QString& fallback, const QStringList& allowed) const {
    const QString s = string(key, fallback);
    if (!allowed.contains(s)) fail(key, "is not allowed; allowed: " + allowed.join(", "));
    return s;
}

QJsonObject JsonFields::object(const char* key) const {
    const QJsonValue v = m_o.value(QLatin1String(key));
    if (v.isUndefined()) return {};
    if (!v.isObject()) fail(key, "is not an object");
    return v.toObject();
}

}  // namespace studio
