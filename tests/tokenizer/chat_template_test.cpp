// render_chat_template against transformers: all of llama.cpp's templates for every conversation
// of tests/data/chat_templates (make_renders.py, transformers' own render path), eight models'
// templates against jinja2 (tests/data/tokenizer/chat_reference.json), SmolLM2's template as its
// GGUF stores it, what the template receives (tools None, bos/eos undefined when the model has
// none, the pinned date) and the errors for bad requests. The interpreter's constructs one by one
// are jinja_*_test.cpp.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/common/errors.h"
#include "core/tokenizer/chat_template.h"
#include "tokenizer_test_util.h"

using namespace snapkv;
using namespace snapkv::test;
using Catch::Matchers::Contains;
using ojson = nlohmann::ordered_json;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

ChatRequest request(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) {
    ChatRequest r;
    r.messages = chat_messages(messages);
    r.add_generation_prompt = add_generation_prompt;
    return r;
}

}  // namespace

TEST_CASE("rendered chats equal jinja2's renders of eight models' real templates", "[chat]") {
    const nlohmann::json ref = read_json(data_path("tokenizer/chat_reference.json"));
    REQUIRE(ref["cases"].size() >= 15);
    // eos_token as make_chat_reference.py passes it (the cases record only bos_token).
    const std::map<std::string, std::string> eos = {
        {"smollm2", "<|im_end|>"}, {"qwen2", "<|im_end|>"}, {"llama3", "<|eot_id|>"}, {"llama2", "</s>"},
        {"mistral", "</s>"},       {"gemma2", "<eos>"},     {"gemma3", "<eos>"},      {"phi3", "<|endoftext|>"}};
    for (const auto& c : ref["cases"]) {
        const std::string model = c["model"];
        ChatRequest r;
        r.messages = ojson::parse(c["messages"].dump());
        r.add_generation_prompt = c["add_generation_prompt"];
        r.bos_token = c["bos_token"].get<std::string>();
        REQUIRE(eos.count(model) == 1);
        r.eos_token = eos.at(model);
        INFO(model << " " << c["messages"].dump());
        CHECK(render_chat_template(c["template"].get<std::string>(), r) == c["rendered"].get<std::string>());
    }
}

TEST_CASE("every llama.cpp template renders every conversation byte for byte as transformers does", "[chat]") {
    // tests/data/chat_templates: make_renders.py rendered each template with transformers'
    // apply_chat_template path (message normalization included) and strftime_now pinned.
    const std::string dir = data_path("chat_templates");
    const nlohmann::json expected = read_json(dir + "/expected.json");
    // ordered_json: key order is part of what tojson and items() print.
    std::map<std::string, ojson> conversations;
    const ojson all = ojson::parse(read_text(dir + "/conversations.json"));
    for (const auto& c : all["conversations"]) conversations[c["name"].get<std::string>()] = c;
    std::map<std::string, std::string> templates;
    int rendered = 0, raised = 0, failed = 0;
    for (const auto& rec : expected) {
        const std::string name = rec["template"];
        if (!templates.count(name)) templates[name] = read_text(dir + "/templates/" + name);
        const ojson& conv = conversations.at(rec["conversation"].get<std::string>());
        ChatRequest r;
        r.messages = conv["messages"];
        r.tools = conv["tools"];
        r.add_generation_prompt = rec["add_generation_prompt"];
        r.bos_token = rec["bos_token"].get<std::string>();
        r.eos_token = rec["eos_token"].get<std::string>();
        r.date = rec["now"].get<std::string>().substr(0, 10);
        INFO(name << " / " << rec["conversation"] << " / add_generation_prompt " << rec["add_generation_prompt"]);
        if (!rec.contains("error")) {
            std::string out;
            try {
                out = render_chat_template(templates[name], r);
            } catch (const Error& e) {
                FAIL_CHECK("threw: " << e.what());
                continue;
            }
            CHECK(out == rec["output"].get<std::string>());
            ++rendered;
        } else if (rec["error_type"] == "TemplateError") {  // the template's raise_exception
            CHECK_THROWS_MATCHES(render_chat_template(templates[name], r), jinja::TemplateRaised,
                                 Catch::Matchers::Message(rec["error"].get<std::string>()));
            ++raised;
        } else {  // Python's TypeError, UndefinedError, SecurityError...: ours fails too, naming the line
            CHECK_THROWS_AS(render_chat_template(templates[name], r), jinja::TemplateError);
            ++failed;
        }
    }
    CHECK(templates.size() == 70);
    CHECK(rendered >= 1800);
    CHECK(raised >= 30);
    CHECK(failed >= 200);
}

