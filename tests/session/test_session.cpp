// SnapKV engine end to end on real models through the Session API: capture, retune, compressed
// caches, lockstep comparison, hit rates, and the invariants every policy must keep (kept <=
// budget, window always kept, positions sorted and unique, keep-all equals the full decode).
#include <cmath>
#include <numeric>
#include <set>

#include "common/test_util.h"
#include "core/session/session.h"

#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::data_path;

namespace {

Session& stories() {
    static Session s;
    if (!s.has_model()) s.load_model(data_path("stories260K.gguf"));
    return s;
}

// About 720 tokens of TinyStories prose (the perplexity text), cut at a sentence.
std::string story_document() {
    const std::string t = snapkv::test::read_text(data_path("reference/ppl-text.txt"));
    const size_t end = t.find(". ", 1500);
    return t.substr(0, end + 1);
}

PromptSpec doc_prompt(const std::string& question) {
    PromptSpec p;
    p.document = story_document();
    p.question = question;
    return p;
}

SelectionParams params(int64_t window, int64_t kernel, int64_t budget) {
    SelectionParams p;
    p.gqa = GqaMode::QueryHead;  // official SnapKV's mode
    p.window = window;
    p.kernel = kernel;
    p.budget = budget;
    return p;
}

std::vector<std::vector<int64_t>> kept_of(const Selection& s, size_t layer) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& h : s.layers[layer].heads) out.push_back(h.kept);
    return out;
}

}  // namespace

TEST_CASE("the first generated token is the same with and without compression", "[snapkv][session]") {
    Session& s = stories();
    s.prefill(doc_prompt("Who was sad?"));
    CompareSettings cs;
    cs.generation.max_tokens = 12;
    CompareResult r = s.compare(params(16, 5, 96), cs);
    REQUIRE_FALSE(r.steps.empty());
    CHECK(r.full.ids[0] == r.compressed.ids[0]);
    CHECK(r.steps[0].kl == Approx(0.0).margin(1e-12));
    CHECK(r.steps[0].top1_agree);
    CHECK(r.steps[0].rank == 0);
    CHECK(r.compressed.kv_bytes < r.full.kv_bytes);
}

TEST_CASE("a budget that keeps every token leaves generation unchanged", "[snapkv][session]") {
    Session& s = stories();
    PrefillSummary sum = s.prefill(doc_prompt("Who was sad?"));
    CompareSettings cs;
    cs.generation.max_tokens = 16;
    SelectionParams p = params(16, 5, sum.n_tokens + 10);  // L < C: not compressed (official)
    Selection sel = s.select(p);
    CHECK_FALSE(sel.compressed);
    CHECK(sel.note.find("not compressed") != std::string::npos);
    CompareResult r = s.compare(p, cs);
    CHECK(r.full.ids == r.compressed.ids);
    CHECK(r.first_divergence == -1);
    for (const auto& st : r.steps) CHECK(st.kl == Approx(0.0).margin(1e-9));
    CHECK(r.full.kv_bytes == r.compressed.kv_bytes);
}

TEST_CASE("query-aware selections follow the question, query-agnostic ones do not", "[snapkv][session]") {
    Session& s = stories();
    const SelectionParams p = params(8, 5, 96);
    s.prefill(doc_prompt("Who was sad and why did the little dog cry?"));
    const Selection aware1 = s.select(p, false);
    const Selection agn1 = s.select(p, true);
    s.prefill(doc_prompt("What color was the big ball in the park?"));
    const Selection aware2 = s.select(p, false);
    const Selection agn2 = s.select(p, true);
    CHECK(agn1.n_tokens == agn2.n_tokens);
    CHECK(agn1.n_tokens < aware1.n_tokens);
    bool aware_changed = false;
    for (size_t l = 0; l < aware1.layers.size(); ++l) {
        CHECK(kept_of(agn1, l) == kept_of(agn2, l));
        aware_changed = aware_changed || kept_of(aware1, l) != kept_of(aware2, l);
    }
    CHECK(aware_changed);
}

