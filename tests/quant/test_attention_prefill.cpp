// core/quant's prefill attention (blocked, online softmax) against a float64 reference of the
// plain formula: scores (q . k) * scale, soft-cap, mask by position (future, padding, sliding
// window), softmax, sum of p * v. On every CPU path the machine has, single-threaded and on the
// kernel threads, for GQA groups, head sizes that are and are not multiples of the vector width,
// caches that already hold earlier tokens (contiguous or with gaps), padding and positions out of
// order; with and without H2O's per-slot sums of the probabilities.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/common/errors.h"
#include "core/quant/cpu_features.h"
#include "core/quant/qkernels.h"
#include "tests/quant/prefill_args.h"

using namespace snapkv;

namespace {

struct Case {
    int64_t Hc, g, T, S_old, D;
    int64_t window;
    float softcap;
    bool shuffle_old;   // earlier slots out of position order
    bool padding;       // some earlier slots are padding (position above every query)
    bool gaps = false;  // earlier slots keep every third position or so, in order (a compressed cache)
};

// out [H, T, D] in float64 from the plain formula; h2o [H, S]: each slot's probability summed
// over the queries.
std::vector<double> reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, const std::vector<int64_t>& kpos,
                              const std::vector<int64_t>& qpos, int64_t S, float scale, std::vector<double>& h2o) {
    const int64_t H = c.Hc * c.g;
    std::vector<double> out(static_cast<size_t>(H * c.T * c.D), 0.0);
    h2o.assign(static_cast<size_t>(H * S), 0.0);
    std::vector<double> s(static_cast<size_t>(S));
    for (int64_t hq = 0; hq < H; ++hq) {
        const int64_t h = hq / c.g;
        for (int64_t t = 0; t < c.T; ++t) {
            double mx = -std::numeric_limits<double>::infinity();
            for (int64_t j = 0; j < S; ++j) {
                double dot = 0.0;
                for (int64_t d = 0; d < c.D; ++d)
                    dot += double(q[(hq * c.T + t) * c.D + d]) * double(k[(h * S + j) * c.D + d]);
                double x = dot * scale;
                if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
                const int64_t kp = kpos[h * S + j], qp = qpos[t];
                const bool visible = kp <= qp && (c.window == 0 || kp > qp - c.window);
                s[j] = visible ? x : -std::numeric_limits<double>::infinity();
                mx = std::max(mx, s[j]);
            }
            double sum = 0.0;
            for (int64_t j = 0; j < S; ++j) sum += std::exp(s[j] - mx);
            for (int64_t j = 0; j < S; ++j) {
                const double p = std::exp(s[j] - mx) / sum;
                h2o[hq * S + j] += p;
                if (p == 0.0) continue;
                for (int64_t d = 0; d < c.D; ++d) out[(hq * c.T + t) * c.D + d] += p * double(v[(h * S + j) * c.D + d]);
            }
        }
    }
    return out;
}

}  // namespace

