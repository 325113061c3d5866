// Hugging Face folders: built in the test from GGUF weights in reverse (HF names, the inverse of
// llama.cpp's Q/K permutation, config.json, tokenizer.json, safetensors written from the format
// spec), then opened with ModelFile::open and compared tensor by tensor with the GGUF original.
// Then one test per kind of bad safetensors file or folder, asserting kind and message.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/model_file.h"
#include "core/io/safetensors_reader.h"
#include "tests/common/hf_format.h"
#include "tests/io/gguf_test_writer.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using namespace snapkv::test;
using Kind = FileError::Kind;
using nlohmann::json;

namespace {

std::vector<uint8_t> build_raw(const std::string& header, size_t data_bytes) {
    ByteWriter w;
    w.put<uint64_t>(header.size());
    w.b.insert(w.b.end(), header.begin(), header.end());
    w.b.resize(w.b.size() + data_bytes);
    return w.b;
}

std::vector<uint8_t> f16_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
        const _Float16 h = static_cast<_Float16>(v[i]);  // the compiler's round-to-nearest-even
        std::memcpy(&out[2 * i], &h, 2);
    }
    return out;
}

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::vector<float> read_all(const ModelFile& m, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(numel(m.tensor(name).shape)));
    m.read_f32(name, v.data());
    return v;
}

struct HfOptions {
    std::string dtype = "F32";  // F32 | F16
    int shards = 1;
    std::string model_type = "llama";
    bool add_qwen2_biases = false;
};

// Writes config.json, tokenizer.json and the weights of `src` as a Hugging Face folder.
void write_hf_folder(const ModelFile& src, const std::string& dir, const HfOptions& o) {
    const ModelConfig& c = src.config();
    json cfg = hf_config_json(c, o.model_type, c.tied_embeddings, o.dtype == "F32" ? "float32" : "float16");
    cfg["head_dim"] = nullptr;
    write_text(dir + "/config.json", cfg.dump(2));

    json vocab = json::object();
    for (size_t i = 0; i < src.vocab().tokens.size(); ++i) vocab[src.vocab().tokens[i]] = i;
    json tok = {{"version", "1.0"},
                {"truncation", nullptr},
                {"padding", nullptr},
                {"added_tokens", json::array()},
                {"normalizer", nullptr},
                {"pre_tokenizer", nullptr},
                {"post_processor", nullptr},
                {"decoder", nullptr},
                {"model",
                 {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", "<unk>"},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"vocab", vocab},
                  {"merges", json::array()}}}};
    write_text(dir + "/tokenizer.json", tok.dump());

    std::vector<StTensor> all;
    for (const TensorDesc& t : src.tensors()) {
        std::vector<float> v = read_all(src, t.name);
        const bool is_q = t.name.find(".attn_q.weight") != std::string::npos;
        const bool is_k = t.name.find(".attn_k.weight") != std::string::npos;
        if (o.model_type != "qwen2" && (is_q || is_k))
            v = to_hf_rows(v, t.shape[0], t.shape[1], is_q ? c.n_head : c.n_head_kv);
        all.push_back({hf_tensor_name(t.name), o.dtype, t.shape, o.dtype == "F32" ? f32_bytes(v) : f16_bytes(v)});
    }
    if (o.add_qwen2_biases)
        for (int64_t il = 0; il < c.n_layer; ++il)
            for (const char* p : {"q", "k", "v"}) {
                const int64_t n = (std::string(p) == "q" ? c.n_head : c.n_head_kv) * c.head_dim;
                const auto v = test_values(static_cast<size_t>(n), 3.0f + il);
                all.push_back({"model.layers." + std::to_string(il) + ".self_attn." + p + "_proj.bias",
                               o.dtype,
                               {n},
                               o.dtype == "F32" ? f32_bytes(v) : f16_bytes(v)});
            }

    if (o.shards == 1) {
        write_file(dir + "/model.safetensors", safetensors_bytes(all));
        return;
    }
    json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
    for (int s = 0; s < o.shards; ++s) {
        std::vector<StTensor> part;
        for (size_t i = static_cast<size_t>(s); i < all.size(); i += static_cast<size_t>(o.shards))
            part.push_back(all[i]);
        const std::string file = "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(o.shards) +
                                 ".safetensors";
        write_file(dir + "/" + file, safetensors_bytes(part));
        for (const StTensor& t : part) index["weight_map"][t.name] = file;
    }
    write_text(dir + "/model.safetensors.index.json", index.dump(2));
}

