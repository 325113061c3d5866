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
                            "prefill_ms", "note", "cache_note"})
        CHECK(j.contains(key));
    CHECK(j.size() == 10);
    CHECK(j["full"]["ids"] == nlohmann::json::array({1, 2}));
    CHECK(j["compressed"]["text"] == "ac");
    for (const char* key : {"ids", "text", "kv_bytes", "decode_tok_s", "decode_ms"}) CHECK(j["full"].contains(key));
    CHECK(j["steps"][1] == nlohmann::json{{"kl", 0.5}, {"top1_agree", false}, {"rank", 2}});
    CHECK(j["first_divergence"] == 1);
    CHECK(j["hit_threshold"] == 0.05);
    CHECK(j["params"]["policy"] == "snapkv");
    CHECK(j["cache_note"] == "grows");
}

TEST_CASE("runs that never diverge have a null first divergence, as the CLI documents", "[eval][compare]") {
    CHECK(snapkv::compare_to_json(two_steps(-1), 0.05, "")["first_divergence"].is_null());
    CHECK(snapkv::compare_to_json(two_steps(0), 0.05, "")["first_divergence"] == 0);
}
