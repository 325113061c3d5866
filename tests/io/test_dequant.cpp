// Dequantization tests: the type table's block geometry (from ggml-common.h) and every readable
// format on hand-built blocks. Expected values are computed here from the chosen quants and
// scales with the published formulas, never by calling the code under test. Scales are powers
// of two (or small halves) so that every expected value is exact in float.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/io/dequant.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using snapkv::test::compare_exact;

namespace {

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v & 0xFF);
    b[at + 1] = static_cast<uint8_t>(v >> 8);
}

std::vector<float> run(uint32_t type_id, const std::vector<uint8_t>& block, int64_t n) {
    const GgmlType* t = ggml_type_by_id(type_id);
    REQUIRE(t != nullptr);
    REQUIRE(t->dequant_row != nullptr);
    std::vector<float> out(static_cast<size_t>(n), std::nanf(""));
    t->dequant_row(block.data(), out.data(), n);
    return out;
}

void check_equal(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    const auto d = compare_exact(got.data(), want.data(), static_cast<int64_t>(got.size()));
    INFO(d.text());
    CHECK(d.first_bad == -1);
}

}  // namespace

TEST_CASE("The ggml type table has ggml's block sizes and byte counts", "[dequant]") {
    struct Row {
        uint32_t id;
        const char* name;
        int64_t block;
        size_t bytes;
        bool readable;
    };
    const Row rows[] = {
        {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},         {2, "Q4_0", 32, 18, true},
        {3, "Q4_1", 32, 20, true},       {6, "Q5_0", 32, 22, true},      {7, "Q5_1", 32, 24, true},
        {8, "Q8_0", 32, 34, true},       {10, "Q2_K", 256, 84, true},    {11, "Q3_K", 256, 110, true},
        {12, "Q4_K", 256, 144, true},    {13, "Q5_K", 256, 176, true},   {14, "Q6_K", 256, 210, true},
        {30, "BF16", 1, 2, true},        {20, "IQ4_NL", 32, 18, true},   {23, "IQ4_XS", 256, 136, true},
        {16, "IQ2_XXS", 256, 66, false}, {21, "IQ3_S", 256, 110, false}, {29, "IQ1_M", 256, 56, false},
        {34, "TQ1_0", 256, 54, false},   {35, "TQ2_0", 256, 66, false},  {39, "MXFP4", 32, 17, false},
        {15, "Q8_K", 256, 292, false},
    };
    for (const Row& r : rows) {
        INFO("type " << r.name);
        const GgmlType* t = ggml_type_by_id(r.id);
        REQUIRE(t != nullptr);
        CHECK(std::string(t->name) == r.name);
        CHECK(t->block_size == r.block);
        CHECK(t->block_bytes == r.bytes);
        CHECK((t->dequant_row != nullptr) == r.readable);
        CHECK(ggml_type_by_name(r.name) == t);
    }
    SECTION("ids ggml removed or never had are unknown") {
        for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 40u, 1000u}) CHECK(ggml_type_by_id(id) == nullptr);
        CHECK(ggml_type_by_name("Q4_2") == nullptr);
    }
}

TEST_CASE("half_to_float decodes IEEE binary16 including subnormals and specials", "[dequant]") {
    CHECK(half_to_float(0x3C00) == 1.0f);
    CHECK(half_to_float(0xC000) == -2.0f);
    CHECK(half_to_float(0x7BFF) == 65504.0f);                  // largest half
    CHECK(half_to_float(0x0400) == std::ldexp(1.0f, -14));     // smallest normal
    CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));     // smallest subnormal
    CHECK(half_to_float(0x03FF) == std::ldexp(1023.0f, -24));  // largest subnormal
    CHECK(half_to_float(0x8200) == -std::ldexp(512.0f, -24));
    CHECK(half_to_float(0x3555) == 0.333251953125f);  // (1 + 341/1024) * 2^-2
    CHECK(half_to_float(0x0000) == 0.0f);
    CHECK(std::signbit(half_to_float(0x8000)));
    CHECK(half_to_float(0x7C00) == std::numeric_limits<float>::infinity());
    CHECK(half_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(half_to_float(0x7E00)));
}

