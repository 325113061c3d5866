// One test per kind of bad GGUF file (after llama.cpp's tests/test-gguf.cpp): each builds a file
// with the test writer (or cuts a copy of stories260K.gguf), opens it, and asserts the
// FileError kind and the pieces of the message that tell the user where, which item, the value
// found and what was allowed. Also the positive cases the checks must not break.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/io/gguf_model.h"
#include "core/io/gguf_reader.h"
#include "core/io/model_file.h"
#include "tests/io/gguf_test_writer.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using namespace snapkv::test;
using Kind = FileError::Kind;

namespace {

std::string save(const TempDir& dir, const GgufWriter& g, GgufWriter::Layout* layout = nullptr) {
    const std::string path = dir.file("x.gguf");
    write_file(path, g.build(layout));
    return path;
}

void reader_error(const std::string& path, Kind kind, std::initializer_list<std::string> pieces) {
    require_file_error([&] { GgufReader r(path); }, kind, pieces);
}

void model_error(const std::string& path, Kind kind, std::initializer_list<std::string> pieces) {
    require_file_error([&] { ModelFile::open(path); }, kind, pieces);
}

}  // namespace

TEST_CASE("The tiny test model is valid, so each corruption below is the only fault", "[gguf]") {
    TempDir dir;
    const auto m = ModelFile::open(save(dir, tiny_model()));
    CHECK(m->config().n_embd == 32);
    CHECK(m->config().head_dim == 8);
    CHECK(m->tensors().size() == 12);
    std::vector<float> q(32 * 32);
    m->read_f32("blk.0.attn_q.weight", q.data());
    float seed = 0.1f;
    for (int i = 0; i < 5; ++i) seed += 1.0f;  // attn_q is the fifth tensor tiny_model writes
    const auto want = test_values(32 * 32, seed);
    CHECK(compare_exact(q.data(), want.data(), 32 * 32).first_bad == -1);
}

TEST_CASE("A file without the GGUF magic is refused as BadMagic", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.magic = 0x4C4D4747;  // "GGML"
    const std::string path = save(dir, g);
    reader_error(path, Kind::BadMagic, {"gguf: " + path, "not a GGUF file", "'GGML'"});
    model_error(path, Kind::BadMagic, {"not a GGUF file"});
    write_text(dir.file("empty.gguf"), "");
    reader_error(dir.file("empty.gguf"), Kind::BadMagic, {"file is 0 bytes"});
}

TEST_CASE("GGUF versions other than 2 and 3 are refused as BadVersion", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("version 1 (32-bit counts)") {
        g.version = 1;
        reader_error(save(dir, g), Kind::BadVersion, {"GGUF version 1 is not supported", "supported: 2, 3"});
    }
    SECTION("version 99") {
        g.version = 99;
        reader_error(save(dir, g), Kind::BadVersion, {"GGUF version 99", "supported: 2, 3"});
    }
    SECTION("a big-endian version 3 gets a hint") {
        g.version = 0x03000000;
        reader_error(save(dir, g), Kind::BadVersion, {"big-endian"});
    }
    SECTION("version 2 has the same layout and loads") {
        g.version = 2;
        CHECK(ModelFile::open(save(dir, g))->format() == "GGUF v2");
    }
}

TEST_CASE("A GGUF file cut short is Truncated, and the message says where", "[gguf]") {
    TempDir dir;
    GgufWriter::Layout l;
    const std::vector<uint8_t> full = tiny_model().build(&l);
    struct Cut {
        size_t at;
        std::string piece;
    };
    const Cut cuts[] = {
        {10, "the header (tensor count)"},
        {l.kv_at[1] + 5, "metadata key/value 1 (key)"},
        {l.kv_at[2] + 30, "metadata key/value 2 ('llama.context_length') (value type)"},
        {l.tensor_info_at[0] - 2, "metadata key/value"},
        {l.tensor_info_at[2] + 3, "tensor info 2 (name)"},
        {l.tensor_info_at[3] + 30, "tensor info 3 ('blk.0.attn_norm.weight')"},
        {l.data_begin, "runs past the end of the file"},
        {l.size - 3, "runs past the end of the file (" + std::to_string(l.size - 3) + " bytes"},
    };
    for (const Cut& c : cuts) {
        INFO("cut at byte " << c.at);
        const std::string path = dir.file("cut.gguf");
        write_file(path, std::vector<uint8_t>(full.begin(), full.begin() + static_cast<long>(c.at)));
        reader_error(path, Kind::Truncated, {"gguf: " + path, c.piece});
    }
}