// The tensors of a safetensors file as StTensor values, to write it again with changes.
std::vector<StTensor> read_back(const std::string& path) {
    SafetensorsFile f(path);
    std::vector<StTensor> all;
    for (const SafetensorsTensor& t : f.tensors())
        all.push_back({t.name, t.dtype, t.shape, std::vector<uint8_t>(f.data(t), f.data(t) + (t.end - t.begin))});
    return all;
}

// Rewrites the safetensors file at path without the tensor named name.
void drop_tensor(const std::string& path, const std::string& name) {
    std::vector<StTensor> all = read_back(path);
    all.erase(std::remove_if(all.begin(), all.end(), [&](const StTensor& t) { return t.name == name; }), all.end());
    write_file(path, safetensors_bytes(all));
}

void check_same_tensors(const ModelFile& hf, const ModelFile& gguf, bool f16) {
    REQUIRE(hf.tensors().size() == gguf.tensors().size());
    for (const TensorDesc& t : gguf.tensors()) {
        INFO("tensor " << t.name);
        REQUIRE(hf.has_tensor(t.name));
        CHECK(hf.tensor(t.name).shape == t.shape);
        const auto got = read_all(hf, t.name);
        auto want = read_all(gguf, t.name);
        if (f16)
            for (float& x : want) x = static_cast<float>(static_cast<_Float16>(x));
        const auto d = compare_exact(got.data(), want.data(), static_cast<int64_t>(want.size()));
        INFO(d.text());
        CHECK(d.first_bad == -1);
    }
}

std::string tiny_gguf(const TempDir& dir, const TinySpec& spec = TinySpec()) {
    const std::string path = dir.file("tiny.gguf");
    write_file(path, tiny_model(spec).build());
    return path;
}

// tiny_gguf written as an HF folder dir/hf; returns the folder's path.
std::string tiny_hf_folder(const TempDir& dir, const HfOptions& o = HfOptions()) {
    const auto gguf = ModelFile::open(tiny_gguf(dir));
    const std::string folder = dir.file("hf");
    std::filesystem::create_directories(folder);
    write_hf_folder(*gguf, folder, o);
    return folder;
}

void folder_error(const std::string& dir, Kind kind, std::initializer_list<std::string> pieces) {
    require_file_error([&] { ModelFile::open(dir); }, kind, pieces);
}

}  // namespace

TEST_CASE("An HF folder written from stories260K reads back every tensor exactly", "[safetensors]") {
    TempDir dir;
    const auto gguf = ModelFile::open(data_path("stories260K.gguf"));
    write_hf_folder(*gguf, dir.path(), HfOptions());
    const auto hf = ModelFile::open(dir.path());
    CHECK(hf->format() == "safetensors (1 file)");
    const ModelConfig& a = hf->config();
    const ModelConfig& b = gguf->config();
    CHECK(a.arch == "llama");
    CHECK(a.n_layer == b.n_layer);
    CHECK(a.n_embd == b.n_embd);
    CHECK(a.n_ff == b.n_ff);
    CHECK(a.n_head == b.n_head);
    CHECK(a.n_head_kv == b.n_head_kv);
    CHECK(a.head_dim == b.head_dim);
    CHECK(a.n_rot == b.n_rot);
    CHECK(a.n_vocab == b.n_vocab);
    CHECK(a.n_ctx_train == b.n_ctx_train);
    CHECK(a.rms_eps == b.rms_eps);
    CHECK(a.rope_freq_base == b.rope_freq_base);
    CHECK(a.rope_neox == b.rope_neox);
    CHECK(a.tied_embeddings == b.tied_embeddings);
    CHECK(hf->vocab().tokens.size() == 512);
    check_same_tensors(*hf, *gguf, false);
    std::map<std::string, std::string> summary;
    for (const auto& kv : hf->metadata_summary()) summary.insert(kv);
    CHECK(summary["model_type"] == "llama");
    CHECK(summary["hidden_size"] == "64");
}

