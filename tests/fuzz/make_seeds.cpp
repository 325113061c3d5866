// Writes the starting corpus of each fuzz target from the test suite's own file builders (a tiny
// llama and qwen2 GGUF, their safetensors and config.json, tokenizer.json of both families, a
// session file) and hand-made hostile probes (files that lie about counts and sizes) into
// DIR/<target>/. tests/fuzz/run.sh adds the stories260K GGUFs of tests/data.
// Usage: make_seeds DIR
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/gguf_model.h"
#include "tests/common/hf_format.h"
#include "tests/io/gguf_test_writer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace snapkv;
using namespace snapkv::test;

void put(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    if (!out) {
        std::fprintf(stderr, "make_seeds: cannot write %s\n", path.c_str());
        std::exit(1);
    }
}

std::string str(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

// A byte-level vocabulary (GPT-2 / SmolLM2 family) of a handful of tokens and merges.
VocabData byte_level_vocab() {
    VocabData v;
    v.model = "gpt2";
    v.tokens = {"<|endoftext|>", "H",     "e",        "l", "o", "\xc4\xa0", "w", "r", "d", "!", "He", "ll",
                "Hell",          "Hello", "\xc4\xa0w"};
    v.types.assign(v.tokens.size(), 1);
    v.types[0] = 3;
    v.merges = {"H e", "l l", "He ll", "Hell o", "\xc4\xa0 w"};
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    const fs::path dir = argv[1];
    for (const char* arch : {"llama", "qwen2"}) {
        TinySpec spec;
        spec.arch = arch;
        spec.n_layer = 2;
        const GgufWriter g = tiny_model(spec);
        const fs::path gguf = dir / "gguf" / (std::string("tiny_") + arch + ".gguf");
        put(gguf, str(g.build()));

        GgufModel m(gguf.string());
        put(dir / "config" / (std::string(arch) + ".json"), hf_config_json(m.config(), arch, false, "float32").dump(2));
        std::vector<StTensor> tensors;
        for (const TensorDesc& t : m.tensors()) {
            if (tensors.size() == 4) break;
            std::vector<float> v(t.nbytes / 4);
            m.read_f32(t.name, v.data());
            tensors.push_back({hf_tensor_name(t.name), "F32", t.shape, f32_bytes(v)});
        }
        put(dir / "safetensors" / (std::string(arch) + ".safetensors"), str(safetensors_bytes(tensors)));
        if (std::string(arch) == "llama") put(dir / "tokenizer" / "spm.json", spm_tokenizer_json(m.vocab()).dump());
    }
    put(dir / "tokenizer" / "byte_level.json", byte_level_tokenizer_json(byte_level_vocab()).dump());

    // Hostile probes that once got through, so each run starts from them: counts that lie (they
    // sized per-layer tables before they were checked; -1 was blamed on another key), and a first
    // key claiming 10^6 bytes (echoed whole); kept small: the file ends long before the key would.
    for (const auto& [name, count] :
         {std::pair{"blocks_1e9.gguf", int64_t(1000000000)}, std::pair{"blocks_minus1.gguf", int64_t(-1)}}) {
        GgufWriter g = tiny_model();
        if (count < 0) g.kv_i32("llama.block_count", static_cast<int32_t>(count));
        else g.kv_u32("llama.block_count", static_cast<uint32_t>(count));
        put(dir / "gguf" / name, str(g.build()));
    }
    {
        ByteWriter w;
        w.put<uint32_t>(0x46554747);  // "GGUF"
        w.put<uint32_t>(3);
        w.put<uint64_t>(0);        // tensors
        w.put<uint64_t>(1);        // metadata entries
        w.put<uint64_t>(1000000);  // the first key's length
        w.b.insert(w.b.end(), 4096, 'k');
        put(dir / "gguf" / "key_1e6.gguf", str(w.b));
    }
    json layers = hf_config_json(GgufModel((dir / "gguf" / "tiny_llama.gguf").string()).config(), "llama", false,
                                 "float32");
    layers["num_hidden_layers"] = 1000000000;
    put(dir / "config" / "layers_1e9.json", layers.dump(2));
    // Tokenizer parts we cannot reproduce (they were once skipped in silence).
    json bogus = byte_level_tokenizer_json(byte_level_vocab());
    bogus["normalizer"] = {{"type", "Bogus"}};
    put(dir / "tokenizer" / "bogus_normalizer.json", bogus.dump());
    json split = byte_level_tokenizer_json(byte_level_vocab());
    split["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"use_regex", false}}})}};
    put(dir / "tokenizer" / "bad_split_regex.json", split.dump());
    json gemma = {{"model_type", "gemma3_text"},
                  {"hidden_size", 64},
                  {"intermediate_size", 128},
                  {"num_hidden_layers", 6},
                  {"num_attention_heads", 4},
                  {"num_key_value_heads", 1},
                  {"head_dim", 16},
                  {"vocab_size", 300},
                  {"max_position_embeddings", 2048},
                  {"sliding_window", 512},
                  {"rope_theta", 1000000.0},
                  {"rope_local_base_freq", 10000.0},
                  {"query_pre_attn_scalar", 16},
                  {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}};
    put(dir / "config" / "gemma3.json", gemma.dump(2));
    const json session = {
        {"format", "snapkv-studio-session"},
        {"version", 1},
        {"model", {{"path", "/models/m.gguf"}, {"relative_path", "m.gguf"}, {"device", "cpu"}, {"dtype", "float32"}}},
        {"prompt",
         {{"document", "A short document.\n"}, {"document_path", "doc.md"}, {"question", "What?"}, {"chat", true}}},
        {"params",
         {{"policy", "snapkv"},
          {"window", 32},
          {"kernel", 7},
          {"pooling", "max"},
          {"budget", 1024},
          {"gqa", "kv-head"},
          {"sink", 4},
          {"seed", 42}}},
        {"display", {{"colormap", "viridis"}, {"log", false}}},
        {"focus", {{"layer", 3}, {"head", 1}}},
        {"view", "overview"},
        {"max_tokens", 48},
        {"ran", true},
        {"window", {{"geometry", ""}, {"state", ""}}}};
    put(dir / "session" / "session.json", session.dump(2));
    return 0;
}