TEST_CASE("Truncated copies of stories260K.gguf are refused at every depth", "[gguf]") {
    TempDir dir;
    const std::vector<uint8_t> full = read_file(data_path("stories260K.gguf"));
    // Inside the header, the metadata (tokens from ~700 bytes on), the tensor infos (which end at
    // byte 14152), the padding before the data (14176) and the tensor data.
    struct Cut {
        size_t at;
        std::string piece;
    };
    const Cut cuts[] = {{7, "the header"},
                        {30, "metadata key/value 0"},
                        {5000, "tokenizer.ggml.tokens"},
                        {14000, "tensor info"},
                        {14160, "runs past the end"},
                        {600000, "runs past the end"},
                        {full.size() - 1, "runs past the end"}};
    for (const Cut& c : cuts) {
        INFO("cut at byte " << c.at);
        const std::string path = dir.file("cut.gguf");
        write_file(path, std::vector<uint8_t>(full.begin(), full.begin() + static_cast<long>(c.at)));
        reader_error(path, Kind::Truncated, {c.piece});
        model_error(path, Kind::Truncated, {"gguf: "});
    }
}

TEST_CASE("Absurd counts and lengths are refused before anything is allocated", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("tensor count") {
        g.n_tensors_override = uint64_t(1) << 40;
        reader_error(save(dir, g), Kind::BadCount, {"tensor count 1099511627776 is absurd"});
    }
    SECTION("metadata key/value count") {
        g.n_kv_override = ~uint64_t(0);
        reader_error(save(dir, g), Kind::BadCount, {"metadata key/value count 18446744073709551615 is absurd"});
    }
    SECTION("array length") {
        ByteWriter w;
        w.put<uint32_t>(kU32);
        w.put<uint64_t>(uint64_t(1) << 50);
        g.kv_raw("tokenizer.ggml.scores", kArr, w.b);
        reader_error(save(dir, g), Kind::BadCount,
                     {"'tokenizer.ggml.scores'", "array length 1125899906842624 is absurd"});
    }
    SECTION("string length") {
        ByteWriter w;
        w.put<uint64_t>(uint64_t(1) << 45);
        w.b.insert(w.b.end(), {'a', 'b'});
        g.kv_raw("general.name", kStr, w.b);
        reader_error(save(dir, g), Kind::BadSize, {"'general.name'", "string length 35184372088832 is absurd"});
    }
    SECTION("string length inside an array") {
        ByteWriter w;
        w.put<uint32_t>(kStr);
        w.put<uint64_t>(2);
        w.str("ok");
        w.put<uint64_t>(~uint64_t(0) - 1);
        g.kv_raw("tokenizer.ggml.tokens", kArr, w.b);
        reader_error(save(dir, g), Kind::BadSize, {"('tokenizer.ggml.tokens') element 1", "string length"});
    }
}

TEST_CASE("Tensors with more than 4 dimensions are refused as BadSize", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.find_tensor("blk.0.attn_q.weight")->ne = {2, 2, 2, 2, 2};
    reader_error(save(dir, g), Kind::BadSize, {"tensor 'blk.0.attn_q.weight'", "5 dimensions", "allowed 1 to 4"});
}