TEST_CASE("F16 weights in two shards read back as the F16-rounded GGUF weights", "[safetensors]") {
    TempDir dir;
    const auto gguf = ModelFile::open(data_path("stories260K.gguf"));
    HfOptions o;
    o.dtype = "F16";
    o.shards = 2;
    write_hf_folder(*gguf, dir.path(), o);
    const auto hf = ModelFile::open(dir.path());
    CHECK(hf->format() == "safetensors (2 shards)");
    CHECK(hf->tensor("blk.0.attn_q.weight").type == "F16");
    check_same_tensors(*hf, *gguf, true);
}

TEST_CASE("qwen2 folders keep HF's Q/K row order and carry q/k/v biases", "[safetensors]") {
    TempDir dir;
    TinySpec spec;
    spec.arch = "qwen2";
    const auto gguf = ModelFile::open(tiny_gguf(dir, spec));
    const std::string folder = dir.file("hf");
    std::filesystem::create_directories(folder);
    HfOptions o;
    o.model_type = "qwen2";
    write_hf_folder(*gguf, folder, o);  // the GGUF's biases are written under HF names
    const auto hf = ModelFile::open(folder);
    CHECK(hf->config().arch == "qwen2");
    CHECK(hf->config().rope_neox);
    CHECK(hf->config().qkv_bias);
    check_same_tensors(*hf, *gguf, false);
}

TEST_CASE("llama3 and linear rope_scaling are read from config.json", "[safetensors]") {
    TempDir dir;
    const std::string folder = tiny_hf_folder(dir);
    json cfg = json::parse(read_file(folder + "/config.json"));
    cfg["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", 8.0},
                           {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0},
                           {"original_max_position_embeddings", 8192}};
    write_text(folder + "/config.json", cfg.dump());
    const RopeScaling rs = ModelFile::open(folder)->config().rope_scaling;
    CHECK(rs.type == "llama3");
    CHECK(rs.factor == 8.0f);
    CHECK(rs.original_ctx == 8192);
    CHECK(rs.high_freq_factor == 4.0f);
    cfg["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
    write_text(folder + "/config.json", cfg.dump());
    folder_error(folder, Kind::Unsupported, {"rope_scaling type 'yarn' is not supported"});
}

TEST_CASE("A safetensors header length that is absurd or past the end is refused", "[safetensors]") {
    TempDir dir;
    const std::string path = dir.file("a.safetensors");
    SECTION("over 100 MB: BadSize") {
        ByteWriter w;
        w.put<uint64_t>(uint64_t(1) << 40);
        w.b.resize(64, '{');
        write_file(path, w.b);
        require_file_error([&] { SafetensorsFile f(path); }, Kind::BadSize,
                           {"safetensors: " + path, "header length 1099511627776 bytes is more than"});
    }
    SECTION("longer than the file: Truncated") {
        std::vector<uint8_t> b = build_raw("{}", 0);
        b[0] = 200;
        write_file(path, b);
        require_file_error([&] { SafetensorsFile f(path); }, Kind::Truncated,
                           {"header length 200 bytes runs past the end of the file (10 bytes)"});
    }
    SECTION("shorter than the length field: Truncated") {
        write_file(path, {1, 2, 3});
        require_file_error([&] { SafetensorsFile f(path); }, Kind::Truncated, {"file is 3 bytes"});
    }
}

