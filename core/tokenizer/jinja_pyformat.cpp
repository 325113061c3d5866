// Python's string formatting for Jinja values: printf-style `fmt % args` (the formatter of
// CPython's unicodeobject.c: flags, width, precision, %s %r %a %c %d %i %o %x %e %f %g, mapping
// keys), format(v, spec) with the format-spec mini-language, and str.format with attribute and
// index chains in its fields. Text forms of values (str, repr, json) are in jinja_format.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

char hex_digit(uint32_t d, bool upper_case) { return char(d < 10 ? '0' + d : (upper_case ? 'A' : 'a') + d - 10); }

// Pads s to width code points.
std::string pad(std::string s, size_t width, bool left) {
    const size_t n = text::code_point_count(s);
    if (n >= width) return s;
    const std::string padding(width - n, ' ');
    return left ? s + padding : padding + s;
}

std::string c_format(const char* spec, double v) {
    char buf[512];
    const int n = std::snprintf(buf, sizeof(buf), spec, v);
    if (n < 0 || n >= int(sizeof(buf))) fail("a formatted number longer than 500 characters");
    return std::string(buf, size_t(n));
}

std::string int_digits(int64_t v, int base, bool upper_case) {
    if (v == 0) return "0";
    uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    std::string s;
    while (u) {
        s += hex_digit(uint32_t(u % uint64_t(base)), upper_case);
        u /= uint64_t(base);
    }
    std::reverse(s.begin(), s.end());
    return s;
}

// ---- printf-style ----

struct Spec {
    bool left = false, plus = false, space = false, alt = false, zero = false;
    int width = -1, precision = -1;
    char type = 0;
};

std::string format_number_percent(const Spec& sp, const Value& v) {
    const char t = sp.type;
    const bool integer_type = t == 'd' || t == 'i' || t == 'u';
    std::string body;
    bool negative = false;
    if (integer_type || t == 'o' || t == 'x' || t == 'X') {
        if (!v.is_number()) {
            fail(std::string("%") + t + " format: " + (integer_type ? "a real number" : "an integer") +
                 " is required, not " + type_name(v));
        }
        if (v.kind() == Kind::Float && !integer_type)
            fail(std::string("%") + t + " format: an integer is required, not float");
        int64_t i;
        if (v.kind() == Kind::Float) {
            const double f = v.get_float();
            if (!std::isfinite(f)) fail("cannot convert float " + float_repr(f) + " to integer");
            if (std::fabs(f) >= 9.2e18) fail("integer overflow: " + float_repr(f) + " does not fit in 64 bits");
            i = int64_t(f);
        } else {
            i = v.get_int();
        }
        negative = i < 0;
        const int base = t == 'o' ? 8 : (t == 'x' || t == 'X' ? 16 : 10);
        body = int_digits(i, base, t == 'X');
        if (sp.precision >= 0 && int(body.size()) < sp.precision)
            body.insert(0, size_t(sp.precision) - body.size(), '0');
        if (sp.alt && base == 8) body.insert(0, "0o");
        if (sp.alt && base == 16) body.insert(0, t == 'X' ? "0X" : "0x");
    } else {
        if (!v.is_number()) fail("must be real number, not " + type_name(v));
        const double f = v.get_float();
        negative = std::signbit(f) && !std::isnan(f);
        std::string spec = "%";
        if (sp.alt) spec += '#';
        spec += '.' + std::to_string(sp.precision < 0 ? 6 : sp.precision) + t;
        body = c_format(spec.c_str(), std::fabs(f));
        if (std::isnan(f)) body = (t >= 'A' && t <= 'Z') ? "NAN" : "nan";
    }
    const std::string sign = negative ? "-" : (sp.plus ? "+" : (sp.space ? " " : ""));
    if (sp.width > 0 && sp.zero && !sp.left) {
        const size_t total = sign.size() + body.size();
        if (total < size_t(sp.width)) {
            // zeros go after the sign and any 0x / 0o prefix
            size_t at = 0;
            if (body.size() >= 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X' || body[1] == 'o')) at = 2;
            body.insert(at, size_t(sp.width) - total, '0');
        }
    }
    return pad(sign + body, size_t(std::max(sp.width, 0)), sp.left);
}

std::string ascii_repr(const Value& v, size_t limit) {
    const std::string r = py_repr(v, limit);
    std::string out;
    size_t pos = 0;
    while (pos < r.size()) {
        const uint32_t cp = text::next_code_point(r, pos);
        if (cp < 0x80) out += char(cp);
        else append_code_point_escape(out, cp);
    }
    return out;
}

// ---- the format-spec mini-language ----

struct FormatSpec {
    uint32_t fill = ' ';
    char align = 0;  // < > ^ =
    char sign = '-';
    bool alt = false;
    bool zero = false;
    int width = -1;
    char grouping = 0;
    int precision = -1;
    char type = 0;
};

FormatSpec parse_format_spec(std::string_view spec) {
    FormatSpec f;
    size_t i = 0;
    const auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (!spec.empty()) {  // [[fill]align]
        size_t next = 0;
        const uint32_t first = text::next_code_point(spec, next);
        if (next < spec.size() && is_align(spec[next])) {
            f.fill = first;
            f.align = spec[next];
            i = next + 1;
        } else if (is_align(spec[0])) {
            f.align = spec[0];
            i = 1;
        }
    }
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) f.sign = spec[i++];
    if (i < spec.size() && spec[i] == '#') {
        f.alt = true;
        ++i;
    }
    if (i < spec.size() && spec[i] == '0') {
        f.zero = true;
        ++i;
    }
    const auto read_int = [&]() {
        int v = -1;
        while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
            v = (v < 0 ? 0 : v) * 10 + (spec[i++] - '0');
            if (v > 100000) fail("a format width or precision above 100000");
        }
        return v;
    };
    f.width = read_int();
    if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) f.grouping = spec[i++];
    if (i < spec.size() && spec[i] == '.') {
        ++i;
        f.precision = read_int();
        if (f.precision < 0) fail("format specifier missing precision");
    }
    if (i < spec.size()) f.type = spec[i++];
    if (i != spec.size()) fail("invalid format specifier '" + std::string(spec) + "'");
    return f;
}

