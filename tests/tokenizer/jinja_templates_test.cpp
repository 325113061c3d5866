// The Jinja interpreter on the 70 real chat templates of tests/data/chat_templates/templates
// (llama.cpp's models/templates) against tests/data/chat_templates/expected.json: each template
// rendered for each conversation of conversations.json, with and without the generation prompt,
// as transformers' apply_chat_template renders it (context: messages, tools or None, documents
// None, add_generation_prompt, bos_token, eos_token; the clock pinned). Its speed is
// tests/tokenizer/bench/bench_chat_templates (a benchmark that prints, not a timed test).
#include <map>
#include <memory>
#include <string>

#include "core/tokenizer/jinja.h"
#include "jinja_test_util.h"

using namespace snapkv;
using namespace snapkv::test;

namespace {

struct Goldens {
    nlohmann::ordered_json records;
    std::map<std::string, nlohmann::ordered_json> conversations;  // name -> {messages, tools}
    std::map<std::string, std::string> sources;                   // template file -> its bytes
};

Goldens load_goldens() {
    Goldens g;
    g.records = read_ordered_json(chat_templates_path("expected.json"));
    const nlohmann::ordered_json convs = read_ordered_json(chat_templates_path("conversations.json"));
    for (const auto& c : convs.at("conversations")) g.conversations[c.at("name").get<std::string>()] = c;
    for (const auto& r : g.records) {
        const std::string name = r.at("template");
        if (g.sources.count(name) == 0) g.sources[name] = read_bytes(chat_templates_path("templates/" + name));
    }
    return g;
}

nlohmann::ordered_json context_of(const Goldens& g, const nlohmann::ordered_json& record) {
    const nlohmann::ordered_json& conv = g.conversations.at(record.at("conversation").get<std::string>());
    nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
    ctx["messages"] = jinja::transformers_messages(conv.at("messages"));
    ctx["tools"] = conv.at("tools");  // null is Python's None: defined, falsy, not iterable
    ctx["documents"] = nullptr;
    ctx["add_generation_prompt"] = record.at("add_generation_prompt");
    ctx["bos_token"] = record.at("bos_token");
    ctx["eos_token"] = record.at("eos_token");
    return ctx;
}

}  // namespace

TEST_CASE("the real chat templates render every conversation as transformers does", "[jinja]") {
    const Goldens g = load_goldens();
    REQUIRE(g.records.size() >= 1000);
    REQUIRE(g.sources.size() >= 60);
    std::map<std::string, std::unique_ptr<jinja::Template>> parsed;
    for (const auto& [name, source] : g.sources) {
        INFO("template " << name);
        REQUIRE_NOTHROW(parsed[name] = std::make_unique<jinja::Template>(source));
    }
    size_t ok = 0, raised = 0;
    for (const auto& r : g.records) {
        const std::string name = r.at("template");
        INFO("template " << name << ", conversation " << r.at("conversation").get<std::string>()
                         << ", add_generation_prompt " << r.at("add_generation_prompt").get<bool>());
        jinja::RenderOptions options;
        options.now = parse_iso_time(r.at("now"));
        const nlohmann::ordered_json ctx = context_of(g, r);
        if (r.contains("output")) {
            try {
                CHECK(parsed.at(name)->render(ctx, options) == r.at("output").get<std::string>());
                ++ok;
            } catch (const std::exception& e) {
                FAIL_CHECK("raised: " << e.what());
            }
            continue;
        }
        const std::string type = r.at("error_type");
        std::string message = r.at("error");
        INFO("transformers raised " << type << ": " << message);
        try {
            const std::string out = parsed.at(name)->render(ctx, options);
            FAIL_CHECK("rendered instead of raising: " << out.substr(0, 300));
        } catch (const jinja::TemplateRaised& e) {
            CHECK(type == "TemplateError");
            CHECK(std::string(e.what()) == message);
            ++raised;
        } catch (const jinja::TemplateError& e) {
            if (!message.empty() && message.back() == '.') message.pop_back();
            CHECK_THAT(e.what(), Catch::Matchers::Contains(message));
            ++raised;
        }
    }
    CHECK(ok + raised == g.records.size());
}
