// Speed of the weight kernels (core/quant): single-thread matrix-vector products and row
// dequantization, per format and CPU path, in ns per weight. Two sizes: one whose bytes stay in
// L2 (the kernel's arithmetic) and one streamed from memory (a real model's layers). Prints a
// table; it asserts nothing. The q8 columns: the same products with the input quantized to 8 bits
// (Activations::Q8; the quantization of x included), for the formats that have them. Usage:
// bench_qkernels [FORMAT ...] (default: every format).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/io/dequant.h"
#include "core/quant/cpu_features.h"
#include "core/quant/qkernels.h"

using namespace snapkv;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Random blocks with every 16-bit field that may hold a scale set to a small finite half (0x3C00
// = 1.0 has exponent bits that never form inf or NaN); quant bits random.
std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
    std::vector<uint8_t> b(n);
    for (auto& v : b) v = static_cast<uint8_t>(rng() & 0x3B);
    return b;
}

// Best of `reps` runs of fn, in ns per weight.
template <class F>
double best_ns(int reps, int64_t weights, F fn) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        best = std::min(best, seconds_since(t0));
    }
    return best * 1e9 / static_cast<double>(weights);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> formats = {"F32",  "F16",  "BF16", "Q8_0", "Q4_0", "Q4_1",   "Q5_0",  "Q5_1",
                                        "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};
    if (argc > 1) formats.assign(argv + 1, argv + argc);
    std::mt19937 rng(1);
    const int64_t n_cols = 2048;
    std::printf("%-7s %-7s %12s %12s %12s %12s %12s\n", "format", "path", "mv L2 ns/w", "mv mem ns/w", "deq ns/w",
                "q8 L2 ns/w", "q8 mem ns/w");
    for (const std::string& name : formats) {
        const GgmlType* t = ggml_type_by_name(name);
        if (t == nullptr || !kernel_supports(*t)) {
            std::fprintf(stderr, "bench_qkernels: no kernel for %s\n", name.c_str());
            return 2;
        }
        const int64_t rows_small = 64, rows_big = 32768;  // ~0.1-0.5 MB vs 64-256 MB of blocks
        const size_t row_bytes = static_cast<size_t>(n_cols / t->block_size) * t->block_bytes;
        std::vector<uint8_t> big = random_bytes(row_bytes * rows_big, rng);
        std::vector<float> x(n_cols), y(rows_big), deq(static_cast<size_t>(rows_small * n_cols));
        for (auto& v : x) v = static_cast<float>(rng() % 1000) / 1000.0f - 0.5f;
        const BlockMatrix small = block_matrix(*t, big.data(), rows_small, n_cols);
        const BlockMatrix large = block_matrix(*t, big.data(), rows_big, n_cols);
        for (CpuPath path : supported_cpu_paths()) {
            const double l2 = best_ns(200, rows_small * n_cols,
                                      [&] { matvec_on(path, small, x.data(), y.data(), 0, rows_small); });
            const double mem = best_ns(3, rows_big * n_cols,
                                       [&] { matvec_on(path, large, x.data(), y.data(), 0, rows_big); });
            const double dq = best_ns(100, rows_small * n_cols,
                                      [&] { dequantize_on(path, small, deq.data(), 0, rows_small); });
            std::printf("%-7s %-7s %12.4f %12.4f %12.4f", name.c_str(), cpu_path_name(path), l2, mem, dq);
            if (q8_supported(*t)) {
                BlockMatrix small8 = small, large8 = large;
                small8.activations = large8.activations = Activations::Q8;
                // The input's quantization, once per call, timed alone (a one-row call) and taken
                // away, so that the L2 column is the products' own cost.
                const double q8_call = best_ns(200, rows_small * n_cols,
                                               [&] { matvec_on(path, small8, x.data(), y.data(), 0, 1); });
                const double q8_l2 = best_ns(200, rows_small * n_cols,
                                             [&] { matvec_on(path, small8, x.data(), y.data(), 0, rows_small); }) -
                                     q8_call * (rows_small - 1) / rows_small;
                const double q8_mem = best_ns(3, rows_big * n_cols,
                                              [&] { matvec_on(path, large8, x.data(), y.data(), 0, rows_big); });
                std::printf(" %12.4f %12.4f", q8_l2, q8_mem);
            }
            std::printf("\n");
        }
    }
    return 0;
}