TEST_CASE("Zero and overflowing tensor dimensions are refused", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("a zero dimension is BadSize") {
        g.find_tensor("blk.0.ffn_up.weight")->ne = {32, 0};
        reader_error(save(dir, g), Kind::BadSize, {"tensor 'blk.0.ffn_up.weight'", "dimension 1 is 0"});
    }
    SECTION("dimensions whose product overflows are Overflow") {
        g.find_tensor("blk.0.ffn_up.weight")->ne = {uint64_t(1) << 32, uint64_t(1) << 32, 4};
        reader_error(save(dir, g), Kind::Overflow, {"tensor 'blk.0.ffn_up.weight'", "overflow 64 bits"});
    }
    SECTION("a dimension beyond int64 is Overflow") {
        g.find_tensor("blk.0.ffn_up.weight")->ne = {~uint64_t(0)};
        reader_error(save(dir, g), Kind::Overflow, {"dimension 0 is 18446744073709551615"});
    }
    SECTION("a byte size that overflows is Overflow") {
        // 2^62 values of F32 is 2^64 bytes.
        g.find_tensor("blk.0.ffn_up.weight")->ne = {uint64_t(1) << 31, uint64_t(1) << 31};
        reader_error(save(dir, g), Kind::Overflow, {"byte size", "overflows 64 bits"});
    }
}

TEST_CASE("Tensor offsets that overflow or run past the end of the file are refused", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("offset + size overflows: Overflow") {
        g.find_tensor("output_norm.weight")->offset = ~uint64_t(0) - 31;  // aligned to 32
        reader_error(save(dir, g), Kind::Overflow,
                     {"tensor 'output_norm.weight'", "offset 18446744073709551584 + 128 bytes overflows"});
    }
    SECTION("data past the end of the file: Truncated") {
        g.find_tensor("output_norm.weight")->offset = uint64_t(1) << 20;
        const std::string path = save(dir, g);
        reader_error(path, Kind::Truncated,
                     {"tensor 'output_norm.weight': offset 1048576 + 128 bytes runs past the end "
                      "of the file"});
    }
}

TEST_CASE("A tensor offset that is not a multiple of the alignment is refused as BadValue", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.find_tensor("output_norm.weight")->offset = 4;
    reader_error(save(dir, g), Kind::BadValue,
                 {"tensor 'output_norm.weight'", "offset 4 is not a multiple of the alignment 32"});
}

TEST_CASE("general.alignment must be a power of two greater than 0", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("48") {
        g.kv_u32("general.alignment", 48);
        reader_error(save(dir, g), Kind::BadValue, {"'general.alignment' = 48", "power of two"});
    }
    SECTION("0") {
        g.kv_u32("general.alignment", 0);
        reader_error(save(dir, g), Kind::BadValue, {"'general.alignment' = 0", "power of two"});
    }
    SECTION("a string") {
        g.kv_str("general.alignment", "32");
        reader_error(save(dir, g), Kind::BadValue, {"'general.alignment' = \"32\""});
    }
    SECTION("64, with the data laid out on 64 bytes, loads") {
        g.kv_u32("general.alignment", 64);
        g.data_alignment = 64;
        GgufReader r(save(dir, g));
        CHECK(r.alignment() == 64);
        CHECK(r.data_offset() % 64 == 0);
    }
}

TEST_CASE("Duplicate tensor names and metadata keys are refused as BadValue", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("tensor") {
        g.tensors.push_back(*g.find_tensor("output_norm.weight"));
        g.tensors.back().offset.reset();
        reader_error(save(dir, g), Kind::BadValue, {"duplicate tensor name 'output_norm.weight'"});
    }
    SECTION("key") {
        ByteWriter w;
        w.str("again");
        g.kv_raw("general.name", kStr, w.b, /*append=*/true);
        reader_error(save(dir, g), Kind::BadValue, {"duplicate metadata key 'general.name'"});
    }
}

TEST_CASE("A missing required tensor is refused as MissingTensor", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.remove_tensor("blk.0.attn_k.weight");
    model_error(save(dir, g), Kind::MissingTensor,
                {"gguf: ", "tensor 'blk.0.attn_k.weight' is missing", "llama needs it, shape 16x32"});
}

TEST_CASE("A tensor shape that disagrees with the hyperparameters is a ShapeMismatch", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("transposed K") {
        g.find_tensor("blk.0.attn_k.weight")->ne = {16, 32};
        model_error(save(dir, g), Kind::ShapeMismatch, {"tensor 'blk.0.attn_k.weight': 32x16, expected 16x32"});
    }
    SECTION("head_count_kv that does not match K and V") {
        g.kv_u32("llama.attention.head_count_kv", 1);
        model_error(save(dir, g), Kind::ShapeMismatch, {"tensor 'blk.0.attn_k.weight': 16x32, expected 8x32"});
    }
    SECTION("a token_embd with fewer rows than tokens") {
        g.find_tensor("token_embd.weight")->ne = {32, 8};
        g.find_tensor("token_embd.weight")->data.resize(32 * 8 * 4);
        model_error(save(dir, g), Kind::ShapeMismatch, {"tensor 'token_embd.weight': 8x32, expected 16x32"});
    }
}

