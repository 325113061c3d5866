// `snapkv chat-template` as a script outside this repository calls it: llama.cpp's chat templates
// rendered for conversations, byte for byte against transformers' renders
// (tests/data/chat_templates/expected.json, made by make_renders.py), a template's own
// raise_exception message on stderr with exit code 1, the model's template and tokens with
// --model, and usage errors.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <vector>

#include "cli/cli_run.h"
#include "common/temp_dir.h"
#include "common/test_util.h"

using json = nlohmann::json;
using Catch::Matchers::Contains;
using snapkv::test::data_path;
using snapkv::test::cli::q;
using snapkv::test::cli::Result;
using snapkv::test::cli::run;

namespace {

const std::string kDir = data_path("chat_templates");

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// ordered_json: the order of keys is part of what tojson and items() print.
nlohmann::ordered_json conversations_by_name() {
    const auto all = nlohmann::ordered_json::parse(snapkv::test::read_text(kDir + "/conversations.json"));
    nlohmann::ordered_json by_name = nlohmann::ordered_json::object();
    for (const auto& c : all["conversations"]) by_name[c["name"].get<std::string>()] = c;
    return by_name;
}

// The command line of one expected.json record; the conversation's files are written into dir.
std::string command_for(const json& rec, const nlohmann::ordered_json& conv, const snapkv::test::TempDir& dir) {
    const std::string messages = dir.file(rec["conversation"].get<std::string>() + ".messages.json");
    write(messages, conv["messages"].dump());
    std::string cmd = "chat-template --template-file " + q(kDir + "/templates/" + rec["template"].get<std::string>()) +
                      " --messages " + q(messages) + " --bos-token " + q(rec["bos_token"]) + " --eos-token " +
                      q(rec["eos_token"]) + " --date " + rec["now"].get<std::string>().substr(0, 10);
    if (!conv["tools"].is_null()) {
        const std::string tools = dir.file(rec["conversation"].get<std::string>() + ".tools.json");
        write(tools, conv["tools"].dump());
        cmd += " --tools " + q(tools);
    }
    if (!rec["add_generation_prompt"].get<bool>()) cmd += " --no-generation-prompt";
    return cmd;
}

}  // namespace

TEST_CASE("chat-template prints every llama.cpp template's render exactly as transformers does", "[cli][chat]") {
    const json expected = json::parse(snapkv::test::read_text(kDir + "/expected.json"));
    const auto conv = conversations_by_name();
    snapkv::test::TempDir dir;
    std::map<std::string, std::vector<const json*>> renders;  // template -> records that render
    std::map<std::string, const json*> raises;                // template -> its first raise_exception
    for (const json& rec : expected) {
        const std::string name = rec["template"];
        if (!rec.contains("error")) renders[name].push_back(&rec);
        else if (rec["error_type"] == "TemplateError" && !raises.count(name)) raises[name] = &rec;
    }
    // Half the templates (each process loads LibTorch: about a second), the conversation and
    // generation prompt chosen in turn; every template that raises, once.
    std::vector<const json*> picked;
    size_t k = 0;
    for (const auto& [name, recs] : renders)
        if (k++ % 2 == 0) picked.push_back(recs[(k * 7) % recs.size()]);
    for (const auto& [name, rec] : raises) picked.push_back(rec);
    int n_render = 0, n_raise = 0;
    for (const json* rp : picked) {
        const json& rec = *rp;
        const bool raises = rec.contains("error");
        INFO(rec["template"] << " / " << rec["conversation"] << " / add_generation_prompt "
                             << rec["add_generation_prompt"]);
        const Result r = run(command_for(rec, conv[rec["conversation"].get<std::string>()], dir));
        if (raises) {
            CHECK(r.code == 1);
            CHECK(r.err == rec["error"].get<std::string>() + "\n");
            CHECK(r.out.empty());
            ++n_raise;
        } else {
            CHECK(r.code == 0);
            CHECK(r.err.empty());
            CHECK(r.out == rec["output"].get<std::string>());
            ++n_render;
        }
    }
    CHECK(n_render >= 30);
    CHECK(n_raise >= 8);
}

TEST_CASE("chat-template --model uses the model's template, BOS and EOS", "[cli][chat][smollm2]") {
    const std::string model = snapkv::test::smollm2_path();
    INFO("SmolLM2 is fetched by scripts/setup.sh; expected at " << model);
    REQUIRE(snapkv::test::file_exists(model));
    snapkv::test::TempDir dir;
    write(dir.file("m.json"), R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])");
    // jinja2's render of SmolLM2's template (tests/data/tokenizer/chat_reference.json).
    Result r = run("chat-template --model " + q(model) + " --messages " + q(dir.file("m.json")));
    CHECK(r.code == 0);
    CHECK(r.out == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    SECTION("--bos-token and --eos-token override the model's") {
        write(dir.file("t.jinja"), "{{ bos_token }}|{{ eos_token }}|{{ messages | length }}\n");
        r = run("chat-template --template-file " + q(dir.file("t.jinja")) + " --messages " + q(dir.file("m.json")) +
                " --bos-token '<B>'");
        CHECK(r.code == 0);
        CHECK(r.out == "<B>||2");  // no eos given: undefined; the template's last newline is dropped
    }
}

TEST_CASE("chat-template refuses bad invocations and names the problem", "[cli][chat]") {
    snapkv::test::TempDir dir;
    write(dir.file("m.json"), R"([{"role": "user", "content": "Hi"}])");
    write(dir.file("t.jinja"), "{{ messages[0].content }}");
    const std::string m = " --messages " + q(dir.file("m.json"));
    SECTION("neither or both of --model and --template-file") {
        CHECK(run("chat-template" + m).code == 2);
        CHECK(run("chat-template --model x.gguf --template-file " + q(dir.file("t.jinja")) + m).code == 2);
    }
    SECTION("a date that is not YYYY-MM-DD") {
        const Result r = run("chat-template --template-file " + q(dir.file("t.jinja")) + m + " --date 2024-02-30");
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Contains("--date") && Contains("2024-02-30"));
    }
    SECTION("a messages file that is not JSON, or not a list of messages") {
        write(dir.file("bad.json"), "[{\"role\": ");
        Result r = run("chat-template --template-file " + q(dir.file("t.jinja")) + " --messages " +
                       q(dir.file("bad.json")));
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("bad.json") && Contains("not JSON"));
        write(dir.file("bad.json"), R"({"role": "user"})");
        r = run("chat-template --template-file " + q(dir.file("t.jinja")) + " --messages " + q(dir.file("bad.json")));
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("list of messages"));
    }
    SECTION("a template we cannot parse names its line") {
        write(dir.file("broken.jinja"), "ok\n{% if %}");
        const Result r = run("chat-template --template-file " + q(dir.file("broken.jinja")) + m);
        CHECK(r.code == 1);
        CHECK_THAT(r.err, Contains("line 2"));
    }
    SECTION("the output is the render alone: no newline added") {
        const Result r = run("chat-template --template-file " + q(dir.file("t.jinja")) + m);
        CHECK(r.code == 0);
        CHECK(r.out == "Hi");
    }
}