std::string group_digits(const std::string& digits, char sep) {
    std::string out;
    const size_t n = digits.size();
    for (size_t i = 0; i < n; ++i) {
        if (i && (n - i) % 3 == 0) out += sep;
        out += digits[i];
    }
    return out;
}

std::string align_field(const std::string& sign, const std::string& body, const FormatSpec& f, char default_align) {
    const char align = f.align ? f.align : (f.zero && default_align == '>' ? '=' : default_align);
    const uint32_t fill = !f.align && f.zero ? '0' : f.fill;
    const size_t n = text::code_point_count(sign) + text::code_point_count(body);
    if (f.width < 0 || n >= size_t(f.width)) return sign + body;
    const size_t padn = size_t(f.width) - n;
    std::string fill_one;
    text::append_code_point(fill_one, fill);
    const auto fills = [&](size_t k) {
        std::string s;
        for (size_t i = 0; i < k; ++i) s += fill_one;
        return s;
    };
    switch (align) {
    case '<': return sign + body + fills(padn);
    case '^': return fills(padn / 2) + sign + body + fills(padn - padn / 2);
    case '=': return sign + fills(padn) + body;
    default: return fills(padn) + sign + body;
    }
}

std::string format_float_spec(double x, const FormatSpec& f) {
    char t = f.type;
    const bool negative = std::signbit(x) && !std::isnan(x);
    const double a = std::fabs(x);
    std::string body;
    if (t == 0 && f.precision < 0) {
        body = float_repr(a);
    } else {
        const int prec = f.precision < 0 ? 6 : f.precision;
        double val = a;
        const bool percent = t == '%';
        if (percent) {
            val *= 100;
            t = 'f';
        }
        if (t == 0 && std::isfinite(val)) {
            // Python: like 'g', but exponent notation from exp >= p - 1 on, and fixed notation
            // keeps a digit after the point.
            const int p = std::max(prec, 1);
            const std::string sci = c_format(("%." + std::to_string(p - 1) + "e").c_str(), val);
            const int exp10 = std::atoi(sci.c_str() + sci.find('e') + 1);
            const auto strip_zeros = [](std::string x) {
                if (x.find('.') == std::string::npos) return x;
                while (x.back() == '0') x.pop_back();
                if (x.back() == '.') x.pop_back();
                return x;
            };
            if (exp10 >= -4 && exp10 < p - 1) {
                body = strip_zeros(c_format(("%." + std::to_string(p - 1 - exp10) + "f").c_str(), val));
                if (body.find('.') == std::string::npos) body += ".0";
            } else {
                const size_t e = sci.find('e');
                body = strip_zeros(sci.substr(0, e)) + sci.substr(e);
            }
        } else if (t == 0 || t == 'n') {
            const std::string spec = "%." + std::to_string(std::max(prec, 1)) + "g";
            body = c_format(spec.c_str(), val);
        } else {
            std::string spec = "%";
            if (f.alt) spec += '#';
            spec += "." + std::to_string(prec) + t;
            body = c_format(spec.c_str(), val);
        }
        if (percent) body += '%';
    }
    if (f.grouping && std::isfinite(a)) {
        const size_t end = body.find_first_not_of("0123456789");
        body = group_digits(body.substr(0, end), f.grouping) + (end == std::string::npos ? "" : body.substr(end));
    }
    const std::string sign = negative ? "-" : (f.sign == '+' ? "+" : (f.sign == ' ' ? " " : ""));
    return align_field(sign, body, f, '>');
}

