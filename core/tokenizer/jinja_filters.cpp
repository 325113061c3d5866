// Jinja's string and number filters as jinja2 3.1's filters.py defines them (signatures,
// defaults, Undefined handling), with transformers' tojson (json.dumps, ensure_ascii=False), and
// the filter table. Filters over sequences (map, select, sort, join, ...) are in
// jinja_filters_seq.cpp. Filters jinja2 has but chat templates do not need (urlize, random,
// pprint, ...) are registered so a template parses, and fail by name when reached.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

std::string soft_str(Evaluator& ev, const Value& v) { return v.is_string() ? v.str() : ev.to_str(v); }

bool arg_bool(const Value& v) { return truthy(v); }

// ---- the filters ----

Value f_abs(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "abs");
    if (v.is_integral()) {
        if (v.get_int() == INT64_MIN) fail("integer overflow in abs(-2**63)");
        return Value::integer(std::llabs(v.get_int()));
    }
    if (v.kind() == Kind::Float) return Value::number(std::fabs(v.get_float()));
    if (v.is_undefined()) fail_undefined(v);
    fail("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "attr", {"name"});
    if (!p.has(0)) fail("attr() missing 1 required positional argument: 'name'");
    const std::string& name = arg_str(p[0], "attr", "name");
    if (v.is_undefined()) fail_undefined(v);
    bool found = false;
    Value a = python_attribute(ev, v, name, found);
    if (found) return a;
    if (v.kind() == Kind::Namespace) return ev.getattr(v, name);
    return Value::undefined("'" + object_type_repr(v) + "' has no attribute '" + name + "'");
}

Value f_capitalize(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "capitalize");
    return ev.make_string(text::capitalize(soft_str(ev, v)));
}

Value f_center(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "center", {"width"});
    const int64_t width = p.has(0) ? arg_int(p[0], "center", "width") : 80;
    if (width > int64_t(ev.options().max_output_bytes)) fail("center(): width " + std::to_string(width) + " too large");
    return ev.make_string(text::center(soft_str(ev, v), width, " "));
}

Value f_default(Evaluator&, const Value& v, const Args& args) {
    const Params p(args, "default", {"default_value", "boolean"});
    const bool boolean = p.has(1) && arg_bool(p[1]);
    if (v.is_undefined() || (boolean && !truthy(v))) return p.get(0, Value::string(""));
    return v;
}

Value f_escape(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "escape");
    if (v.is_markup()) return v;
    return ev.make_string(text::html_escape(soft_str(ev, v)), true);
}

Value f_forceescape(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "forceescape");
    return ev.make_string(text::html_escape(soft_str(ev, v)), true);
}

bool parse_python_float(std::string_view raw, double& out) {
    const std::string_view s = text::strip(raw, nullptr, true, true);
    std::string clean;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_') {
            // underscores only between digits
            if (i == 0 || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
                !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
                return false;
            }
            continue;
        }
        clean += s[i];
    }
    if (clean.empty()) return false;
    std::string lower_case = text::lower(clean);
    const size_t sign = lower_case[0] == '+' || lower_case[0] == '-' ? 1 : 0;
    const std::string body = lower_case.substr(sign);
    if (body == "inf" || body == "infinity" || body == "nan") {
        out = body == "nan" ? std::nan("") : HUGE_VAL;
        if (lower_case[0] == '-') out = -out;
        return true;
    }
    // digits, one point, an exponent: what float() accepts (no hex, no spaces inside)
    size_t i = sign, digits = 0;
    while (i < clean.size() && std::isdigit(static_cast<unsigned char>(clean[i]))) ++i, ++digits;
    if (i < clean.size() && clean[i] == '.') {
        ++i;
        while (i < clean.size() && std::isdigit(static_cast<unsigned char>(clean[i]))) ++i, ++digits;
    }
    if (digits == 0) return false;
    if (i < clean.size() && (clean[i] == 'e' || clean[i] == 'E')) {
        ++i;
        if (i < clean.size() && (clean[i] == '+' || clean[i] == '-')) ++i;
        size_t exp_digits = 0;
        while (i < clean.size() && std::isdigit(static_cast<unsigned char>(clean[i]))) ++i, ++exp_digits;
        if (exp_digits == 0) return false;
    }
    if (i != clean.size()) return false;
    out = std::strtod(clean.c_str(), nullptr);
    return true;
}

