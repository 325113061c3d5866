// UTF-8 text as Python's str sees it, for the Jinja interpreter (private to core/tokenizer): code
// point counting and offsets, Python's whitespace set (str.isspace, re's \s), character classes
// from PCRE2's Unicode tables, and case mapping. Case mapping covers Latin, Greek, Cyrillic,
// Armenian and fullwidth letters only (no final sigma, no title-case digraphs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv::jinja::text {

// Byte offset of the first invalid UTF-8 sequence (overlong forms and surrogates included), or npos.
size_t invalid_utf8_at(std::string_view s);

// The code point at s[pos] (valid UTF-8 assumed); advances pos past it.
uint32_t next_code_point(std::string_view s, size_t& pos);
void append_code_point(std::string& out, uint32_t cp);
bool is_ascii(std::string_view s);
size_t code_point_count(std::string_view s);
std::vector<uint32_t> code_points(std::string_view s);
std::string from_code_points(const std::vector<uint32_t>& cps, size_t begin, size_t end);

// Python's str.isspace() (also re's \s on str patterns).
bool is_space(uint32_t cp);
// Python's str.isprintable() for one character: not in categories C* or Z*, except the space.
bool is_printable(uint32_t cp);
bool is_alpha(uint32_t cp);        // L*
bool is_decimal(uint32_t cp);      // str.isdecimal(): Nd
bool is_digit(uint32_t cp);        // str.isdigit(): Nd, superscripts, circled digits
bool is_numeric(uint32_t cp);      // str.isnumeric(): N*, CJK numerals
bool is_upper_cased(uint32_t cp);  // str.isupper()'s Uppercase: Lu, Other_Uppercase
bool is_lower_cased(uint32_t cp);  // str.islower()'s Lowercase: Ll, Other_Lowercase
bool is_cased(uint32_t cp);
bool is_title_cased(uint32_t cp);  // Lt
// str.islower() (lower true) or str.isupper(): no character of the other case or title case,
// and at least one of the asked case.
bool str_is_cased_as(std::string_view s, bool lower);

// Full-string case mapping as str.upper() / str.lower() do (ß -> SS).
std::string upper(std::string_view s);
std::string lower(std::string_view s);
uint32_t to_upper(uint32_t cp);
uint32_t to_lower(uint32_t cp);

// Python's str.strip() family: whitespace when chars is null, else any code point of *chars.
std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right);

// Python's str.splitlines(): \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, \u2028, \u2029 end lines.
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// Python's str.split(): on runs of whitespace (sep null) or on sep, at most maxsplit times
// (-1: no limit); from the right for rsplit.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit, bool from_right);
// Python's str.replace(old, new, count) (count -1: all; an empty old inserts between characters).
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
std::string capitalize(std::string_view s);  // str.capitalize()
std::string title(std::string_view s);       // str.title()
std::string swapcase(std::string_view s);    // str.swapcase()
// str.center / ljust / rjust with a one-character fill.
std::string center(std::string_view s, int64_t width, std::string_view fill);
std::string ljust(std::string_view s, int64_t width, std::string_view fill);
std::string rjust(std::string_view s, int64_t width, std::string_view fill);
// markupsafe's escape(): & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(std::string_view s);
// Code point index of the first (last) occurrence of sub in s[start:end], or -1.
int64_t find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool last);
int64_t count(std::string_view s, std::string_view sub, int64_t start, int64_t end);

}  // namespace snapkv::jinja::text
