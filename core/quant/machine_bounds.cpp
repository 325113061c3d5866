// See machine_bounds.h. The FMA loop is written once with GCC's vector types and compiled into
// each width's function (target attributes), where a * b + c becomes one FMA; distinct starting
// values (equal chains would be merged) and b, c known only at run time (with constants the
// compiler finds the fixed point and drops the loop).
#include "core/quant/machine_bounds.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace snapkv {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class Vec>
__attribute__((always_inline)) inline float fma_chains(long iters, float bs, float cs) {
    Vec a[12];
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) a[k] = Vec{} + (1.0f + 0.01f * static_cast<float>(k));
    const Vec b = Vec{} + bs, c = Vec{} + cs;
    for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
        for (int k = 0; k < 12; ++k) a[k] = a[k] * b + c;
    }
    float sum = 0.0f;
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) sum += a[k][0];
    return sum;
}

#if defined(__x86_64__)
typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));
__attribute__((target("avx512f"))) float fma_loop_avx512(long iters, float b, float c) {
    return fma_chains<F32x16>(iters, b, c);
}
__attribute__((target("avx2,fma"))) float fma_loop_avx2(long iters, float b, float c) {
    return fma_chains<F32x8>(iters, b, c);
}
// Sums n floats (n a multiple of 32) with four 256-bit accumulators: loads, not arithmetic, bound.
__attribute__((target("avx2"))) float read_sum_avx2(const float* p, size_t n) {
    F32x8 s0{}, s1{}, s2{}, s3{};
    for (size_t i = 0; i < n; i += 32) {
        F32x8 a, b, c, d;
        std::memcpy(&a, p + i, sizeof a);
        std::memcpy(&b, p + i + 8, sizeof b);
        std::memcpy(&c, p + i + 16, sizeof c);
        std::memcpy(&d, p + i + 24, sizeof d);
        s0 += a;
        s1 += b;
        s2 += c;
        s3 += d;
    }
    const F32x8 s = (s0 + s1) + (s2 + s3);
    float out = 0.0f;
    for (int k = 0; k < 8; ++k) out += s[k];
    return out;
}
#else
float fma_loop_avx512(long, float, float) { return 0.0f; }
float fma_loop_avx2(long, float, float) { return 0.0f; }
#endif

float read_sum_plain(const float* p, size_t n) {
    float s[8] = {};
    for (size_t i = 0; i < n; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += p[i + static_cast<size_t>(k)];
    float out = 0.0f;
    for (float v : s) out += v;
    return out;
}

}  // namespace

CpuPath widest_cpu_path() {
    if (cpu_path_supported(CpuPath::Avx512)) return CpuPath::Avx512;
    if (cpu_path_supported(CpuPath::Avx2)) return CpuPath::Avx2;
    return CpuPath::Scalar;
}

double measure_fma_peak(CpuPath path, int threads, double seconds) {
    if (path == CpuPath::Scalar || !cpu_path_supported(path)) return 0.0;
    threads = std::max(1, threads);
    const int lanes = path == CpuPath::Avx512 ? 16 : 8;
    // About 2 FMA issues per cycle at ~3 GHz: iterations of 12 FMAs for `seconds`.
    const long iters = std::max(1L, static_cast<long>(seconds * 3e9 * 2 / 12));
    static volatile float b_src = 0.9999999f, c_src = 1e-7f;
    const float b = b_src, c = c_src;
    double best = 0.0;
    for (int run = 0; run < 3; ++run) {
        std::vector<float> sink(static_cast<size_t>(threads));
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                sink[static_cast<size_t>(t)] = path == CpuPath::Avx512 ? fma_loop_avx512(iters, b, c)
                                                                       : fma_loop_avx2(iters, b, c);
            });
        for (auto& th : pool) th.join();
        const double s = seconds_since(t0);
        static volatile float keep;
        keep = sink[0];  // the loops' results stay alive
        best = std::max(best, threads * double(iters) * 12 * lanes * 2 / s / 1e9);
    }
    return best;
}

double measure_read_bandwidth(int threads, size_t bytes) {
    threads = std::max(1, threads);
    const size_t per = std::max<size_t>(32, bytes / sizeof(float) / static_cast<size_t>(threads) / 32 * 32);
    const size_t n = per * static_cast<size_t>(threads);
    std::unique_ptr<float[]> buf(new float[n]);
    const bool avx2 = cpu_path_supported(CpuPath::Avx2);
    auto each = [&](const std::function<void(int)>& fn) {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t);
        for (auto& th : pool) th.join();
    };
    // Written by the threads that read it (first touch places the pages near them).
    each([&](int t) {
        float* p = buf.get() + per * static_cast<size_t>(t);
        for (size_t i = 0; i < per; ++i) p[i] = static_cast<float>(i & 1023) * 1e-3f;
    });
    double best = 0.0;
    std::vector<float> sink(static_cast<size_t>(threads));
    for (int pass = 0; pass < 5; ++pass) {
        const auto t0 = std::chrono::steady_clock::now();
        each([&](int t) {
            const float* p = buf.get() + per * static_cast<size_t>(t);
#if defined(__x86_64__)
            sink[static_cast<size_t>(t)] = avx2 ? read_sum_avx2(p, per) : read_sum_plain(p, per);
#else
            sink[static_cast<size_t>(t)] = read_sum_plain(p, per);
#endif
        });
        const double s = seconds_since(t0);
        static volatile float keep;
        keep = sink[0];
        best = std::max(best, double(n) * sizeof(float) / s / 1e9);
    }
    return best;
}

}  // namespace snapkv
