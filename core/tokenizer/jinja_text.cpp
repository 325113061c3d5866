// UTF-8 and Python str helpers for the Jinja interpreter. Character categories come from PCRE2's
// Unicode tables (one small pattern, matched per non-ASCII code point), case mapping from the
// generated runs in jinja_case_tables.h. No normalisation, no locale.
#include "core/tokenizer/jinja_text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <memory>

#include "core/tokenizer/jinja_case_tables.h"
#include "core/tokenizer/unicode_util.h"

namespace snapkv::jinja::text {
namespace {

// One character's general category group, as the numbered group of the pattern that matched.
enum Category { Upper = 1, Lower, Title, OtherLetter, Decimal, OtherNumber, Separator, Other, Rest };

class Classifier {
public:
    Classifier() {
        const char* pattern =
            "^(?:(\\p{Lu})|(\\p{Ll})|(\\p{Lt})|(\\p{Lm}|\\p{Lo})|(\\p{Nd})|(\\p{Nl}|\\p{No})|(\\p{Z})|(\\p{C})|"
            "([\\s\\S]))";
        int err = 0;
        PCRE2_SIZE off = 0;
        m_code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                               PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
    }
    ~Classifier() { pcre2_code_free(m_code); }
    Classifier(const Classifier&) = delete;
    Classifier& operator=(const Classifier&) = delete;

    Category classify(uint32_t cp) const {
        if (m_code == nullptr || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return Other;
        std::string buf;
        append_code_point(buf, cp);
        struct MatchData {
            pcre2_match_data* p;
            ~MatchData() { pcre2_match_data_free(p); }
        };
        thread_local MatchData md{pcre2_match_data_create(12, nullptr)};
        const int rc = pcre2_match(m_code, reinterpret_cast<PCRE2_SPTR>(buf.data()), buf.size(), 0, PCRE2_NO_UTF_CHECK,
                                   md.p, nullptr);
        if (rc < 2) return Rest;
        return static_cast<Category>(rc - 1);  // the highest group that took part is the one that matched
    }

private:
    pcre2_code* m_code = nullptr;
};

Category category(uint32_t cp) {
    if (cp < 0x80) {
        if (cp >= 'A' && cp <= 'Z') return Upper;
        if (cp >= 'a' && cp <= 'z') return Lower;
        if (cp >= '0' && cp <= '9') return Decimal;
        if (cp == ' ') return Separator;
        if (cp < 0x20 || cp == 0x7F) return Other;
        return Rest;
    }
    static const Classifier classifier;
    return classifier.classify(cp);
}

template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], uint32_t cp) {
    const CodeRange* it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                           [](uint32_t c, const CodeRange& r) { return c < r.first; });
    return it != std::begin(ranges) && cp <= (it - 1)->last;
}

template <size_t N>
uint32_t map_runs(const CaseRun (&runs)[N], uint32_t cp) {
    // The last run that starts at or before cp.
    const CaseRun* it = std::upper_bound(std::begin(runs), std::end(runs), cp,
                                         [](uint32_t c, const CaseRun& r) { return c < r.start; });
    if (it == std::begin(runs)) return cp;
    --it;
    if (cp > it->end || (cp - it->start) % it->stride != 0) return cp;
    return uint32_t(int64_t(cp) + it->delta);
}

template <size_t N>
const char* special(const CaseSpecial (&specials)[N], uint32_t cp) {
    for (const CaseSpecial& s : specials) {
        if (s.cp == cp) return s.mapped;
    }
    return nullptr;
}

template <size_t NR, size_t NS>
std::string map_string(std::string_view s, const CaseRun (&runs)[NR], const CaseSpecial (&specials)[NS],
                       bool to_upper_case) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
        const auto c = static_cast<unsigned char>(s[pos]);
        if (c < 0x80) {
            char ch = char(c);
            if (to_upper_case && ch >= 'a' && ch <= 'z') ch = char(ch - 32);
            if (!to_upper_case && ch >= 'A' && ch <= 'Z') ch = char(ch + 32);
            out += ch;
            ++pos;
            continue;
        }
        const uint32_t cp = next_code_point(s, pos);
        if (const char* m = special(specials, cp)) {
            out += m;
        } else {
            append_code_point(out, map_runs(runs, cp));
        }
    }
    return out;
}

void append_lower(std::string& out, const std::vector<uint32_t>& cps, size_t i);

}  // namespace