TEST_CASE("An unknown tensor type id is refused as UnknownType", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("77") {
        g.find_tensor("blk.0.ffn_up.weight")->type = 77;
        reader_error(save(dir, g), Kind::UnknownType, {"tensor 'blk.0.ffn_up.weight'", "unknown ggml type id 77"});
    }
    SECTION("4, a type ggml removed") {
        g.find_tensor("blk.0.ffn_up.weight")->type = 4;
        reader_error(save(dir, g), Kind::UnknownType, {"unknown ggml type id 4"});
    }
}

TEST_CASE("Known ggml types we cannot dequantize are Unsupported, naming the type and the readable ones", "[gguf]") {
    struct Case {
        uint32_t id;
        const char* name;
        size_t block_bytes;  // per 256 values
    };
    // The grid i-quants, the ternary types and MXFP4 (32-value blocks: 8 per 256 values).
    const Case c = GENERATE(Case{16, "IQ2_XXS", 66}, Case{21, "IQ3_S", 110}, Case{29, "IQ1_M", 56},
                            Case{34, "TQ1_0", 54}, Case{35, "TQ2_0", 66}, Case{39, "MXFP4", 8 * 17});
    INFO("type " << c.name);
    TempDir dir;
    TinySpec spec;
    spec.n_ff = 256;  // 256-value blocks: ffn_down rows are n_ff long
    GgufWriter g = tiny_model(spec);
    GgufWriter::Tensor* down = g.find_tensor("blk.0.ffn_down.weight");
    down->type = c.id;
    down->data.assign(c.block_bytes * 32, 0);  // 32 rows of 256 values
    const std::string path = save(dir, g);
    GgufReader r(path);  // the container itself is fine
    CHECK(r.find_tensor("blk.0.ffn_down.weight")->nbytes == c.block_bytes * 32);
    model_error(path, Kind::Unsupported,
                {std::string("tensor 'blk.0.ffn_down.weight' has type ") + c.name, "supported: F32, F16", "Q5_0",
                 "Q2_K", "IQ4_XS"});
}

TEST_CASE("A tensor of a newly readable type whose data is cut short is Truncated", "[gguf]") {
    // Q3_K: 110 bytes per 256 values; the file ends inside the last tensor's blocks.
    TempDir dir;
    TinySpec spec;
    spec.n_ff = 256;
    GgufWriter g = tiny_model(spec);
    GgufWriter::Tensor* down = g.find_tensor("blk.0.ffn_down.weight");
    down->type = 11;
    down->data.assign(110 * 32, 0);
    const std::string path = save(dir, g);
    CHECK_NOTHROW(GgufReader(path));
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 50);
    reader_error(path, Kind::Truncated, {});
}

TEST_CASE("Block-quantized rows must hold whole blocks", "[gguf]") {
    TempDir dir;
    TinySpec spec;
    spec.n_ff = 40;
    GgufWriter g = tiny_model(spec);
    g.find_tensor("blk.0.ffn_down.weight")->type = 8;  // Q8_0 with 40-value rows
    reader_error(save(dir, g), Kind::BadSize,
                 {"tensor 'blk.0.ffn_down.weight'", "row length 40 is not a multiple of the Q8_0 block size 32"});
}

TEST_CASE("An unknown metadata value type is refused as UnknownType", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("value type 13") {
        g.kv_raw("general.mystery", 13, {1, 2, 3, 4});
        reader_error(save(dir, g), Kind::UnknownType, {"metadata key 'general.mystery'", "unknown value type 13"});
    }
    SECTION("array element type 99") {
        ByteWriter w;
        w.put<uint32_t>(99);
        w.put<uint64_t>(1);
        g.kv_raw("general.mystery", kArr, w.b);
        reader_error(save(dir, g), Kind::UnknownType, {"'general.mystery'", "unknown array element type 99"});
    }
}