// Python's int(s, base) for a str; false for what int() rejects.
bool parse_python_int(std::string_view raw, int64_t base, int64_t& out) {
    std::string_view s = text::strip(raw, nullptr, true, true);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.size() >= 2 && s[0] == '0') {
        const char p = char(s[1] | 0x20);
        const int64_t prefixed = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
        if (prefixed != 0 && (base == prefixed || base == 0)) {
            base = prefixed;
            s.remove_prefix(2);
            if (!s.empty() && s[0] == '_') s.remove_prefix(1);
        }
    }
    if (base == 0) base = 10;
    if (s.empty() || s.back() == '_') return false;
    uint64_t v = 0;
    bool last_underscore = true;
    for (const char c : s) {
        if (c == '_') {
            if (last_underscore) return false;
            last_underscore = true;
            continue;
        }
        last_underscore = false;
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (c >= 'a' && c <= 'z') d = c - 'a' + 10;
        if (c >= 'A' && c <= 'Z') d = c - 'A' + 10;
        if (d < 0 || d >= base) return false;
        if (v > (uint64_t(INT64_MAX) + 1 - uint64_t(d)) / uint64_t(base))
            fail("int(): '" + std::string(raw) + "' does not fit in 64 bits");
        v = v * uint64_t(base) + uint64_t(d);
    }
    if (!negative && v > uint64_t(INT64_MAX)) fail("int(): '" + std::string(raw) + "' does not fit in 64 bits");
    out = negative ? int64_t(0 - v) : int64_t(v);
    return true;
}

bool float_to_int(double f, int64_t& out) {
    if (!std::isfinite(f)) return false;
    if (std::fabs(f) >= 9.2e18) fail("int(): " + float_repr(f) + " does not fit in 64 bits");
    out = int64_t(f);
    return true;
}

Value f_float(Evaluator&, const Value& v, const Args& args) {
    const Params p(args, "float", {"default"});
    const Value fallback = p.get(0, Value::number(0.0));
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_number()) return Value::number(v.get_float());
    double f = 0;
    if (v.is_string() && parse_python_float(v.str(), f)) return Value::number(f);
    return fallback;
}

Value f_int(Evaluator&, const Value& v, const Args& args) {
    const Params p(args, "int", {"default", "base"});
    const Value fallback = p.get(0, Value::integer(0));
    const int64_t base = p.has(1) ? arg_int(p[1], "int", "base") : 10;
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_integral()) return Value::integer(v.get_int());
    int64_t i = 0;
    if (v.kind() == Kind::Float) return float_to_int(v.get_float(), i) ? Value::integer(i) : fallback;
    if (v.is_string()) {
        if ((base >= 2 && base <= 36) || base == 0) {
            if (parse_python_int(v.str(), base, i)) return Value::integer(i);
        }
        double f = 0;
        if (parse_python_float(v.str(), f) && float_to_int(f, i)) return Value::integer(i);
    }
    return fallback;
}

Value f_format(Evaluator& ev, const Value& v, const Args& args) {
    if (!args.pos.empty() && !args.kw.empty()) fail("can't handle positional and keyword arguments at the same time");
    Value operand;
    if (!args.kw.empty()) {
        DictData d;
        for (const auto& [k, val] : args.kw) d.put(Value::string(k), val);
        operand = Value::dict(std::move(d));
    } else {
        operand = Value::tuple(args.pos);
    }
    return ev.make_string(percent_format(soft_str(ev, v), operand, ev.options().max_string_bytes));
}