size_t invalid_utf8_at(std::string_view s) {
    size_t i = 0;
    const size_t n = s.size();
    while (i < n) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len = 0;
        uint32_t cp = 0;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (i + len > n) return i;
        for (size_t k = 1; k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
            return i;
        }
        i += len;
    }
    return std::string_view::npos;
}

uint32_t next_code_point(std::string_view s, size_t& pos) {
    const auto c = static_cast<unsigned char>(s[pos]);
    if (c < 0x80) {
        ++pos;
        return c;
    }
    size_t len = c >= 0xF0 ? 4 : (c >= 0xE0 ? 3 : 2);
    uint32_t cp = c & (len == 4 ? 0x07 : (len == 3 ? 0x0F : 0x1F));
    if (pos + len > s.size()) len = s.size() - pos;  // never read past the end of bad input
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + k]) & 0x3F);
    pos += std::max<size_t>(len, 1);
    return cp;
}

void append_code_point(std::string& out, uint32_t cp) { snapkv::append_utf8(out, cp); }

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t code_point_count(std::string_view s) {
    size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

std::vector<uint32_t> code_points(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) out.push_back(next_code_point(s, pos));
    return out;
}

std::string from_code_points(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) append_code_point(out, cps[i]);
    return out;
}

bool is_space(uint32_t cp) {
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_printable(uint32_t cp) {
    if (cp == ' ') return true;
    const Category c = category(cp);
    return c != Separator && c != Other;
}

bool is_alpha(uint32_t cp) {
    const Category c = category(cp);
    return c == Upper || c == Lower || c == Title || c == OtherLetter;
}
bool is_decimal(uint32_t cp) { return category(cp) == Decimal; }
bool is_digit(uint32_t cp) { return category(cp) == Decimal || in_ranges(k_digit_not_decimal, cp); }
bool is_numeric(uint32_t cp) {
    const Category c = category(cp);
    return c == Decimal || c == OtherNumber || in_ranges(k_numeric_letters, cp);
}
bool is_upper_cased(uint32_t cp) { return category(cp) == Upper || in_ranges(k_other_uppercase, cp); }
bool is_lower_cased(uint32_t cp) { return category(cp) == Lower || in_ranges(k_other_lowercase, cp); }
bool is_cased(uint32_t cp) {
    const Category c = category(cp);
    return c == Upper || c == Lower || c == Title || in_ranges(k_other_uppercase, cp) ||
           in_ranges(k_other_lowercase, cp);
}

bool is_title_cased(uint32_t cp) { return category(cp) == Title; }

bool str_is_cased_as(std::string_view s, bool lower) {
    bool cased = false;
    size_t pos = 0;
    while (pos < s.size()) {
        const uint32_t cp = next_code_point(s, pos);
        if ((lower ? is_upper_cased(cp) : is_lower_cased(cp)) || is_title_cased(cp)) return false;
        cased = cased || (lower ? is_lower_cased(cp) : is_upper_cased(cp));
    }
    return cased;
}

uint32_t to_upper(uint32_t cp) { return map_runs(k_upper_runs, cp); }
uint32_t to_lower(uint32_t cp) { return map_runs(k_lower_runs, cp); }
std::string upper(std::string_view s) { return map_string(s, k_upper_runs, k_upper_specials, true); }
std::string lower(std::string_view s) {
    if (s.find("\xce\xa3") == std::string_view::npos) return map_string(s, k_lower_runs, k_lower_specials, false);
    const std::vector<uint32_t> cps = code_points(s);  // a capital sigma: lower it in context
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) append_lower(out, cps, i);
    return out;
}

