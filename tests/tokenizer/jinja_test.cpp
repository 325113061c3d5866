// The Jinja interpreter's API and limits: rendering, line-numbered errors, raise_exception,
// the sandbox, the clock, context member order, thread safety, and hostile templates (deep
// nesting, runaway loops, output and string growth, invalid UTF-8) failing as TemplateError.
// Expected texts here are what jinja2 3.1.6 prints for the same templates (checked with
// transformers' environment); the broad comparison is in jinja_constructs_test.cpp.
#include "core/tokenizer/jinja.h"

#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using namespace snapkv;
using nlohmann::ordered_json;

namespace {

std::string render(const std::string& tmpl, const ordered_json& ctx = ordered_json::object(),
                   const jinja::RenderOptions& options = {}) {
    return jinja::Template(tmpl).render(ctx, options);
}

// The message of the TemplateError that rendering throws ("" when it does not throw one).
std::string error_of(const std::string& tmpl, const ordered_json& ctx = ordered_json::object(),
                     const jinja::RenderOptions& options = {}) {
    try {
        render(tmpl, ctx, options);
    } catch (const jinja::TemplateError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a chat template renders messages, loops and conditions", "[jinja]") {
    const ordered_json ctx = ordered_json::parse(R"({"messages": [{"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"}], "add_generation_prompt": true, "bos_token": "<s>"})");
    const std::string tmpl =
        "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>\n{{ m['content'] | trim }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}";
    CHECK(render(tmpl, ctx) == "<s><|user|>\nHi\n<|assistant|>\nHello\n<|assistant|>\n");
}

TEST_CASE("whitespace control follows trim_blocks, lstrip_blocks and the - and + markers", "[jinja]") {
    CHECK(render("  {% if true %}\n    yes\n  {% endif %}\n  end") == "    yes\n  end");
    CHECK(render("a  {%- if true %} b {% endif -%}  c") == "a b c");
    CHECK(render("  {%+ if true %}x{% endif %}") == "  x");
    CHECK(render("{% if true +%}\nx{% endif %}") == "\nx");
    CHECK(render("  {{ 1 }}") == "  1");   // lstrip_blocks never applies before {{
    CHECK(render("{# c #}\nx\n") == "x");  // the trailing newline of the template goes
    CHECK(render("x\n\n") == "x\n");       // ... only one of them
    CHECK(render("a\r\nb") == "a\nb");     // newlines are normalised
    CHECK(render("{% raw %}{{ x }}{% endraw %}") == "{{ x }}");
}

TEST_CASE("values print as Python prints them", "[jinja]") {
    const auto [tmpl, want] = GENERATE(table<std::string, std::string>({
        {"{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 1e16 }} {{ 1e15 }}",
         "1.0 0.30000000000000004 1e-05 1e+16 1000000000000000.0"},
        {"{{ none }} {{ true }} {{ [1, 'a', none] }} {{ {'k': (1,)} }}", "None True [1, 'a', None] {'k': (1,)}"},
        {"{{ [\"it's\", 'say \"x\"', 'a\\nb'] }}", "[\"it's\", 'say \"x\"', 'a\\nb']"},
        {"{{ 7 // -2 }} {{ -7 % 3 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 'ab' * 2 }}", "-4 2 2.0 1024 abab"},
        {"{{ nope }}|{{ [nope] }}", "|[Undefined]"},
        {"{{ {'a': [1, 2.5, none, 'é']} | tojson }}", "{\"a\": [1, 2.5, null, \"é\"]}"},
        {"{{ [1, {}] | tojson(indent=2) }}", "[\n  1,\n  {}\n]"},
    }));
    INFO(tmpl);
    CHECK(render(tmpl) == want);
}

TEST_CASE("filters consume the generators that map, select and reject return", "[jinja]") {
    CHECK(render("{{ [1, 2, 3] | map('int') | sum }} {{ ['1', '2'] | map('int') | list }} "
                 "{{ [1, 2, 3] | select('odd') | join(',') }} {{ [1, 2] | reject('odd') | first }} "
                 "{{ [3, 1] | map('string') | max }} {{ dict.fromkeys([1, 2] | map('string'), 0) }}") ==
          "6 [1, 2] 1,3 2 3 {'1': 0, '2': 0}");
    // A generator is used up once iterated, and truthy even when empty, as in Python.
    CHECK(render("{% set g = [1, 2] | map('string') %}{{ g | list }}{{ g | list }} {{ 'yes' if [] | select }}") ==
          "['1', '2'][] yes");
}

TEST_CASE("the context keeps its member order for items() and tojson", "[jinja]") {
    const ordered_json ctx = ordered_json::parse(R"({"d": {"zeta": 1, "alpha": 2, "mid": 3}})");
    CHECK(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", ctx) == "zeta=1;alpha=2;mid=3;");
    CHECK(render("{{ d | tojson }}", ctx) == "{\"zeta\": 1, \"alpha\": 2, \"mid\": 3}");
}

TEST_CASE("a parse error names the template line", "[jinja]") {
    try {
        jinja::Template("line one\n{% if x %}\n{{ 1 + }}\n{% endif %}");
        FAIL("no error");
    } catch (const jinja::TemplateError& e) {
        CHECK(e.line() == 3);
        CHECK_THAT(e.what(), Catch::Matchers::StartsWith("template line 3: "));
    }
    CHECK_THROWS_WITH(jinja::Template("{% for x in y %}"),
                      Catch::Matchers::Contains("unexpected end of template") && Catch::Matchers::Contains("endfor"));
    CHECK_THROWS_WITH(jinja::Template("{% do x %}"), Catch::Matchers::Contains("unknown tag 'do'"));
    CHECK_THROWS_WITH(jinja::Template("{% include 'x' %}"), Catch::Matchers::Contains("unknown tag 'include'"));
}

TEST_CASE("an unknown filter fails at parse time unless it sits in an if", "[jinja]") {
    CHECK_THROWS_WITH(jinja::Template("{% for x in [] %}{{ x | nope }}{% endfor %}"),
                      Catch::Matchers::Contains("No filter named 'nope'"));
    CHECK(render("{% if false %}{{ x | nope }}{% endif %}ok") == "ok");
    CHECK_THAT(error_of("{% if true %}{{ x | nope }}{% endif %}"), Catch::Matchers::Contains("No filter named 'nope'"));
}

TEST_CASE("raise_exception throws TemplateRaised with exactly the template's message", "[jinja]") {
    try {
        render("{{ raise_exception('Only user and assistant roles are supported!') }}");
        FAIL("no error");
    } catch (const jinja::TemplateRaised& e) {
        CHECK(std::string(e.what()) == "Only user and assistant roles are supported!");
    }
}

TEST_CASE("an Undefined prints empty but using it is an error naming it", "[jinja]") {
    CHECK(render("[{{ nope }}{{ nope | default('d') }}{{ nope | length }}{% for x in nope %}x{% endfor %}]") == "[d0]");
    CHECK_THAT(error_of("{{ nope.attr }}"), Catch::Matchers::EndsWith("'nope' is undefined"));
    CHECK_THAT(error_of("{{ m.a.b }}", ordered_json::parse(R"({"m": {}})")),
               Catch::Matchers::Contains("'dict object' has no attribute 'a'"));
    CHECK_THAT(error_of("{{ nope + 1 }}"), Catch::Matchers::Contains("'nope' is undefined"));
}

TEST_CASE("methods that modify a value are refused as the immutable sandbox refuses them", "[jinja]") {
    const ordered_json ctx = ordered_json::parse(R"({"xs": [1], "d": {}})");
    CHECK_THAT(error_of("{{ xs.append(2) }}", ctx), Catch::Matchers::Contains("'append' of 'list' object is unsafe") &&
                                                        Catch::Matchers::Contains("immutable sandbox"));
    CHECK_THAT(error_of("{{ d.update({}) }}", ctx), Catch::Matchers::Contains("'update' of 'dict' object is unsafe"));
    CHECK(render("{{ d.get('a', 'dflt') }} {{ xs.index(1) }}", ctx) == "dflt 0");
}

TEST_CASE("a for loop scopes its sets; a namespace carries values out", "[jinja]") {
    CHECK(render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}") == "12121");
    CHECK(render(
              "{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}") ==
          "6");
    CHECK(render("{% macro m() %}{{ x }}{% endmacro %}{% set x = 7 %}{{ m() }}") == "7");
}

TEST_CASE("a name a scope assigns later is Undefined to loops and macros before that, as in jinja2", "[jinja]") {
    // jinja2 decides at compile time that x is a local of the top level (it is assigned there),
    // so the loop reads that local, not the context's x, and the macro sees it once assigned.
    const ordered_json ctx = ordered_json::parse(R"({"x": "X"})");
    CHECK(render("{% for i in [1] %}[{{ x }}]{% endfor %}{% set x = 1 %}{{ x }}", ctx) == "[]1");
    CHECK(render("{% macro m() %}<{{ x }}>{% endmacro %}{{ m() }}{% set x = 1 %}{{ m() }}", ctx) == "<><1>");
    // Read first, or assigned only in an if: the context's value until the assignment.
    CHECK(render("{{ x }}{% for i in [1] %}[{{ x }}]{% endfor %}{% set x = 1 %}{{ x }}", ctx) == "X[X]1");
    CHECK(render("{% for i in [1] %}[{{ x }}]{% endfor %}{% if false %}{% set x = 1 %}{% endif %}", ctx) == "[X]");
}

TEST_CASE("strftime_now reads the clock in RenderOptions", "[jinja]") {
    jinja::RenderOptions options;
    std::tm now{};
    now.tm_year = 2026 - 1900;
    now.tm_mon = 6;
    now.tm_mday = 26;
    options.now = now;
    CHECK(render("{{ strftime_now('%Y-%m-%d %A %d %b %j') }}", ordered_json::object(), options) ==
          "2026-07-26 Sunday 26 Jul 207");
    CHECK(render("{{ strftime_now('%Y') | length }}") == "4");  // the real clock
}

TEST_CASE("one Template renders from several threads at once", "[jinja]") {
    const jinja::Template t(
        "{% for i in range(n) %}{{ i ~ name | upper }},{% endfor %}{{ (xs | map('string') | list) }}");
    const ordered_json ctx = ordered_json::parse(R"({"n": 200, "name": "a", "xs": [1, 2]})");
    const std::string want = t.render(ctx);
    std::vector<std::string> got(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < got.size(); ++i) {
        threads.emplace_back([&, i] {
            for (int k = 0; k < 20; ++k) got[i] = t.render(ctx);
        });
    }
    for (auto& th : threads) th.join();
    for (const auto& g : got) CHECK(g == want);
}

TEST_CASE("messages are prepared as transformers prepares them", "[jinja]") {
    const ordered_json in = ordered_json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [1]},
        {"role": "assistant", "reasoning_content": "r", "content": "c"}, {"role": "user", "thinking": "t"}])");
    CHECK(jinja::transformers_messages(in).dump() ==
          R"([{"role":"assistant","tool_calls":[1]},)"
          R"({"thinking":"r","role":"assistant","reasoning_content":"r","content":"c"},)"
          R"({"thinking":"t","role":"user","reasoning_content":"t"}])");
    CHECK_THROWS_AS(jinja::transformers_messages(ordered_json::parse(R"(["x"])")), jinja::TemplateError);
}

