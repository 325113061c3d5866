// core/eval without a model: answer scoring, grid expansion, sharding, results files (read,
// resume, merge, CSV) and the question-set and needle-file readers with their error messages.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>

#include "common/temp_dir.h"
#include "common/test_util.h"
#include "core/common/errors.h"
#include "core/eval/eval_grid.h"
#include "core/eval/needle.h"
#include "core/eval/param_error.h"
#include "core/eval/qa_set.h"
#include "core/eval/results_file.h"
#include "core/eval/text_score.h"

using namespace snapkv;
using namespace snapkv::eval;
using json = nlohmann::json;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinAbs;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

json settings_a() {
    return {{"task", "needle"},
            {"cells", 2},
            {"configs", json::array({{{"policy", "full"}}, {{"policy", "snapkv"}}})},
            {"max_tokens", 8}};
}

json row(int64_t cell, int64_t config, const json& settings) {
    return {{"cell", cell}, {"config", config}, {"answer", "x"}, {"settings", settings}, {"timing", {{"ms", 1.5}}}};
}

std::string lines(const std::vector<json>& rows) {
    std::string s;
    for (const auto& r : rows) s += row_line(r);
    return s;
}

}  // namespace

TEST_CASE("a needle value counts only as a whole word, in any case", "[eval]") {
    CHECK(contains_value("The pass key is 58213.", "58213"));
    CHECK(contains_value("58213", "58213"));
    CHECK_FALSE(contains_value("The pass key is 582130.", "58213"));
    CHECK_FALSE(contains_value("158213", "58213"));
    CHECK(contains_value("It is SMOKED PAPRIKA, of course", "smoked paprika"));
    CHECK_FALSE(contains_value("anything", ""));
}

TEST_CASE("answers are compared after SQuAD-style normalisation", "[eval]") {
    CHECK(normalize_answer("  The Velden-Russet!  ") == "velden russet");
    CHECK(exact_match("Velden Russet.", "velden russet"));
    CHECK(contains_match("It was called the Velden Russet, I think", "Velden Russet"));
    CHECK_FALSE(contains_match("Veldenrusset", "Velden Russet"));
    CHECK(contains_match("They were through stones.", "through-stones"));
    CHECK_THAT(word_f1("a b c", "a b c"), WithinAbs(1.0, 1e-12));
    CHECK_THAT(word_f1("x y", "x z"), WithinAbs(0.5, 1e-12));
    CHECK_THAT(word_f1("the x", "x"), WithinAbs(1.0, 1e-12));  // articles do not count
    CHECK_THAT(word_f1("", ""), WithinAbs(1.0, 1e-12));
    CHECK_THAT(word_f1("x", ""), WithinAbs(0.0, 1e-12));
    CHECK(fnv1a_hex("") == "cbf29ce484222325");  // the FNV-1a 64 offset basis
}