TEST_CASE("bf16_to_float takes the top 16 bits of a float", "[dequant]") {
    CHECK(bf16_to_float(0x3F80) == 1.0f);
    CHECK(bf16_to_float(0xC040) == -3.0f);
    CHECK(bf16_to_float(0x4049) == 3.140625f);
}

TEST_CASE("F32, F16 and BF16 rows convert value by value", "[dequant]") {
    const std::vector<float> f = {1.5f, -0.25f, 1e-30f};
    std::vector<uint8_t> raw(12);
    std::memcpy(raw.data(), f.data(), 12);
    check_equal(run(0, raw, 3), f);
    check_equal(run(1, {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00}, 3), {1.0f, -2.0f, std::ldexp(1.0f, -24)});
    check_equal(run(30, {0x80, 0x3F, 0x40, 0xC0}, 2), {1.0f, -3.0f});
}

TEST_CASE("Q8_0 blocks dequantize to d * q", "[dequant]") {
    // Two blocks: d = 0.5 with q = -128, -120, ..., 120; d = -1.5 with q = 5i - 128 (wrapping).
    std::vector<uint8_t> b(68);
    std::vector<float> want(64);
    put16(b, 0, 0x3800);   // 0.5
    put16(b, 34, 0xBE00);  // -1.5
    for (int i = 0; i < 32; ++i) {
        const int8_t q0 = static_cast<int8_t>(i * 8 - 128);
        const int8_t q1 = static_cast<int8_t>((i * 5) % 256 - 128);
        b[2 + i] = static_cast<uint8_t>(q0);
        b[36 + i] = static_cast<uint8_t>(q1);
        want[i] = 0.5f * q0;
        want[32 + i] = -1.5f * q1;
    }
    check_equal(run(8, b, 64), want);
}

TEST_CASE("Q4_0 blocks put low nibbles first and subtract 8", "[dequant]") {
    // Byte j: low nibble = value j, high nibble = value j + 16.
    std::vector<uint8_t> b(18);
    std::vector<float> want(32);
    put16(b, 0, 0x4000);  // d = 2
    for (int j = 0; j < 16; ++j) {
        const int lo = j, hi = 15 - j;
        b[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
        want[j] = 2.0f * (lo - 8);
        want[16 + j] = 2.0f * (hi - 8);
    }
    check_equal(run(2, b, 32), want);
}

TEST_CASE("Q4_1 blocks dequantize to d * q + m", "[dequant]") {
    std::vector<uint8_t> b(20);
    std::vector<float> want(32);
    put16(b, 0, 0x3400);  // d = 0.25
    put16(b, 2, 0xBC00);  // m = -1
    for (int j = 0; j < 16; ++j) {
        const int lo = (j * 3) % 16, hi = (j * 5 + 1) % 16;
        b[4 + j] = static_cast<uint8_t>(lo | (hi << 4));
        want[j] = 0.25f * lo - 1.0f;
        want[16 + j] = 0.25f * hi - 1.0f;
    }
    check_equal(run(3, b, 32), want);
}

namespace {

// The 12-byte K-quant scale/min packing, written from ggml's description: sub-blocks 0-3 keep
// 6-bit scale and min in bytes 0-3 and 4-7; sub-blocks 4-7 put their low 4 bits in bytes 8-11
// (scale low nibble, min high nibble) and their top 2 bits in the top bits of bytes 0-3 / 4-7.
void pack_k_scales(uint8_t* s, const int sc[8], const int mn[8]) {
    for (int j = 0; j < 4; ++j) {
        s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
    }
}

// Scales and mins above 15 in sub-blocks 4-7 exercise the split high bits.
const int kScales[8] = {1, 2, 3, 63, 17, 33, 48, 5};
const int kMins[8] = {0, 4, 63, 7, 20, 1, 40, 63};

}  // namespace

TEST_CASE("Q4_K super-blocks use 6-bit packed scales and mins per 32 values", "[dequant]") {
    // Layout: d, dmin, scales[12], qs[128]. Each 64 values share 32 qs bytes: low nibbles are
    // sub-block 2k, high nibbles sub-block 2k+1. x = d * scale * q - dmin * min.
    std::vector<uint8_t> b(144);
    put16(b, 0, 0x3800);  // d = 0.5
    put16(b, 2, 0x3400);  // dmin = 0.25
    pack_k_scales(&b[4], kScales, kMins);
    int q[256];
    for (int v = 0; v < 256; ++v) q[v] = (v * 7 + 3) % 16;
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l)
            b[16 + 32 * k + l] = static_cast<uint8_t>(q[64 * k + l] | (q[64 * k + 32 + l] << 4));
    std::vector<float> want(256);
    for (int v = 0; v < 256; ++v) want[v] = 0.5f * kScales[v / 32] * q[v] - 0.25f * kMins[v / 32];
    check_equal(run(12, b, 256), want);
}