TEST_CASE("retuning re-selects from the capture without another prefill", "[snapkv][session]") {
    Session& s = stories();
    const PrefillSummary sum = s.prefill(doc_prompt("Who was sad?"), PrefillSettings{32});
    const Selection a = s.select(params(16, 5, 96));
    const Selection b = s.select(params(16, 5, 160));
    const Selection c = s.select(params(32, 7, 96));
    CHECK(s.prefill_summary().prefill_ms == sum.prefill_ms);  // same capture
    for (const auto& sel : {a, b, c})
        for (const auto& layer : sel.layers)
            for (const auto& h : layer.heads) {
                CHECK(static_cast<int64_t>(h.kept.size()) == sel.budget - sel.window);
                CHECK(std::is_sorted(h.kept.begin(), h.kept.end()));
                CHECK(std::set<int64_t>(h.kept.begin(), h.kept.end()).size() == h.kept.size());
                CHECK((h.kept.empty() || h.kept.back() < sel.n_tokens - sel.window));
                CHECK(h.votes.size() == static_cast<size_t>(sel.n_tokens - sel.window));
                CHECK(h.kept_mass >= 0.0);
                CHECK(h.kept_mass <= 1.0 + 1e-9);
            }
    CHECK(kept_of(a, 2) != kept_of(b, 2));
    CHECK(c.layers[0].heads[0].votes.size() == static_cast<size_t>(sum.n_tokens - 32));
    CHECK_THROWS_AS(s.select(params(64, 5, 96)), InputError);  // W beyond the captured 32
    CHECK_THROWS_AS(s.select(params(16, 4, 96)), InputError);  // even kernel
    CHECK_THROWS_AS(s.select(params(16, 5, 16)), InputError);  // C <= W
}

TEST_CASE("window attention rows are softmax rows whose prefix part sums to the votes", "[snapkv][session]") {
    Session& s = stories();
    const PrefillSummary sum = s.prefill(doc_prompt("Who was sad?"));
    const int64_t W = 16, L = sum.n_tokens, layer = 3, head = 5;
    const std::vector<float> a = s.window_attention(layer, head, W);
    REQUIRE(a.size() == static_cast<size_t>(W * L));
    std::vector<double> votes(static_cast<size_t>(L - W), 0.0);
    for (int64_t i = 0; i < W; ++i) {
        double row = 0;
        for (int64_t t = 0; t < L; ++t) {
            const float v = a[static_cast<size_t>(i * L + t)];
            row += v;
            if (t > L - W + i) CHECK(v == 0.0f);  // causal inside the window
            if (t < L - W) votes[static_cast<size_t>(t)] += v;
        }
        CHECK(row == Approx(1.0).epsilon(1e-5));
    }
    const Selection sel = s.select(params(W, 5, 96));
    const auto& got = sel.layers[layer].heads[head].votes;
    auto r = snapkv::test::compare_values(got, votes, votes.size(), 1e-5, 1e-4);
    INFO(r.str());
    CHECK(r.first_bad == -1);
    CHECK_THROWS_AS(s.window_attention(99, 0, W), InputError);
}

