// The Jinja lexer, rule for rule as jinja2 3.1's lexer.py with transformers' settings: newlines
// normalised and one trailing newline dropped, `-` strips all whitespace next to a tag, `+`
// keeps it, trim_blocks eats the newline after %} and #}, lstrip_blocks eats the indentation
// before {% and {# (never before {{), and }} / %} only close a tag when brackets are balanced.
// String literals are unescaped as Python's unicode-escape codec does. No parsing here.
#include "core/tokenizer/jinja_lexer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/tokenizer/jinja.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

int count_newlines(std::string_view s, size_t begin, size_t end) {
    int n = 0;
    for (size_t i = begin; i < end; ++i) n += s[i] == '\n';
    return n;
}

class Lexer {
public:
    explicit Lexer(std::string source) : m_src(std::move(source)) {}

    std::vector<Token> run() {
        while (m_pos < m_src.size()) lex_root();
        Token eof;
        eof.type = TokType::Eof;
        eof.line = m_line;
        m_out.push_back(eof);
        return std::move(m_out);
    }

private:
    std::string m_src;
    size_t m_pos = 0;
    int m_line = 1;
    bool m_line_starting = true;  // the last match ended with a newline (lstrip_blocks)
    std::vector<Token> m_out;

    [[noreturn]] void error(const std::string& msg, int line) const { throw TemplateError(msg, line); }

    bool at(size_t pos, std::string_view s) const { return m_src.compare(pos, s.size(), s) == 0; }

    // Python's \s*: skips whitespace code points from pos, returns the new position.
    size_t skip_space(size_t pos) const {
        while (pos < m_src.size()) {
            size_t next = pos;
            if (!text::is_space(text::next_code_point(m_src, next))) break;
            pos = next;
        }
        return pos;
    }

    void emit(TokType type, int line, std::string text = {}) {
        Token t;
        t.type = type;
        t.line = line;
        t.text = std::move(text);
        m_out.push_back(std::move(t));
    }

    // The text before a tag, with `-` / lstrip_blocks applied, as a Data token.
    void emit_text(size_t begin, size_t end, char sign, bool lstrip_allowed) {
        std::string_view text(m_src.data() + begin, end - begin);
        const int line = m_line;
        m_line += count_newlines(m_src, begin, end);
        if (sign == '-') {
            text = text::strip(text, nullptr, false, true);
        } else if (sign != '+' && lstrip_allowed) {
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if (l_pos > 0 || m_line_starting) {
                const std::string_view tail = text.substr(l_pos);
                if (!tail.empty() && text::strip(tail, nullptr, true, false).empty()) text = text.substr(0, l_pos);
            }
        }
        if (!text.empty()) emit(TokType::Data, line, std::string(text));
    }

    // {% raw %} / {%- raw -%} at pos: the position after it, or npos.
    size_t match_raw_begin(size_t pos) const {
        size_t p = pos + 2;
        if (p < m_src.size() && (m_src[p] == '-' || m_src[p] == '+')) ++p;
        p = skip_space(p);
        if (!at(p, "raw")) return std::string::npos;
        p = skip_space(p + 3);
        if (at(p, "-%}")) return skip_space(p + 3);
        if (at(p, "%}")) return p + 2;
        return std::string::npos;
    }

    void lex_root() {
        // The first {{, {% or {# (a raw block wins over a plain {% at the same place).
        size_t i = m_pos;
        while (true) {
            i = m_src.find('{', i);
            if (i == std::string::npos || i + 1 >= m_src.size()) {
                emit_text(m_pos, m_src.size(), 0, false);
                m_pos = m_src.size();
                return;
            }
            const char c = m_src[i + 1];
            if (c == '{' || c == '%' || c == '#') break;
            ++i;
        }
        const char kind = m_src[i + 1];
        const char sign = i + 2 < m_src.size() && (m_src[i + 2] == '-' || m_src[i + 2] == '+') ? m_src[i + 2] : 0;
        if (kind == '%') {
            const size_t raw_end = match_raw_begin(i);
            if (raw_end != std::string::npos) {
                emit_text(m_pos, i, sign, true);
                m_line += count_newlines(m_src, i, raw_end);
                m_line_starting = m_src[raw_end - 1] == '\n';
                m_pos = raw_end;
                lex_raw();
                return;
            }
        }
        emit_text(m_pos, i, sign, kind != '{');
        m_pos = i + 2 + (sign != 0);
        m_line_starting = false;
        if (kind == '#') {
            lex_comment();
        } else {
            emit(kind == '{' ? TokType::VarBegin : TokType::BlockBegin, m_line);
            lex_tag(kind == '%');
        }
    }

