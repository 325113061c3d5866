// Text forms of Jinja values with CPython's rules: str()/repr() (unicode_repr's quote choice and
// escapes, float_repr_style 'short' with its 1e16 / 1e-4 switch to exponents) and json.dumps
// (json/encoder.py: ensure_ascii, indent, separators, sort_keys, Infinity/NaN). Values that
// Python would print as a memory address (generators, functions) are a Fault instead. The %
// operator and str.format are in jinja_pyformat.cpp.
#include "core/tokenizer/jinja_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

void append_repr(std::string& out, const Value& v, uint32_t depth);

// The most bytes the str()/repr() being built may reach (per thread: set by the public entry).
thread_local size_t t_print_limit = SIZE_MAX;

struct PrintLimit {
    size_t saved;
    explicit PrintLimit(size_t limit) : saved(t_print_limit) { t_print_limit = std::min(limit, saved); }
    ~PrintLimit() { t_print_limit = saved; }
    PrintLimit(const PrintLimit&) = delete;
    PrintLimit& operator=(const PrintLimit&) = delete;
};

void check_print_depth(uint32_t depth) {
    if (depth > k_max_value_depth) fail("a value nested too deeply to print (a namespace holding itself?)");
}

void append_items(std::string& out, const std::vector<Value>& items, uint32_t depth) {
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        append_repr(out, items[i], depth + 1);
    }
}

void append_dict(std::string& out, const DictData& d, uint32_t depth) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : d.entries) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, k, depth + 1);
        out += ": ";
        append_repr(out, v, depth + 1);
    }
    out += '}';
}

void append_any(std::string& out, const Value& v, uint32_t depth, bool repr) {
    check_print_depth(depth);
    switch (v.kind()) {
    case Kind::Undefined:
        if (repr) out += "Undefined";
        return;
    case Kind::None: out += "None"; return;
    case Kind::Bool: out += v.get_bool() ? "True" : "False"; return;
    case Kind::Int: out += std::to_string(v.get_int()); return;
    case Kind::Float: out += float_repr(v.get_float()); return;
    case Kind::String:
        if (repr) {
            out += string_repr(v.str());
        } else {
            out += v.str();
        }
        return;
    case Kind::List:
        switch (v.flavor()) {
        case Flavor::Range: {
            const ListData& r = v.list_data();
            out += "range(" + std::to_string(r.range_start) + ", " + std::to_string(r.range_stop);
            if (r.range_step != 1) out += ", " + std::to_string(r.range_step);
            out += ')';
            return;
        }
        case Flavor::DictItems: out += "dict_items(["; break;
        case Flavor::DictKeys: out += "dict_keys(["; break;
        case Flavor::DictValues: out += "dict_values(["; break;
        default: out += '['; break;
        }
        append_items(out, v.items(), depth);
        out += v.flavor() == Flavor::Plain ? "]" : "])";
        return;
    case Kind::Tuple:
        out += '(';
        append_items(out, v.items(), depth);
        if (v.items().size() == 1) out += ',';
        out += ')';
        return;
    case Kind::Dict: append_dict(out, v.dict(), depth); return;
    case Kind::Namespace: {
        if (v.ns().role != NamespaceData::Role::Namespace) {
            out += "<jinja2.utils.Cycler object at 0x7f3a5c2e1d40>";
            return;
        }
        out += "<Namespace {";
        bool first = true;
        for (const auto& [k, val] : v.ns().attrs) {
            if (!first) out += ", ";
            first = false;
            out += string_repr(k);
            out += ": ";
            append_repr(out, val, depth + 1);
        }
        out += "}>";
        return;
    }
    case Kind::Loop: {
        const LoopData& l = v.loop();
        out += "<LoopContext " + std::to_string(l.index0 + 1) + "/" + std::to_string(l.items->size()) + ">";
        return;
    }
    case Kind::Callable:
        if (v.callable().macro != nullptr) {
            out += "<Macro " + string_repr(v.callable().name) + ">";
            return;
        }
        // Python prints an address here; any fixed one serves.
        if (v.callable().self.is_undefined()) {
            out += "<function " + v.callable().name + " at 0x7f3a5c2e1d40>";
        } else {
            out += "<built-in method " + v.callable().name + " of " + type_name(v.callable().self) +
                   " object at 0x7f3a5c2e1d40>";
        }
        return;
    case Kind::Iterator:
        // Python prints the object's address; any fixed one serves (templates cannot rely on it).
        out += std::string("<") + v.iter().name + " at 0x7f3a5c2e1d40>";
        return;
    }
}

void append_repr(std::string& out, const Value& v, uint32_t depth) {
    if (out.size() > t_print_limit) fail("printing a value passed " + std::to_string(t_print_limit) + " bytes");
    append_any(out, v, depth, true);
}

char hex_digit(uint32_t d) { return char(d < 10 ? '0' + d : 'a' + d - 10); }

void append_hex(std::string& out, uint32_t v, int digits) {
    for (int i = digits - 1; i >= 0; --i) out += hex_digit((v >> (4 * i)) & 15);
}

// ---- json.dumps ----

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    size_t pos = 0;
    while (pos < s.size()) {
        const auto c = static_cast<unsigned char>(s[pos]);
        if (c >= 0x80) {
            if (!ensure_ascii) {
                out += s[pos++];
                continue;
            }
            uint32_t cp = text::next_code_point(s, pos);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                out += "\\u";
                append_hex(out, 0xD800 + (cp >> 10), 4);
                out += "\\u";
                append_hex(out, 0xDC00 + (cp & 0x3FF), 4);
            } else {
                out += "\\u";
                append_hex(out, cp, 4);
            }
            continue;
        }
        ++pos;
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (c < 0x20 || (c == 0x7F && ensure_ascii)) {
                out += "\\u";
                append_hex(out, c, 4);
            } else {
                out += char(c);
            }
        }
    }
    out += '"';
}

