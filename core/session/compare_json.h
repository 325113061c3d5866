// The one JSON form of a full-vs-compressed comparison (CompareResult), written by `snapkv compare
// --json` and by the app's data export alike: both runs, the per-step metrics, the first divergence
// (null when the runs never diverge), the hit rates, the parameters (params_json.h). No file access,
// no Qt and no LibTorch: callers put the object where it belongs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/compare/compare_types.h"

namespace snapkv {

// {"full", "compressed": {"ids", "text", "kv_bytes", "decode_tok_s", "decode_ms"}, "steps": [{"kl",
// "top1_agree", "rank"}], "first_divergence" (step index, or null), "hit_rate" ([layer][head], -1
// where undefined), "hit_threshold", "params" (r.params, r.query_agnostic), "prefill_ms", "note",
// "cache_note" (why the compressed cache is the larger, or ""), "decode_compression": {"budget",
// "interval" (0, 0: off), "prefill_compression", "events": [{"step", "positions_before",
// "positions_after", "evicted"}]}}; each step also has "cache_tokens" (tokens per head in the
// compressed cache after it).
nlohmann::json compare_to_json(const CompareResult& r, double hit_threshold, const std::string& cache_note);

// Decoding compression events as both compare and generate write them: [{"step",
// "positions_before", "positions_after", "evicted"}].
nlohmann::json decode_events_to_json(const std::vector<DecodeCompressionEvent>& events);

}  // namespace snapkv