TEST_CASE("Q5_K super-blocks add a fifth bit from qh", "[dequant]") {
    // Layout: d, dmin, scales[12], qh[32], qs[128]. For the k-th 64 values, bit 2k of qh[l] is
    // the fifth bit of value 64k + l and bit 2k+1 that of value 64k + 32 + l.
    std::vector<uint8_t> b(176);
    put16(b, 0, 0x3C00);  // d = 1
    put16(b, 2, 0x3800);  // dmin = 0.5
    pack_k_scales(&b[4], kScales, kMins);
    int q[256];
    for (int v = 0; v < 256; ++v) q[v] = (v * 11 + 5) % 32;
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
            const int lo = q[64 * k + l], hi = q[64 * k + 32 + l];
            b[48 + 32 * k + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
            b[16 + l] |= static_cast<uint8_t>(((lo >> 4) << (2 * k)) | ((hi >> 4) << (2 * k + 1)));
        }
    std::vector<float> want(256);
    for (int v = 0; v < 256; ++v) want[v] = 1.0f * kScales[v / 32] * q[v] - 0.5f * kMins[v / 32];
    check_equal(run(13, b, 256), want);
}

TEST_CASE("Q6_K super-blocks combine 4 low and 2 high bits with int8 scales per 16 values", "[dequant]") {
    // Layout: ql[128], qh[64], scales[16] (int8), d. In each half of 128 values, for l < 32:
    // values l, l+32, l+64, l+96 take ql[l] low, ql[l+32] low, ql[l] high, ql[l+32] high and
    // qh[l] bits 0-1, 2-3, 4-5, 6-7. x = d * scale[v / 16] * (q - 32).
    std::vector<uint8_t> b(210);
    int q[256];
    for (int v = 0; v < 256; ++v) q[v] = (v * 13 + 1) % 64;
    int8_t scales[16];
    for (int i = 0; i < 16; ++i) scales[i] = static_cast<int8_t>((i % 2 ? -1 : 1) * (i * 8 + 3));
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const int base = 128 * h + l;
            const int v0 = q[base], v1 = q[base + 32], v2 = q[base + 64], v3 = q[base + 96];
            b[64 * h + l] = static_cast<uint8_t>((v0 & 15) | ((v2 & 15) << 4));
            b[64 * h + l + 32] = static_cast<uint8_t>((v1 & 15) | ((v3 & 15) << 4));
            b[128 + 32 * h + l] = static_cast<uint8_t>((v0 >> 4) | ((v1 >> 4) << 2) | ((v2 >> 4) << 4) |
                                                       ((v3 >> 4) << 6));
        }
    for (int i = 0; i < 16; ++i) b[192 + i] = static_cast<uint8_t>(scales[i]);
    put16(b, 208, 0x3000);  // d = 0.125
    std::vector<float> want(256);
    for (int v = 0; v < 256; ++v) want[v] = 0.125f * static_cast<float>(scales[v / 16] * (q[v] - 32));
    check_equal(run(14, b, 256), want);
}

