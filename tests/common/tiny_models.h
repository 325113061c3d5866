// The tiny transformers-made models of tests/data/tiny (made by tests/data/make_tiny_models.py):
// paths, ref.json and the float32 reference arrays (transformers' logits and attention rows).
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace snapkv::test::tiny {

// One per supported architecture family; see tests/data/PROVENANCE.md.
inline const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"};
    return n;
}

inline std::string dir(const std::string& name) { return std::string(SNAPKV_TEST_DATA) + "/tiny/" + name; }
inline std::string gguf_path(const std::string& name) { return dir(name) + "/" + name + ".gguf"; }
inline std::string hf_path(const std::string& name) { return dir(name) + "/hf"; }
// "gguf" or "hf"
inline std::string path(const std::string& name, const std::string& format) {
    return format == "gguf" ? gguf_path(name) : hf_path(name);
}

inline nlohmann::json ref(const std::string& name) {
    std::ifstream in(dir(name) + "/ref.json");
    if (!in) throw std::runtime_error("tiny model reference missing: " + dir(name) + "/ref.json");
    return nlohmann::json::parse(in);
}

// Little-endian float32 file -> values.
inline std::vector<float> floats(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error("cannot open " + path);
    const auto n = static_cast<size_t>(in.tellg());
    std::vector<float> v(n / sizeof(float));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    return v;
}

inline std::vector<float> logits(const std::string& name) { return floats(dir(name) + "/logits.bin"); }  // [N, V]
inline std::vector<float> attention(const std::string& name) {
    return floats(dir(name) + "/attn.bin");
}  // [n_layer, H, 32, N]

}  // namespace snapkv::test::tiny
