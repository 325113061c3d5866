// Files that lie (they loaded and ran on garbage) and whole-file output (a failed write must keep
// the old file): NaN/infinite weights found on the raw stored bytes of every type, more blocks
// than the metadata declares, tensors sharing bytes or resized by a changed type id, JSON nested deep enough to overflow the stack, a NUL
// inside a GGUF string, and write_file_atomic's guarantees. Each file is valid but for the one
// fault under test (see "The tiny test model is valid" in test_gguf_corrupt.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/stat.h>

#include "core/common/atomic_file.h"
#include "core/io/gguf_reader.h"
#include "core/io/json_text.h"
#include "core/io/model_file.h"
#include "core/io/tensor_checks.h"
#include "core/io/tokenizer_json.h"
#include "tests/io/gguf_test_writer.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using namespace snapkv::test;
using Kind = FileError::Kind;
using Catch::Matchers::Contains;

namespace {

std::string save(const TempDir& dir, const GgufWriter& g, const std::string& name = "x.gguf") {
    const std::string path = dir.file(name);
    write_file(path, g.build());
    return path;
}

void put_u16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v & 0xFF);
    b[at + 1] = static_cast<uint8_t>(v >> 8);
}

void put_f32(std::vector<uint8_t>& b, size_t at, float v) { std::memcpy(&b[at], &v, 4); }

constexpr uint16_t kHalfOne = 0x3C00, kHalfInf = 0x7C00, kHalfNan = 0x7E00;

// Two blocks of a ggml type whose float fields are 1.0 (quants zero): finite.
std::vector<uint8_t> clean_blocks(const GgmlType& t) {
    std::vector<uint8_t> b(2 * t.block_bytes, 0);
    for (size_t blk = 0; blk < 2; ++blk) {
        const size_t o = blk * t.block_bytes;
        switch (t.id) {
        case 0: put_f32(b, o, 1.0f); break;
        case 1: put_u16(b, o, kHalfOne); break;
        case 30: put_u16(b, o, 0x3F80); break;
        case 3:
        case 7:
        case 12:
        case 13:
            put_u16(b, o, kHalfOne);
            put_u16(b, o + 2, kHalfOne);
            break;
        case 10:
            put_u16(b, o + 80, kHalfOne);
            put_u16(b, o + 82, kHalfOne);
            break;
        case 11: put_u16(b, o + 108, kHalfOne); break;
        case 14: put_u16(b, o + 208, kHalfOne); break;
        default: put_u16(b, o, kHalfOne); break;  // Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS: d first
        }
    }
    return b;
}

std::string nested(const std::string& open, const std::string& close, int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += open;
    for (int i = 0; i < depth; ++i) s += close;
    return s;
}

}  // namespace

TEST_CASE("The non-finite scan finds NaN and infinity in the stored bytes of every readable type", "[gguf][checks]") {
    struct Case {
        const char* type;
        size_t at;        // byte offset of the bad field in the two-block buffer
        uint16_t half;    // f16/bf16 pattern written there (F32: a float NaN)
        int64_t element;  // first affected value
        const char* field;
    };
    const Case cases[] = {
        {"F32", 4, 0, 1, "value"},
        {"F16", 2, kHalfInf, 1, "value"},
        {"BF16", 2, 0x7FC0, 1, "value"},
        {"Q8_0", 34, kHalfInf, 32, "block scale d"},
        {"Q4_0", 18, kHalfNan, 32, "block scale d"},
        {"Q4_1", 2, kHalfNan, 0, "block min m"},
        {"Q4_K", 144 + 2, kHalfInf, 256, "block min dmin"},
        {"Q5_K", 0, kHalfNan, 0, "block scale d"},
        {"Q6_K", 210 + 208, kHalfInf, 256, "block scale d"},
        {"Q5_0", 22, kHalfNan, 32, "block scale d"},
        {"Q5_1", 24 + 2, kHalfInf, 32, "block min m"},
        {"Q2_K", 82, kHalfNan, 0, "block min dmin"},
        {"Q3_K", 110 + 108, kHalfInf, 256, "block scale d"},
        {"IQ4_NL", 18, kHalfNan, 32, "block scale d"},
        {"IQ4_XS", 136, kHalfInf, 256, "block scale d"},
    };
    for (const Case& c : cases) {
        INFO("type " << c.type);
        const GgmlType* t = ggml_type_by_name(c.type);
        REQUIRE(t != nullptr);
        CHECK(has_finite_scan(*t));
        std::vector<uint8_t> b = clean_blocks(*t);
        const int64_t n = 2 * t->block_size;
        CHECK_FALSE(find_non_finite(*t, b.data(), n).has_value());
        if (t->id == 0) put_f32(b, c.at, std::nanf(""));
        else put_u16(b, c.at, c.half);
        const auto bad = find_non_finite(*t, b.data(), n);
        REQUIRE(bad.has_value());
        CHECK(bad->element == c.element);
        CHECK(bad->field == c.field);
    }
}