Value f_indent(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "indent", {"width", "first", "blank"});
    std::string indention = "    ";
    if (p.has(0)) {
        if (p[0].is_string()) {
            indention = p[0].str();
        } else {
            const int64_t w = arg_int(p[0], "indent", "width");
            if (w > 100000) fail("indent(): width " + std::to_string(w) + " too large");
            indention = std::string(size_t(std::max<int64_t>(w, 0)), ' ');
        }
    }
    const bool first = p.has(1) && arg_bool(p[1]);
    const bool blank = p.has(2) && arg_bool(p[2]);
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_string()) fail("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
    const std::vector<std::string> lines = text::splitlines(v.str() + "\n", false);
    if (v.str().size() + (lines.size() + 1) * indention.size() > ev.options().max_string_bytes) {
        fail("indent() would build a string over the limit of " + std::to_string(ev.options().max_string_bytes) +
             " bytes");
    }
    std::string rv;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
    } else if (!lines.empty()) {
        rv = lines[0];
        for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
    }
    if (first) rv = indention + rv;
    return ev.make_string(std::move(rv));
}

Value f_lower(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "lower");
    return ev.make_string(text::lower(soft_str(ev, v)));
}

Value f_upper(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "upper");
    return ev.make_string(text::upper(soft_str(ev, v)));
}

Value f_replace(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "replace", {"old", "new", "count"});
    if (!p.has(0) || !p.has(1)) fail("replace() missing required arguments 'old' and 'new'");
    const int64_t count = p.has(2) && !p[2].is_none() ? arg_int(p[2], "replace", "count") : -1;
    const std::string s = soft_str(ev, v), old = soft_str(ev, p[0]), repl = soft_str(ev, p[1]);
    if (old.empty() && !repl.empty() && (s.size() + 1) * repl.size() > ev.options().max_string_bytes) {
        fail("replace() would build a string over the limit");
    }
    ev.charge_search(s.size(), old.size());
    return ev.make_string(text::replace(s, old, repl, count));
}

double python_round(double x, int64_t ndigits) {
    if (!std::isfinite(x) || ndigits > 308) return x;
    if (ndigits < -308) return std::copysign(0.0, x);
    if (ndigits >= 0) {
        // printf rounds the exact binary value, half to even: CPython's correctly rounded round().
        char buf[512];
        std::snprintf(buf, sizeof(buf), "%.*f", int(std::min<int64_t>(ndigits, 300)), x);
        return std::strtod(buf, nullptr);
    }
    const double pow10 = std::pow(10.0, double(-ndigits));
    const double y = x / pow10;
    double z = std::round(y);
    if (std::fabs(y - std::trunc(y)) == 0.5) z = 2.0 * std::round(y / 2.0);
    return z * pow10;
}

Value f_round(Evaluator&, const Value& v, const Args& args) {
    const Params p(args, "round", {"precision", "method"});
    const int64_t precision = p.has(0) ? arg_int(p[0], "round", "precision") : 0;
    const std::string method = p.has(1) ? arg_str(p[1], "round", "method") : "common";
    if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_number()) fail("type " + type_name(v) + " doesn't define __round__ method");
    if (method == "common") {
        if (v.is_integral()) {
            if (precision >= 0) return Value::integer(v.get_int());
            const double r = python_round(double(v.get_int()), precision);
            return Value::integer(int64_t(r));
        }
        return Value::number(python_round(v.get_float(), precision));
    }
    const double scale = std::pow(10.0, double(precision));
    const double x = v.get_float() * scale;
    return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "safe");
    return v.is_markup() ? v : ev.make_string(soft_str(ev, v), true);
}

Value f_string(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "string");
    return v.is_string() ? v : ev.make_string(soft_str(ev, v));
}