std::string json_float(double f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    return float_repr(f);
}

class JsonWriter {
public:
    JsonWriter(const JsonOptions& o) : m_o(o) {}
    std::string out;

    void write(const Value& v, uint32_t level) {
        check_print_depth(level);
        if (out.size() > m_o.max_bytes) fail("tojson passed " + std::to_string(m_o.max_bytes) + " bytes");
        switch (v.kind()) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += v.get_bool() ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(v.get_int()); return;
        case Kind::Float: out += json_float(v.get_float()); return;
        case Kind::String: json_string(out, v.str(), m_o.ensure_ascii); return;
        case Kind::List:
        case Kind::Tuple:
            if (v.flavor() != Flavor::Plain && v.flavor() != Flavor::GroupTuple) {
                fail("Object of type " + type_name(v) + " is not JSON serializable");
            }
            write_list(v.items(), level);
            return;
        case Kind::Dict: write_dict(v.dict(), level); return;
        default: fail("Object of type " + type_name(v) + " is not JSON serializable");
        }
    }

private:
    const JsonOptions& m_o;

    void newline(uint32_t level) {
        out += '\n';
        for (uint32_t i = 0; i < level; ++i) out += *m_o.indent;
    }

    void write_list(const std::vector<Value>& items, uint32_t level) {
        if (items.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        if (m_o.indent) newline(level + 1);
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) {
                out += m_o.item_separator;
                if (m_o.indent) newline(level + 1);
            }
            write(items[i], level + 1);
        }
        if (m_o.indent) newline(level);
        out += ']';
    }

    static std::string key_string(const Value& k) {
        switch (k.kind()) {
        case Kind::String: return k.str();
        case Kind::Float: return json_float(k.get_float());
        case Kind::Bool: return k.get_bool() ? "true" : "false";
        case Kind::Int: return std::to_string(k.get_int());
        case Kind::None: return "null";
        default: fail("keys must be str, int, float, bool or None, not " + type_name(k));
        }
    }

    void write_dict(const DictData& d, uint32_t level) {
        if (d.size() == 0) {
            out += "{}";
            return;
        }
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : d.entries) entries.push_back(&e);
        if (m_o.sort_keys) {
            std::stable_sort(entries.begin(), entries.end(),
                             [](const auto* a, const auto* b) { return py_less(a->first, b->first); });
        }
        out += '{';
        if (m_o.indent) newline(level + 1);
        bool first = true;
        for (const auto* e : entries) {
            if (!first) {
                out += m_o.item_separator;
                if (m_o.indent) newline(level + 1);
            }
            first = false;
            json_string(out, key_string(e->first), m_o.ensure_ascii);
            out += m_o.key_separator;
            write(e->second, level + 1);
        }
        if (m_o.indent) newline(level);
        out += '}';
    }
};

}  // namespace

std::string float_repr(double f) {
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // "-1.2345e+02"
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exp10 = std::atoi(sci.c_str() + e + 1);
    const int decpt = exp10 + 1;
    std::string out;
    if (decpt <= -4 || decpt > 16) {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char ebuf[16];
        std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        out += ebuf;
    } else if (decpt <= 0) {
        out = "0." + std::string(size_t(-decpt), '0') + digits;
    } else if (size_t(decpt) >= digits.size()) {
        out = digits + std::string(size_t(decpt) - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, size_t(decpt)) + "." + digits.substr(size_t(decpt));
    }
    return sign + out;
}

std::string string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out;
    out.reserve(s.size() + 2);
    out += quote;
    size_t pos = 0;
    while (pos < s.size()) {
        const auto c = static_cast<unsigned char>(s[pos]);
        if (c < 0x80) {
            ++pos;
            if (c == quote || c == '\\') {
                out += '\\';
                out += char(c);
            } else if (c == '\t') {
                out += "\\t";
            } else if (c == '\n') {
                out += "\\n";
            } else if (c == '\r') {
                out += "\\r";
            } else if (c < 0x20 || c == 0x7F) {
                out += "\\x";
                append_hex(out, c, 2);
            } else {
                out += char(c);
            }
            continue;
        }
        const size_t start = pos;
        const uint32_t cp = text::next_code_point(s, pos);
        if (text::is_printable(cp)) {
            out.append(s.substr(start, pos - start));
        } else {
            append_code_point_escape(out, cp);
        }
    }
    out += quote;
    return out;
}

void append_code_point_escape(std::string& out, uint32_t cp) {
    if (cp < 0x100) {
        out += "\\x";
        append_hex(out, cp, 2);
    } else if (cp < 0x10000) {
        out += "\\u";
        append_hex(out, cp, 4);
    } else {
        out += "\\U";
        append_hex(out, cp, 8);
    }
}

void append_str(std::string& out, const Value& v, size_t limit) {
    const PrintLimit scope(limit == SIZE_MAX ? SIZE_MAX : out.size() + limit);
    append_any(out, v, 0, false);
}

std::string py_str(const Value& v, size_t limit) {
    if (v.is_string()) return v.str();
    std::string out;
    append_str(out, v, limit);
    return out;
}

std::string py_repr(const Value& v, size_t limit) {
    const PrintLimit scope(limit);
    std::string out;
    append_any(out, v, 0, true);
    return out;
}

std::string repr_for_message(const Value& v) {
    try {
        return py_repr(v, 200);
    } catch (const Fault&) {
        return "<a " + type_name(v) + " too long to show>";
    }
}

std::string json_dumps(const Value& v, const JsonOptions& options) {
    JsonWriter w(options);
    w.write(v, 0);
    return std::move(w.out);
}

}  // namespace snapkv::jinja
