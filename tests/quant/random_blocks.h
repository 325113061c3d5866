// Test helpers for the weight kernels (tests/quant): random blocks of every ggml format with finite
// scales, random inputs, bit-exact comparison of float buffers, and the CPU-path guards.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/io/dequant.h"
#include "core/quant/cpu_features.h"

namespace snapkv::test {

// A finite half with magnitude in [2^-7, 2]: exponent field 8..16, random mantissa and sign.
inline uint16_t random_half(std::mt19937& rng) {
    const uint32_t sign = rng() & 1u, exp = 8u + rng() % 9u, mant = rng() & 0x3FFu;
    return static_cast<uint16_t>((sign << 15) | (exp << 10) | mant);
}

inline void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v & 0xFF);
    p[1] = static_cast<uint8_t>(v >> 8);
}

// n_rows x n_cols random values of a type: quant bits random, scales finite halves.
inline std::vector<uint8_t> random_matrix(const GgmlType& t, int64_t n_rows, int64_t n_cols, std::mt19937& rng) {
    const size_t row_bytes = static_cast<size_t>(n_cols / t.block_size) * t.block_bytes;
    std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(n_rows));
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    const std::string name = t.name;
    const size_t n_blocks = bytes.size() / t.block_bytes;
    for (size_t i = 0; i < n_blocks; ++i) {
        uint8_t* p = bytes.data() + i * t.block_bytes;
        if (name == "F32") {
            std::uniform_real_distribution<float> u(-2.0f, 2.0f);
            const float f = u(rng);
            std::memcpy(p, &f, 4);
        } else if (name == "F16") {
            put16(p, random_half(rng));
        } else if (name == "BF16") {
            const uint32_t sign = rng() & 1u, exp = 120u + rng() % 8u, mant = rng() & 0x7Fu;
            put16(p, static_cast<uint16_t>((sign << 15) | (exp << 7) | mant));
        } else if (name == "Q8_0" || name == "Q4_0" || name == "Q5_0" || name == "IQ4_NL" || name == "IQ4_XS") {
            put16(p, random_half(rng));
        } else if (name == "Q4_1" || name == "Q5_1" || name == "Q4_K" || name == "Q5_K") {
            put16(p, random_half(rng));
            put16(p + 2, random_half(rng));
        } else if (name == "Q2_K") {
            put16(p + 80, random_half(rng));
            put16(p + 82, random_half(rng));
        } else if (name == "Q3_K") {
            put16(p + 108, random_half(rng));
        } else if (name == "Q6_K") {
            put16(p + 208, random_half(rng));
        }
    }
    return bytes;
}

inline std::vector<float> random_x(int64_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = u(rng);
    return x;
}

// Exact equality of two float buffers (bit patterns), reporting the first difference.
inline void check_bits(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
            FAIL("value " << i << ": got " << got[i] << ", want " << want[i]);
    }
}

// Checks y against float64 dots of the dequantized rows w with x (float32, or the quantized input
// as float64): |y - ref| <= 1e-5 * sum |w x| + 1e-30.
template <class X>
inline void check_products(const std::vector<float>& w, const std::vector<X>& x, const std::vector<float>& y,
                           int64_t n_rows, int64_t n_cols) {
    for (int64_t r = 0; r < n_rows; ++r) {
        double ref = 0.0, mag = 0.0;
        for (int64_t c = 0; c < n_cols; ++c) {
            const double p = static_cast<double>(w[static_cast<size_t>(r * n_cols + c)]) * x[static_cast<size_t>(c)];
            ref += p;
            mag += std::fabs(p);
        }
        const double err = std::fabs(static_cast<double>(y[static_cast<size_t>(r)]) - ref);
        if (!(err <= 1e-5 * mag + 1e-30))
            FAIL("row " << r << ": got " << y[static_cast<size_t>(r)] << ", float64 reference " << ref << " (error "
                        << err << ", sum |w x| " << mag << ")");
    }
}

inline void report_missing_paths() {
    for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512})
        if (!cpu_path_supported(p)) WARN("this CPU cannot run the " << cpu_path_name(p) << " path: not tested here");
}

struct PathGuard {
    ~PathGuard() { clear_cpu_path(); }
};

}  // namespace snapkv::test
