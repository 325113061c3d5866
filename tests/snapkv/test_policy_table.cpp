// The policy table (policy_table.h), the one parameter check (check_params) and the one parameter
// JSON (params_json.h): names and aliases, what each row says it reads, the problems named by
// field, and a JSON round trip that also reads the app's older field names.
#include <catch2/catch.hpp>

#include <limits>
#include <set>

#include "core/common/errors.h"
#include "core/snapkv/params_json.h"
#include "core/snapkv/policy_rule.h"
#include "core/snapkv/snapkv_params.h"

using namespace snapkv;
using Catch::Matchers::Contains;

TEST_CASE("every policy has one row: a unique name, its aliases, and a rule", "[snapkv][policy]") {
    std::set<std::string> spellings;
    for (const PolicyInfo& row : kPolicyTable) {
        CAPTURE(row.name);
        CHECK(&policy_info(row.id) == &row);
        CHECK(parse_policy(row.name) == row.id);
        CHECK(policy_name(row.id) == row.name);
        CHECK(std::string(row.summary).size() > 10);
        CHECK(&row.rule() == &row.rule());  // one rule object per policy
    }
    for (const auto& s : policy_spellings()) CHECK(spellings.insert(s).second);
    CHECK(parse_policy("streamingllm") == Policy::Streaming);
    CHECK(parse_policy("pyramidkv") == Policy::Pyramid);
    CHECK_THROWS_WITH(parse_policy("lru"), Contains("'lru'") && Contains(policy_list_text()));
    CHECK(policy_list_text().rfind("snapkv, streaming, h2o, random, pyramid, adakv", 0) == 0);
}

TEST_CASE("the table says which policies pool, rank, need which captures and keep ragged lists", "[snapkv][policy]") {
    std::set<std::string> pools, ranks, h2o, query_stats, ragged;
    for (const PolicyInfo& row : kPolicyTable) {
        if (row.pools()) pools.insert(row.name);
        if (row.uses_ties()) ranks.insert(row.name);
        if (row.needs(kCapturesColumnSums)) h2o.insert(row.name);
        if (row.needs(kCapturesQueryStats)) query_stats.insert(row.name);
        CHECK((row.captures & ~kAllCaptures) == 0u);
        if (row.ragged) ragged.insert(row.name);
    }
    CHECK(pools.count("snapkv") + pools.count("pyramid") + pools.count("adakv") == 3);
    CHECK(pools.count("streaming") + pools.count("h2o") + pools.count("random") == 0);
    CHECK(ranks.count("h2o") == 1);
    CHECK(ranks.count("streaming") + ranks.count("random") == 0);
    CHECK(h2o == std::set<std::string>{"h2o"});
    CHECK(query_stats == std::set<std::string>{"expected_attention"});
    CHECK(policy_info(Policy::ExpectedAttention).captures ==
          (kCapturesQueryStats | kCapturesValueNorms | kCapturesFutureRope));
    CHECK(policy_info(Policy::SnapKV).captures == 0u);
    CHECK(ragged == std::set<std::string>{"adakv"});
    CHECK(policy_info(Policy::Streaming).reads_param(kReadsSink));
    CHECK(policy_info(Policy::Random).reads_param(kReadsSeed));
    CHECK(policy_info(Policy::SnapKV).rule().pooled_votes_top_k());
    CHECK_FALSE(policy_info(Policy::AdaKV).rule().pooled_votes_top_k());
}

