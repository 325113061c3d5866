// Names and values read from files, cut for messages: a corrupt length can make a key, a tensor
// name or a model type a megabyte of raw bytes, and a message quoting all of it floods stderr
// (a GGUF key claiming 10^6 bytes once printed 1.27 MB, ~3000 lines). Header-only; no escaping
// here (Error escapes control bytes).
#pragma once

#include <cstddef>
#include <string>

namespace snapkv {

// The most of one value a message quotes.
constexpr size_t kMaxQuotedBytes = 100;

// s, or its first max_bytes (never cut inside a UTF-8 sequence) followed by "... (N bytes)".
inline std::string clip_text(const std::string& s, size_t max_bytes = kMaxQuotedBytes) {
    if (s.size() <= max_bytes) return s;
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // continuation byte
    return s.substr(0, cut) + "... (" + std::to_string(s.size()) + " bytes)";
}

}  // namespace snapkv
