// Where a model's chat templates come from: GGUF tokenizer.chat_template and its named variants
// (tokenizer.chat_template.NAME, as llama.cpp's converter writes them), and in a Hugging Face
// folder tokenizer_config.json's string or list of named templates, chat_template.jinja (which
// replaces the default, as transformers loads it) and chat_templates/NAME.jinja.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/io/model_file.h"
#include "tests/io/gguf_test_writer.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using namespace snapkv::test;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using Named = std::vector<std::pair<std::string, std::string>>;

// A copy of the tiny Qwen2 HF folder whose tokenizer_config.json's chat_template is `chat_template`.
std::string hf_copy(const TempDir& dir, const nlohmann::json& chat_template) {
    const fs::path to = fs::path(dir.path()) / "hf";
    fs::copy(data_path("tiny/qwen2/hf"), to, fs::copy_options::recursive);
    nlohmann::json cfg;
    std::ifstream(to / "tokenizer_config.json") >> cfg;
    cfg["chat_template"] = chat_template;
    std::ofstream(to / "tokenizer_config.json") << cfg.dump(1);
    return to.string();
}

void write_text(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("a GGUF's default and named chat templates are read", "[gguf][chat]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.kv_str("tokenizer.chat_template", "default {{ x }}");
    g.kv_str("tokenizer.chat_template.tool_use", "tools {{ y }}");
    g.kv_str("tokenizer.chat_template.rag", "rag");
    write_file(dir.file("m.gguf"), g.build());
    const auto file = ModelFile::open(dir.file("m.gguf"));
    const VocabData& v = file->vocab();
    CHECK(v.chat_template == "default {{ x }}");
    CHECK(v.chat_templates == Named{{"tool_use", "tools {{ y }}"}, {"rag", "rag"}});
}

TEST_CASE("a GGUF named chat template that is not a string is refused", "[gguf][chat]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.kv_u32("tokenizer.chat_template.tool_use", 7);
    write_file(dir.file("m.gguf"), g.build());
    CHECK_THROWS_WITH(ModelFile::open(dir.file("m.gguf")),
                      Contains("tokenizer.chat_template.tool_use") && Contains("string"));
}

TEST_CASE("a Hugging Face folder's chat templates come from tokenizer_config and .jinja files", "[hf][chat]") {
    TempDir dir;
    SECTION("a list of named templates: default is the chat template, the others named") {
        const std::string path = hf_copy(
            dir,
            nlohmann::json::parse(R"([{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}])"));
        const auto file = ModelFile::open(path);
        const VocabData& v = file->vocab();
        CHECK(v.chat_template == "D");
        CHECK(v.chat_templates == Named{{"tool_use", "T"}});
    }
    SECTION("chat_template.jinja replaces tokenizer_config's; chat_templates/NAME.jinja add named ones") {
        const std::string path = hf_copy(dir, "from config");
        write_text(fs::path(path) / "chat_template.jinja", "from file\n");
        write_text(fs::path(path) / "chat_templates" / "tool_use.jinja", "tools");
        write_text(fs::path(path) / "chat_templates" / "notes.txt", "not a template");
        const auto file = ModelFile::open(path);
        const VocabData& v = file->vocab();
        CHECK(v.chat_template == "from file\n");
        CHECK(v.chat_templates == Named{{"tool_use", "tools"}});
    }
    SECTION("a malformed named template is refused, naming its index") {
        const std::string path = hf_copy(dir, nlohmann::json::parse(R"([{"name": "default"}])"));
        CHECK_THROWS_WITH(ModelFile::open(path), Contains("chat_template[0]") && Contains("template"));
    }
}