TEST_CASE("Prefill attention matches the float64 formula on every path, threads, windows and caches", "[quant]") {
    const Case cases[] = {
        {3, 3, 200, 0, 64, 0, 0.0f, false, false},           // SmolLM2's shape, a fresh prefill
        {1, 4, 150, 0, 256, 64, 0.0f, false, false},         // Gemma 3: one KV head, D 256, sliding window
        {2, 1, 70, 0, 8, 0, 0.0f, false, false},             // stories260K's D 8 (below every vector width)
        {2, 2, 97, 130, 80, 0, 50.0f, false, false},         // earlier tokens in the cache, soft-cap, D 80
        {2, 3, 40, 90, 64, 33, 0.0f, true, false},           // a compressed cache out of order, window
        {3, 2, 33, 60, 32, 0, 0.0f, false, true},            // AdaKV padding
        {1, 1, 1 + 128 * 3, 0, 16, 0, 0.0f, false, false},   // key blocks that end exactly
        {1, 2, 300, 0, 64, 100, 0.0f, false, false},         // a window that skips whole key blocks
        {2, 3, 60, 200, 64, 100, 0.0f, false, false, true},  // a window edge inside a compressed cache
        {1, 3, 150, 90, 32, 0, 0.0f, false, false, true},    // a compressed cache, causal mask only
        {2, 2, 75, 10, 20, 0, 0.0f, false, false},           // D 20: key columns past whole 8 x 8 tiles
    };
    const int threads_before = kernel_threads();
    const CpuPath path_before = active_cpu_path();
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (const Case& c : cases) {
        const int64_t H = c.Hc * c.g, S = c.S_old + c.T;
        std::vector<float> q(static_cast<size_t>(H * c.T * c.D)), k(static_cast<size_t>(c.Hc * S * c.D)), v(k.size());
        for (auto& x : q) x = 2.0f * nd(rng);  // peaky enough that a few keys dominate some rows
        for (auto& x : k) x = nd(rng);
        for (auto& x : v) x = nd(rng);
        // Earlier slots hold positions 0 .. S_old - 1 (or a permutation, or padding, or an ordered
        // subset of 0 .. 3 S_old - 1); the new tokens follow in the last T slots at the next
        // positions, as LayerKv::append puts them.
        std::vector<int64_t> kpos(static_cast<size_t>(c.Hc * S)), qpos(static_cast<size_t>(c.T));
        const int64_t first_new = c.gaps ? 3 * c.S_old : c.S_old;  // the new tokens' first position
        for (int64_t h = 0; h < c.Hc; ++h) {
            std::vector<int64_t> old(static_cast<size_t>(c.S_old));
            for (int64_t j = 0; j < c.S_old; ++j) old[j] = c.gaps ? 3 * j + int64_t(rng() % 3) : j;
            if (c.shuffle_old) std::shuffle(old.begin(), old.end(), rng);
            if (c.padding)
                for (int64_t j = c.S_old - 1 - h * 5; j >= 0 && j >= c.S_old - 1 - h * 5 - 4; --j)
                    old[j] = int64_t(1) << 60;
            for (int64_t j = 0; j < c.S_old; ++j) kpos[h * S + j] = old[j];
            for (int64_t t = 0; t < c.T; ++t) kpos[h * S + c.S_old + t] = first_new + t;
        }
        for (int64_t t = 0; t < c.T; ++t) qpos[t] = first_new + t;
        const float scale = 1.0f / std::sqrt(float(c.D));
        std::vector<double> want_h2o;
        const std::vector<double> want = reference(c, q, k, v, kpos, qpos, S, scale, want_h2o);
        double mag = 0.0;
        for (double x : want) mag = std::max(mag, std::abs(x));

        // The output in [T, H, D] order (what the model's output projection reads).
        std::vector<float> out(q.size());
        PrefillAttention a = test::prefill_args(q.data(), k.data(), v.data(), kpos.data(), qpos.data(), c.Hc, c.g, c.T,
                                                S, c.D, out.data());
        a.kpos_ascending = !c.shuffle_old && !c.padding;
        a.scale = scale;
        a.softcap = c.softcap;
        a.window = c.window;
        std::vector<float> h2o(static_cast<size_t>(H * S));
        auto check = [&] {
            double worst = 0.0;
            int64_t at = -1;
            for (int64_t hq = 0; hq < H; ++hq)
                for (int64_t t = 0; t < c.T; ++t)
                    for (int64_t d = 0; d < c.D; ++d) {
                        const double got = out[(t * H + hq) * c.D + d], w = want[(hq * c.T + t) * c.D + d];
                        const double err = std::isfinite(got) ? std::abs(got - w) : 1e30;
                        if (err > worst) {
                            worst = err;
                            at = (hq * c.T + t) * c.D + d;
                        }
                    }
            INFO("max abs error " << worst << " at " << at << " (largest output " << mag << ")");
            CHECK(worst <= 2e-5 * std::max(1.0, mag));
            if (a.h2o == nullptr) return;
            double worst_h = 0.0;
            for (size_t i = 0; i < want_h2o.size(); ++i)
                worst_h = std::max(worst_h, std::isfinite(h2o[i]) ? std::abs(h2o[i] - want_h2o[i]) : 1e30);
            // A sum of up to T probabilities: float32 rounding of each row plus the sum.
            INFO("H2O sums: max abs error " << worst_h);
            CHECK(worst_h <= 1e-6 * double(c.T));
        };
        for (CpuPath path : supported_cpu_paths()) {
            INFO("path " << cpu_path_name(path) << ", Hc " << c.Hc << " g " << c.g << " T " << c.T << " S " << S
                         << " D " << c.D << " window " << c.window << " softcap " << c.softcap);
            for (bool with_h2o : {false, true}) {
                a.h2o = with_h2o ? h2o.data() : nullptr;
                std::fill(h2o.begin(), h2o.end(), 0.0f);
                std::fill(out.begin(), out.end(), 99.0f);
                set_kernel_threads(1);
                attention_prefill_on(path, a);
                check();
                set_cpu_path(path);
                for (int threads : {1, 2, 3}) {
                    set_kernel_threads(threads);
                    std::fill(h2o.begin(), h2o.end(), 0.0f);
                    std::fill(out.begin(), out.end(), 99.0f);
                    attention_prefill(a);
                    check();
                }
            }
        }
    }
    set_kernel_threads(threads_before);
    set_cpu_path(path_before);
}