TEST_CASE("KV bytes follow the GQA mode and the policy", "[snapkv][session]") {
    Session& s = stories();
    const PrefillSummary sum = s.prefill(doc_prompt("Who was sad?"));
    const int64_t L = sum.n_tokens, C = 96, n_layer = 5, D = 8, f32 = 4;
    CompareSettings cs;
    cs.generation.max_tokens = 4;
    SelectionParams qh = params(16, 5, C);
    SelectionParams kv = qh;
    kv.gqa = GqaMode::KvHead;
    const Selection sq = s.select(qh), sk = s.select(kv);
    CHECK(sq.layers[0].heads.size() == 8);
    CHECK(sk.layers[0].heads.size() == 4);
    CHECK(s.kv_bytes(sq).first == n_layer * 4 * L * D * 2 * f32);
    CHECK(s.kv_bytes(sq).second == n_layer * 8 * C * D * 2 * f32);  // official: n_head heads
    CHECK(s.kv_bytes(sk).second == n_layer * 4 * C * D * 2 * f32);  // kvpress: n_head_kv heads
    CompareResult rq = s.compare(qh, cs), rk = s.compare(kv, cs);
    CHECK(rq.compressed.kv_bytes == s.kv_bytes(sq).second);
    CHECK(rk.compressed.kv_bytes == s.kv_bytes(sk).second);
    CHECK(rq.full.kv_bytes == sum.kv_bytes_full);

    SelectionParams ada = qh;
    ada.policy = Policy::AdaKV;
    const Selection sa = s.select(ada);
    std::set<size_t> sizes;
    for (const auto& h : sa.layers[1].heads) sizes.insert(h.kept.size());
    int64_t kept = 0;
    for (const auto& layer : sa.layers)
        for (const auto& h : layer.heads) kept += static_cast<int64_t>(h.kept.size()) + sa.window;
    CHECK(s.kv_bytes(sa).second == kept * D * 2 * f32);
    CompareResult ra = s.compare(ada, cs);  // ragged heads decode through padded, masked slots
    CHECK(ra.compressed.kv_bytes == s.kv_bytes(sa).second);
    CHECK(ra.full.ids[0] == ra.compressed.ids[0]);
    INFO("AdaKV per-head counts in layer 1: " << sizes.size() << " distinct");
}

TEST_CASE("every policy compresses, compares and reports hit rates in range", "[snapkv][session]") {
    Session& s = stories();
    s.prefill(doc_prompt("Who was sad?"));
    CompareSettings cs;
    cs.generation.max_tokens = 10;
    for (Policy pol :
         {Policy::SnapKV, Policy::Streaming, Policy::H2O, Policy::Random, Policy::Pyramid, Policy::AdaKV}) {
        INFO(policy_name(pol));
        SelectionParams p = params(16, 5, 96);
        p.policy = pol;
        CompareResult r = s.compare(p, cs);
        CHECK(r.steps.size() == r.full.ids.size());
        CHECK(r.hit_rate.size() == 5);
        for (const auto& layer : r.hit_rate) {
            CHECK(layer.size() == 8);
            for (double h : layer) CHECK(((h >= 0.0 && h <= 1.0) || h == -1.0));
        }
        for (const auto& st : r.steps) CHECK(st.kl >= 0.0);
    }
}

TEST_CASE("an analysis prefill without values selects as a full one and refuses to generate", "[snapkv][session]") {
    Session& s = stories();
    // Long enough for the chunked layers (over 1024 tokens), with a question: two parts.
    PromptSpec prompt = doc_prompt("Who was sad?");
    prompt.document += " " + prompt.document;
    std::vector<Selection> with_values, without;
    for (bool keep : {true, false}) {
        PrefillSettings ps;
        ps.max_window = 16;
        ps.keep_values = keep;
        const PrefillSummary sum = s.prefill(prompt, ps);
        REQUIRE(sum.n_tokens > 1100);
        for (Policy pol : {Policy::SnapKV, Policy::H2O, Policy::ExpectedAttention, Policy::KeyDiff, Policy::TOVA})
            for (bool agnostic : {false, true}) {
                SelectionParams p = params(16, 5, 300);
                p.policy = pol;
                (keep ? with_values : without).push_back(s.select(p, agnostic, true));
            }
        if (!keep) {
            CompareSettings cs;
            cs.generation.max_tokens = 4;
            CHECK_THROWS_WITH(s.compare(params(16, 5, 300), cs), Catch::Contains("keys only"));
            CHECK_THROWS_WITH(s.decode_reference(cs, 4), Catch::Contains("keys only"));
            CHECK(s.window_attention(2, 3, 16, false).size() == static_cast<size_t>(16 * sum.n_tokens));
        }
    }
    REQUIRE(with_values.size() == without.size());
    for (size_t i = 0; i < without.size(); ++i) {
        INFO("selection " << i);
        for (size_t l = 0; l < without[i].layers.size(); ++l) {
            CHECK(kept_of(without[i], l) == kept_of(with_values[i], l));
            for (size_t h = 0; h < without[i].layers[l].heads.size(); ++h)
                CHECK(without[i].layers[l].heads[h].pooled == with_values[i].layers[l].heads[h].pooled);
        }
    }
}