std::string str_format_impl(Evaluator& ev, std::string_view fmt, const Args& args, int depth);

}  // namespace

std::string percent_format(std::string_view fmt, const Value& args, size_t limit) {
    std::vector<Value> positional;
    const DictData* mapping = nullptr;
    // CPython: an argument with __getitem__ other than a tuple or str is a mapping, and then
    // arguments left over are no error ('x' % [1] is 'x').
    bool mapping_like = false;
    if (args.kind() == Kind::Tuple) {
        positional = args.items();
    } else {
        positional.push_back(args);
        if (args.kind() == Kind::Dict) mapping = &args.dict();
        mapping_like = args.kind() == Kind::Dict || args.kind() == Kind::List || args.is_undefined();
    }
    size_t next_arg = 0;
    const auto take = [&]() -> const Value& {
        if (next_arg >= positional.size()) fail("not enough arguments for format string");
        return positional[next_arg++];
    };
    std::string out;
    size_t i = 0;
    while (i < fmt.size()) {
        const size_t pct = fmt.find('%', i);
        if (pct == std::string_view::npos) {
            out.append(fmt.substr(i));
            break;
        }
        out.append(fmt.substr(i, pct - i));
        i = pct + 1;
        if (i >= fmt.size()) fail("incomplete format");
        const Value* key_value = nullptr;
        if (fmt[i] == '(') {
            if (args.is_undefined()) fail_undefined(args);
            if (mapping == nullptr) fail("format requires a mapping");
            int nest = 1;
            size_t j = i + 1;
            while (j < fmt.size() && nest > 0) {
                nest += fmt[j] == '(' ? 1 : (fmt[j] == ')' ? -1 : 0);
                ++j;
            }
            if (nest > 0) fail("incomplete format key");
            const std::string key(fmt.substr(i + 1, j - i - 2));
            key_value = mapping->find(std::string_view(key));
            if (key_value == nullptr) fail("KeyError: " + string_repr(key));
            i = j;
        }
        Spec sp;
        for (; i < fmt.size(); ++i) {
            const char c = fmt[i];
            if (c == '-') {
                sp.left = true;
            } else if (c == '+') {
                sp.plus = true;
            } else if (c == ' ') {
                sp.space = true;
            } else if (c == '#') {
                sp.alt = true;
            } else if (c == '0') {
                sp.zero = true;
            } else {
                break;
            }
        }
        const auto read_num = [&](int& target) {
            if (i < fmt.size() && fmt[i] == '*') {
                const Value& w = take();
                if (!w.is_integral()) fail("* wants int");
                target = int(std::clamp<int64_t>(w.get_int(), -100000, 100000));
                if (target < 0) {
                    sp.left = true;
                    target = -target;
                }
                ++i;
                return;
            }
            while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
                target = (target < 0 ? 0 : target) * 10 + (fmt[i++] - '0');
                if (target > 100000) fail("a width or precision above 100000 in a format string");
            }
        };
        read_num(sp.width);
        if (i < fmt.size() && fmt[i] == '.') {
            ++i;
            sp.precision = 0;
            read_num(sp.precision);
        }
        while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
        if (i >= fmt.size()) fail("incomplete format");
        sp.type = fmt[i++];
        if (sp.type == '%') {
            out += '%';
            continue;
        }
        if (out.size() > limit) fail("a % format passed " + std::to_string(limit) + " bytes");
        const Value& v = key_value != nullptr ? *key_value : take();
        switch (sp.type) {
        case 's':
        case 'r':
        case 'a': {
            std::string s = sp.type == 's' ? py_str(v, limit)
                                           : (sp.type == 'r' ? py_repr(v, limit) : ascii_repr(v, limit));
            if (sp.precision >= 0) {
                const auto cps = text::code_points(s);
                if (cps.size() > size_t(sp.precision)) s = text::from_code_points(cps, 0, size_t(sp.precision));
            }
            out += pad(s, size_t(std::max(sp.width, 0)), sp.left);
            break;
        }
        case 'c': {
            std::string s;
            if (v.is_integral()) {
                const int64_t cp = v.get_int();
                if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("%c arg not in range(0x110000)");
                text::append_code_point(s, uint32_t(cp));
            } else if (v.is_string() && text::code_point_count(v.str()) == 1) {
                s = v.str();
            } else {
                fail("%c requires an int or a unicode character, not " + type_name(v));
            }
            out += pad(s, size_t(std::max(sp.width, 0)), sp.left);
            break;
        }
        case 'd':
        case 'i':
        case 'u':
        case 'o':
        case 'x':
        case 'X':
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G': out += format_number_percent(sp, v); break;
        default: fail(std::string("unsupported format character '") + sp.type + "' in a % format string");
        }
    }
    if (out.size() > limit) fail("a % format passed " + std::to_string(limit) + " bytes");
    if (!mapping_like && next_arg < positional.size()) {
        fail("not all arguments converted during string formatting");
    }
    return out;
}