std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right) {
    std::vector<uint32_t> set;
    if (chars != nullptr) set = code_points(*chars);
    const auto strips = [&](uint32_t cp) {
        return chars == nullptr ? is_space(cp) : std::find(set.begin(), set.end(), cp) != set.end();
    };
    size_t begin = 0, end = s.size();
    if (left) {
        while (begin < end) {
            size_t next = begin;
            if (!strips(next_code_point(s, next))) break;
            begin = next;
        }
    }
    if (right) {
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
            size_t probe = start;
            if (!strips(next_code_point(s, probe))) break;
            end = start;
        }
    }
    return s.substr(begin, end - begin);
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    std::vector<std::string> out;
    size_t start = 0, pos = 0;
    while (pos < s.size()) {
        const size_t at = pos;
        const uint32_t cp = next_code_point(s, pos);
        const bool eol = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
                         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!eol) continue;
        if (cp == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
        out.emplace_back(s.substr(start, (keepends ? pos : at) - start));
        start = pos;
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return out;
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit, bool from_right) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (sep != nullptr) {
        if (sep->empty()) return out;  // the caller reports "empty separator"
        if (!from_right) {
            size_t start = 0;
            while (maxsplit-- > 0) {
                const size_t at = s.find(*sep, start);
                if (at == std::string_view::npos) break;
                out.emplace_back(s.substr(start, at - start));
                start = at + sep->size();
            }
            out.emplace_back(s.substr(start));
        } else {
            size_t end = s.size();
            while (maxsplit-- > 0 && end >= sep->size()) {
                const size_t at = s.rfind(*sep, end - sep->size());
                if (at == std::string_view::npos) break;
                out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
                end = at;
            }
            out.emplace_back(s.substr(0, end));
            std::reverse(out.begin(), out.end());
        }
        return out;
    }
    // Runs of whitespace; leading and trailing whitespace give no empty pieces.
    const std::vector<uint32_t> cps = code_points(s);
    const size_t n = cps.size();
    if (!from_right) {
        size_t i = 0;
        while (true) {
            while (i < n && is_space(cps[i])) ++i;
            if (i >= n) break;
            if (maxsplit-- <= 0) {
                size_t end = n;
                while (end > i && is_space(cps[end - 1])) --end;
                out.push_back(from_code_points(cps, i, end));
                break;
            }
            size_t j = i;
            while (j < n && !is_space(cps[j])) ++j;
            out.push_back(from_code_points(cps, i, j));
            i = j;
        }
    } else {
        size_t i = n;
        while (true) {
            while (i > 0 && is_space(cps[i - 1])) --i;
            if (i == 0) break;
            if (maxsplit-- <= 0) {
                size_t b = 0;
                while (b < i && is_space(cps[b])) ++b;
                out.push_back(from_code_points(cps, b, i));
                break;
            }
            size_t j = i;
            while (j > 0 && !is_space(cps[j - 1])) --j;
            out.push_back(from_code_points(cps, j, i));
            i = j;
        }
        std::reverse(out.begin(), out.end());
    }
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
    if (count < 0) count = INT64_MAX;
    std::string out;
    if (old.empty()) {
        size_t pos = 0;
        while (pos <= s.size()) {
            if (count-- > 0) out += repl;
            if (pos == s.size()) break;
            const size_t start = pos;
            next_code_point(s, pos);
            out.append(s.substr(start, pos - start));
        }
        return out;
    }
    size_t start = 0;
    while (count-- > 0) {
        const size_t at = s.find(old, start);
        if (at == std::string_view::npos) break;
        out.append(s.substr(start, at - start));
        out += repl;
        start = at + old.size();
    }
    out.append(s.substr(start));
    return out;
}

namespace {

// Python's case-ignorable characters, as far as final sigma needs them: combining marks, format
// characters, modifier letters and the word-internal punctuation of Unicode's word breaks.
bool is_case_ignorable(uint32_t cp) {
    return cp == '\'' || cp == '.' || cp == ':' || cp == '^' || cp == '`' || cp == 0xA8 || cp == 0xAD || cp == 0xAF ||
           cp == 0xB4 || cp == 0xB7 || cp == 0xB8 || (cp >= 0x2B0 && cp <= 0x36F) || cp == 0x2018 || cp == 0x2019 ||
           cp == 0x2024 || cp == 0x2027 || cp == 0x200B || cp == 0x200C || cp == 0x200D || cp == 0xFE52 ||
           cp == 0xFF07 || cp == 0xFF0E || (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x1DC0 && cp <= 0x1DFF) ||
           (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE20 && cp <= 0xFE2F);
}

// lower() of cps[i], with Greek capital sigma as final sigma at the end of a word (CPython's
// handle_capital_sigma).
void append_lower(std::string& out, const std::vector<uint32_t>& cps, size_t i) {
    const uint32_t cp = cps[i];
    if (cp == 0x3A3) {
        size_t j = i;
        while (j > 0 && is_case_ignorable(cps[j - 1])) --j;
        bool final_sigma = j > 0 && is_cased(cps[j - 1]);
        if (final_sigma) {
            size_t k = i + 1;
            while (k < cps.size() && is_case_ignorable(cps[k])) ++k;
            final_sigma = k == cps.size() || !is_cased(cps[k]);
        }
        append_code_point(out, final_sigma ? 0x3C2 : 0x3C3);
        return;
    }
    if (const char* m = special(k_lower_specials, cp)) {
        out += m;
    } else {
        append_code_point(out, map_runs(k_lower_runs, cp));
    }
}

void append_upper(std::string& out, uint32_t cp) {
    if (const char* m = special(k_upper_specials, cp)) {
        out += m;
    } else {
        append_code_point(out, map_runs(k_upper_runs, cp));
    }
}

void append_title(std::string& out, uint32_t cp) {
    if (const char* m = special(k_title_specials, cp)) {
        out += m;
    } else {
        append_upper(out, cp);
    }
}

}  // namespace