TEST_CASE("the configuration grid starts with the full cache and collapses unused options", "[eval]") {
    GridAxes a;
    a.policies = {"snapkv", "streaming"};
    a.budgets = {64, 128};
    a.kernels = {5, 7};
    const std::vector<EvalConfig> c = expand_configs(a);
    // full + snapkv (2 budgets x 2 kernels) + streaming (2 budgets; the kernel does not apply)
    REQUIRE(c.size() == 7);
    CHECK(c[0].full);
    CHECK(config_json(c[0])["policy"] == "full");
    CHECK(config_json(c[0])["budget"].is_null());
    CHECK(config_label(c[1]) == "snapkv C64 K5");
    CHECK(config_label(c[2]) == "snapkv C64");
    CHECK(config_json(c[5])["policy"] == "streaming");
    CHECK(config_json(c[5])["kernel"].is_null());

    SECTION("a configuration reads back from its row fields") {
        for (const EvalConfig& e : c) {
            const EvalConfig back = config_from_json(config_json(e));
            CHECK(config_json(back) == config_json(e));
            CHECK(config_label(back) == config_label(e));
        }
        CHECK_THROWS_WITH(config_from_json({{"policy", "snapkv"}}), Contains("incomplete"));
    }
    SECTION("a budget not above the window is refused, naming both") {
        a.budgets = {32};
        CHECK_THROWS_WITH(expand_configs(a), Contains("budget 32") && Contains("window 32"));
    }
    SECTION("an even kernel is refused") {
        a.kernels = {4};
        CHECK_THROWS_WITH(expand_configs(a), Contains("kernels: 4"));
    }
    SECTION("an unknown policy lists the allowed ones") {
        a.policies = {"snapkv", "lru"};
        CHECK_THROWS_WITH(expand_configs(a), Contains("lru") && Contains("streaming"));
    }
    SECTION("the tie break applies to every ranking configuration and reads back") {
        CHECK(c[1].params.tie_break == snapkv::TieBreak::Later);
        CHECK(config_json(c[1])["tie_break"] == "later");
        CHECK(config_json(c[5])["tie_break"].is_null());  // streaming ranks nothing
        a.tie_break = "earlier";
        const std::vector<EvalConfig> e = expand_configs(a);
        CHECK(e[1].params.tie_break == snapkv::TieBreak::Earlier);
        CHECK(config_label(e[1]) == "snapkv C64 K5 ties-earlier");
        CHECK(config_from_json(config_json(e[1])).params.tie_break == snapkv::TieBreak::Earlier);
        a.tie_break = "first";
        CHECK_THROWS_WITH(expand_configs(a), Contains("tie_break: ") && Contains("earlier, later"));
    }
}

TEST_CASE("comma lists and shards parse or say what is wrong", "[eval]") {
    CHECK(parse_int_list("64, 128", "budgets") == std::vector<int64_t>{64, 128});
    CHECK_THROWS_WITH(parse_int_list("64,x", "budgets"), StartsWith("budgets: ") && Contains("'x'"));
    CHECK_THROWS_WITH(parse_int_list("64,,128", "budgets"), Contains("empty item"));
    CHECK(parse_number_list("0,12.5,100", "depths") == std::vector<double>{0, 12.5, 100});

    const Shard s = parse_shard("1/3");
    CHECK(s.index == 1);
    CHECK(s.count == 3);
    // Every cell in exactly one shard.
    for (int64_t cell = 0; cell < 20; ++cell) {
        int n = 0;
        for (int64_t i = 0; i < 3; ++i) n += Shard{i, 3}.contains(cell) ? 1 : 0;
        CHECK(n == 1);
    }
    CHECK_THROWS_WITH(parse_shard("3/3"), Contains("i = 3") && Contains("0..2"));
    CHECK_THROWS_WITH(parse_shard("0/0"), Contains("N = 0"));
    CHECK_THROWS_WITH(parse_shard("2"), Contains("i/N"));
    CHECK_THROWS_WITH(parse_shard("a/3"), Contains("i/N"));
}

TEST_CASE("grid errors name core's parameters and a front end names them its own way", "[eval]") {
    GridAxes a;
    SECTION("an axis check_params refuses is named as the grid's axis") {
        a.windows = {0};
        try {
            expand_configs(a);
            FAIL("a window of 0 was accepted");
        } catch (const ParamError& e) {
            CHECK(e.params() == std::vector<std::string>{"windows"});
            CHECK_THAT(e.what(), StartsWith("windows: "));
            CHECK_THAT(e.text([](const std::string& p) { return "<" + p + ">"; }), StartsWith("<windows>: "));
        }
    }
    SECTION("no size at all names both size axes") {
        a.budgets = {};
        try {
            expand_configs(a);
            FAIL("a grid without budgets or ratios was accepted");
        } catch (const ParamError& e) {
            CHECK(e.params() == std::vector<std::string>{"ratios", "budgets"});
            CHECK(e.text([](const std::string& p) { return "--" + p; }) == "--ratios, --budgets: " + e.detail());
        }
    }
    SECTION("no message of the grid speaks a command-line flag") {
        for (auto bad :
             std::vector<std::function<void()>>{[] { parse_int_list("1,x", "budgets"); }, [] { parse_shard("5/2"); },
                                                [&] {
                                                    a.kernels = {4};
                                                    expand_configs(a);
                                                },
                                                [&] {
                                                    a.tie_break = "first";
                                                    expand_configs(a);
                                                }}) {
            try {
                bad();
                FAIL("accepted");
            } catch (const ParamError& e) {
                CHECK(std::string(e.what()).find("--") == std::string::npos);
            }
        }
    }
}