TEST_CASE("Every tensor of the stories260K files is finite", "[gguf][checks]") {
    for (const char* f : {"stories260K.gguf", "stories260K-F16.gguf", "stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf",
                          "stories260K-Q4_1.gguf"}) {
        GgufReader r(data_path(f));
        for (const GgufTensorInfo& t : r.tensors()) {
            INFO(f << " tensor " << t.name);
            CHECK_FALSE(find_non_finite(*t.type, r.tensor_data(t), t.numel).has_value());
        }
    }
}

TEST_CASE("A NaN or infinite weight is refused when the tensor is read, naming it", "[gguf][checks]") {
    TempDir dir;
    SECTION("F32: one NaN value") {
        GgufWriter g = tiny_model();
        put_f32(g.find_tensor("blk.0.attn_q.weight")->data, 5 * 4, std::nanf(""));
        const auto m = ModelFile::open(save(dir, g));  // the header is fine
        std::vector<float> buf(32 * 32);
        require_file_error([&] { m->read_f32("blk.0.attn_q.weight", buf.data()); }, Kind::BadValue,
                           {"tensor 'blk.0.attn_q.weight' (F32)", "NaN or infinite value at element 5"});
        CHECK_NOTHROW(m->read_f32("blk.0.attn_k.weight", buf.data()));
    }
    SECTION("Q8_0: an infinite block scale") {
        GgufWriter g = tiny_model();
        GgufWriter::Tensor* t = g.find_tensor("token_embd.weight");  // 16 rows of 32: 16 blocks
        t->type = 8;
        t->data.assign(16 * 34, 0);
        for (size_t b = 0; b < 16; ++b) put_u16(t->data, b * 34, kHalfOne);
        put_u16(t->data, 3 * 34, kHalfInf);
        const auto m = ModelFile::open(save(dir, g));
        std::vector<float> buf(16 * 32);
        require_file_error([&] { m->read_f32("token_embd.weight", buf.data()); }, Kind::BadValue,
                           {"'token_embd.weight' (Q8_0)", "block scale d at element 96"});
    }
}

TEST_CASE("A block count smaller than the blocks in the file is refused", "[gguf][checks]") {
    TempDir dir;
    TinySpec spec;
    spec.n_layer = 2;
    GgufWriter g = tiny_model(spec);
    CHECK_NOTHROW(ModelFile::open(save(dir, g, "two.gguf")));
    g.kv_u32("llama.block_count", 1);  // blk.1.* would be silently dropped
    require_file_error([&] { ModelFile::open(save(dir, g)); }, Kind::BadValue,
                       {"tensor 'blk.1.attn_norm.weight' belongs to block 1", "'llama.block_count' = 1",
                        "more blocks than its metadata declares"});
}

TEST_CASE("Tensors sharing bytes, or resized by a changed type id, are refused", "[gguf][checks]") {
    TempDir dir;
    SECTION("two tensors at one offset") {
        GgufWriter g = tiny_model();
        g.find_tensor("output_norm.weight")->offset = 0;  // token_embd.weight's bytes
        require_file_error([&] { GgufReader r(save(dir, g)); }, Kind::BadValue,
                           {"'output_norm.weight' (bytes 0..128)", "'token_embd.weight' (bytes 0..2048)", "overlap"});
    }
    SECTION("a type id changed to a smaller type that still fits") {
        GgufWriter g = tiny_model();
        g.find_tensor("output_norm.weight")->type = 1;  // F32 data now read as F16: 64 bytes
        require_file_error(
            [&] { GgufReader r(save(dir, g)); }, Kind::BadValue,
            {"tensor 'output.weight': offset 2176, expected 2112", "right after 'output_norm.weight', F16 32"});
    }
    SECTION("a type id changed to a larger type runs into the next tensor") {
        GgufWriter g = tiny_model();
        g.find_tensor("output_norm.weight")->type = 28;  // F64: 256 bytes over 128
        require_file_error([&] { GgufReader r(save(dir, g)); }, Kind::BadValue,
                           {"'output_norm.weight' (bytes 2048..2304)", "'output.weight'", "overlap"});
    }
}