std::string capitalize(std::string_view s) {
    const std::vector<uint32_t> cps = code_points(s);
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (i == 0) {
            append_title(out, cps[0]);
        } else {
            append_lower(out, cps, i);
        }
    }
    return out;
}

std::string title(std::string_view s) {
    const std::vector<uint32_t> cps = code_points(s);
    std::string out;
    bool previous_cased = false;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (previous_cased) {
            append_lower(out, cps, i);
        } else {
            append_title(out, cps[i]);
        }
        previous_cased = is_cased(cps[i]);
    }
    return out;
}

std::string swapcase(std::string_view s) {
    const std::vector<uint32_t> cps = code_points(s);
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (is_upper_cased(cps[i])) {
            append_lower(out, cps, i);
        } else if (is_lower_cased(cps[i])) {
            append_upper(out, cps[i]);
        } else {
            append_code_point(out, cps[i]);
        }
    }
    return out;
}

namespace {

std::string repeat_fill(std::string_view fill, int64_t n) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += fill;
    return out;
}

}  // namespace

std::string center(std::string_view s, int64_t width, std::string_view fill) {
    const auto len = int64_t(code_point_count(s));
    if (width <= len) return std::string(s);
    const int64_t marg = width - len;
    const int64_t left = marg / 2 + (marg & width & 1);  // CPython's pad()
    return repeat_fill(fill, left) + std::string(s) + repeat_fill(fill, marg - left);
}

std::string ljust(std::string_view s, int64_t width, std::string_view fill) {
    const auto len = int64_t(code_point_count(s));
    return width <= len ? std::string(s) : std::string(s) + repeat_fill(fill, width - len);
}

std::string rjust(std::string_view s, int64_t width, std::string_view fill) {
    const auto len = int64_t(code_point_count(s));
    return width <= len ? std::string(s) : repeat_fill(fill, width - len) + std::string(s);
}

namespace {

// Python slice bounds start:end over a string of len code points.
void adjust_bounds(int64_t len, int64_t& start, int64_t& end) {
    if (end > len) end = len;
    if (end < 0) end = std::max<int64_t>(end + len, 0);
    if (start < 0) start = std::max<int64_t>(start + len, 0);
}

}  // namespace

int64_t find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool last) {
    const std::vector<uint32_t> hay = code_points(s), needle = code_points(sub);
    const auto len = int64_t(hay.size()), m = int64_t(needle.size());
    adjust_bounds(len, start, end);
    if (start > len || end - start < m) return -1;
    const auto match = [&](int64_t i) { return std::equal(needle.begin(), needle.end(), hay.begin() + i); };
    if (!last) {
        for (int64_t i = start; i + m <= end; ++i) {
            if (match(i)) return i;
        }
    } else {
        for (int64_t i = end - m; i >= start; --i) {
            if (match(i)) return i;
        }
    }
    return -1;
}

int64_t count(std::string_view s, std::string_view sub, int64_t start, int64_t end) {
    const std::vector<uint32_t> hay = code_points(s), needle = code_points(sub);
    const auto len = int64_t(hay.size()), m = int64_t(needle.size());
    adjust_bounds(len, start, end);
    if (start > len || end < start) return 0;
    if (m == 0) return end - start + 1;
    int64_t n = 0;
    for (int64_t i = start; i + m <= end;) {
        if (std::equal(needle.begin(), needle.end(), hay.begin() + i)) {
            ++n;
            i += m;
        } else {
            ++i;
        }
    }
    return n;
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

}  // namespace snapkv::jinja::text
