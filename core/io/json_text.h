// JSON from files we do not control (config.json, tokenizer.json, safetensors headers, session
// files): nesting depth is limited before nlohmann::json builds anything, because copying,
// comparing or dumping a json value recurses once per level (100 000 nested arrays overflowed the
// stack). Real files nest fewer than 10 levels. No schema checks here: callers validate keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace snapkv {

constexpr int kMaxJsonDepth = 64;
// The largest JSON file read by default: the biggest real tokenizer.json (Gemma 3, 262K tokens) is
// about 33 MB. Callers pass a tighter bound for small files (config.json holds a few KB).
constexpr uint64_t kMaxJsonFileBytes = uint64_t(512) << 20;

// Parses text; throws FileError(BadJson) starting with `where` ("hf: /m/config.json: ") for
// malformed JSON or nesting deeper than max_depth arrays/objects (naming the byte offset).
nlohmann::json parse_json_text(std::string_view text, const std::string& where, int max_depth = kMaxJsonDepth);

// Reads a whole file and parses it as above; FileError(Io) when it cannot be read, BadSize when it
// is larger than max_bytes (checked before reading: parsed JSON takes several times its text).
nlohmann::json read_json_file(const std::string& path, const std::string& where, int max_depth = kMaxJsonDepth,
                              uint64_t max_bytes = kMaxJsonFileBytes);

}  // namespace snapkv
