// RULER's synthetic tasks (core/eval/ruler_tasks.h, ruler_runner.h): every generator's sample has the
// requested length with SmolLM2's real tokenizer and chat template (±1%), its answer can be found
// again in the text by a plain search, and seeds are reproducible; string_match_all on hand cases;
// the task list and its refusals. Needs models/SmolLM2-135M-Instruct.Q4_1.gguf (scripts/setup.sh);
// fails, not skips, without it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "common/test_util.h"
#include "core/common/errors.h"
#include "core/eval/needle.h"
#include "core/eval/ruler_runner.h"
#include "core/eval/text_score.h"
#include "core/session/session.h"

using namespace snapkv;
using namespace snapkv::eval;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

Session& smollm2() {
    static Session s;
    if (!s.has_model()) {
        const std::string model = test::smollm2_path();
        INFO("SmolLM2 is fetched by scripts/setup.sh (datasets/fetch_model.sh); expected at " << model);
        REQUIRE(test::file_exists(model));
        s.load_model(model);
    }
    return s;
}

const RulerData& bundled_data() {
    static const RulerData d = [] {
        const std::string ds = SNAPKV_DATASETS_DIR;
        const Haystack essays = load_haystack({ds + "/sample_document.md", ds + "/documents"});
        return load_ruler_data(ds + "/ruler", essays.text);
    }();
    return d;
}

RulerOptions options(std::vector<std::string> tasks, std::vector<int64_t> lengths, int64_t samples = 1) {
    RulerOptions o;
    o.tasks = std::move(tasks);
    o.lengths = std::move(lengths);
    o.samples = samples;
    return o;
}

