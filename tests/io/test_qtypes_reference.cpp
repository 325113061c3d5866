// The six weight types added for real-world GGUF files (Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS)
// against references made outside this project (tests/data/qtypes/README.md): random blocks
// dequantized by gguf-py (which equals ggml's own to_float bit for bit there), and every tensor of
// small models quantized by llama-quantize, whose F32 dequantization by llama-quantize is recorded
// as a sha256 of its float32 bytes. Both must be matched exactly.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/dequant.h"
#include "core/io/model_file.h"
#include "tests/common/sha256.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using snapkv::test::data_path;

namespace {

const char* const kNewTypes[] = {"Q5_0", "Q5_1", "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS"};

// Every tensor listed in a tensors.json (tests/data/qtypes/README.md) has its recorded type and
// reads as float32 bytes with the recorded sha256 (llama-quantize's F32 output). Returns how many
// tensors have type `count_type`.
int check_tensor_hashes(const ModelFile& file, const nlohmann::json& ref, const std::string& count_type) {
    int counted = 0;
    std::vector<float> values;
    for (const auto& t : ref["tensors"]) {
        const std::string name = t["name"].get<std::string>();
        INFO("tensor " << name);
        const TensorDesc& d = file.tensor(name);
        CHECK(d.type == t["quant_type"].get<std::string>());
        int64_t numel = 1;
        for (int64_t s : d.shape) numel *= s;
        values.resize(static_cast<size_t>(numel));
        file.read_f32(name, values.data());
        CHECK(snapkv::test::sha256_hex(values.data(), values.size() * sizeof(float)) ==
              t["sha256_f32"].get<std::string>());
        counted += d.type == count_type ? 1 : 0;
    }
    return counted;
}

uint32_t u32_at(const std::vector<uint8_t>& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
}

}  // namespace

TEST_CASE("The new types dequantize random blocks exactly as gguf-py and ggml do", "[dequant][reference]") {
    for (const char* name : kNewTypes) {
        INFO("type " << name);
        // blocks/<T>.bin: "QBLK", type id, n_blocks, block_bytes, block_values, blocks, floats.
        const std::vector<uint8_t> file = snapkv::test::read_file(
            data_path(std::string("qtypes/blocks/") + name + ".bin"));
        REQUIRE(file.size() >= 20);
        REQUIRE(std::memcmp(file.data(), "QBLK", 4) == 0);
        const GgmlType* t = ggml_type_by_id(u32_at(file, 4));
        REQUIRE(t != nullptr);
        CHECK(std::string(t->name) == name);
        const uint32_t n_blocks = u32_at(file, 8);
        REQUIRE(u32_at(file, 12) == t->block_bytes);
        REQUIRE(u32_at(file, 16) == t->block_size);
        const size_t n_values = size_t(n_blocks) * t->block_size;
        const size_t at_floats = 20 + size_t(n_blocks) * t->block_bytes;
        REQUIRE(file.size() == at_floats + 4 * n_values);
        std::vector<float> want(n_values), got(n_values);
        std::memcpy(want.data(), file.data() + at_floats, 4 * n_values);
        REQUIRE(t->dequant_row != nullptr);
        t->dequant_row(file.data() + 20, got.data(), static_cast<int64_t>(n_values));
        size_t differing = 0, first = n_values;
        for (size_t i = 0; i < n_values; ++i)
            if (std::memcmp(&got[i], &want[i], 4) != 0 && differing++ == 0) first = i;
        INFO(differing << " of " << n_values << " values differ"
                       << (first < n_values ? ", first at " + std::to_string(first) + ": got " +
                                                  std::to_string(got[first]) + ", want " + std::to_string(want[first])
                                            : std::string()));
        CHECK(differing == 0);
    }
}

TEST_CASE("Every tensor of llama-quantize's fixtures dequantizes to llama.cpp's F32 bytes", "[dequant][reference]") {
    for (const char* name : kNewTypes) {
        INFO("type " << name);
        std::ifstream in(data_path(std::string("qtypes/ref/") + name + ".tensors.json"));
        REQUIRE(in.good());
        const nlohmann::json ref = nlohmann::json::parse(in);
        REQUIRE(ref["every_2d_tensor_has_type"].get<bool>());
        const auto file = ModelFile::open(data_path(std::string("qtypes/tiny-") + name + ".gguf"));
        const int quantized = check_tensor_hashes(*file, ref, name);
        CHECK(quantized == 9);  // 7 layer matrices, token_embd and output
    }
}

TEST_CASE("Every tensor of Gemma 3 270M Q4_K_M dequantizes to llama.cpp's F32 bytes", "[dequant][reference][gemma3]") {
    // Q8_0, Q5_0, Q4_K, Q6_K and F32 tensors; tests/data/reference/gemma3/tensors.json holds the
    // sha256 of each tensor in llama-quantize's F32 dequantization of the same file.
    const std::string path = snapkv::test::gemma3_path();
    INFO("Gemma 3 270M is fetched by the setup step (datasets/fetch_model.sh); expected at " << path);
    REQUIRE(snapkv::test::file_exists(path));
    std::ifstream in(data_path("reference/gemma3/tensors.json"));
    REQUIRE(in.good());
    const nlohmann::json ref = nlohmann::json::parse(in);
    const auto file = ModelFile::open(path);
    REQUIRE(ref["tensors"].size() == file->tensors().size());
    check_tensor_hashes(*file, ref, "");
}
