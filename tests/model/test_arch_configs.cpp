// The tiny models (tests/data/tiny) in the other forms their files take on the Hub: config.json in
// transformers 4.x keys (rope_theta, rope_scaling, rope_local_base_freq, sliding_window_pattern,
// no layer_types), which most published checkpoints still carry, and the multimodal Gemma 3
// layout (model_type gemma3, text_config, language_model.* tensors). Each must give transformers'
// logits. Also what is refused rather than guessed: longrope past its original context, unknown types.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/temp_dir.h"
#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/common/errors.h"
#include "core/io/model_file.h"
#include "core/model/llama_model.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using nlohmann::json;
using snapkv::test::compare_values;
namespace fs = std::filesystem;
namespace tiny = snapkv::test::tiny;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

// The tiny model's HF folder copied into dir, with config.json replaced.
std::string copy_folder(const std::string& name, const snapkv::test::TempDir& dir, const json& cfg) {
    const std::string out = dir.path() + "/" + name;
    fs::create_directories(out);
    for (const auto& e : fs::directory_iterator(tiny::hf_path(name)))
        fs::copy(e.path(), out + "/" + e.path().filename().string());
    spit(out + "/config.json", cfg.dump(2));
    return out;
}

// A transformers 5 config.json written the 4.x way.
json to_v4(json cfg) {
    const json rp = cfg["rope_parameters"];
    cfg.erase("rope_parameters");
    cfg.erase("layer_types");
    if (cfg["model_type"] == "gemma3_text") {
        cfg["rope_theta"] = rp["full_attention"]["rope_theta"];
        cfg["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"];
        cfg["rope_scaling"] = {{"rope_type", rp["full_attention"]["rope_type"]},
                               {"factor", rp["full_attention"]["factor"]}};
        cfg["sliding_window_pattern"] = 6;
        return cfg;
    }
    cfg["rope_theta"] = rp["rope_theta"];
    if (rp.contains("partial_rotary_factor")) cfg["partial_rotary_factor"] = rp["partial_rotary_factor"];
    if (rp["rope_type"] == "default") return cfg;
    json scaling = rp;
    for (const char* k : {"rope_theta", "partial_rotary_factor", "type"}) scaling.erase(k);
    if (cfg["model_type"] == "phi3") {
        scaling.erase("rope_type");
        scaling.erase("original_max_position_embeddings");  // top level in Phi-3's 4.x configs
        scaling["type"] = "longrope";
    }
    cfg["rope_scaling"] = scaling;
    return cfg;
}

// [N, V] logits of the reference ids.
std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& ids) {
    const auto file = ModelFile::open(path);
    const auto model = LlamaModel::load(*file);
    KvCache cache = model->new_cache();
    ForwardOptions fo;
    fo.all_logits = true;
    const at::Tensor t = model->forward(ids, cache, fo).contiguous();
    return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
}

void check_logits(const std::string& name, const std::string& path) {
    const json ref = tiny::ref(name);
    const std::vector<float> want = tiny::logits(name);
    const std::vector<float> got = logits_of(path, ref["ids"].get<std::vector<int32_t>>());
    REQUIRE(got.size() == want.size());
    const auto rep = compare_values(got, want, want.size(), 1e-4, 0.0);
    INFO(name << " at " << path << ": " << rep.str());
    CHECK(rep.first_bad == -1);
}

// safetensors file with every tensor name passed through rename (data bytes unchanged: offsets are
// relative to the end of the header).
void rename_tensors(const std::string& path, const std::function<std::string(const std::string&)>& rename) {
    const std::string bytes = slurp(path);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    const json header = json::parse(bytes.substr(8, n));
    json out = json::object();
    for (auto it = header.begin(); it != header.end(); ++it)
        out[it.key() == "__metadata__" ? it.key() : rename(it.key())] = it.value();
    const std::string text = out.dump();
    const uint64_t m = text.size();
    std::string result(8, '\0');
    std::memcpy(result.data(), &m, 8);
    spit(path, result + text + bytes.substr(8 + n));
}

}  // namespace

TEST_CASE("Hub-style (transformers 4.x) config.json files give transformers' logits", "[model][arch]") {
    snapkv::test::TempDir dir;
    for (const std::string& name : tiny::names()) {
        DYNAMIC_SECTION(name) {
            const json cfg = json::parse(slurp(tiny::hf_path(name) + "/config.json"));
            const json v4 = to_v4(cfg);
            CHECK_FALSE(v4.contains("rope_parameters"));
            check_logits(name, copy_folder(name, dir, v4));
        }
    }
}

TEST_CASE("A multimodal Gemma 3 checkpoint loads its text model", "[model][arch]") {
    // Gemma3ForConditionalGeneration on the Hub: model_type gemma3, the text settings in
    // text_config (only what differs from Gemma3TextConfig), tensors under language_model.model.
    snapkv::test::TempDir dir;
    const json text = json::parse(slurp(tiny::hf_path("gemma3") + "/config.json"));
    json cfg = {{"model_type", "gemma3"},
                {"architectures", {"Gemma3ForConditionalGeneration"}},
                {"text_config", text},
                {"vision_config", {{"model_type", "siglip_vision_model"}}}};
    const std::string folder = copy_folder("gemma3", dir, cfg);
    rename_tensors(folder + "/model.safetensors", [](const std::string& n) { return "language_model." + n; });
    const auto file = ModelFile::open(folder);
    CHECK(file->config().arch == "gemma3");
    CHECK(file->config().layers[5].sliding_window == 0);
    CHECK(file->config().layers[4].sliding_window == 10);
    check_logits("gemma3", folder);
}

TEST_CASE("phi3 refuses positions past longrope's original context, naming longrope", "[model][arch]") {
    const auto file = ModelFile::open(tiny::gguf_path("phi3"));
    REQUIRE(file->config().rope_scaling.type == "longrope");
    REQUIRE(file->config().rope_scaling.original_ctx == 128);
    const auto model = LlamaModel::load(*file);
    KvCache cache = model->new_cache();
    std::vector<int32_t> ids(127, 300);
    model->forward(ids, cache);    // positions 0..126: short factors
    model->forward({300}, cache);  // position 127: the last one allowed
    try {
        model->forward({300}, cache);
        FAIL("position 128 was accepted");
    } catch (const InputError& e) {
        const std::string msg = e.what();
        CHECK(msg.find("longrope") != std::string::npos);
        CHECK(msg.find("128") != std::string::npos);
    }
    // Refused before anything was appended: the cache still ends at position 127.
    CHECK(cache.n_past() == 128);
    for (int64_t l = 0; l < cache.n_layer(); ++l) CHECK(cache.layer(l).size() == 128);
}