Value f_striptags(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "striptags");
    std::string s = soft_str(ev, v);
    // markupsafe: drop comments and tags, collapse whitespace, unescape entities.
    std::string no_tags;
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 4, "<!--") == 0) {
            const size_t end = s.find("-->", i + 4);
            if (end == std::string::npos) {
                no_tags.append(s, i, std::string::npos);
                break;
            }
            i = end + 3;
        } else if (s[i] == '<') {
            const size_t end = s.find('>', i + 1);
            if (end == std::string::npos) {
                no_tags.append(s, i, std::string::npos);
                break;
            }
            i = end + 1;
        } else {
            no_tags += s[i++];
        }
    }
    std::string out;
    for (const std::string& w : text::split(no_tags, nullptr, -1, false)) out += (out.empty() ? "" : " ") + w;
    static const std::pair<const char*, const char*> k_entities[] = {{"&amp;", "&"},   {"&lt;", "<"},   {"&gt;", ">"},
                                                                     {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"},
                                                                     {"&apos;", "'"}};
    for (const auto& [from, to] : k_entities) out = text::replace(out, from, to, -1);
    return ev.make_string(std::move(out));
}

Value f_title(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "title");
    // jinja2's own title: split at runs of - ( { [ < and whitespace, then each piece is
    // piece[0].upper() + piece[1:].lower().
    const std::string s = soft_str(ev, v);
    const auto boundary = [](uint32_t cp) {
        return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || text::is_space(cp);
    };
    std::string out;
    size_t pos = 0;
    while (pos < s.size()) {
        const size_t start = pos;
        size_t first_end = pos;
        const bool sep = boundary(text::next_code_point(s, first_end));
        pos = first_end;
        while (pos < s.size()) {
            size_t next = pos;
            if (boundary(text::next_code_point(s, next)) != sep) break;
            pos = next;
        }
        out += text::upper(std::string_view(s).substr(start, first_end - start));
        out += text::lower(std::string_view(s).substr(first_end, pos - first_end));
    }
    return ev.make_string(std::move(out));
}

Value f_tojson(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions o;
    o.ensure_ascii = p.has(0) && arg_bool(p[0]);
    if (p.has(1) && !p[1].is_none()) {
        if (p[1].is_string()) {
            o.indent = p[1].str();
        } else {
            const int64_t n = arg_int(p[1], "tojson", "indent");
            if (n > 1000) fail("tojson(): indent " + std::to_string(n) + " is too large");
            o.indent = std::string(size_t(std::max<int64_t>(n, 0)), ' ');
        }
        o.item_separator = ",";
    }
    if (p.has(2) && !p[2].is_none()) {
        const Value& s = p[2];
        if (!s.is_sequence() || s.items().size() != 2 || !s.items()[0].is_string() || !s.items()[1].is_string()) {
            fail("tojson(): separators must be a pair of strings, got " + repr_for_message(s));
        }
        o.item_separator = s.items()[0].str();
        o.key_separator = s.items()[1].str();
    }
    o.sort_keys = p.has(3) && arg_bool(p[3]);
    o.max_bytes = ev.options().max_string_bytes;
    return ev.make_string(json_dumps(v, o));
}

Value f_trim(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "trim", {"chars"});
    const bool has_chars = p.has(0) && !p[0].is_none();
    if (has_chars && !p[0].is_string()) fail("strip arg must be None or str");
    const std::string s = soft_str(ev, v);
    return ev.make_string(std::string(text::strip(s, has_chars ? &p[0].str() : nullptr, true, true)));
}