TEST_CASE("An architecture the runtime does not implement is Unsupported, naming the supported ones", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.kv_str("general.architecture", "mamba");
    model_error(save(dir, g), Kind::Unsupported,
                {"gguf: ",
                 "x.gguf: architecture 'mamba' is not supported (supported: llama, qwen2, "
                 "qwen3, gemma2, gemma3, phi3)"});
}

TEST_CASE("Hyperparameters that are missing, mistyped or inconsistent are BadValue", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("head_count_kv that does not divide head_count") {
        g.kv_u32("llama.attention.head_count_kv", 3);
        model_error(save(dir, g), Kind::BadValue,
                    {"'llama.attention.head_count_kv' = 3", "must divide llama.attention.head_count = 4"});
    }
    SECTION("missing block_count") {
        g.remove_kv("llama.block_count");
        model_error(save(dir, g), Kind::BadValue, {"required key 'llama.block_count' is missing"});
    }
    SECTION("block_count stored as a string") {
        g.kv_str("llama.block_count", "1");
        model_error(save(dir, g), Kind::BadValue, {"key 'llama.block_count' is string, expected an integer"});
    }
    SECTION("zero heads") {
        g.kv_u32("llama.attention.head_count", 0);
        model_error(save(dir, g), Kind::BadValue, {"'llama.attention.head_count' = 0", "allowed 1 to 4096"});
    }
    SECTION("a special token id outside the vocabulary") {
        g.kv_u32("tokenizer.ggml.eos_token_id", 16);
        model_error(save(dir, g), Kind::BadValue, {"'tokenizer.ggml.eos_token_id' = 16", "not a token id (0 to 15)"});
    }
    SECTION("scores that do not match the tokens") {
        g.kv_f32_array("tokenizer.ggml.scores", {0.0f, 1.0f});
        model_error(save(dir, g), Kind::BadValue, {"'tokenizer.ggml.scores' has 2 entries", "(16)"});
    }
    SECTION("yarn RoPE scaling") {
        g.kv_str("llama.rope.scaling.type", "yarn");
        model_error(save(dir, g), Kind::Unsupported, {"'llama.rope.scaling.type' = 'yarn' is not supported"});
    }
}

TEST_CASE("Every metadata value type is read back, nested arrays included", "[gguf]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.kv_scalar<uint8_t>("t.u8", kU8, 200);
    g.kv_scalar<int8_t>("t.i8", kI8, -100);
    g.kv_scalar<uint16_t>("t.u16", kU16, 60000);
    g.kv_scalar<int16_t>("t.i16", kI16, -30000);
    g.kv_scalar<uint32_t>("t.u32", kU32, 4000000000u);
    g.kv_scalar<int32_t>("t.i32", kI32, -2000000000);
    g.kv_scalar<float>("t.f32", kF32, 0.25f);
    g.kv_bool("t.bool", true);
    g.kv_str("t.str", "line1\nline2");
    g.kv_scalar<uint64_t>("t.u64", kU64, uint64_t(1) << 40);
    g.kv_scalar<int64_t>("t.i64", kI64, -(int64_t(1) << 40));
    g.kv_scalar<double>("t.f64", kF64, -1.5);
    ByteWriter nested;  // [[1, 2], [3]] as arrays of int16
    nested.put<uint32_t>(kArr);
    nested.put<uint64_t>(2);
    nested.put<uint32_t>(kI16);
    nested.put<uint64_t>(2);
    nested.put<int16_t>(1);
    nested.put<int16_t>(2);
    nested.put<uint32_t>(kI16);
    nested.put<uint64_t>(1);
    nested.put<int16_t>(3);
    g.kv_raw("t.nested", kArr, nested.b);
    g.kv_i32_array("t.i32s", {-1, 0, 7});
    GgufReader r(save(dir, g));
    CHECK(r.get_int("t.u8") == 200);
    CHECK(r.get_int("t.i8") == -100);
    CHECK(r.get_int("t.u16") == 60000);
    CHECK(r.get_int("t.i16") == -30000);
    CHECK(r.get_int("t.u32") == 4000000000ll);
    CHECK(r.get_int("t.i32") == -2000000000);
    CHECK(r.get_float("t.f32") == 0.25);
    CHECK(r.get_bool("t.bool") == true);
    CHECK(r.get_string("t.str") == std::string("line1\nline2"));
    CHECK(r.get_int("t.u64") == (int64_t(1) << 40));
    CHECK(r.get_int("t.i64") == -(int64_t(1) << 40));
    CHECK(r.get_float("t.f64") == -1.5);
    CHECK(r.get_int_array("t.i32s") == std::vector<int64_t>{-1, 0, 7});
    const GgufValue* n = r.find("t.nested");
    REQUIRE(n != nullptr);
    CHECK(n->type == GgufValueType::Array);
    CHECK(n->elem_type == GgufValueType::Array);
    CHECK(n->count == 2);
    CHECK(r.summarize(*n) == "[2 x array]");
    CHECK(r.summarize(*r.find("t.str")) == "\"line1\\nline2\"");
    CHECK(r.summarize(*r.find("t.i32s")) == "[3 x int32] -1, 0, 7");
    CHECK_FALSE(r.get_int("absent").has_value());
    // The model still loads: unknown keys are kept for `snapkv info`, not refused.
    CHECK(ModelFile::open(dir.file("x.gguf"))->metadata_summary().size() == g.kvs.size());
}

