// Retune latency (run_retune_benchmark, the table `snapkv bench --retune` prints) over random
// captures in the layer shapes of real models at long prompts, without a prefill: a 32K-token
// prefill of an 8B-shaped model takes a quarter of an hour on 2 cores, the scorers it leaves take
// seconds to build from random tensors of the same shapes. Retune cost depends on the shapes (H,
// Hkv, D, L, Wmax, layers), not on what the captures hold, so this is the loop to measure and
// tune against; `scripts/bench_retune_long.sh` runs the real models. Asserts nothing.
// Usage: bench_retune_shapes SHAPE N_LAYER LENGTH [REPEATS] [THREADS] [DISTINCT_LAYERS]
//   SHAPE: 1b (Llama-3.2-1B: H 32, Hkv 8, D 64), 8b (Llama-3.1-8B: H 32, Hkv 8, D 128),
//          smollm2 (SmolLM2-135M: H 9, Hkv 3, D 64)
//   BENCH_VOTES_ONLY=1 in the environment: only votes(W) for every window 33..127 off the
//   checkpoint stride, wall and CPU time per window over all layers (the rows a first retune
//   recomputes, without selection). BENCH_SELECT_ONLY=N: select() at the CLI's defaults N times
//   after a first call (pooling, ranking and the kept mass over every layer).
//   DISTINCT_LAYERS: captures with their own tensors (default: all); the other layers share
//   those captures' tensors (each still its own scorer, cache and votes), so a 32-layer 8B stack
//   at 32K fits next to a 4-layer one's keys.
//
// Dimensions: H = n_head, Hkv = n_head_kv, D = head_dim, L = prompt tokens, Wmax = captured window.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "core/session/runtime.h"
#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/policy_table.h"
#include "core/snapkv/retune_bench.h"
#include "core/snapkv/selector.h"

using namespace snapkv;

namespace {

struct Shape {
    int64_t n_head, n_head_kv, head_dim;
};

// Every capture the policy table asks for, random but in range: logits q.k / sqrt(D) of standard
// deviation ~1.5 (attention far from uniform), positive column sums and value norms, query
// statistics with an identity-like covariance, and the identity as the averaged future RoPE.
LayerCapture random_capture(const Shape& s, int64_t L, int64_t Wmax, uint64_t seed) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const int64_t H = s.n_head, Hkv = s.n_head_kv, D = s.head_dim, F = std::min<int64_t>(16, L);
    LayerCapture c;
    c.window_queries = at::randn({H, Wmax, D}, gen) * 1.5;  // [H, Wmax, D]
    c.keys = at::randn({Hkv, L, D}, gen);                   // [Hkv, L, D]
    c.h2o = at::rand({H, L}, gen) * 4.0;                    // [H, L]
    c.query_head = at::randn({H, F, D}, gen);               // [H, F, D]
    c.query_count = L - F;
    c.query_mean = at::randn({H, D}, gen, at::kDouble) * 0.1;                             // [H, D]
    c.query_m2 = at::eye(D, at::kDouble).expand({H, D, D}).contiguous() * double(L - F);  // [H, D, D]
    c.future_rope = at::eye(D, at::kFloat);                                               // [D, D]
    c.value_norms = at::rand({Hkv, L}, gen) + 0.5;                                        // [Hkv, L]
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    // The apps' process set-up (OpenBLAS kernels, passive OpenMP waits, thread counts): without it
    // idle OpenMP threads spin on the cores OpenBLAS needs and the products run several times slower.
    init_runtime(argc, argv);
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s 1b|8b|smollm2 N_LAYER LENGTH [REPEATS] [THREADS] [DISTINCT_LAYERS]\n", argv[0]);
        return 2;
    }
    const std::string name = argv[1];
    Shape shape{};
    if (name == "1b") shape = {32, 8, 64};
    else if (name == "8b") shape = {32, 8, 128};
    else if (name == "smollm2") shape = {9, 3, 64};
    else {
        std::fprintf(stderr, "shape '%s' is not one of 1b, 8b, smollm2\n", name.c_str());
        return 2;
    }
    const int64_t n_layer = std::atoll(argv[2]);
    const int64_t L = std::atoll(argv[3]);
    const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
    const int threads = argc > 5 ? std::atoi(argv[5]) : 0;
    const int64_t distinct = argc > 6 ? std::atoll(argv[6]) : n_layer;
    if (n_layer < 1 || L < 256 || distinct < 1) {
        std::fprintf(stderr, "need N_LAYER >= 1, LENGTH >= 256, DISTINCT_LAYERS >= 1\n");
        return 2;
    }
    if (threads > 0) at::set_num_threads(threads);
    c10::InferenceMode guard;
    const int64_t Wmax = 128;  // the CLI's and the app's default captured window
    std::vector<LayerCapture> captures;
    for (int64_t l = 0; l < std::min(distinct, n_layer); ++l)
        captures.push_back(random_capture(shape, L, Wmax, 31 + l));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<LayerScorer> scorers;
    for (int64_t l = 0; l < n_layer; ++l) scorers.emplace_back(captures[size_t(l % int64_t(captures.size()))]);
    const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // What a prefill does next (Session::prefill): the scores of the policies with captures of their
    // own made for the default settings, so a first retune to ExpectedAttention reads them.
    const auto t_ahead = std::chrono::steady_clock::now();
    if (!std::getenv("BENCH_NO_AHEAD"))
        prepare_default_scores(scorers,
                               kCapturesColumnSums | kCapturesQueryStats | kCapturesValueNorms | kCapturesFutureRope);
    const double ahead_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_ahead).count();
    std::printf(
        "shape %s: %lld layers (%zu distinct captures), L=%lld, %d threads; scorers built in %.0f ms, "
        "scores made ahead in %.0f ms\n",
        name.c_str(), static_cast<long long>(n_layer), captures.size(), static_cast<long long>(L),
        at::get_num_threads(), build_ms, ahead_ms);
    if (std::getenv("BENCH_VOTES_ONLY")) {  // off-stride votes alone: every window 33..127 once, all layers
        const auto t1 = std::chrono::steady_clock::now();
        const std::clock_t c1 = std::clock();
        int calls = 0;
        for (int64_t w = 33; w < 128; ++w) {
            if (w % scorers.front().checkpoint_stride() == 0) continue;
            for (const auto& s : scorers) s.votes(w);
            ++calls;
        }
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
        const double cpu_ms = 1000.0 * double(std::clock() - c1) / CLOCKS_PER_SEC;
        std::printf("off-stride votes: %d windows, %.1f ms per window (all layers), %.1f ms CPU time\n", calls,
                    ms / calls, cpu_ms / calls);
        return 0;
    }
    SelectionParams base;  // the CLI's defaults: snapkv, W 32, K 7, max, C 1024, kv-head
    if (const char* n = std::getenv("BENCH_SELECT_ONLY")) {  // select(base) N times after a first call
        select(scorers, base, true);
        const int reps = std::max(1, std::atoi(n));
        const auto t1 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) select(scorers, base, true);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
        std::printf("select: %.1f ms per call (%d calls)\n", ms / reps, reps);
        return 0;
    }
    std::printf("%s", run_retune_benchmark(scorers, base, repeats).c_str());
    return 0;
}
