// The one JSON form of selection parameters and of a selection, written by the CLI (analyze,
// compare, perplexity) and the app (exports, session files, settings) alike, and read back strictly.
// No file access and no Qt: callers put the objects where they belong.
//
// Parameters: {"policy", "window", "kernel", "pooling", "budget", "ratio" (null: the budget form),
// "gqa", "tie_break", "sink", "seed", "pyramid_beta", "adakv_alpha", "query_agnostic"}. Seeds up to
// 2^53 are numbers, larger ones decimal strings (a double, as Qt's JSON reads numbers, would round
// them). Older app files spelled the sinks "n_sink" and gave the ratio as "use_ratio" + "ratio":
// both still read.
//
// Selection: {"n_tokens", "window", "budget" (effective C), "compressed", "note", "layers": [{"layer",
// "compressed", "budget", "sliding_window", "first_reachable", "heads": [{"head", "kept",
// "kept_mass", "votes"?, "pooled"?}]}], "kv_bytes": {"full", "kept"}, "cache_note"}.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/snapkv/snapkv_params.h"

namespace snapkv {

nlohmann::json params_to_json(const SelectionParams& p, bool query_agnostic);

struct ParamsFromJson {
    SelectionParams params;
    bool query_agnostic = false;
};
// Keys that are missing keep `base`'s values; other keys are ignored (the app keeps its own beside
// them). A key of the wrong type or an unknown name throws InputError naming "<prefix>.<key>", the
// value as the file has it and what is allowed ("params.window: \"abc\" is not a whole number").
// Does not check ranges: check_params does.
ParamsFromJson params_from_json(const nlohmann::json& o, const std::string& prefix = "params",
                                const SelectionParams& base = default_params());

// What a selection's JSON says beyond the Selection itself (the session knows it).
struct SelectionBytes {
    int64_t full = 0;        // KV bytes of the full cache
    int64_t kept = 0;        // KV bytes of the compressed one
    std::string cache_note;  // cache_growth_note, or ""
};
nlohmann::json selection_to_json(const Selection& sel, const SelectionBytes& bytes);

}  // namespace snapkv