    void lex_comment() {
        const int start_line = m_line;
        for (size_t j = m_pos; j < m_src.size(); ++j) {
            size_t end = std::string::npos;
            if (at(j, "+#}")) {
                end = j + 3;
            } else if (at(j, "-#}")) {
                end = skip_space(j + 3);
            } else if (at(j, "#}")) {
                end = j + 2;
                if (end < m_src.size() && m_src[end] == '\n') ++end;  // trim_blocks
            }
            if (end != std::string::npos) {
                m_line += count_newlines(m_src, m_pos, end);
                m_line_starting = m_src[end - 1] == '\n';
                m_pos = end;
                return;
            }
        }
        error("missing end of comment tag: '{#' without '#}'", start_line);
    }

    void lex_raw() {
        const int start_line = m_line;
        for (size_t j = m_src.find("{%", m_pos); j != std::string::npos; j = m_src.find("{%", j + 1)) {
            size_t p = j + 2;
            char sign = 0;
            if (p < m_src.size() && (m_src[p] == '-' || m_src[p] == '+')) sign = m_src[p++];
            p = skip_space(p);
            if (!at(p, "endraw")) continue;
            p = skip_space(p + 6);
            size_t end = std::string::npos;
            if (at(p, "+%}")) {
                end = p + 3;
            } else if (at(p, "-%}")) {
                end = skip_space(p + 3);
            } else if (at(p, "%}")) {
                end = p + 2;
                if (end < m_src.size() && m_src[end] == '\n') ++end;
            }
            if (end == std::string::npos) continue;
            emit_text(m_pos, j, sign, true);
            m_line += count_newlines(m_src, j, end);
            m_line_starting = m_src[end - 1] == '\n';
            m_pos = end;
            return;
        }
        error("missing end of raw directive: '{% raw %}' without '{% endraw %}'", start_line);
    }

    // Tokens of one {{ ... }} or {% ... %} up to and including its end.
    void lex_tag(bool block) {
        std::string balance;  // expected closing brackets
        while (m_pos < m_src.size()) {
            if (balance.empty() && try_tag_end(block)) return;
            const char c = m_src[m_pos];
            size_t next = m_pos;
            const uint32_t cp = text::next_code_point(m_src, next);
            if (text::is_space(cp)) {
                const size_t end = skip_space(m_pos);
                m_line += count_newlines(m_src, m_pos, end);
                m_pos = end;
                continue;
            }
            if (is_digit(c) && (m_pos == 0 || m_src[m_pos - 1] != '.') && lex_float()) continue;
            if (is_digit(c)) {
                lex_integer();
                continue;
            }
            if (is_name_start(c) || (cp >= 0x80 && (text::is_alpha(cp) || text::is_numeric(cp)))) {
                lex_name();
                continue;
            }
            if (c == '\'' || c == '"') {
                lex_string();
                continue;
            }
            lex_operator(balance);
        }
        // End of input inside a tag: the parser reports what it expected.
    }

    bool try_tag_end(bool block) {
        const char first = m_src[m_pos];
        if (first != '+' && first != '-' && first != '%' && first != '}') return false;
        size_t end = std::string::npos;
        if (block) {
            if (at(m_pos, "+%}")) {
                end = m_pos + 3;
            } else if (at(m_pos, "-%}")) {
                end = skip_space(m_pos + 3);
            } else if (at(m_pos, "%}")) {
                end = m_pos + 2;
                if (end < m_src.size() && m_src[end] == '\n') ++end;  // trim_blocks
            }
        } else {
            if (at(m_pos, "-}}")) {
                end = skip_space(m_pos + 3);
            } else if (at(m_pos, "}}")) {
                end = m_pos + 2;
            }
        }
        if (end == std::string::npos) return false;
        emit(block ? TokType::BlockEnd : TokType::VarEnd, m_line);
        m_line += count_newlines(m_src, m_pos, end);
        m_line_starting = m_src[end - 1] == '\n';
        m_pos = end;
        return true;
    }

    // (\d+_)*\d+ at p: the end, or npos.
    size_t digits(size_t p) const {
        if (p >= m_src.size() || !is_digit(m_src[p])) return std::string::npos;
        while (true) {
            while (p < m_src.size() && is_digit(m_src[p])) ++p;
            if (p + 1 < m_src.size() && m_src[p] == '_' && is_digit(m_src[p + 1])) {
                ++p;
                continue;
            }
            return p;
        }
    }

