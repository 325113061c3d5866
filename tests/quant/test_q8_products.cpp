// The 8-bit-activation products (Activations::Q8, qkernels.h) on every CPU path this machine runs:
// against a float64 dot product of the dequantized weights with the input quantized here by the
// documented scheme (a scale max|x| / 127 per 256 values for the K-quants, per 32 for the others,
// q = round(x / scale)), equal to the scalar path's results bit for bit, threaded and batched
// results equal to the single-threaded ones, F16 (no 8-bit product) keeping the float32 one, and
// the extremes of the integer ranges (weights -128, -127 or 63 against |q| = 127).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/io/dequant.h"
#include "core/quant/cpu_features.h"
#include "core/quant/qkernels.h"
#include "quant/random_blocks.h"

using namespace snapkv;
using namespace snapkv::test;

namespace {

const char* const kQ8Formats[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",   "Q2_K",
                                  "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};

// x as the products see it: each block of `block` values rounded to scale * integer.
std::vector<double> quantized_input(const std::vector<float>& x, int block) {
    std::vector<double> out(x.size());
    for (size_t b = 0; b < x.size() / static_cast<size_t>(block); ++b) {
        float amax = 0.0f;
        for (int i = 0; i < block; ++i) amax = std::max(amax, std::fabs(x[b * block + i]));
        const float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int i = 0; i < block; ++i) {
            const float q = std::clamp(std::nearbyint(x[b * block + i] * id), -127.0f, 127.0f);
            out[b * block + i] = static_cast<double>(q) * d;
        }
    }
    return out;
}

int input_block(const GgmlType& t) { return t.block_size == 256 ? 256 : 32; }

BlockMatrix q8_matrix(const GgmlType& t, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
    BlockMatrix m = block_matrix(t, bytes.data(), rows, cols);
    m.activations = Activations::Q8;
    return m;
}

}  // namespace