size_t count_of(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// The answer found again from the text alone, the way a reader would.
std::vector<std::string> recover_answer(const RulerTaskSpec& t, const RulerText& text) {
    std::vector<std::string> out;
    if (t.family == RulerFamily::Niah) {
        // Each needle "... for KEY is: VALUE." whose key the question asks about.
        const std::regex needle("One special magic (?:number|UUID) for ([a-z0-9-]+) is: ([a-z0-9-]+)\\.");
        for (auto it = std::sregex_iterator(text.document.begin(), text.document.end(), needle);
             it != std::sregex_iterator(); ++it)
            if (std::regex_search(text.question, std::regex(" " + (*it)[1].str() + "[ ,]")))
                out.push_back((*it)[2].str());
    } else if (t.family == RulerFamily::VariableTracking) {
        // Follow the chain from the value the question names, past the worked example.
        std::smatch m;
        REQUIRE(std::regex_search(text.question, m, std::regex("value (\\d+) ")));
        const std::string body = text.document.substr(text.document.rfind("Follow the chains"));
        std::smatch v;
        REQUIRE(std::regex_search(body, v, std::regex("VAR ([A-Z]+) = " + m[1].str() + "\\.")));
        std::string var = v[1].str();
        for (;;) {
            out.push_back(var);
            std::smatch next;
            if (!std::regex_search(body, next, std::regex("VAR ([A-Z]+) = VAR " + var + "\\."))) break;
            var = next[1].str();
        }
    } else {
        // Word counts of the list (cwe: after the worked example) or of the coded text (fwe).
        const std::string body = t.family == RulerFamily::CommonWords
                                     ? text.document.substr(text.document.rfind("Below is a numbered list"))
                                     : text.document;
        std::map<std::string, int64_t> counts;
        const std::regex word(t.family == RulerFamily::CommonWords ? "\\d+\\. ([a-z]+)" : "(?:^| )([a-z]{6})(?= |$)");
        for (auto it = std::sregex_iterator(body.begin(), body.end(), word); it != std::sregex_iterator(); ++it)
            ++counts[(*it)[1].str()];
        std::vector<std::pair<int64_t, std::string>> by_count;
        for (const auto& [w, n] : counts) by_count.push_back({-n, w});
        std::sort(by_count.begin(), by_count.end());
        const size_t n = t.family == RulerFamily::CommonWords ? 10 : 3;
        for (size_t i = 0; i < n && i < by_count.size(); ++i) out.push_back(by_count[i].second);
    }
    return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_CASE("RULER's 11 synthetic tasks with its answer lengths, by name", "[ruler]") {
    const auto& tasks = ruler_tasks();
    REQUIRE(tasks.size() == 11);
    std::map<std::string, int64_t> answer;
    for (const auto& t : tasks) answer[t.name] = t.answer_tokens;
    CHECK(answer["niah_single_1"] == 128);
    CHECK(answer["niah_multiquery"] == 128);
    CHECK(answer["vt"] == 30);
    CHECK(answer["cwe"] == 120);
    CHECK(answer["fwe"] == 50);
    // synthetic.yaml: which haystack, key and value each uses.
    CHECK(find_ruler_task("niah_single_1").haystack == "noise");
    CHECK(find_ruler_task("niah_single_2").haystack == "essay");
    CHECK(find_ruler_task("niah_single_3").value_type == "uuids");
    CHECK(find_ruler_task("niah_multikey_1").n_keys == 4);
    CHECK(find_ruler_task("niah_multikey_2").haystack == "needles");
    CHECK(find_ruler_task("niah_multikey_3").key_type == "uuids");
    CHECK(find_ruler_task("niah_multivalue").n_values == 4);
    CHECK(find_ruler_task("niah_multiquery").n_queries == 4);
    CHECK(find_ruler_task("vt").n_hops == 4);
    CHECK(find_ruler_task("cwe").common_repeats == 30);
    CHECK(find_ruler_task("fwe").alpha == 2.0);

    CHECK(parse_ruler_tasks("all").size() == 11);
    CHECK(parse_ruler_tasks("vt, cwe") == std::vector<std::string>{"vt", "cwe"});
    CHECK_THROWS_WITH(parse_ruler_tasks("niah_single_9"),
                      Contains("'niah_single_9' is not a RULER task") && Contains("allowed: all, niah_single_1"));
    CHECK_THROWS_WITH(parse_ruler_tasks("qa_1"), Contains("QA tasks need SQuAD and HotpotQA"));
    CHECK_THROWS_WITH(parse_ruler_tasks("vt,vt"), Contains("'vt' is given twice"));
    CHECK_THROWS_WITH(parse_ruler_tasks("vt,,cwe"), Contains("empty item"));
}

TEST_CASE("string_match_all is the share of references found, case-insensitive", "[ruler]") {
    CHECK(string_match_all("The special magic number is 1234567.", {"1234567"}) == 1.0);
    CHECK(string_match_all("the numbers are 111 and 333", {"111", "222", "333", "444"}) == 0.5);
    CHECK(string_match_all("VARIABLES: abcde, FGHIJ", {"ABCDE", "fghij"}) == 1.0);
    CHECK(string_match_all("nothing here", {"1234567"}) == 0.0);
    CHECK(string_match_all("12345678", {"1234567"}) == 1.0);  // a substring, as RULER's `in`
    CHECK(string_match_all("anything", {}) == 0.0);
}

TEST_CASE("kvpress compression ratios are configurations after the budgets and read back", "[ruler]") {
    GridAxes a;
    a.policies = {"snapkv", "streaming"};
    a.budgets = {};
    a.ratios = {0.25, 0.5};
    std::vector<EvalConfig> c = expand_configs(a);
    REQUIRE(c.size() == 5);  // full + 2 policies x 2 ratios
    CHECK(c[1].params.ratio == 0.25);
    CHECK(config_label(c[1]) == "snapkv r0.25");
    CHECK(config_json(c[1])["ratio"] == 0.25);
    CHECK(config_json(c[1])["budget"].is_null());
    for (const EvalConfig& e : c) {
        CHECK(config_json(config_from_json(config_json(e))) == config_json(e));
        CHECK(config_label(config_from_json(config_json(e))) == config_label(e));
    }
    a.budgets = {256};
    c = expand_configs(a);
    REQUIRE(c.size() == 7);
    CHECK(config_label(c[1]) == "snapkv C256");
    CHECK(config_label(c[2]) == "snapkv r0.25");
    CHECK_FALSE(config_json(c[1]).contains("ratio"));
    a.ratios = {0.0, 0.9};
    CHECK_NOTHROW(expand_configs(a));
    for (double bad : {1.0, -0.1, 1.5}) {
        a.ratios = {bad};
        CHECK_THROWS_WITH(expand_configs(a), StartsWith("ratios: ") && Contains("outside [0, 1)"));
    }
    a.ratios = {};
    a.budgets = {};
    CHECK_THROWS_WITH(expand_configs(a), StartsWith("ratios, budgets: give at least one ratio or budget"));
}

TEST_CASE("each RULER task's sample has the requested length and a recoverable answer", "[ruler][smollm2]") {
    Session& s = smollm2();
    const std::string name = GENERATE(from_range(parse_ruler_tasks("all")));
    const RulerTaskSpec& t = find_ruler_task(name);
    const int64_t length = 4096;
    RulerTask task(s, bundled_data(), options({name}, {length}, 2));
    REQUIRE(task.n_cells() == 2);
    const RulerSample a = task.sample(s, 0);
    const auto n_prompt = static_cast<int64_t>(s.build_prompt(task.prompt_for(a.text)).ids.size());
    INFO(name << ": " << n_prompt << " prompt tokens + " << t.answer_tokens << " answer tokens, " << a.n_units
              << " units");
    CHECK(n_prompt == a.prompt_tokens);
    CHECK(std::llabs(n_prompt + t.answer_tokens - length) <= length / 100);

    // The references are in the text, and a plain search over it finds the same answer.
    REQUIRE_FALSE(a.text.references.empty());
    for (const auto& r : a.text.references) CHECK_THAT(a.text.document, Contains(r));
    CHECK(sorted(recover_answer(t, a.text)) == sorted(a.text.references));
    if (t.family == RulerFamily::Niah) {
        CHECK(a.text.references.size() == static_cast<size_t>(t.n_values * t.n_queries));
        CHECK(a.text.needles.size() == a.text.references.size());
        if (t.value_type == "numbers")
            for (const auto& r : a.text.references) CHECK(std::regex_match(r, std::regex("[1-9]\\d{6}")));
    }
    if (t.family == RulerFamily::VariableTracking) CHECK(a.text.references.size() == 5);
    if (t.family == RulerFamily::CommonWords)
        for (const auto& r : a.text.references)
            CHECK(count_of(a.text.document, ". " + r + " ") + count_of(a.text.document, ". " + r + "\n") >= 30);

    // The same seed gives the same sample; another sample (another seed) differs.
    const RulerSample again = task.sample(s, 0);
    CHECK(again.text.document == a.text.document);
    CHECK(again.text.question == a.text.question);
    CHECK(again.text.references == a.text.references);
    const RulerSample b = task.sample(s, 1);
    CHECK(b.text.document != a.text.document);
    CHECK(b.text.references != a.text.references);
    RulerOptions other = options({name}, {length}, 1);
    other.seed = 7;
    const RulerSample c = RulerTask(s, bundled_data(), other).sample(s, 0);
    CHECK(c.text.document != a.text.document);
}

TEST_CASE("a RULER cell's prompt marks its needles and answers and carries the task's answer length",
          "[ruler][smollm2]") {
    Session& s = smollm2();
    RulerTask task(s, bundled_data(), options({"niah_multivalue", "vt"}, {2048}, 1));
    for (int64_t cell = 0; cell < task.n_cells(); ++cell) {
        const CellPrompt cp = task.prepare(s, cell);
        const PromptTokens pt = s.build_prompt(cp.prompt);
        const std::string name = cp.fields["ruler_task"];
        INFO(name);
        CHECK(cp.max_tokens == find_ruler_task(name).answer_tokens);
        CHECK(cp.fields["length"] == 2048);
        const auto& answers = cp.fields["answer_spans"];
        REQUIRE(answers.size() == cp.references.size());
        for (size_t i = 0; i < answers.size(); ++i) {
            REQUIRE(answers[i].is_array());
            const int64_t a = answers[i][0], b = answers[i][1];
            CHECK_THAT(s.decode({pt.ids.begin() + a, pt.ids.begin() + b}), Contains(cp.references[i]));
        }
        // The answer prefix follows the chat template's assistant header.
        std::string text;
        for (int32_t id : pt.ids) text += s.token_piece(id);
        CHECK(text.rfind("assistant\n") < text.rfind(cp.prompt.answer_prefix));
        CHECK(text.size() - text.rfind(cp.prompt.answer_prefix) == cp.prompt.answer_prefix.size());
    }
}

TEST_CASE("RULER lengths beyond the context or below a task's fixed part are refused", "[ruler][smollm2]") {
    Session& s = smollm2();
    const int64_t n_ctx = s.model_info().config.n_ctx_train;
    CHECK_THROWS_WITH(
        RulerTask(s, bundled_data(), options({"vt"}, {n_ctx + 1})),
        Contains("length " + std::to_string(n_ctx + 1) + " is above the model's context of " + std::to_string(n_ctx)));
    CHECK_THROWS_WITH(RulerTask(s, bundled_data(), options({"vt"}, {300})), Contains("length 300 is too short for vt"));
    CHECK_THROWS_WITH(RulerTask(s, bundled_data(), options({"vt"}, {2048, 2048})), Contains("given twice"));
    RulerOptions none = options({"vt"}, {2048});
    none.samples = 0;
    CHECK_THROWS_WITH(RulerTask(s, bundled_data(), none), StartsWith("samples: 0"));
}
