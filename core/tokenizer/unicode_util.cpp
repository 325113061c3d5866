// GPT-2 byte <-> unicode map (openai/gpt-2 encoder.py bytes_to_unicode, also in HF tokenizers'
// ByteLevel and llama.cpp's unicode.cpp) and UTF-8 helpers. No normalisation, no property tables.
#include "core/tokenizer/unicode_util.h"

#include <array>

namespace snapkv {
namespace {

// Printable bytes keep their own code point: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool keeps_own_code_point(int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
    std::array<std::string, 256> byte_to_utf8;  // byte -> UTF-8 of its code point
    std::array<int16_t, 512> cp_to_byte;        // code point (< 512) -> byte, or -1

    ByteMap() {
        cp_to_byte.fill(-1);
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            const uint32_t cp = keeps_own_code_point(b) ? uint32_t(b) : uint32_t(256 + next++);
            append_utf8(byte_to_utf8[b], cp);
            cp_to_byte[cp] = int16_t(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

std::string bytes_to_unicode(std::string_view bytes) {
    const ByteMap& map = byte_map();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += map.byte_to_utf8[static_cast<uint8_t>(c)];
    return out;
}

std::string unicode_to_bytes(std::string_view text) {
    const ByteMap& map = byte_map();
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const uint8_t c0 = static_cast<uint8_t>(text[i]);
        // The map only uses code points below U+0200, i.e. 1- and 2-byte sequences.
        if (c0 < 0x80) {
            const int16_t b = map.cp_to_byte[c0];
            if (b >= 0) out += char(b);
            else out += char(c0);
            i += 1;
            continue;
        }
        if ((c0 & 0xE0) == 0xC0 && i + 1 < text.size() && (static_cast<uint8_t>(text[i + 1]) & 0xC0) == 0x80) {
            const uint32_t cp = (uint32_t(c0 & 0x1F) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3F);
            const int16_t b = cp < 512 ? map.cp_to_byte[cp] : int16_t(-1);
            if (b >= 0) out += char(b);
            else out.append(text.substr(i, 2));
            i += 2;
            continue;
        }
        // Longer (or invalid) sequences are not in the map: copy the character through.
        size_t n = utf8_char_len(text[i]);
        if (i + n > text.size()) n = text.size() - i;
        out.append(text.substr(i, n));
        i += n;
    }
    return out;
}

}  // namespace snapkv