TEST_CASE("A safetensors header that is not valid JSON is BadJson", "[safetensors]") {
    TempDir dir;
    const std::string path = dir.file("a.safetensors");
    write_file(path, build_raw("{\"x\": {\"dtype\": \"F32\", ", 0));
    require_file_error([&] { SafetensorsFile f(path); }, Kind::BadJson, {"header is not valid JSON"});
    write_file(path, build_raw("[1, 2]", 0));
    require_file_error([&] { SafetensorsFile f(path); }, Kind::BadJson, {"header is a JSON array, expected an object"});
    write_file(path, build_raw(R"({"x": {"dtype": "F32", "shape": [2]}})", 8));
    require_file_error([&] { SafetensorsFile f(path); }, Kind::BadJson, {"tensor 'x'", "data_offsets"});
}

TEST_CASE("safetensors data_offsets past the end of the data are refused", "[safetensors]") {
    TempDir dir;
    const std::string path = dir.file("a.safetensors");
    SECTION("past the end: Truncated") {
        write_file(path, build_raw(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8));
        require_file_error([&] { SafetensorsFile f(path); }, Kind::Truncated,
                           {"tensor 'w'", "data_offsets [0,16] run past the end of the data (8 bytes"});
    }
    SECTION("a range that does not match dtype and shape: BadSize") {
        write_file(path, build_raw(R"({"w": {"dtype": "F16", "shape": [4], "data_offsets": [0, 16]}})", 16));
        require_file_error([&] { SafetensorsFile f(path); }, Kind::BadSize, {"hold 16 bytes, but F16 [4] needs 8"});
    }
    SECTION("begin after end: BadValue") {
        write_file(path, build_raw(R"({"w": {"dtype": "F16", "shape": [0], "data_offsets": [8, 4]}})", 16));
        require_file_error([&] { SafetensorsFile f(path); }, Kind::BadValue, {"begin is after end"});
    }
}

TEST_CASE("Unsupported safetensors dtypes are refused naming the tensor and the dtype", "[safetensors]") {
    TempDir dir;
    SECTION("a dtype safetensors does not define") {
        const std::string path = dir.file("a.safetensors");
        write_file(path, build_raw(R"({"w": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 1]}})", 1));
        require_file_error([&] { SafetensorsFile f(path); }, Kind::Unsupported,
                           {"tensor 'w'", "dtype 'Q7' is not supported"});
    }
    SECTION("a valid dtype the model cannot use (I32 for K)") {
        const std::string folder = tiny_hf_folder(dir);
        std::vector<StTensor> all = read_back(folder + "/model.safetensors");
        for (StTensor& t : all)
            if (t.name == "model.layers.0.self_attn.k_proj.weight") t.dtype = "I32";
        write_file(folder + "/model.safetensors", safetensors_bytes(all));
        folder_error(
            folder, Kind::Unsupported,
            {"tensor 'blk.0.attn_k.weight' ('model.layers.0.self_attn.k_proj.weight') has type I32", "cannot be read"});
    }
}

TEST_CASE("A folder without a tensor the architecture needs is MissingTensor", "[safetensors]") {
    TempDir dir;
    const std::string folder = tiny_hf_folder(dir);
    drop_tensor(folder + "/model.safetensors", "model.layers.0.mlp.up_proj.weight");
    folder_error(folder, Kind::MissingTensor,
                 {"hf: " + folder, "tensor 'blk.0.ffn_up.weight' ('model.layers.0.mlp.up_proj.weight') is missing"});
}