TEST_CASE("Q5_0 and Q5_1 blocks take the fifth bits from a little-endian 32-bit qh", "[dequant]") {
    // Layout Q5_0: d, qh[4], qs[16]; Q5_1: d, m, qh[4], qs[16]. Value j < 16 is the low nibble of
    // qs[j] with bit j of qh on top, value 16 + j the high nibble with bit 16 + j.
    int q[32];
    for (int v = 0; v < 32; ++v) q[v] = (v * 13 + 7) % 32;
    auto pack = [&](std::vector<uint8_t>& b, size_t qh_at) {
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            b[qh_at + 4 + j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
            qh |= static_cast<uint32_t>(q[j] >> 4) << j;
            qh |= static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
        }
        for (int k = 0; k < 4; ++k) b[qh_at + k] = static_cast<uint8_t>(qh >> (8 * k));
    };
    SECTION("Q5_0: d * (q - 16)") {
        std::vector<uint8_t> b(22);
        put16(b, 0, 0xB800);  // d = -0.5
        pack(b, 2);
        std::vector<float> want(32);
        for (int v = 0; v < 32; ++v) want[v] = -0.5f * (q[v] - 16);
        check_equal(run(6, b, 32), want);
    }
    SECTION("Q5_1: d * q + m") {
        std::vector<uint8_t> b(24);
        put16(b, 0, 0x3400);  // d = 0.25
        put16(b, 2, 0xC000);  // m = -2
        pack(b, 4);
        std::vector<float> want(32);
        for (int v = 0; v < 32; ++v) want[v] = 0.25f * q[v] - 2.0f;
        check_equal(run(7, b, 32), want);
    }
}

namespace {

// The 2-bit quant layout shared by Q2_K and Q3_K: each 128 values use 32 bytes; value
// 128h + 32j + l (l < 32) sits in bits 2j..2j+1 of byte 32h + l.
void pack_2bit(uint8_t* qs, const int* q2) {
    for (int v = 0; v < 256; ++v) {
        const int h = v / 128, j = (v % 128) / 32, l = v % 32;
        qs[32 * h + l] |= static_cast<uint8_t>((q2[v] & 3) << (2 * j));
    }
}

}  // namespace

TEST_CASE("Q2_K super-blocks use a 4-bit scale and min per 16 values", "[dequant]") {
    // Layout: scales[16] (scale low nibble, min high nibble), qs[64], d, dmin;
    // x = d * scale * q - dmin * min.
    std::vector<uint8_t> b(84);
    int q[256], sc[16], mn[16];
    for (int v = 0; v < 256; ++v) q[v] = (v * 5 + v / 7) % 4;
    for (int i = 0; i < 16; ++i) {
        sc[i] = (i * 7 + 2) % 16;
        mn[i] = (i * 3 + 5) % 16;
        b[i] = static_cast<uint8_t>(sc[i] | (mn[i] << 4));
    }
    pack_2bit(&b[16], q);
    put16(b, 80, 0x3800);  // d = 0.5
    put16(b, 82, 0x3400);  // dmin = 0.25
    std::vector<float> want(256);
    for (int v = 0; v < 256; ++v) want[v] = 0.5f * sc[v / 16] * q[v] - 0.25f * mn[v / 16];
    check_equal(run(10, b, 256), want);
}

TEST_CASE("Q3_K super-blocks add a third bit from hmask and 6-bit signed scales", "[dequant]") {
    // Layout: hmask[32], qs[64], scales[12], d. Value 128h + 32j + l takes bit 4h + j of
    // hmask[l] as its third bit; q3 = low 2 bits + 4 * that bit - 4 (so -4..3). Scale i is 6 bits:
    // its low 4 bits in the low (i < 8) or high (i >= 8) nibble of byte i % 8, its top 2 bits in
    // bits 2 * (i / 4) of byte 8 + i % 4; the scale used is that value - 32. x = d * scale * q3.
    std::vector<uint8_t> b(110);
    int q3[256], low[256], sc[16];
    for (int v = 0; v < 256; ++v) {
        q3[v] = (v * 7 + v / 5) % 8 - 4;
        low[v] = (q3[v] + 4) & 3;
        const int third = (q3[v] + 4) >> 2;
        const int h = v / 128, j = (v % 128) / 32, l = v % 32;
        b[l] |= static_cast<uint8_t>(third << (4 * h + j));
    }
    pack_2bit(&b[32], low);
    for (int i = 0; i < 16; ++i) {
        sc[i] = (i * 19 + 3) % 64;  // raw 6-bit values, top bits set for several
        b[96 + i % 8] |= static_cast<uint8_t>((sc[i] & 15) << (i < 8 ? 0 : 4));
        b[96 + 8 + i % 4] |= static_cast<uint8_t>((sc[i] >> 4) << (2 * (i / 4)));
    }
    put16(b, 108, 0x3000);  // d = 0.125
    std::vector<float> want(256);
    for (int v = 0; v < 256; ++v) want[v] = 0.125f * (sc[v / 16] - 32) * static_cast<float>(q3[v]);
    check_equal(run(11, b, 256), want);
}