TEST_CASE("a context that is not a JSON object is refused", "[jinja]") {
    CHECK_THROWS_AS(jinja::Template("x").render(ordered_json::array()), jinja::TemplateError);
}

TEST_CASE("deep nesting is a TemplateError, not a stack overflow", "[jinja]") {
    SECTION("100000 open parentheses") {
        CHECK_THROWS_AS(jinja::Template("{{ " + std::string(100000, '(') + " }}"), jinja::TemplateError);
    }
    SECTION("100000 unary minus signs") {
        CHECK_THROWS_AS(jinja::Template("{{ " + std::string(100000, '-') + "1 }}"), jinja::TemplateError);
    }
    SECTION("10000 nested if blocks") {
        std::string t;
        for (int i = 0; i < 10000; ++i) t += "{% if true %}";
        for (int i = 0; i < 10000; ++i) t += "{% endif %}";
        CHECK_THROWS_AS(jinja::Template(t), jinja::TemplateError);
    }
    SECTION("a macro calling itself forever") {
        CHECK_THAT(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
                   Catch::Matchers::Contains("levels deep"));
    }
    SECTION("a namespace holding itself, printed") {
        CHECK_THROWS_AS(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), jinja::TemplateError);
    }
    SECTION("a list nested 10000 deep by a loop") {
        CHECK_THROWS_AS(render("{% set ns = namespace(x=[]) %}{% for i in range(10000) %}{% set ns.x = [ns.x] %}"
                               "{% endfor %}{{ ns.x | length }}"),
                        jinja::TemplateError);
    }
}