std::string format_value(const Value& v, std::string_view spec) {
    if (spec.empty()) return py_str(v);
    const FormatSpec f = parse_format_spec(spec);
    switch (v.kind()) {
    case Kind::String: {
        if (f.type != 0 && f.type != 's') {
            fail(std::string("unknown format code '") + f.type + "' for object of type 'str'");
        }
        if (f.sign != '-' || f.alt || f.grouping) fail("invalid format specifier for a str");
        std::string s = v.str();
        if (f.precision >= 0) {
            const auto cps = text::code_points(s);
            if (cps.size() > size_t(f.precision)) s = text::from_code_points(cps, 0, size_t(f.precision));
        }
        return align_field("", s, f, '<');
    }
    case Kind::Bool:
    case Kind::Int: {
        const int64_t i = v.get_int();
        const char t = f.type;
        if (t == 'e' || t == 'E' || t == 'f' || t == 'F' || t == 'g' || t == 'G' || t == '%') {
            return format_float_spec(double(i), f);
        }
        if (f.precision >= 0) fail("precision not allowed in integer format specifier");
        std::string body;
        if (t == 'c') {
            if (i < 0 || i > 0x10FFFF || (i >= 0xD800 && i <= 0xDFFF)) fail("%c arg not in range(0x110000)");
            text::append_code_point(body, uint32_t(i));
            return align_field("", body, f, '<');
        }
        const int base = t == 'b' ? 2 : (t == 'o' ? 8 : (t == 'x' || t == 'X' ? 16 : 10));
        if (t != 0 && t != 'd' && t != 'n' && base == 10) {
            fail(std::string("unknown format code '") + t + "' for object of type 'int'");
        }
        body = int_digits(i, base, t == 'X');
        if (f.grouping) body = group_digits(body, f.grouping);
        if (f.alt && base != 10) body = std::string("0") + (t == 'X' ? 'X' : t) + body;
        const std::string sign = i < 0 ? "-" : (f.sign == '+' ? "+" : (f.sign == ' ' ? " " : ""));
        return align_field(sign, body, f, '>');
    }
    case Kind::Float: return format_float_spec(v.get_float(), f);
    default: fail("unsupported format string passed to " + type_name(v) + ".__format__");
    }
}

std::string str_format(Evaluator& ev, std::string_view fmt, const Args& args) {
    return str_format_impl(ev, fmt, args, 0);
}