// The causal mask's later slots have probability +0; the kernel leaves them out of a row group's
// scores and value sums, which must change no bit. Adding +0 * v changes an output lane only where
// the lane is -0 (an underflowed product: here exp(-70) * -1e-16) and the value is not negative, or
// where the value is not finite: those lanes come out as the full pass gives them.
TEST_CASE("Prefill attention leaves later slots out without changing a zero's sign or a NaN", "[quant]") {
    const int64_t T = 40, D = 16;
    const int threads_before = kernel_threads();
    for (bool with_inf : {false, true}) {
        std::mt19937 rng(5);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> q(T * D), k(T * D), v(T * D);
        for (auto& x : q) x = nd(rng);
        for (auto& x : k) x = nd(rng);
        for (auto& x : v) x = nd(rng);
        // Rows 0 .. 2: q = e0; key 0 scores 0, key 1 scores -70 (p = exp(-70) ~ 4e-31).
        for (int64_t t = 0; t < 3; ++t)
            for (int64_t d = 0; d < D; ++d) q[t * D + d] = d == 0 ? 1.0f : 0.0f;
        for (int64_t j = 0; j < 2; ++j)
            for (int64_t d = 0; d < D; ++d) k[j * D + d] = d == 0 && j == 1 ? -70.0f : 0.0f;
        // Lane 0: +0, -1e-16 (underflows to -0 in row 1), later values negative but +1 at slot 8,
        // past the slots rows 0 .. 5 (a register group) see: the full pass gives +0. Lane 2: the
        // same with every later value negative: -0 stays. Lane 1: +inf at slot 8 (with_inf).
        for (int64_t d : {0, 2}) {
            v[0 * D + d] = 0.0f, v[1 * D + d] = -1e-16f;
            for (int64_t j = 2; j < T; ++j) v[j * D + d] = -1.0f - std::abs(v[j * D + d]);
        }
        v[8 * D + 0] = 1.0f;
        if (with_inf) v[8 * D + 1] = std::numeric_limits<float>::infinity();
        std::vector<int64_t> pos(T);
        for (int64_t t = 0; t < T; ++t) pos[t] = t;
        std::vector<float> out(T * D);
        PrefillAttention a = test::prefill_args(q.data(), k.data(), v.data(), pos.data(), pos.data(), 1, 1, T, T, D,
                                                out.data());
        a.kpos_ascending = true;
        a.scale = 1.0f;
        set_kernel_threads(1);
        for (CpuPath path : supported_cpu_paths()) {
            INFO("path " << cpu_path_name(path) << (with_inf ? ", +inf at slot 8" : ""));
            std::fill(out.begin(), out.end(), 99.0f);
            attention_prefill_on(path, a);
            CHECK(out[1 * D + 0] == 0.0f);
            CHECK_FALSE(std::signbit(out[1 * D + 0]));
            // The scalar path multiplies, then adds: its product is -0 and -0 + +0 is +0 already.
            const bool fused = path != CpuPath::Scalar;
            CHECK(out[1 * D + 2] == 0.0f);
            CHECK(std::signbit(out[1 * D + 2]) == fused);
            CHECK(std::isnan(out[0 * D + 1]) == with_inf);
            CHECK(std::isnan(out[1 * D + 1]) == with_inf);
        }
    }
    set_kernel_threads(threads_before);
}