TEST_CASE("runaway templates stop at the render limits", "[jinja]") {
    jinja::RenderOptions options;
    options.max_steps = 100000;
    options.max_output_bytes = 1 << 20;
    options.max_string_bytes = 8 << 20;
    SECTION("steps") {
        CHECK_THAT(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                            ordered_json::object(), options),
                   Catch::Matchers::Contains("evaluation steps"));
    }
    SECTION("output bytes") {
        CHECK_THAT(error_of("{% for i in range(1000) %}{{ 'x' * 5000 }}{% endfor %}", ordered_json::object(), options),
                   Catch::Matchers::Contains("output passed"));
    }
    SECTION("string bytes") {
        CHECK_THROWS_AS(render("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                               "{% endfor %}",
                               ordered_json::object(), options),
                        jinja::TemplateError);
        CHECK_THROWS_AS(render("{{ 'x' * 100000000000 }}", ordered_json::object(), options), jinja::TemplateError);
    }
    SECTION("ranges") {
        CHECK_THAT(error_of("{{ range(1000000) | length }}"), Catch::Matchers::Contains("Range too big"));
    }
}

TEST_CASE("a template that is not valid UTF-8 is refused with its line", "[jinja]") {
    try {
        jinja::Template("ok\nbad \xff byte");
        FAIL("no error");
    } catch (const jinja::TemplateError& e) {
        CHECK(e.line() == 2);
        CHECK_THAT(e.what(), Catch::Matchers::Contains("not valid UTF-8"));
    }
}
