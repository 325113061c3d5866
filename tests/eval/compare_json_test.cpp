// The one JSON form of a comparison (core/session/compare_json.h), which `snapkv compare --json` and
// the app's data export both write: its fields and the one value for "no divergence". Here beside
// the evaluation tests because it needs no model, only core; the CLI's output is compared with the
// previous release's by hand (see the commit).
#include <catch2/catch.hpp>

#include "core/session/compare_json.h"

namespace {

snapkv::CompareResult two_steps(int64_t first_divergence) {
    snapkv::CompareResult r;
    r.full.ids = {1, 2};
    r.full.text = "ab";
    r.compressed.ids = {1, 3};
    r.compressed.text = "ac";
    r.steps = {{0.0, true, 0}, {0.5, false, 2}};
    r.first_divergence = first_divergence;
    r.hit_rate = {{0.5, -1.0}};
    r.note = "n";
    return r;
}

}  // namespace

TEST_CASE("a comparison's JSON carries both runs, the steps and the parameters", "[eval][compare]") {
    const nlohmann::json j = snapkv::compare_to_json(two_steps(1), 0.05, "grows");
    for (const char* key : {"full", "compressed", "steps", "first_divergence", "hit_rate", "hit_threshold", "params",
                            "prefill_ms", "note", "cache_note", "decode_compression"})
        CHECK(j.contains(key));
    CHECK(j.size() == 11);
    CHECK(j["full"]["ids"] == nlohmann::json::array({1, 2}));
    CHECK(j["compressed"]["text"] == "ac");
    for (const char* key : {"ids", "text", "kv_bytes", "decode_tok_s", "decode_ms"}) CHECK(j["full"].contains(key));
    CHECK(j["steps"][1] == nlohmann::json{{"kl", 0.5}, {"top1_agree", false}, {"rank", 2}});
    CHECK(j["first_divergence"] == 1);
    CHECK(j["hit_threshold"] == 0.05);
    CHECK(j["params"]["policy"] == "snapkv");
    CHECK(j["cache_note"] == "grows");
    // Without decoding compression: off, no events, no cache_tokens in the steps.
    CHECK(j["decode_compression"] ==
          nlohmann::json{
              {"budget", 0}, {"interval", 0}, {"prefill_compression", true}, {"events", nlohmann::json::array()}});
}

TEST_CASE("a comparison with decoding compression lists its events and the cache per step", "[eval][compare][decode]") {
    snapkv::CompareResult r = two_steps(1);
    r.decode = {64, 16};
    r.compress_prefill = false;
    r.cache_tokens = {80, 64};
    snapkv::DecodeCompressionEvent e;
    e.step = 1;
    e.positions_before = 80;
    e.positions_after = 64;
    e.evicted = 96;
    e.kept = {{{1, 2, 3}}};  // not in the JSON: the app draws it
    r.decode_events = {e};
    const nlohmann::json j = snapkv::compare_to_json(r, 0.05, "");
    CHECK(j["steps"][0]["cache_tokens"] == 80);
    CHECK(j["steps"][1]["cache_tokens"] == 64);
    const nlohmann::json& d = j["decode_compression"];
    CHECK(d["budget"] == 64);
    CHECK(d["interval"] == 16);
    CHECK(d["prefill_compression"] == false);
    REQUIRE(d["events"].size() == 1);
    CHECK(d["events"][0] ==
          nlohmann::json{{"step", 1}, {"positions_before", 80}, {"positions_after", 64}, {"evicted", 96}});
}

TEST_CASE("runs that never diverge have a null first divergence, as the CLI documents", "[eval][compare]") {
    CHECK(snapkv::compare_to_json(two_steps(-1), 0.05, "")["first_divergence"].is_null());
    CHECK(snapkv::compare_to_json(two_steps(0), 0.05, "")["first_divergence"] == 0);
}
