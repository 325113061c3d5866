// Small UTF-8 helpers and the GPT-2 byte <-> unicode map that byte-level BPE vocabularies are
// written in. Deliberately no Unicode property tables: character classes come from PCRE2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace snapkv {

// Bytes in the UTF-8 character that starts with `lead`, as llama.cpp's unicode_len_utf8 counts
// them: continuation and invalid lead bytes count as 1, so any byte string splits into "chars".
inline size_t utf8_char_len(char lead) {
    static constexpr size_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[static_cast<uint8_t>(lead) >> 4];
}

// Appends the UTF-8 encoding of code point cp (cp <= 0x10FFFF) to out.
void append_utf8(std::string& out, uint32_t cp);

// GPT-2's bytes_to_unicode(): every byte becomes a printable code point (printable Latin-1 bytes
// map to themselves, the other 68 to U+0100..U+0143), so a byte string becomes UTF-8 text
// without spaces or control characters. "Hello world" -> "HelloĠworld".
std::string bytes_to_unicode(std::string_view bytes);
// The inverse. Code points outside the map (text a byte-level vocab should not hold) are copied
// through as their UTF-8 bytes; invalid UTF-8 is copied byte by byte.
std::string unicode_to_bytes(std::string_view text);

}  // namespace snapkv
