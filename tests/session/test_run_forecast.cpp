// The run forecast (core/session/run_forecast.h): the attention FLOPs of its time model counted by
// hand, the calibration cached per model, and on SmolLM2 under a memory limit (SNAPKV_MEMORY_LIMIT)
// the cheaper choices it offers: each one fits, a longer document would not, and nothing is
// offered when the run fits or when nothing helps.
#include <cmath>
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "common/test_util.h"
#include "core/session/run_forecast.h"
#include "core/session/run_plan.h"

using namespace snapkv;

namespace {

// Sets SNAPKV_MEMORY_LIMIT for the scope (available_memory() reads it at each call).
struct MemoryLimit {
    explicit MemoryLimit(int64_t bytes) { setenv("SNAPKV_MEMORY_LIMIT", std::to_string(bytes).c_str(), 1); }
    ~MemoryLimit() { unsetenv("SNAPKV_MEMORY_LIMIT"); }
};

std::string sample_document() {
    return snapkv::test::read_text(std::string(SNAPKV_DATASETS_DIR) + "/sample_document.md");
}

}  // namespace

TEST_CASE("attention FLOPs count each layer's causal pairs within its sliding window", "[session][forecast]") {
    ModelConfig c;
    c.n_layer = 2;
    c.n_head = 3;
    c.head_dim = 5;
    c.layers.resize(2);
    c.layers[0].sliding_window = 2;  // pairs over 4 tokens: 1 + 2 + 2 + 2 = 7
    c.layers[1].sliding_window = 0;  // all earlier keys: 1 + 2 + 3 + 4 = 10
    CHECK(attention_flops(c, 4) == Approx(4.0 * 3 * 5 * (7 + 10)));
    c.layers[0].sliding_window = 8;  // wider than the prompt: as a full layer
    CHECK(attention_flops(c, 4) == Approx(4.0 * 3 * 5 * (10 + 10)));
}

TEST_CASE("the modelled prefill time grows with the tokens and is unknown without a measured speed",
          "[session][forecast]") {
    ModelConfig c;
    c.n_layer = 1;
    c.n_head = 1;
    c.head_dim = 4;
    c.layers.resize(1);
    PrefillSettings ps;
    ps.captures = 0;
    ps.max_window = 1;
    PrefillSpeed speed;
    CHECK(modelled_prefill_ms(c, speed, 100, ps) < 0);
    speed.token_ms = 2.0;
    speed.attention_flops_per_ms = 1e30;  // attention free: the token term alone
    CHECK(modelled_prefill_ms(c, speed, 100, ps) == Approx(200.0));
    const double one_ms = attention_flops(c, 100) + 100 * 4 * 4;  // attention + scorer rows
    speed.attention_flops_per_ms = one_ms;
    CHECK(modelled_prefill_ms(c, speed, 100, ps) == Approx(201.0));
    // The kernel's own rate, when measured, serves instead of the calibration stage's.
    speed.attention_flops_per_ms = 1.0;
    speed.kernel_attention_flops_per_ms = one_ms;
    CHECK(modelled_prefill_ms(c, speed, 100, ps) == Approx(201.0));
}

TEST_CASE("the CPU attention kernel's rate is measured on SmolLM2's and Gemma 3's shapes", "[session][forecast]") {
    ModelConfig c;
    // A positive rate on both shapes, and none for a shape the kernel cannot run (query heads not a
    // multiple of the KV heads).
    c.n_head = 9;
    c.n_head_kv = 3;
    c.head_dim = 64;
    const double smollm2 = cpu_attention_flops_per_ms(c, 256);
    CHECK(smollm2 > 0);
    CHECK(std::isfinite(smollm2));
    c.n_head = 4;
    c.n_head_kv = 1;
    c.head_dim = 256;
    CHECK(cpu_attention_flops_per_ms(c, 256) > 0);
    c.n_head_kv = 3;
    CHECK(cpu_attention_flops_per_ms(c, 256) == 0);
}