TEST_CASE("8-bit-input products match float64 with the quantized input, equal on every path", "[quant]") {
    report_missing_paths();
    std::mt19937 rng(4321);
    for (const char* name : kQ8Formats) {
        const GgmlType& t = *ggml_type_by_name(name);
        REQUIRE(q8_supported(t));
        const std::vector<int64_t> widths = t.block_size == 256 ? std::vector<int64_t>{256, 768, 2048}
                                                                : std::vector<int64_t>{32, 96, 160, 576};
        for (int64_t n_cols : widths) {
            for (int64_t n_rows : {1, 3, 4, 9}) {  // tiles of 4 and the rows after them
                INFO(name << ", " << n_rows << " x " << n_cols);
                const auto bytes = random_matrix(t, n_rows, n_cols, rng);
                std::vector<float> w(static_cast<size_t>(n_rows * n_cols));
                dequantize_rows(t, bytes.data(), w.data(), n_rows, n_cols);
                auto x = random_x(n_cols, rng);
                if (n_cols >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
                const auto xq = quantized_input(x, input_block(t));
                const BlockMatrix m = q8_matrix(t, bytes, n_rows, n_cols);
                std::vector<float> scalar(static_cast<size_t>(n_rows));
                matvec_on(CpuPath::Scalar, m, x.data(), scalar.data(), 0, n_rows);
                check_products(w, xq, scalar, n_rows, n_cols);
                for (CpuPath path : supported_cpu_paths()) {
                    INFO("path " << cpu_path_name(path));
                    std::vector<float> y(static_cast<size_t>(n_rows), std::nanf(""));
                    matvec_on(path, m, x.data(), y.data(), 0, n_rows);
                    check_bits(y, scalar);
                }
                // The float32 product of the same matrix differs only by the input's rounding.
                BlockMatrix f = m;
                f.activations = Activations::F32;
                std::vector<float> yf(static_cast<size_t>(n_rows));
                matvec_on(CpuPath::Scalar, f, x.data(), yf.data(), 0, n_rows);
                for (int64_t r = 0; r < n_rows; ++r) {
                    double mag = 0.0;
                    for (int64_t c = 0; c < n_cols; ++c)
                        mag += std::fabs(static_cast<double>(w[static_cast<size_t>(r * n_cols + c)]) * x[c]);
                    CHECK(std::fabs(yf[r] - scalar[r]) <= 0.01 * mag);
                }
            }
        }
    }
}

TEST_CASE("8-bit-input products at the ends of their integer ranges are exact", "[quant]") {
    // Every weight at its most negative or largest value against |q| = 127: the x86 kernels'
    // 16-bit pair sums reach 2 x 128 x 127 (Q8_0) and 2 x 63 x 127 (Q6_K) without saturating.
    struct Case {
        const char* name;
        uint8_t fill;  // every byte of the blocks' value fields
    };
    for (const Case& c : {Case{"Q8_0", 0x80}, Case{"Q8_0", 0x7F}, Case{"Q6_K", 0xFF}, Case{"Q6_K", 0x00},
                          Case{"Q4_K", 0xFF}, Case{"Q5_K", 0xFF}, Case{"Q2_K", 0xFF}, Case{"Q3_K", 0xFF},
                          Case{"Q3_K", 0x00}, Case{"Q4_0", 0x00}, Case{"Q5_0", 0xFF}, Case{"Q4_1", 0xFF},
                          Case{"Q5_1", 0xFF}, Case{"IQ4_NL", 0x00}, Case{"IQ4_XS", 0x00}, Case{"IQ4_XS", 0xFF}}) {
        const GgmlType& t = *ggml_type_by_name(c.name);
        const int64_t n_cols = t.block_size == 256 ? 512 : 128, n_rows = 5;
        std::vector<uint8_t> bytes(static_cast<size_t>(n_rows * n_cols / t.block_size) * t.block_bytes, c.fill);
        // Scales: 1.0 (0x3C00) where the format has f16 ones; the 6- and 8-bit sub-block scales stay
        // at the fill (largest or smallest), but Q6_K's first, -128.
        for (size_t b = 0; b < bytes.size() / t.block_bytes; ++b) {
            uint8_t* p = bytes.data() + b * t.block_bytes;
            const std::string name = c.name;
            if (name == "Q6_K") {
                put16(p + 208, 0x3C00);
                p[192] = 0x80;
            } else if (name == "Q2_K") {
                put16(p + 80, 0x3C00);
                put16(p + 82, 0x3C00);
            } else if (name == "Q3_K") {
                put16(p + 108, 0x3C00);
            } else {
                put16(p, 0x3C00);
                if (name == "Q4_1" || name == "Q5_1" || name == "Q4_K" || name == "Q5_K") put16(p + 2, 0x3C00);
            }
        }
        std::vector<float> x(static_cast<size_t>(n_cols));
        for (int64_t i = 0; i < n_cols; ++i) x[i] = i % 3 == 0 ? -2.5f : 2.5f;  // every |q| = 127
        std::vector<float> w(static_cast<size_t>(n_rows * n_cols));
        dequantize_rows(t, bytes.data(), w.data(), n_rows, n_cols);
        const auto xq = quantized_input(x, input_block(t));
        const BlockMatrix m = q8_matrix(t, bytes, n_rows, n_cols);
        for (CpuPath path : supported_cpu_paths()) {
            INFO(c.name << " filled with " << int(c.fill) << ", path " << cpu_path_name(path));
            std::vector<float> y(static_cast<size_t>(n_rows));
            matvec_on(path, m, x.data(), y.data(), 0, n_rows);
            check_products(w, xq, y, n_rows, n_cols);
        }
    }
}

TEST_CASE("8-bit-input products: threads, batches, mixed formats and non-finite inputs", "[quant]") {
    report_missing_paths();
    PathGuard guard;
    std::mt19937 rng(77);
    const int threads_before = kernel_threads();
    for (int threads : {1, 2, 3}) {
        set_kernel_threads(threads);
        for (CpuPath path : supported_cpu_paths()) {
            set_cpu_path(path);
            for (const char* name : kQ8Formats) {
                INFO(threads << " threads, path " << cpu_path_name(path) << ", " << name);
                const GgmlType& t = *ggml_type_by_name(name);
                // A second matrix without 8-bit products (F16): it keeps the float32 product.
                const GgmlType& tb = *ggml_type_by_name("F16");
                const int64_t n_cols = 768, rows_a = 301, rows_b = 45, n = 3;
                const auto a = random_matrix(t, rows_a, n_cols, rng);
                const auto b = random_matrix(tb, rows_b, n_cols, rng);
                const BlockMatrix both[] = {q8_matrix(t, a, rows_a, n_cols), q8_matrix(tb, b, rows_b, n_cols)};
                REQUIRE_FALSE(q8_supported(tb));
                std::vector<float> x;
                for (int64_t j = 0; j < n; ++j) {
                    const auto xj = random_x(n_cols, rng);
                    x.insert(x.end(), xj.begin(), xj.end());
                }
                std::vector<float> got_a(static_cast<size_t>(n * rows_a)), got_b(static_cast<size_t>(n * rows_b));
                float* ys[] = {got_a.data(), got_b.data()};
                matvec_many_batch(both, ys, 2, x.data(), n);
                for (int64_t j = 0; j < n; ++j) {
                    INFO("input " << j);
                    std::vector<float> want_a(rows_a), want_b(rows_b), many_a(rows_a), many_b(rows_b);
                    matvec_on(path, both[0], x.data() + j * n_cols, want_a.data(), 0, rows_a);
                    BlockMatrix fb = both[1];
                    fb.activations = Activations::F32;
                    matvec_on(path, fb, x.data() + j * n_cols, want_b.data(), 0, rows_b);
                    float* ms[] = {many_a.data(), many_b.data()};
                    matvec_many(both, ms, 2, x.data() + j * n_cols);
                    check_bits(many_a, want_a);
                    check_bits(many_b, want_b);
                    check_bits(std::vector<float>(got_a.begin() + j * rows_a, got_a.begin() + (j + 1) * rows_a),
                               want_a);
                    check_bits(std::vector<float>(got_b.begin() + j * rows_b, got_b.begin() + (j + 1) * rows_b),
                               want_b);
                }
                // A non-finite input value makes every product NaN, as in float32.
                std::vector<float> xi(x.begin(), x.begin() + n_cols);
                xi[5] = std::numeric_limits<float>::infinity();
                std::vector<float> yi(rows_a);
                matvec(both[0], xi.data(), yi.data());
                CHECK(std::all_of(yi.begin(), yi.end(), [](float v) { return std::isnan(v); }));
                // An all-zero input gives zeros.
                std::vector<float> zero(static_cast<size_t>(n_cols), 0.0f);
                matvec(both[0], zero.data(), yi.data());
                CHECK(std::all_of(yi.begin(), yi.end(), [](float v) { return v == 0.0f; }));
            }
        }
    }
    set_kernel_threads(threads_before);
}