Value f_truncate(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "truncate", {"length", "killwords", "end", "leeway"});
    const int64_t length = p.has(0) ? arg_int(p[0], "truncate", "length") : 255;
    const bool killwords = p.has(1) && arg_bool(p[1]);
    const std::string end = p.has(2) ? soft_str(ev, p[2]) : "...";
    const int64_t leeway = p.has(3) && !p[3].is_none() ? arg_int(p[3], "truncate", "leeway") : 5;
    const auto end_len = int64_t(text::code_point_count(end));
    if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
    if (leeway < 0) fail("expected leeway >= 0, got " + std::to_string(leeway));
    if (v.is_undefined()) return v;  // len(Undefined) is 0
    if (!v.is_string()) {
        // truncate takes len(s) and slices it: other sized values pass when short, else fail
        const int64_t n = ev.length(v);
        if (n <= length + leeway) return v;
        fail("'" + type_name(v) + "' object has no attribute 'rsplit'");
    }
    const std::string& s = v.str();
    const std::vector<uint32_t> cps = text::code_points(s);
    if (int64_t(cps.size()) <= length + leeway) return v;
    std::string head = text::from_code_points(cps, 0, size_t(length - end_len));
    if (!killwords) {
        const size_t sp = head.rfind(' ');
        if (sp != std::string::npos) head.resize(sp);
    }
    return ev.make_string(head + end);
}

Value f_wordcount(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "wordcount");
    const std::string s = soft_str(ev, v);
    int64_t n = 0;
    bool in_word = false;
    size_t pos = 0;
    while (pos < s.size()) {
        const uint32_t cp = text::next_code_point(s, pos);
        const bool w = cp == '_' || text::is_alpha(cp) || text::is_numeric(cp);
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::integer(n);
}

// textwrap.wrap(line, width, expand_tabs=False, replace_whitespace=False) as jinja2's wordwrap
// calls it: chunks of ASCII whitespace and words (split after hyphens inside words), filled
// greedily, whitespace dropped at the line ends, long words broken.
std::vector<std::string> text_wrap(const std::string& line, int64_t width, bool break_long, bool break_hyphens) {
    const auto ws = [](uint32_t c) {
        return c == ' ' || c == '\t' || c == '\n' || c == 0x0B || c == 0x0C || c == '\r';
    };
    std::vector<std::vector<uint32_t>> chunks;
    const std::vector<uint32_t> cps = text::code_points(line);
    for (size_t i = 0; i < cps.size();) {
        size_t j = i;
        const bool space = ws(cps[i]);
        while (j < cps.size() && ws(cps[j]) == space) {
            ++j;
            // a word breaks after a hyphen between letters ("well-known" -> "well-", "known")
            if (!space && break_hyphens && j < cps.size() && cps[j - 1] == '-' && j >= 2 &&
                text::is_alpha(cps[j - 2]) && text::is_alpha(cps[j])) {
                break;
            }
        }
        chunks.emplace_back(cps.begin() + std::ptrdiff_t(i), cps.begin() + std::ptrdiff_t(j));
        i = j;
    }
    std::reverse(chunks.begin(), chunks.end());
    const auto is_blank = [&](const std::vector<uint32_t>& c) { return std::all_of(c.begin(), c.end(), ws); };
    std::vector<std::string> lines;
    while (!chunks.empty()) {
        std::vector<std::vector<uint32_t>> cur;
        int64_t cur_len = 0;
        if (is_blank(chunks.back()) && !lines.empty()) chunks.pop_back();
        while (!chunks.empty() && cur_len + int64_t(chunks.back().size()) <= width) {
            cur_len += int64_t(chunks.back().size());
            cur.push_back(std::move(chunks.back()));
            chunks.pop_back();
        }
        if (!chunks.empty() && int64_t(chunks.back().size()) > width) {
            const int64_t space_left = width < 1 ? 1 : width - cur_len;
            std::vector<uint32_t>& chunk = chunks.back();
            if (break_long) {
                int64_t end = space_left;
                if (break_hyphens && int64_t(chunk.size()) > space_left) {
                    const auto begin = chunk.begin();
                    const auto stop = begin + std::ptrdiff_t(std::max<int64_t>(space_left, 0));
                    const auto hy = std::find(std::make_reverse_iterator(stop), std::make_reverse_iterator(begin),
                                              uint32_t('-'));
                    const int64_t at = hy == std::make_reverse_iterator(begin) ? -1 : int64_t(hy.base() - begin) - 1;
                    if (at > 0 && std::any_of(begin, begin + at, [](uint32_t c) { return c != '-'; })) end = at + 1;
                }
                end = std::min<int64_t>(std::max<int64_t>(end, 0), int64_t(chunk.size()));
                cur.emplace_back(chunk.begin(), chunk.begin() + std::ptrdiff_t(end));
                chunk.erase(chunk.begin(), chunk.begin() + std::ptrdiff_t(end));
                if (chunk.empty()) chunks.pop_back();
            } else if (cur.empty()) {
                cur.push_back(std::move(chunk));
                chunks.pop_back();
            }
        }
        if (!cur.empty() && is_blank(cur.back())) cur.pop_back();
        if (!cur.empty()) {
            std::string s;
            for (const auto& c : cur) s += text::from_code_points(c, 0, c.size());
            lines.push_back(std::move(s));
        }
    }
    return lines;
}