TEST_CASE("A shard index pointing at a missing file is refused naming the shard", "[safetensors]") {
    TempDir dir;
    HfOptions o;
    o.shards = 2;
    const std::string folder = tiny_hf_folder(dir, o);
    SECTION("missing shard file: Io") {
        std::filesystem::remove(folder + "/model-00002-of-00002.safetensors");
        folder_error(folder, Kind::Io,
                     {"model.safetensors.index.json", "shard 'model-00002-of-00002.safetensors'", "not found"});
    }
    SECTION("a shard path that leaves the folder: BadValue") {
        json index = json::parse(read_file(folder + "/model.safetensors.index.json"));
        index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
        write_text(folder + "/model.safetensors.index.json", index.dump());
        folder_error(folder, Kind::BadValue, {"'../elsewhere.safetensors'", "inside the folder"});
    }
    SECTION("an index entry the shard does not hold: MissingTensor") {
        json index = json::parse(read_file(folder + "/model.safetensors.index.json"));
        index["weight_map"]["model.layers.0.mlp.extra.weight"] = "model-00001-of-00002.safetensors";
        write_text(folder + "/model.safetensors.index.json", index.dump());
        folder_error(folder, Kind::MissingTensor, {"'model.layers.0.mlp.extra.weight' is listed in shard"});
    }
}

TEST_CASE("Bad config.json contents and missing folder files are refused", "[safetensors]") {
    TempDir dir;
    const std::string folder = tiny_hf_folder(dir);
    json cfg = json::parse(read_file(folder + "/config.json"));
    SECTION("unsupported model_type") {
        cfg["model_type"] = "mamba";
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::Unsupported,
                     {"config.json",
                      "model_type 'mamba' is not supported (supported: llama, mistral, "
                      "qwen2, qwen3, gemma2, gemma3_text, gemma3, phi3)"});
    }
    SECTION("config.json that is not JSON") {
        write_text(folder + "/config.json", "{\"model_type\": ");
        folder_error(folder, Kind::BadJson, {"config.json: not valid JSON"});
    }
    SECTION("a mistyped field") {
        cfg["hidden_size"] = "32";
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::BadJson, {"key 'hidden_size' = \"32\": expected an integer"});
    }
    SECTION("heads that do not divide") {
        cfg["num_key_value_heads"] = 3;
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::BadValue, {"'num_key_value_heads' = 3", "must divide num_attention_heads = 4"});
    }
    SECTION("untied embeddings without lm_head") {
        drop_tensor(folder + "/model.safetensors", "lm_head.weight");
        folder_error(folder, Kind::MissingTensor, {"'lm_head.weight' is missing", "tie_word_embeddings is false"});
        cfg["tie_word_embeddings"] = true;
        write_text(folder + "/config.json", cfg.dump());
        CHECK(ModelFile::open(folder)->config().tied_embeddings);
    }
    SECTION("no tokenizer.json") {
        std::filesystem::remove(folder + "/tokenizer.json");
        folder_error(folder, Kind::Io, {"tokenizer.json not found"});
    }
    SECTION("no weights") {
        std::filesystem::remove(folder + "/model.safetensors");
        folder_error(folder, Kind::Io, {"neither model.safetensors nor model.safetensors.index.json"});
    }
}