namespace {

// One replacement field's value: {name.attr[key]...}.
Value field_value(Evaluator& ev, std::string_view field, size_t& p, const Args& args, size_t& auto_index,
                  bool& used_auto, bool& used_manual) {
    size_t name_end = 0;
    while (name_end < field.size() && field[name_end] != '!' && field[name_end] != ':' && field[name_end] != '.' &&
           field[name_end] != '[') {
        ++name_end;
    }
    const std::string_view name = field.substr(0, name_end);
    const auto all_digits = [](std::string_view s) {
        return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    Value v;
    if (name.empty()) {
        if (used_manual) fail("cannot switch from manual field specification to automatic field numbering");
        used_auto = true;
        if (auto_index >= args.pos.size()) fail("Replacement index " + std::to_string(auto_index) + " out of range");
        v = args.pos[auto_index++];
    } else if (all_digits(name)) {
        if (used_auto) fail("cannot switch from automatic field numbering to manual field specification");
        used_manual = true;
        const size_t idx = name.size() > 6 ? SIZE_MAX : size_t(std::stoul(std::string(name)));
        if (idx >= args.pos.size()) fail("Replacement index " + std::string(name) + " out of range");
        v = args.pos[idx];
    } else {
        const Value* found = nullptr;
        for (const auto& [k, val] : args.kw) {
            if (k == name) found = &val;
        }
        if (found == nullptr) fail("KeyError: " + string_repr(name));
        v = *found;
    }
    p = name_end;
    while (p < field.size() && (field[p] == '.' || field[p] == '[')) {
        if (field[p] == '.') {
            size_t q = p + 1;
            while (q < field.size() && field[q] != '.' && field[q] != '[' && field[q] != '!' && field[q] != ':') ++q;
            v = ev.getattr(v, std::string(field.substr(p + 1, q - p - 1)));
            p = q;
        } else {
            const size_t q = field.find(']', p);
            if (q == std::string_view::npos) fail("Missing ']' in format string");
            const std::string key(field.substr(p + 1, q - p - 1));
            const bool numeric = all_digits(key) && key.size() < 10;
            v = ev.getitem(v, numeric ? Value::integer(std::stoll(key)) : Value::string(key));
            p = q + 1;
        }
    }
    return v;  // an Undefined (an unsafe attribute) formats as ""; using it further fails
}

std::string str_format_impl(Evaluator& ev, std::string_view fmt, const Args& args, int depth) {
    if (depth > 2) fail("Max string recursion exceeded");
    std::string out;
    size_t auto_index = 0;
    bool used_auto = false, used_manual = false;
    size_t i = 0;
    while (i < fmt.size()) {
        const char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out += '}';
                i += 2;
                continue;
            }
            fail("Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            ++i;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            i += 2;
            continue;
        }
        // {field[!conv][:spec]}, with nested {} in the spec
        size_t j = i + 1;
        int nest = 1;
        while (j < fmt.size()) {
            if (fmt[j] == '{') ++nest;
            if (fmt[j] == '}' && --nest == 0) break;
            ++j;
        }
        if (j >= fmt.size()) fail("expected '}' before end of string");
        const std::string_view field = fmt.substr(i + 1, j - i - 1);
        i = j + 1;
        size_t p = 0;
        Value v = field_value(ev, field, p, args, auto_index, used_auto, used_manual);
        char conv = 0;
        if (p < field.size() && field[p] == '!') {
            if (p + 1 >= field.size()) fail("end of string while looking for conversion specifier");
            conv = field[p + 1];
            p += 2;
        }
        std::string spec;
        if (p < field.size()) {
            if (field[p] != ':') fail("expected ':' after conversion specifier");
            spec = str_format_impl(ev, field.substr(p + 1), args, depth + 1);
        }
        if (conv == 'r') {
            v = Value::string(py_repr(v, ev.options().max_string_bytes));
        } else if (conv == 's') {
            v = Value::string(py_str(v, ev.options().max_string_bytes));
        } else if (conv == 'a') {
            v = Value::string(ascii_repr(v, ev.options().max_string_bytes));
        } else if (conv != 0) {
            fail(std::string("Unknown conversion specifier ") + conv);
        }
        out += v.is_string() || !spec.empty() ? format_value(v, spec) : py_str(v, ev.options().max_string_bytes);
        if (out.size() > ev.options().max_string_bytes) fail("str.format() built a string over the limit");
    }
    return out;
}

}  // namespace

}  // namespace snapkv::jinja