TEST_CASE("results files name the line that is wrong", "[eval]") {
    test::TempDir dir;
    const std::string p = dir.file("r.jsonl");
    SECTION("malformed JSON on line 2") {
        write(p, row_line(row(0, 0, settings_a())) + "{\"cell\": 1,\n");
        CHECK_THROWS_WITH(read_results(p, false), Contains("line 2") && Contains("not valid JSON"));
    }
    SECTION("a JSON line that is not a row") {
        write(p, row_line(row(0, 0, settings_a())) + "\n[1, 2]\n");
        CHECK_THROWS_WITH(read_results(p, false), Contains("line 3") && Contains("not a result row"));
    }
    SECTION("an unterminated last line is an error for merge and dropped for resume") {
        const std::string whole = row_line(row(0, 0, settings_a()));
        write(p, whole + row_line(row(0, 1, settings_a())).substr(0, 20));
        CHECK_THROWS_WITH(read_results(p, false), Contains("line 2") && Contains("incomplete"));
        const std::set<RowKey> done = resume_rows(p, settings_a());
        CHECK(done == std::set<RowKey>{{0, 0}});
        CHECK(test::read_text(p) == whole);  // cut back to the last complete row
    }
    SECTION("resume refuses rows made with other settings, naming the difference") {
        json other = settings_a();
        other["max_tokens"] = 16;
        write(p, row_line(row(0, 0, other)));
        CHECK_THROWS_WITH(resume_rows(p, settings_a()), Contains("line 1") && Contains("max_tokens: 8 here, 16 there"));
    }
    SECTION("a missing file resumes nothing") { CHECK(resume_rows(dir.file("none.jsonl"), settings_a()).empty()); }
}

TEST_CASE("merge joins shards in grid order and refuses duplicates, mixed settings and gaps", "[eval]") {
    test::TempDir dir;
    const json s = settings_a();
    const std::string a = dir.file("a.jsonl"), b = dir.file("b.jsonl"), out = dir.file("sub/all.jsonl");
    write(a, lines({row(1, 0, s), row(1, 1, s)}));
    write(b, lines({row(0, 1, s), row(0, 0, s)}));
    SECTION("complete shards") {
        const MergeReport rep = merge_results({a, b}, out, false);
        CHECK(rep.rows == 4);
        CHECK(rep.missing.empty());
        CHECK(test::read_text(out) == lines({row(0, 0, s), row(0, 1, s), row(1, 0, s), row(1, 1, s)}));
    }
    SECTION("the same shard twice") {
        CHECK_THROWS_WITH(merge_results({a, b, a}, out, false),
                          Contains("cell 1, configuration 0") && Contains("both"));
        CHECK_FALSE(test::file_exists(out));
    }
    SECTION("rows of another run") {
        json other = s;
        other["task"] = "sweep";
        write(b, lines({row(0, 0, other)}));
        CHECK_THROWS_WITH(merge_results({a, b}, out, false), Contains("other settings") && Contains("task"));
    }
    SECTION("a missing shard") {
        CHECK_THROWS_WITH(merge_results({a}, out, false), StartsWith("allow_partial: merge: 2 of 4"));
        const MergeReport rep = merge_results({a}, out, true);
        CHECK(rep.missing.size() == 2);
        CHECK(test::read_text(out) == lines({row(1, 0, s), row(1, 1, s)}));
    }
}

