// Speed of the prefill attention kernel (core/quant's attention_prefill) on the kernel threads,
// next to this machine's float32 FMA peak, so "how far from the hardware" is a number anyone can
// rerun. One layer of causal self-attention over a fresh prompt, for the shapes of the two real
// models: SmolLM2-135M (3 KV heads x 3 query heads, D 64) and a global layer of Gemma 3 270M (1 x 4,
// D 256). FLOPs counted as the exact causal work: 4 D per visible (query head, query, key) triple
// (q.k and p.v), T (T + 1) / 2 pairs; the best of many calls after one untimed. Prints a table; it
// asserts nothing.
// Usage: bench_attention [THREADS] [LENGTH ...] (default: every core; 512 2048 8192).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "core/quant/cpu_features.h"
#include "core/quant/machine_bounds.h"
#include "core/quant/qkernels.h"
#include "tests/quant/prefill_args.h"

using namespace snapkv;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Shape {
    const char* name;
    int64_t Hc, g, D;
};

// Best of `reps` runs of one layer's attention, in seconds.
double time_attention(const Shape& sh, int64_t T, int reps) {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t H = sh.Hc * sh.g;
    std::vector<float> q(static_cast<size_t>(H * T * sh.D)), k(static_cast<size_t>(sh.Hc * T * sh.D)), v(k.size()),
        out(q.size());
    for (auto* x : {&q, &k, &v})
        for (float& f : *x) f = nd(rng);
    std::vector<int64_t> qpos(static_cast<size_t>(T)), kpos(static_cast<size_t>(sh.Hc * T));
    for (int64_t t = 0; t < T; ++t) {
        qpos[static_cast<size_t>(t)] = t;
        for (int64_t h = 0; h < sh.Hc; ++h) kpos[static_cast<size_t>(h * T + t)] = t;
    }
    PrefillAttention a = test::prefill_args(q.data(), k.data(), v.data(), kpos.data(), qpos.data(), sh.Hc, sh.g, T, T,
                                            sh.D, out.data());
    a.kpos_ascending = true;
    a.scale = 1.0f / std::sqrt(static_cast<float>(sh.D));
    // One untimed call first (page faults on fresh buffers, the workers' first wake), then at
    // least `reps` and about 0.3 s of calls: the steady state a prefill's back-to-back layers see,
    // where a few 2 ms calls right after start-up read 10 % slower.
    const auto w0 = std::chrono::steady_clock::now();
    attention_prefill(a);
    const double first = seconds_since(w0);
    reps = std::max(reps, static_cast<int>(std::min(200.0, 0.3 / std::max(first, 1e-6))));
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        attention_prefill(a);
        best = std::min(best, seconds_since(t0));
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::thread::hardware_concurrency());
    std::vector<int64_t> lengths;
    for (int i = 2; i < argc; ++i) lengths.push_back(std::atoll(argv[i]));
    if (lengths.empty()) lengths = {512, 2048, 8192};
    set_kernel_threads(std::max(1, threads));
    const CpuPath path = active_cpu_path();
    const double peak = measure_fma_peak(path, std::max(1, threads));
    std::printf("path %s, %d threads, float32 FMA peak %.0f GFLOP/s (12 chains of %s FMAs per core)\n",
                cpu_path_name(path), threads, peak, path == CpuPath::Avx512 ? "512-bit" : "256-bit");
    std::printf("%-28s %7s %12s %10s %8s\n", "shape", "tokens", "ms / layer", "GFLOP/s", "of peak");
    const Shape shapes[] = {{"SmolLM2 (3x3, D 64)", 3, 3, 64}, {"Gemma 3 global (1x4, D 256)", 1, 4, 256}};
    for (const Shape& sh : shapes)
        for (int64_t T : lengths) {
            const double s = time_attention(sh, T, T >= 8192 ? 3 : 6);
            const double flop = 4.0 * double(sh.Hc * sh.g) * double(sh.D) * double(T) * double(T + 1) / 2.0;
            const double gf = flop / s / 1e9;
            std::printf("%-28s %7lld %12.1f %10.1f %7.0f%%\n", sh.name, static_cast<long long>(T), s * 1e3, gf,
                        peak > 0 ? 100.0 * gf / peak : 0.0);
        }
    return 0;
}
