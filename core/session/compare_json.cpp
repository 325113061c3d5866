// See compare_json.h.
#include "core/session/compare_json.h"

#include "core/snapkv/params_json.h"

namespace snapkv {

namespace {

nlohmann::json run_json(const RunOutput& o) {
    return {{"ids", o.ids},
            {"text", o.text},
            {"kv_bytes", o.kv_bytes},
            {"decode_tok_s", o.decode_tok_s},
            {"decode_ms", o.decode_ms}};
}

}  // namespace

nlohmann::json decode_events_to_json(const std::vector<DecodeCompressionEvent>& events) {
    nlohmann::json out = nlohmann::json::array();
    for (const DecodeCompressionEvent& e : events)
        out.push_back({{"step", e.step},
                       {"positions_before", e.positions_before},
                       {"positions_after", e.positions_after},
                       {"evicted", e.evicted}});
    return out;
}

nlohmann::json compare_to_json(const CompareResult& r, double hit_threshold, const std::string& cache_note) {
    using json = nlohmann::json;
    json steps = json::array();
    for (size_t i = 0; i < r.steps.size(); ++i) {
        const CompareStep& st = r.steps[i];
        json j = {{"kl", st.kl}, {"top1_agree", st.top1_agree}, {"rank", st.rank}};
        if (i < r.cache_tokens.size()) j["cache_tokens"] = r.cache_tokens[i];
        steps.push_back(std::move(j));
    }
    const json decode = {{"budget", r.decode.budget},
                         {"interval", r.decode.interval},
                         {"prefill_compression", r.compress_prefill},
                         {"events", decode_events_to_json(r.decode_events)}};
    return {{"full", run_json(r.full)},
            {"compressed", run_json(r.compressed)},
            {"steps", steps},
            {"first_divergence", r.first_divergence < 0 ? json(nullptr) : json(r.first_divergence)},
            {"hit_rate", r.hit_rate},
            {"hit_threshold", hit_threshold},
            {"params", params_to_json(r.params, r.query_agnostic)},
            {"prefill_ms", r.prefill_ms},
            {"note", r.note},
            {"cache_note", cache_note},
            {"decode_compression", decode}};
}

}  // namespace snapkv