TEST_CASE("SmolLM2's GGUF template adds its default system prompt", "[chat]") {
    const std::string& tmpl = smollm2_vocab().chat_template;
    REQUIRE_FALSE(tmpl.empty());
    CHECK(render_chat_template(tmpl, request({{"user", "Hi"}})) ==
          "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
          "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    SECTION("a system message replaces it") {
        CHECK(render_chat_template(tmpl, request({{"system", "Be brief."}, {"user", "Hi"}}, false)) ==
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    }
}

TEST_CASE("a rendered ChatML prompt tokenizes its markers as control tokens", "[chat]") {
    const Tokenizer& tok = smollm2_tokenizer();
    const std::string text = render_chat_template(smollm2_vocab().chat_template, request({{"user", "Hi"}}));
    const std::vector<int32_t> ids = tok.encode(text);
    CHECK(std::count(ids.begin(), ids.end(), 1) == 3);  // <|im_start|> x3
    CHECK(std::count(ids.begin(), ids.end(), 2) == 2);  // <|im_end|> x2
    CHECK(tok.decode(ids, true) == text);
}

TEST_CASE("the template sees what transformers passes it", "[chat]") {
    SECTION("tools and documents are None, not undefined, when there are none") {
        const std::string t = "{{ tools is defined }} {{ tools is none }} {{ documents is none }}";
        CHECK(render_chat_template(t, request({{"user", "x"}})) == "True True True");
    }
    SECTION("a tools list reaches the template in order, as JSON") {
        ChatRequest r = request({{"user", "x"}});
        r.tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}])");
        CHECK(render_chat_template("{{ tools[0] | tojson }}", r) ==
              R"({"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}})");
    }
    SECTION("bos_token and eos_token are undefined when the model has none") {
        const std::string t = "[{{ bos_token }}|{{ bos_token is defined }}|{{ eos_token }}]";
        ChatRequest r = request({{"user", "x"}});
        CHECK(render_chat_template(t, r) == "[|False|]");
        r.bos_token = "<s>";
        r.eos_token = "";
        CHECK(render_chat_template(t, r) == "[<s>|True|]");
    }
    SECTION("add_generation_prompt is a boolean") {
        CHECK(render_chat_template("{{ add_generation_prompt }}", request({{"user", "x"}}, false)) == "False");
    }
    SECTION("strftime_now reads the pinned day at midnight") {
        ChatRequest r = request({{"user", "x"}});
        r.date = "2024-02-29";
        CHECK(render_chat_template("{{ strftime_now('%d %b %Y %A %H:%M %j') }}", r) ==
              "29 Feb 2024 Thursday 00:00 060");
    }
    SECTION("content parts reach the template as a list") {
        ChatRequest r;
        r.messages = ojson::parse(
            R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])");
        CHECK(render_chat_template("{% for p in messages[0].content %}{{ p.text }}{% endfor %}", r) == "ab");
    }
}

TEST_CASE("a template's raise_exception is its own message, other failures name the line", "[chat]") {
    const std::string t =
        "{% for m in messages %}\n{% if m.role == 'assistant' %}"
        "{{ raise_exception('Conversation roles must alternate') }}{% endif %}{% endfor %}";
    CHECK_THROWS_MATCHES(render_chat_template(t, request({{"assistant", "x"}})), jinja::TemplateRaised,
                         Catch::Matchers::Message("Conversation roles must alternate"));
    CHECK_THROWS_AS(render_chat_template("{% for x in %}", request({{"user", "x"}})), jinja::TemplateError);
    CHECK_THROWS_WITH(render_chat_template("line one\n{{ x | no_such_filter }}", request({{"user", "x"}})),
                      Contains("line 2") && Contains("no_such_filter"));
}

TEST_CASE("bad chat requests are refused with the item named", "[chat]") {
    SECTION("a date that is not a calendar day") {
        for (const char* d : {"2024-02-30", "2023-02-29", "2024-13-01", "24-01-01", "2024-1-01", "2024-01-01x", ""})
            if (*d) CHECK_THROWS_WITH(check_chat_date(d), Contains(d) && Contains("YYYY-MM-DD"));
        CHECK_NOTHROW(check_chat_date("2024-02-29"));
    }
    SECTION("messages that are not a list of role/content objects") {
        CHECK_THROWS_WITH(check_chat_messages(ojson::object(), "m.json"), Contains("m.json") && Contains("list"));
        CHECK_THROWS_WITH(check_chat_messages(ojson::parse(R"([{"content": "x"}])"), "m.json"),
                          Contains("message 0") && Contains("role"));
        CHECK_THROWS_WITH(
            check_chat_messages(ojson::parse(R"([{"role": "user", "content": "x"}, {"role": "user", "content": 3}])"),
                                "m.json"),
            Contains("message 1") && Contains("content"));
        CHECK_NOTHROW(check_chat_messages(
            ojson::parse(
                R"([{"role": "assistant", "content": null, "tool_calls": []}, {"role": "tool", "content": "1"}])"),
            "m.json"));
    }
    SECTION("tools that are not a list") {
        ChatRequest r = request({{"user", "x"}});
        r.tools = ojson::object();
        CHECK_THROWS_WITH(render_chat_template("x", r), Contains("tools"));
    }
}
