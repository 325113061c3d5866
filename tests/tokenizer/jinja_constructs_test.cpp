// The Jinja interpreter against tests/data/chat_templates/constructs.json: one small template per
// construct (whitespace, operators, filters, tests, methods, scoping, Undefined, the sandbox)
// rendered by jinja2 3.1.6 through transformers 5.25.0. Outputs must match byte for byte;
// a case that raised there must raise here, with Python's message for runtime errors.
#include <map>
#include <string>

#include "core/tokenizer/jinja.h"
#include "jinja_test_util.h"

using namespace snapkv;
using namespace snapkv::test;

namespace {

// Cases we knowingly render differently, with the reason. Each must still fail cleanly.
const std::map<std::string, std::string> k_known_gaps = {
    {"more.big_int", "Python integers are unbounded; ours are 64-bit and an overflow is a TemplateError"},
};

// Error types raised while compiling: their messages are jinja2's parser's, not matched here.
bool is_compile_error(const std::string& type) {
    return type == "TemplateSyntaxError" || type == "TemplateAssertionError";
}

}  // namespace

TEST_CASE("every construct renders as jinja2 renders it in transformers", "[jinja]") {
    const nlohmann::ordered_json cases = read_ordered_json(chat_templates_path("constructs.json"));
    REQUIRE(cases.is_array());
    REQUIRE(cases.size() >= 300);
    jinja::RenderOptions options;
    options.now = parse_iso_time("2026-07-26T00:00:00");  // the pinned clock of make_constructs.py
    size_t gaps_seen = 0;
    for (const auto& c : cases) {
        const std::string name = c.at("name");
        const std::string tmpl = c.at("template");
        INFO("case " << name << ": " << tmpl);
        const auto gap = k_known_gaps.find(name);
        if (gap != k_known_gaps.end()) {
            ++gaps_seen;
            WARN("known gap " << name << ": " << gap->second);
            CHECK_THROWS_AS(jinja::Template(tmpl).render(c.at("context"), options), jinja::TemplateError);
            continue;
        }
        if (c.contains("output")) {
            std::string out;
            try {
                out = jinja::Template(tmpl).render(c.at("context"), options);
            } catch (const std::exception& e) {
                FAIL_CHECK("raised: " << e.what());
                continue;
            }
            CHECK(out == c.at("output").get<std::string>());
            continue;
        }
        const std::string type = c.at("error_type");
        const std::string message = c.at("error");
        INFO("jinja2 raised " << type << ": " << message);
        try {
            const std::string out = jinja::Template(tmpl).render(c.at("context"), options);
            FAIL_CHECK("rendered instead of raising: " << out);
        } catch (const jinja::TemplateRaised& e) {
            CHECK(type == "TemplateError");  // raise_exception raises the base class
            CHECK(std::string(e.what()) == message);
        } catch (const jinja::TemplateError& e) {
            CHECK(type != "TemplateError");
            if (!is_compile_error(type)) {
                std::string want = message;
                if (!want.empty() && want.back() == '.') want.pop_back();
                CHECK_THAT(e.what(), Catch::Matchers::Contains(want));
            }
        }
    }
    CHECK(gaps_seen == k_known_gaps.size());
}