TEST_CASE(
    "HF folders that lie are refused: more layers than num_hidden_layers, NaN weights, "
    "shared bytes, deep JSON",
    "[safetensors][checks]") {
    // Files that lie load garbage (or overflow the stack) unless refused: the same checks as the
    // GGUF reader's, for the Hugging Face reader.
    TempDir dir;
    SECTION("num_hidden_layers smaller than the layers in the file") {
        TinySpec spec;
        spec.n_layer = 2;
        const auto gguf = ModelFile::open(tiny_gguf(dir, spec));
        const std::string folder = dir.file("hf2");
        std::filesystem::create_directories(folder);
        write_hf_folder(*gguf, folder, HfOptions());
        CHECK_NOTHROW(ModelFile::open(folder));
        json cfg = json::parse(read_file(folder + "/config.json"));
        cfg["num_hidden_layers"] = 1;
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::BadValue,
                     {"config.json", "tensor 'model.layers.1.", "belongs to block 1", "'num_hidden_layers' = 1"});
    }
    SECTION("a NaN weight is refused when read, with the name the file uses") {
        const std::string folder = tiny_hf_folder(dir);
        std::vector<StTensor> all = read_back(folder + "/model.safetensors");
        for (StTensor& t : all)
            if (t.name == "model.layers.0.mlp.up_proj.weight") {
                const float inf = std::numeric_limits<float>::infinity();
                std::memcpy(&t.data[4 * 7], &inf, 4);
            }
        write_file(folder + "/model.safetensors", safetensors_bytes(all));
        const auto m = ModelFile::open(folder);
        std::vector<float> buf(64 * 32);
        require_file_error([&] { m->read_f32("blk.0.ffn_up.weight", buf.data()); }, Kind::BadValue,
                           {"tensor 'model.layers.0.mlp.up_proj.weight' (F32)", "NaN or infinite value at element 7"});
    }
    SECTION("two entries sharing bytes") {
        const std::string path = dir.file("a.safetensors");
        write_file(path, build_raw(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                      "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
                                   24));
        require_file_error([&] { SafetensorsFile f(path); }, Kind::BadValue,
                           {"tensors 'a' (bytes 0..16) and 'b' (bytes 8..24) overlap"});
    }
    SECTION("config.json nested 100000 levels deep") {
        const std::string folder = tiny_hf_folder(dir);
        json cfg = json::parse(read_file(folder + "/config.json"));
        std::string text = cfg.dump();
        text.pop_back();  // the closing brace
        text += ", \"deep\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
        write_text(folder + "/config.json", text);
        folder_error(folder, Kind::BadJson, {"config.json: JSON nested more than 64 levels deep"});
    }
    SECTION("a safetensors __metadata__ nested 100000 levels deep") {
        const std::string path = dir.file("m.safetensors");
        write_file(
            path,
            build_raw("{\"__metadata__\": {\"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}}", 0));
        require_file_error([&] { SafetensorsFile f(path); }, Kind::BadJson,
                           {"header is JSON nested more than 64 levels deep"});
    }
}

TEST_CASE("config.json counts are checked before anything is sized from them", "[safetensors][checks]") {
    // A lying count must cost nothing: "num_hidden_layers": 10^9 once ran 25-33 s and reached
    // 15.9 GB before the range check (the per-layer tables were sized first).
    TempDir dir;
    const std::string folder = tiny_hf_folder(dir);
    json cfg = json::parse(read_file(folder + "/config.json"));
    SECTION("num_hidden_layers 10^9") {
        cfg["num_hidden_layers"] = 1000000000;
        write_text(folder + "/config.json", cfg.dump());
        const auto t0 = std::chrono::steady_clock::now();
        folder_error(folder, Kind::BadValue,
                     {"config.json", "key 'num_hidden_layers' = 1000000000: allowed 1 to 4096"});
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
    }
    SECTION("num_hidden_layers 10^9 with layer_types") {
        cfg["num_hidden_layers"] = 1000000000;
        cfg["layer_types"] = json::array({"full_attention"});
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::BadValue, {"key 'num_hidden_layers' = 1000000000: allowed 1 to 4096"});
    }
    SECTION("max_position_embeddings -1") {
        cfg["max_position_embeddings"] = -1;
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::BadValue, {"key 'max_position_embeddings' = -1: allowed 1 to"});
    }
    SECTION("a model_type of 5000 bytes is quoted cut") {
        cfg["model_type"] = std::string(5000, 'm');
        write_text(folder + "/config.json", cfg.dump());
        folder_error(folder, Kind::Unsupported, {"model_type 'mmm", "... (5000 bytes)' is not supported"});
        try {
            ModelFile::open(folder);
        } catch (const FileError& e) {
            CHECK(std::string(e.what()).size() < 600);
        }
    }
}