TEST_CASE("A NUL inside a GGUF string does not cut the error message short", "[gguf][checks]") {
    TempDir dir;
    GgufWriter g = tiny_model();
    g.kv_str("general.architecture", std::string("lla\0ma", 6));
    const std::string path = save(dir, g);
    try {
        ModelFile::open(path);
        FAIL("no error");
    } catch (const FileError& e) {
        const std::string shown = e.what();  // what a C string consumer (std::cerr << what()) sees
        CHECK_THAT(shown, Contains("architecture 'lla\\x00ma' is not supported (supported: llama, qwen2"));
    }
}

TEST_CASE("JSON nested deeper than 64 levels is refused before it is built", "[json][checks]") {
    const std::string deep = nested("[", "]", 100000);  // overflowed the stack when dumped
    require_file_error([&] { parse_json_text(deep, "where: "); }, Kind::BadJson,
                       {"where: JSON nested more than 64 levels deep (at byte 64)"});
    CHECK(parse_json_text(nested("[", "]", 64), "").is_array());
    std::string objects;
    for (int i = 0; i < 64; ++i) objects += "{\"a\":";
    objects += "1" + std::string(64, '}');
    CHECK(parse_json_text(objects, "").is_object());
    // Brackets inside strings (escaped quotes too) are text, not nesting.
    const std::string text = "{\"k\": \"" + nested("[", "]", 1000) + "\\\"{{{\"}";
    CHECK(parse_json_text(text, "").at("k").get<std::string>().size() == 2004);

    TempDir dir;
    SECTION("tokenizer.json") {
        write_text(dir.file("tokenizer.json"), "{\"model\": " + deep + "}");
        require_file_error([&] { read_tokenizer_json(dir.file("tokenizer.json"), ""); }, Kind::BadJson,
                           {"tokenizer.json '" + dir.file("tokenizer.json") + "'", "nested more than 64"});
    }
}

TEST_CASE("write_file_atomic replaces a file whole or not at all", "[io][output]") {
    TempDir dir;
    const std::string target = dir.file("keep.json");
    SECTION("new file in missing folders") {
        const std::string nested_path = dir.file("a/b/c/out.json");
        write_file_atomic(nested_path, "{}\n");
        CHECK(read_text(nested_path) == "{}\n");
    }
    SECTION("an existing file is replaced and keeps its permissions") {
        write_text(target, "old");
        REQUIRE(::chmod(target.c_str(), 0640) == 0);
        write_file_atomic(target, "new contents");
        CHECK(read_text(target) == "new contents");
        struct stat st {};
        REQUIRE(::stat(target.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0640);
    }
    SECTION("a path component that is a file is named") {
        write_text(dir.file("plain"), "x");
        require_file_error([&] { write_file_atomic(dir.file("plain/sub/out.json"), "{}"); }, Kind::Io,
                           {"'" + dir.file("plain") + "' exists and is not a folder"});
    }
    SECTION("a full device fails with the reason") {
        require_file_error([&] { write_file_atomic("/dev/full", "data"); }, Kind::Io,
                           {"cannot write '/dev/full'", "No space left on device"});
    }
    SECTION("a write that fails half-way leaves the old file and no temporary") {
        write_text(target, "old result");
        const std::string big(1 << 20, 'x');
        // A 64 KiB file size limit makes the write fail with EFBIG, as a full disk would.
        struct rlimit old_limit {};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        struct rlimit small = old_limit;
        small.rlim_cur = 64 * 1024;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        std::string message;
        try {
            write_file_atomic(target, big);
        } catch (const FileError& e) {
            message = e.what();
        }
        ::setrlimit(RLIMIT_FSIZE, &old_limit);
        std::signal(SIGXFSZ, old_handler);
        CHECK_THAT(message, Contains("cannot write '" + target + "'") && Contains("File too large") &&
                                Contains("the old file is unchanged"));
        CHECK(read_text(target) == "old result");
        int entries = 0;
        for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
            (void)e;
            ++entries;
        }
        CHECK(entries == 1);
    }
}