TEST_CASE("Optional tensors and vocabulary extras are picked up", "[gguf]") {
    TempDir dir;
    SECTION("no output.weight means tied embeddings") {
        TinySpec spec;
        spec.with_output = false;
        CHECK(ModelFile::open(save(dir, tiny_model(spec)))->config().tied_embeddings);
    }
    SECTION("rope_freqs.weight is listed and its shape checked") {
        GgufWriter g = tiny_model();
        g.tensor("rope_freqs.weight", {4}, 0, f32_bytes({1.0f, 1.0f, 2.0f, 8.0f}));
        CHECK(ModelFile::open(save(dir, g))->has_tensor("rope_freqs.weight"));
        g.find_tensor("rope_freqs.weight")->ne = {2};
        g.find_tensor("rope_freqs.weight")->data.resize(8);
        model_error(save(dir, g), Kind::ShapeMismatch, {"tensor 'rope_freqs.weight': 2, expected 4"});
    }
    SECTION("end-of-turn tokens join eos in eog_ids") {
        GgufWriter g = tiny_model();
        std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<|im_end|>", "<|eot_id|>"};
        while (tokens.size() < 16) tokens.push_back("t" + std::to_string(tokens.size()));
        g.kv_str_array("tokenizer.ggml.tokens", tokens);
        g.kv_u32("tokenizer.ggml.eot_token_id", 7);
        const auto m = ModelFile::open(save(dir, g));
        CHECK(m->vocab().eog_ids == std::vector<int32_t>{2, 7, 3, 4});
    }
    SECTION("linear RoPE scaling") {
        GgufWriter g = tiny_model();
        g.kv_str("llama.rope.scaling.type", "linear");
        g.kv_f32("llama.rope.scaling.factor", 4.0f);
        g.kv_f32("llama.rope.freq_base", 500000.0f);
        const auto m = ModelFile::open(save(dir, g));
        CHECK(m->config().rope_scaling.type == "linear");
        CHECK(m->config().rope_scaling.factor == 4.0f);
        CHECK(m->config().rope_freq_base == 500000.0f);
    }
}

TEST_CASE("A tiny qwen2 model uses NeoX RoPE and requires the q/k/v biases", "[gguf]") {
    TempDir dir;
    TinySpec spec;
    spec.arch = "qwen2";
    GgufWriter g = tiny_model(spec);
    const auto m = ModelFile::open(save(dir, g));
    CHECK(m->config().arch == "qwen2");
    CHECK(m->config().rope_neox);
    CHECK(m->config().qkv_bias);
    g.remove_tensor("blk.0.attn_v.bias");
    model_error(save(dir, g), Kind::MissingTensor, {"tensor 'blk.0.attn_v.bias' is missing", "qwen2"});
}