TEST_CASE("token counts and durations read as the plan line prints them", "[session][forecast]") {
    CHECK(group_thousands(0) == "0");
    CHECK(group_thousands(999) == "999");
    CHECK(group_thousands(4096) == "4,096");
    CHECK(group_thousands(1234567) == "1,234,567");
    CHECK(format_seconds(0.42) == "0.4 s");
    CHECK(format_seconds(41.4) == "41 s");
    CHECK(format_seconds(200) == "3 min 20 s");
}

TEST_CASE("on SmolLM2 the forecast offers only choices that fit, the longest document that does",
          "[session][forecast][smollm2]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    Session s;
    s.load_model(model);
    const PrefillSpeed speed = measure_prefill_speed(s, 32);
    REQUIRE(speed.measured());
    SECTION("the calibration is measured once per model and thread count") {
        const PrefillSpeed again = measure_prefill_speed(s, 32);
        CHECK(again.token_ms == speed.token_ms);
        CHECK(again.calibration_ms == speed.calibration_ms);
    }

    // A document without a question, values kept (the app's plan, every capture): one part.
    PromptSpec spec;
    spec.text = sample_document();
    const PromptTokens prompt = s.build_prompt(spec);
    const PrefillSettings ps = plan_all_policies();
    const int64_t L = static_cast<int64_t>(prompt.ids.size());
    const MemoryEstimate f32 = s.estimate_prefill_memory(L, ps, false, KvType::F32);
    const MemoryEstimate q8 = s.estimate_prefill_memory(L, ps, false, KvType::Q8_0);
    INFO("L " << L << ": f32 " << f32.breakdown() << "; q8_0 " << q8.breakdown());
    REQUIRE(q8.extra() < f32.extra());

    SECTION("a run that fits has no choices and a time") {
        const RunForecast f = forecast_prefill(s, prompt, ps, speed);
        CHECK(f.n_tokens == L);
        CHECK(f.cache_type == KvType::F32);
        CHECK(f.memory.extra() == f32.extra());
        CHECK(f.seconds > 0);
        CHECK(f.fits());
        CHECK(f.choices.empty());
        CHECK(f.summary().find(group_thousands(L) + " tokens, KV f32 ") == 0);
    }
    SECTION("between the q8_0 and the f32 need: q8_0 and a shorter document are offered") {
        const MemoryLimit limit((q8.extra() + f32.extra()) / 2);
        const RunForecast f = forecast_prefill(s, prompt, ps, speed);
        REQUIRE_FALSE(f.fits());
        REQUIRE(f.choices.size() >= 2);
        bool q8_offered = false;
        for (const CheaperChoice& ch : f.choices) {
            CAPTURE(kv_type_name(ch.cache_type), ch.n_tokens);
            if (ch.kind == CheaperChoice::Kind::CacheType) {
                q8_offered = q8_offered || ch.cache_type == KvType::Q8_0;
                CHECK(s.estimate_prefill_memory(L, ps, false, ch.cache_type).extra() <= f.available.bytes);
                CHECK(ch.peak_bytes < f.peak());
            }
        }
        CHECK(q8_offered);
        const CheaperChoice& doc = f.choices.back();
        REQUIRE(doc.kind == CheaperChoice::Kind::ShorterDocument);
        CHECK(doc.cache_type == KvType::F32);
        CHECK(doc.document_share > 0.0);
        CHECK(doc.document_share < 1.0);
        // The longest that fits: one token more would not.
        CHECK(s.estimate_prefill_memory(doc.n_tokens, ps, false, KvType::F32).extra() <= f.available.bytes);
        CHECK(s.estimate_prefill_memory(doc.n_tokens + 1, ps, false, KvType::F32).extra() > f.available.bytes);
        const std::string text = f.choices_text(true);
        CHECK(text.find("--cache-type q8_0 (peak ") != std::string::npos);
        CHECK(text.find(" or a document of at most " + group_thousands(doc.document_tokens) + " tokens") !=
              std::string::npos);
    }
    SECTION("when not even one token fits, nothing is offered") {
        const MemoryLimit limit(1024);
        const RunForecast f = forecast_prefill(s, prompt, ps, speed);
        CHECK_FALSE(f.fits());
        CHECK(f.choices.empty());
        CHECK(f.choices_text(true).empty());
    }
}