// With ascending positions the kernel scores and sums only the slots a row group can see; told
// the positions are in no order, it masks every slot of every block it reads instead. Both must
// give the same bits, including from non-finite queries, keys and values and underflowing sums.
TEST_CASE("Prefill attention gives the same bits with and without the ordered-position shortcuts", "[quant]") {
    const int threads_before = kernel_threads();
    set_kernel_threads(1);
    std::mt19937 rng(23);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    struct Shape {
        int64_t Hc, g, T, D, window;
    };
    for (const Shape sh : {Shape{2, 3, 200, 64, 0}, Shape{1, 4, 150, 80, 0}, Shape{1, 2, 260, 32, 70}}) {
        const int64_t H = sh.Hc * sh.g, S = sh.T;
        std::vector<float> q(H * sh.T * sh.D), k(sh.Hc * S * sh.D), v(k.size());
        for (auto& x : q) x = 3.0f * nd(rng);
        for (auto& x : k) x = nd(rng);
        for (auto& x : v) x = nd(rng) * (rng() % 5 == 0 ? 1e-30f : 1.0f);  // some products underflow
        const float inf = std::numeric_limits<float>::infinity();
        q[(1 * sh.T + 40) * sh.D + 3] = std::numeric_limits<float>::quiet_NaN();  // a NaN query row
        k[(0 * S + 77) * sh.D + 5] = inf;                                         // +-inf scores
        k[(0 * S + 130) * sh.D + 1] = -inf;
        k[((sh.Hc - 1) * S + 45) * sh.D + 2] = inf;  // NaN scores where q[2] and q[3] share a sign
        k[((sh.Hc - 1) * S + 45) * sh.D + 3] = -inf;
        v[(0 * S + 99) * sh.D + 7] = inf;  // an infinite value: 0 * inf in the rows before it
        std::vector<int64_t> kpos(sh.Hc * S), qpos(sh.T);
        for (int64_t i = 0; i < sh.Hc * S; ++i) kpos[i] = i % S;
        for (int64_t t = 0; t < sh.T; ++t) qpos[t] = t;
        std::vector<float> fast(q.size()), full(q.size());
        PrefillAttention a = test::prefill_args(q.data(), k.data(), v.data(), kpos.data(), qpos.data(), sh.Hc, sh.g,
                                                sh.T, S, sh.D, fast.data());
        a.scale = 1.0f / std::sqrt(float(sh.D));
        a.window = sh.window;
        for (CpuPath path : supported_cpu_paths()) {
            INFO("path " << cpu_path_name(path) << ", D " << sh.D << ", window " << sh.window);
            a.kpos_ascending = true;
            a.out = fast.data();
            attention_prefill_on(path, a);
            a.kpos_ascending = false;
            a.out = full.data();
            attention_prefill_on(path, a);
            int64_t differ = 0, nonfinite = 0;
            for (size_t i = 0; i < fast.size(); ++i) {
                differ += std::memcmp(&fast[i], &full[i], sizeof(float)) != 0;
                nonfinite += !std::isfinite(full[i]);
            }
            CHECK(nonfinite > 0);  // the case reaches the non-finite paths
            CHECK(differ == 0);
        }
    }
    set_kernel_threads(threads_before);
}

// The prefill's key blocks as every path lays them out (the x86 paths in 8 x 8 register tiles,
// then one value at a time): each float of the block, the +0 padding included, into a buffer
// filled with NaN first, for row counts and head dims on and off the tiles' edges.
TEST_CASE("Prefill attention's transposed key blocks hold every key and +0 padding on every path", "[quant]") {
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> probe(4096);  // one row of padding (D 1), far longer than any layout's row
    const auto [ld, most] = transpose_key_block_on(CpuPath::Scalar, nullptr, 0, 1, probe.data());
    REQUIRE(ld >= most);
    REQUIRE(ld <= 4096);
    for (int64_t D : {8, 20, 64, 256})
        for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{100}, most}) {
            std::vector<float> k(static_cast<size_t>(std::max<int64_t>(n, 1) * D));
            for (auto& x : k) x = nd(rng);
            for (CpuPath path : supported_cpu_paths()) {
                INFO("path " << cpu_path_name(path) << ", D " << D << ", n " << n);
                std::vector<float> dst(static_cast<size_t>(D * ld), std::numeric_limits<float>::quiet_NaN());
                transpose_key_block_on(path, k.data(), n, D, dst.data());
                int64_t wrong = 0;
                for (int64_t d = 0; d < D; ++d)
                    for (int64_t s = 0; s < ld; ++s) {
                        const float want = s < n ? k[static_cast<size_t>(s * D + d)] : 0.0f;
                        wrong += std::memcmp(&dst[static_cast<size_t>(d * ld + s)], &want, sizeof(float)) != 0;
                    }
                CHECK(wrong == 0);
            }
        }
    CHECK_THROWS_AS(transpose_key_block_on(CpuPath::Scalar, nullptr, most + 1, 8, nullptr), InputError);
}