TEST_CASE("ModelFile::open names the path it cannot use", "[gguf][safetensors]") {
    TempDir dir;
    model_error(dir.file("nope.gguf"), Kind::Io, {dir.file("nope.gguf"), "no such file or directory"});
    write_text(dir.file("w.safetensors"), std::string("\x10\0\0\0\0\0\0\0{}", 10));
    model_error(dir.file("w.safetensors"), Kind::Unsupported, {"safetensors file given: pass the folder"});
    model_error(dir.path(), Kind::Io, {"config.json not found"});
}

namespace {

// The message of the FileError f throws ("" when it throws none).
std::string error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const FileError& e) {
        return e.what();
    }
    return std::string();
}

}  // namespace

TEST_CASE("Counts are checked before anything is sized from them, against their own key", "[gguf][checks]") {
    // A lying count must cost nothing and be blamed on its own key: block_count 10^9 once sized
    // the per-layer tables first (15 GB, 30 s), and -1 was reported as
    // "'llama.attention.sliding_window_pattern' = 1: allowed 0 to 0".
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("block_count 10^9") {
        g.kv_u32("llama.block_count", 1000000000);
        const std::string path = save(dir, g);
        const auto t0 = std::chrono::steady_clock::now();
        model_error(path, Kind::BadValue, {"key 'llama.block_count' = 1000000000: allowed 1 to 4096"});
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
    }
    SECTION("block_count -1") {
        g.kv_i32("llama.block_count", -1);
        const std::string msg = error_text([&] { ModelFile::open(save(dir, g)); });
        CHECK_THAT(msg, Catch::Matchers::Contains("key 'llama.block_count' = -1: allowed 1 to 4096"));
        CHECK_THAT(msg, !Catch::Matchers::Contains("sliding_window_pattern"));
    }
    SECTION("block_count -1 in an architecture with a sliding-window pattern") {
        GgufWriter gemma = tiny_model(TinySpec{"gemma2"});
        gemma.kv_i32("gemma2.block_count", -1);
        model_error(save(dir, gemma), Kind::BadValue, {"key 'gemma2.block_count' = -1: allowed 1 to 4096"});
    }
    SECTION("context_length 2^40") {
        g.kv_scalar<uint64_t>("llama.context_length", kU64, uint64_t(1) << 40);
        model_error(save(dir, g), Kind::BadValue, {"key 'llama.context_length' = 1099511627776: allowed 1 to"});
    }
}

TEST_CASE("Keys, names and strings from the file are quoted at most 100 bytes long", "[gguf][checks]") {
    // A first key claiming 10^6 bytes was once refused, but the message held all of it
    // (1.27 MB and ~3000 lines of raw bytes on stderr).
    TempDir dir;
    GgufWriter g = tiny_model();
    SECTION("a key of 10^6 bytes is refused by its length before it is read") {
        ByteWriter one;
        one.put<uint32_t>(1);
        g.kvs.insert(g.kvs.begin(), GgufWriter::Kv{std::string(1000000, 'k'), kU32, one.b});
        const std::string path = save(dir, g);
        reader_error(path, Kind::BadSize, {"metadata key/value 0 (key): string length 1000000, allowed at most 65535"});
        CHECK(error_text([&] { GgufReader r(path); }).size() < 300);
    }
    SECTION("a 60000-byte key of an unknown type is quoted cut, its bytes escaped") {
        std::string key(60000, 'k');
        key[3] = '\x01';
        g.kvs.insert(g.kvs.begin(), GgufWriter::Kv{key, 99, {}});
        const std::string path = save(dir, g);
        reader_error(path, Kind::UnknownType,
                     {"metadata key 'kkk\\x01kk", "... (60000 bytes)", "unknown value type 99"});
        CHECK(error_text([&] { GgufReader r(path); }).size() < 400);
    }
    SECTION("an architecture name of 5000 bytes") {
        g.kv_str("general.architecture", std::string(5000, 'x'));
        const std::string path = save(dir, g);
        model_error(path, Kind::Unsupported, {"architecture 'xxx", "... (5000 bytes)", "is not supported"});
        CHECK(error_text([&] { ModelFile::open(path); }).size() < 500);
    }
}