Value f_wordwrap(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "wordwrap", {"width", "break_long_words", "wrapstring", "break_on_hyphens"});
    const int64_t width = p.has(0) ? arg_int(p[0], "wordwrap", "width") : 79;
    const bool break_long = !p.has(1) || arg_bool(p[1]);
    const std::string wrap = p.has(2) && !p[2].is_none() ? soft_str(ev, p[2]) : "\n";
    const bool break_hyphens = !p.has(3) || arg_bool(p[3]);
    if (width <= 0) fail("invalid width " + std::to_string(width) + " (must be > 0)");
    std::string out;
    bool first_paragraph = true;
    for (const std::string& para : text::splitlines(soft_str(ev, v), false)) {
        if (!first_paragraph) out += wrap;
        first_paragraph = false;
        bool first = true;
        for (const std::string& line : text_wrap(para, width, break_long, break_hyphens)) {
            ev.step();
            if (!first) out += wrap;
            first = false;
            out += line;
            if (out.size() > ev.options().max_string_bytes) fail("wordwrap() built a string over the limit");
        }
        if (out.size() > ev.options().max_string_bytes) fail("wordwrap() built a string over the limit");
    }
    return ev.make_string(std::move(out));
}

const char* const k_unimplemented[] = {"filesizeformat", "pprint", "random", "urlencode", "urlize", "xmlattr"};

template <int N>
Value f_not_implemented(Evaluator&, const Value&, const Args&) {
    fail(std::string("the filter '") + k_unimplemented[N] + "' is not implemented");
}

const NamedFilter k_filters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"d", f_default},
    {"default", f_default},
    {"e", f_escape},
    {"escape", f_escape},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"lower", f_lower},
    {"replace", f_replace},
    {"round", f_round},
    {"safe", f_safe},
    {"string", f_string},
    {"striptags", f_striptags},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
    {"filesizeformat", f_not_implemented<0>},
    {"pprint", f_not_implemented<1>},
    {"random", f_not_implemented<2>},
    {"urlencode", f_not_implemented<3>},
    {"urlize", f_not_implemented<4>},
    {"wordwrap", f_wordwrap},
    {"xmlattr", f_not_implemented<5>},
};

}  // namespace

int find_filter(std::string_view name) {
    for (size_t i = 0; i < std::size(k_filters); ++i) {
        if (name == k_filters[i].name) return int(i);
    }
    size_t n = 0;
    const NamedFilter* seq = sequence_filters(n);
    for (size_t i = 0; i < n; ++i) {
        if (name == seq[i].name) return int(std::size(k_filters) + i);
    }
    return -1;
}

FilterFn filter_at(int id) {
    if (size_t(id) < std::size(k_filters)) return k_filters[id].fn;
    size_t n = 0;
    return sequence_filters(n)[size_t(id) - std::size(k_filters)].fn;
}

}  // namespace snapkv::jinja