TEST_CASE("query-agnostic compare feeds the question to the compressed context cache", "[snapkv][session]") {
    Session& s = stories();
    const PrefillSummary sum = s.prefill(doc_prompt("Who was sad?"));
    CompareSettings cs;
    cs.generation.max_tokens = 8;
    cs.query_agnostic = true;
    CompareResult r = s.compare(params(16, 5, 96), cs);
    CHECK(r.query_agnostic);
    const int64_t question = sum.n_tokens - sum.n_context;
    CHECK(r.compressed.kv_bytes == 5 * 8 * (96 + question) * 8 * 2 * 4);
    CHECK(r.full.ids.size() == 8);
}

TEST_CASE("continuation perplexity is unchanged when nothing is evicted and changes when much is",
          "[snapkv][session]") {
    Session& s = stories();
    const std::string t = story_document();
    const std::string context = t.substr(0, t.size() / 2), cont = t.substr(t.size() / 2);
    auto [full, same] = s.continuation_perplexity(context, cont, params(16, 5, 100000));
    CHECK(same == Approx(full).epsilon(1e-9));
    auto [full2, comp] = s.continuation_perplexity(context, cont, params(16, 5, 48));
    CHECK(full2 == Approx(full).epsilon(1e-9));
    // Eviction changes the distribution; on this tiny model it can even help, so no direction.
    CHECK(std::fabs(comp - full) > 1e-3);
}

TEST_CASE("session calls fail clearly without a model or a prefill", "[snapkv][session]") {
    Session s;
    CHECK_THROWS_AS(s.model_info(), InputError);
    CHECK_THROWS_AS(s.select(params(16, 5, 96)), InputError);
    CHECK_THROWS_WITH(s.load_model("/nonexistent.gguf"), Catch::Contains("/nonexistent.gguf"));
    s.load_model(data_path("stories260K.gguf"));
    CHECK_THROWS_AS(s.compare(params(16, 5, 96), CompareSettings{}), InputError);
    PromptSpec empty;
    CHECK_THROWS_AS(s.prefill(empty), InputError);
    PromptSpec huge;
    huge.text = std::string(30000, 'x') + " end";
    CHECK_THROWS_WITH(s.prefill(huge), Catch::Contains("context"));
    CHECK_FALSE(s.has_prefill());
}

TEST_CASE("SmolLM2: compression on a long chat prompt keeps the first token and reports hits",
          "[snapkv][session][smollm2]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    Session s;
    s.load_model(model);
    PromptSpec p;
    p.document = snapkv::test::read_text(data_path("reference/ppl-text.txt")).substr(0, 5000);
    p.question = "What did the children find in the garden?";
    p.chat.enabled = true;
    const PrefillSummary sum = s.prefill(p);
    CHECK(sum.n_tokens > 900);
    CompareSettings cs;
    cs.generation.max_tokens = 8;
    CompareResult r = s.compare(params(32, 7, 256), cs);
    CHECK(r.full.ids[0] == r.compressed.ids[0]);
    CHECK(r.compressed.kv_bytes * 3 < r.full.kv_bytes * 2);
    CHECK(r.hit_rate.size() == 30);
    CHECK(r.hit_rate[0].size() == 9);
    SelectionParams kvh = params(32, 7, 256);
    kvh.gqa = GqaMode::KvHead;
    CHECK(s.select(kvh).layers[0].heads.size() == 3);
}