TEST_CASE("check_params names the bad field, with or without the prompt", "[snapkv][policy]") {
    SelectionParams p;
    p.window = 8;
    p.budget = 32;
    CHECK_FALSE(check_params(p));
    CHECK_FALSE(check_params(p, {40, 16}));

    SECTION("an even kernel only matters to a policy that pools, with pooling") {
        p.kernel = 4;
        const auto bad = check_params(p);
        REQUIRE(bad);
        CHECK(bad->field == "kernel");
        CHECK_THAT(bad->text(), Contains("kernel: 4 must be odd"));
        p.pooling = Pooling::None;
        CHECK_FALSE(check_params(p));
        p.pooling = Pooling::Max;
        p.policy = Policy::Streaming;
        CHECK_FALSE(check_params(p));
    }
    SECTION("a budget not above the window, named the caller's way") {
        p.budget = 8;
        const auto bad = check_params(p);
        REQUIRE(bad);
        CHECK(bad->text() == "budget: 8 must be larger than the window 8 (the budget counts the window); allowed > 8");
        const auto cli = [](const std::string& f) { return "--" + f; };
        CHECK(bad->sentence(cli) == "8 must be larger than --window 8 (the budget counts the window); allowed > 8");
    }
    SECTION("a window beyond the capture, or not below the prompt") {
        p.window = 20;
        p.budget = 64;
        REQUIRE(check_params(p, {0, 16}));
        CHECK_THAT(check_params(p, {0, 16})->text(), Contains("window: 20 is out of range; allowed 1..16"));
        CHECK_THAT(check_params(p, {20, 0})->text(), Contains("prompt length 20"));
        CHECK_FALSE(check_params(p));
    }
    SECTION("sinks: never negative; for streaming at most C - W") {
        p.n_sink = -1;
        CHECK(check_params(p)->field == "n_sink");
        p.n_sink = 30;
        CHECK_FALSE(check_params(p));
        p.policy = Policy::Streaming;
        CHECK_THAT(check_params(p)->text(), Contains("n_sink: 30") && Contains("0..24"));
    }
    SECTION("the ratio form waits for the prompt to count its tokens") {
        p.ratio = 0.9;
        CHECK_FALSE(check_params(p));
        CHECK_THAT(check_params(p, {40, 0})->text(), Contains("ratio: 0.9") && Contains("= 3 tokens"));
        p.ratio = 1.0;
        CHECK(check_params(p)->field == "ratio");
    }
    SECTION("validate_params throws the same text as an InputError") {
        p.kernel = 6;
        CHECK_THROWS_AS(validate_params(p, 40, 16), InputError);
        CHECK_THROWS_WITH(validate_params(p, 40, 16), Contains("kernel: 6"));
    }
}

TEST_CASE("parameters survive their JSON, and older app files still read", "[snapkv][policy]") {
    for (const PolicyInfo& row : kPolicyTable) {
        CAPTURE(row.name);
        SelectionParams p;
        p.policy = row.id;
        p.window = 48;
        p.kernel = 9;
        p.pooling = Pooling::Avg;
        p.ratio = 0.25;
        p.gqa = GqaMode::QueryHead;
        p.tie_break = TieBreak::Earlier;
        p.n_sink = 7;
        p.seed = std::numeric_limits<uint64_t>::max();  // beyond a double: written as a string
        p.pyramid_beta = 5;
        p.adakv_alpha = 0.5;
        const nlohmann::json j = params_to_json(p, true);
        CHECK(j["seed"].is_string());
        const ParamsFromJson back = params_from_json(nlohmann::json::parse(j.dump()));
        CHECK(params_to_json(back.params, back.query_agnostic) == j);
    }
    SECTION("the app's older names: n_sink, use_ratio beside ratio, a seed in a string") {
        const auto old = nlohmann::json::parse(
            R"({"policy": "streaming", "n_sink": 9, "use_ratio": false, "ratio": 0.4, "seed": "12"})");
        const ParamsFromJson r = params_from_json(old);
        CHECK(r.params.n_sink == 9);
        CHECK(r.params.ratio < 0);
        CHECK(r.params.seed == 12);
        const auto on = nlohmann::json::parse(R"({"use_ratio": true, "ratio": 0.4})");
        CHECK(params_from_json(on).params.ratio == Approx(0.4));
    }
    SECTION("wrong types are named with the key's path and the value") {
        CHECK_THROWS_WITH(params_from_json(nlohmann::json::parse(R"({"window": "abc"})")),
                          Contains("params.window: \"abc\" is not a whole number"));
        CHECK_THROWS_WITH(params_from_json(nlohmann::json::parse(R"({"policy": "lru"})"), "configuration"),
                          Contains("configuration.policy: \"lru\"") && Contains("allowed"));
        CHECK_THROWS_WITH(params_from_json(nlohmann::json::parse(R"({"seed": -3})")), Contains("params.seed"));
    }
}

TEST_CASE("the user-visible defaults are core's SelectionParams", "[snapkv][policy]") {
    const SelectionParams d = default_params();
    CHECK(d.policy == Policy::SnapKV);
    CHECK(d.window == 32);
    CHECK(d.kernel == 7);
    CHECK(d.pooling == Pooling::Max);
    CHECK(d.budget == 1024);
    CHECK(d.ratio < 0);
    CHECK(d.gqa == GqaMode::KvHead);
    CHECK(d.tie_break == TieBreak::Later);
}