    bool lex_float() {
        const size_t int_end = digits(m_pos);
        size_t p = int_end;
        size_t frac_end = std::string::npos;
        if (p < m_src.size() && m_src[p] == '.') frac_end = digits(p + 1);
        size_t exp_from = frac_end != std::string::npos ? frac_end : int_end;
        size_t end = std::string::npos;
        if (exp_from < m_src.size() && (m_src[exp_from] == 'e' || m_src[exp_from] == 'E')) {
            size_t q = exp_from + 1;
            if (q < m_src.size() && (m_src[q] == '+' || m_src[q] == '-')) ++q;
            end = digits(q);
        }
        if (end == std::string::npos) end = frac_end;
        if (end == std::string::npos) return false;
        std::string digits_only;
        for (size_t k = m_pos; k < end; ++k) {
            if (m_src[k] != '_') digits_only += m_src[k];
        }
        Token t;
        t.type = TokType::Float;
        t.line = m_line;
        t.text = m_src.substr(m_pos, end - m_pos);
        t.float_value = std::strtod(digits_only.c_str(), nullptr);
        m_out.push_back(std::move(t));
        m_pos = end;
        return true;
    }

    void lex_integer() {
        int base = 10;
        size_t p = m_pos;
        const char p1 = m_pos + 1 < m_src.size() ? char(m_src[m_pos + 1] | 0x20) : 0;
        std::string body;
        if (m_src[p] == '0' && (p1 == 'b' || p1 == 'o' || p1 == 'x')) {
            base = p1 == 'b' ? 2 : (p1 == 'o' ? 8 : 16);
            const auto ok = [&](char c) {
                return base == 16 ? is_hex(c) : (base == 8 ? (c >= '0' && c <= '7') : (c == '0' || c == '1'));
            };
            size_t q = p + 2;
            while (true) {
                size_t r = q;
                if (r < m_src.size() && m_src[r] == '_') ++r;
                if (r < m_src.size() && ok(m_src[r])) {
                    body += m_src[r];
                    q = r + 1;
                } else {
                    break;
                }
            }
            if (body.empty()) {
                base = 10;  // "0x" alone: the integer 0, then a name
            } else {
                p = q;
            }
        }
        if (base == 10) {
            // [1-9](_?\d)* or 0(_?0)*
            const bool zero = m_src[p] == '0';
            body = m_src[p++];
            while (true) {
                size_t r = p;
                if (r < m_src.size() && m_src[r] == '_') ++r;
                if (r < m_src.size() && is_digit(m_src[r]) && (!zero || m_src[r] == '0')) {
                    body += m_src[r];
                    p = r + 1;
                } else {
                    break;
                }
            }
        }
        errno = 0;
        const unsigned long long v = std::strtoull(body.c_str(), nullptr, base);
        if (errno == ERANGE || v > uint64_t(INT64_MAX)) {
            error("integer literal " + m_src.substr(m_pos, p - m_pos) + " does not fit in 64 bits", m_line);
        }
        Token t;
        t.type = TokType::Integer;
        t.line = m_line;
        t.text = m_src.substr(m_pos, p - m_pos);
        t.int_value = int64_t(v);
        m_out.push_back(std::move(t));
        m_pos = p;
    }

    void lex_name() {
        size_t p = m_pos;
        while (p < m_src.size()) {
            const char c = m_src[p];
            if (is_name_start(c) || is_digit(c)) {
                ++p;
                continue;
            }
            size_t next = p;
            const uint32_t cp = text::next_code_point(m_src, next);
            if (cp < 0x80 || !(text::is_alpha(cp) || text::is_numeric(cp))) break;
            // Python's \w takes any letter or number, then jinja2 requires str.isidentifier():
            // a letter first, and no numbers but decimal digits (not '¹', not '½').
            if ((p == m_pos && !text::is_alpha(cp)) || (!text::is_alpha(cp) && !text::is_decimal(cp))) {
                error("invalid character in identifier: '" + m_src.substr(p, next - p) + "'", m_line);
            }
            p = next;
        }
        emit(TokType::Name, m_line, m_src.substr(m_pos, p - m_pos));
        m_pos = p;
    }

    void lex_string() {
        const char quote = m_src[m_pos];
        size_t p = m_pos + 1;
        while (p < m_src.size() && m_src[p] != quote) p += m_src[p] == '\\' ? 2 : 1;
        if (p >= m_src.size()) error("unterminated string literal starting with " + std::string(1, quote), m_line);
        Token t;
        t.type = TokType::String;
        t.line = m_line;
        t.text = unescape(std::string_view(m_src).substr(m_pos + 1, p - m_pos - 1));
        m_out.push_back(std::move(t));
        m_line += count_newlines(m_src, m_pos, p);
        m_pos = p + 1;
    }