namespace {
// ggml's 16 IQ4 levels (ggml-common.h kvalues_iq4nl).
const int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
}  // namespace

TEST_CASE("IQ4_NL blocks map nibbles through the 16 non-linear levels", "[dequant]") {
    std::vector<uint8_t> b(18);
    put16(b, 0, 0x2C00);  // d = 1/16
    std::vector<float> want(32);
    for (int j = 0; j < 16; ++j) {
        const int lo = (j * 5 + 3) % 16, hi = (j * 11) % 16;
        b[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
        want[j] = 0.0625f * kLevels[lo];
        want[16 + j] = 0.0625f * kLevels[hi];
    }
    check_equal(run(20, b, 32), want);
}

TEST_CASE("IQ4_XS super-blocks give each 32 values a 6-bit scale split over scales_l and scales_h", "[dequant]") {
    // Layout: d, scales_h (u16), scales_l[4], qs[128]. Sub-block ib's scale: low 4 bits in nibble
    // ib % 2 of scales_l[ib / 2], top 2 bits in bits 2ib..2ib+1 of scales_h; used as ls - 32.
    std::vector<uint8_t> b(136);
    put16(b, 0, 0x3400);  // d = 0.25
    int ls[8];
    uint16_t scales_h = 0;
    for (int ib = 0; ib < 8; ++ib) {
        ls[ib] = (ib * 23 + 9) % 64;
        b[4 + ib / 2] |= static_cast<uint8_t>((ls[ib] & 15) << (4 * (ib % 2)));
        scales_h |= static_cast<uint16_t>((ls[ib] >> 4) << (2 * ib));
    }
    put16(b, 2, scales_h);
    std::vector<float> want(256);
    for (int ib = 0; ib < 8; ++ib)
        for (int j = 0; j < 16; ++j) {
            const int lo = (ib + j * 3) % 16, hi = (ib * 5 + j * 7 + 1) % 16;
            b[8 + 16 * ib + j] = static_cast<uint8_t>(lo | (hi << 4));
            want[32 * ib + j] = 0.25f * (ls[ib] - 32) * kLevels[lo];
            want[32 * ib + 16 + j] = 0.25f * (ls[ib] - 32) * kLevels[hi];
        }
    check_equal(run(23, b, 256), want);
}

TEST_CASE("dequantize_rows gives the same values on many threads as row by row", "[dequant]") {
    // 4096 rows x 512 values of Q8_0: over the threading threshold (2M values).
    const GgmlType& t = *ggml_type_by_id(8);
    const int64_t rows = 4096, row_len = 512;
    const size_t row_bytes = static_cast<size_t>(row_len / 32) * 34;
    std::vector<uint8_t> src(row_bytes * rows);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    for (size_t blk = 0; blk < src.size() / 34; ++blk) {  // keep every d finite: 2^-k
        src[blk * 34] = 0;
        src[blk * 34 + 1] = static_cast<uint8_t>(0x20 + blk % 16);
    }
    std::vector<float> many(static_cast<size_t>(rows * row_len)), one(many.size());
    dequantize_rows(t, src.data(), many.data(), rows, row_len);
    for (int64_t r = 0; r < rows; ++r) t.dequant_row(src.data() + r * row_bytes, one.data() + r * row_len, row_len);
    check_equal(many, one);
}