TEST_CASE("CSV export flattens timing and leaves out settings and arrays", "[eval]") {
    json r = row(0, 0, settings_a());
    r["answer"] = "say \"hi\", twice";
    r["needle_kept_layers"] = {1.0, 0.5};
    const std::string csv = rows_to_csv({r});
    CHECK(csv.substr(0, csv.find('\n')) == "answer,cell,config,timing.ms");
    CHECK_THAT(csv, Contains("\"say \"\"hi\"\", twice\",0,0,1.5"));
}

TEST_CASE("question sets: documents inline or by file, and errors that name the line", "[eval]") {
    test::TempDir dir;
    const std::string p = dir.file("set.jsonl");
    write(dir.file("doc.md"), "Anna keeps bees.");
    SECTION("the bundled set reads: 20 items with answers over the bundled documents") {
        const QaSet set = load_qa_set(std::string(SNAPKV_DATASETS_DIR) + "/qa/qa.jsonl");
        REQUIRE(set.items.size() == 20);
        for (const auto& item : set.items) {
            INFO(item.id);
            CHECK(item.has_answer);
            CHECK_FALSE(item.document_file.empty());
            // Every reference answer is in its document (the questions are answerable).
            CHECK(contains_match(item.document, item.answer));
        }
    }
    SECTION("file and inline documents") {
        write(p,
              "{\"document\": \"doc.md\", \"question\": \"Who keeps bees?\", \"answer\": \"Anna\"}\n"
              "{\"id\": \"two\", \"document\": \"Inline text about owls.\", \"question\": \"What?\"}\n");
        const QaSet set = load_qa_set(p);
        REQUIRE(set.items.size() == 2);
        CHECK(set.items[0].document == "Anna keeps bees.");
        CHECK(set.items[0].id == "item 1");
        CHECK(set.items[1].id == "two");
        CHECK_FALSE(set.items[1].has_answer);
    }
    SECTION("an empty set") {
        write(p, "\n\n");
        CHECK_THROWS_WITH(load_qa_set(p), Contains("holds no items"));
    }
    SECTION("malformed line 2") {
        write(p, "{\"document\": \"x\", \"question\": \"y\"}\n{\"document\": \n");
        CHECK_THROWS_WITH(load_qa_set(p), Contains("line 2") && Contains("not valid JSON"));
    }
    SECTION("a missing question") {
        write(p, "{\"document\": \"x\"}\n");
        CHECK_THROWS_WITH(load_qa_set(p), Contains("line 1") && Contains("'question' is missing"));
    }
    SECTION("a document file that does not exist") {
        write(p, "{\"document\": \"nope.md\", \"question\": \"y\"}\n");
        CHECK_THROWS_WITH(load_qa_set(p), Contains("line 1") && Contains("nope.md") && Contains("does not exist"));
    }
    SECTION("no such set") { CHECK_THROWS_WITH(load_qa_set(dir.file("x.jsonl")), Contains("is not a file")); }
}

TEST_CASE("needle files and haystacks are checked", "[eval]") {
    test::TempDir dir;
    const std::vector<NeedleSpec> bundled = load_needles(std::string(SNAPKV_DATASETS_DIR) + "/needles.jsonl");
    CHECK(find_needle(bundled, "passkey", "n").value.empty());
    CHECK(find_needle(bundled, "fact", "n").value == "smoked paprika");
    CHECK_THROWS_WITH(find_needle(bundled, "nope", "n"), Contains("passkey, fact"));
    write(dir.file("n.jsonl"), "{\"name\": \"x\", \"needle\": \"no placeholder\", \"question\": \"q\"}\n");
    CHECK_THROWS_WITH(load_needles(dir.file("n.jsonl")), Contains("line 1") && Contains("{value}"));
    CHECK_THROWS_WITH(load_haystack({dir.file("missing")}), Contains("neither a file nor a folder"));
    CHECK(pass_key(42, 1024, 50) == pass_key(42, 1024, 50));
    CHECK(pass_key(42, 1024, 50) != pass_key(42, 1024, 60));
    CHECK(pass_key(42, 1024, 50).size() == 5);
}