    // Python's unicode-escape codec over the literal's text.
    std::string unescape(std::string_view s) const {
        std::string out;
        out.reserve(s.size());
        for (size_t i = 0; i < s.size(); ++i) {
            if (s[i] != '\\' || i + 1 >= s.size()) {
                out += s[i];
                continue;
            }
            const char e = s[++i];
            switch (e) {
            case '\n': break;  // line continuation
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x':
            case 'u':
            case 'U': {
                const size_t n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
                uint32_t cp = 0;
                for (size_t k = 0; k < n; ++k) {
                    if (i + 1 + k >= s.size() || !is_hex(s[i + 1 + k])) {
                        error(std::string("truncated \\") + e + std::string(n, 'X') + " escape in a string literal",
                              m_line);
                    }
                    const char h = s[i + 1 + k];
                    cp = cp * 16 + uint32_t(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                i += n;
                if (cp > 0x10FFFF) error("illegal Unicode character \\U" + std::string(s.substr(i - 7, 8)), m_line);
                if (cp >= 0xD800 && cp <= 0xDFFF) {
                    error("string escape of the surrogate code point " + std::to_string(cp) +
                              " (Python would keep it unpaired; it cannot be UTF-8)",
                          m_line);
                }
                text::append_code_point(out, cp);
                break;
            }
            case 'N': error("named Unicode escapes (\\N{...}) in string literals are not supported", m_line);
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = uint32_t(e - '0');
                    for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) {
                        cp = cp * 8 + uint32_t(s[++i] - '0');
                    }
                    text::append_code_point(out, cp);
                } else if (static_cast<unsigned char>(e) >= 0x80) {
                    // jinja2 encodes the literal with backslashreplace before decoding it, so a
                    // backslash before a non-ASCII character leaves that character's escape as text.
                    size_t pos = i;
                    const uint32_t cp = text::next_code_point(s, pos);
                    i = pos - 1;
                    char buf[16];
                    std::snprintf(buf, sizeof(buf), cp < 0x100 ? "\\x%02x" : (cp < 0x10000 ? "\\u%04x" : "\\U%08x"),
                                  unsigned(cp));
                    out += buf;
                } else {
                    out += '\\';  // unknown escapes stay as written
                    out += e;
                }
            }
        }
        return out;
    }

    void lex_operator(std::string& balance) {
        // The longest operator first, as jinja2's operator_re.
        static const std::string_view k_two[] = {"//", "**", "==", "!=", ">=", "<="};
        static const std::string_view k_one = "+-/*%~[](){}><=.:|,;";
        const char c = m_src[m_pos];
        std::string_view op;
        for (const std::string_view two : k_two) {
            if (two[0] == c && at(m_pos, two)) op = two;
        }
        if (op.empty() && k_one.find(c) != std::string_view::npos) op = std::string_view(&k_one[k_one.find(c)], 1);
        if (!op.empty()) {
            if (op.size() == 1 && (c == '(' || c == '[' || c == '{')) {
                balance += c == '(' ? ')' : (c == '[' ? ']' : '}');
            } else if (op.size() == 1 && (c == ')' || c == ']' || c == '}')) {
                if (balance.empty()) error(std::string("unexpected '") + c + "'", m_line);
                if (balance.back() != c) {
                    error(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", m_line);
                }
                balance.pop_back();
            }
            emit(TokType::Op, m_line, std::string(op));
            m_pos += op.size();
            return;
        }
        size_t next = m_pos;
        const uint32_t cp = text::next_code_point(m_src, next);
        std::string ch = m_src.substr(m_pos, next - m_pos);
        if (cp < 0x20 || cp == 0x7F) ch = "\\x" + std::to_string(cp);
        error("unexpected character '" + ch + "' inside a tag", m_line);
    }
};

// Normalises \r\n and \r to \n and drops one trailing newline (keep_trailing_newline=False).
std::string normalize_newlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

}  // namespace

std::vector<Token> tokenize(const std::string& source) {
    const size_t bad = text::invalid_utf8_at(source);
    if (bad != std::string::npos) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", static_cast<unsigned char>(source[bad]));
        throw TemplateError(
            std::string("template text is not valid UTF-8 (byte ") + hex + " at offset " + std::to_string(bad) + ")",
            1 + count_newlines(source, 0, bad));
    }
    return Lexer(normalize_newlines(source)).run();
}

std::string describe(const Token& tok) {
    switch (tok.type) {
    case TokType::Data: return "template text";
    case TokType::VarBegin: return "'{{'";
    case TokType::VarEnd: return "end of print statement '}}'";
    case TokType::BlockBegin: return "'{%'";
    case TokType::BlockEnd: return "end of statement block '%}'";
    case TokType::Eof: return "end of template";
    case TokType::String: return "string literal";
    default: return "'" + tok.text + "'";
    }
}

}  // namespace snapkv::jinja
