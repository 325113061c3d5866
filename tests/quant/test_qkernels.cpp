// Weight kernels (core/quant) against the float32 dequantization of core/io/dequant.h, on random
// blocks of every format, odd row lengths and row counts, on every CPU path this machine can run
// (each forced in turn). The matrix-vector products must match a float64 dot product of the
// dequantized weights within float32 rounding; the dequantizers must equal dequant.h bit for bit;
// threaded results must equal single-threaded ones exactly (rows are independent). A path the CPU
// lacks is reported with WARN, never passed silently.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/common/errors.h"
#include "core/io/dequant.h"
#include "core/quant/cpu_features.h"
#include "core/quant/qkernels.h"
#include "quant/fwht_reference.h"
#include "quant/random_blocks.h"

using namespace snapkv;
using namespace snapkv::test;

namespace {

const char* const kFormats[] = {"F32",  "F16",  "BF16", "Q8_0", "Q4_0", "Q4_1",   "Q5_0",  "Q5_1",
                                "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};

std::vector<float> reference_dequant(const GgmlType& t, const std::vector<uint8_t>& bytes, int64_t n_rows,
                                     int64_t n_cols) {
    std::vector<float> out(static_cast<size_t>(n_rows * n_cols));
    dequantize_rows(t, bytes.data(), out.data(), n_rows, n_cols);
    return out;
}

// Sizes to test: row lengths in blocks (plain types: values, odd ones included), row counts odd.
std::vector<int64_t> widths(const GgmlType& t) {
    if (t.block_size == 1) return {1, 7, 37, 64, 97, 576};
    if (t.block_size == 32) return {32, 96, 160, 576};
    return {256, 768};
}

}  // namespace

TEST_CASE("Each CPU path's matrix-vector product matches float64 on random blocks of every format", "[quant]") {
    report_missing_paths();
    std::mt19937 rng(1234);
    for (CpuPath path : supported_cpu_paths()) {
        for (const char* name : kFormats) {
            const GgmlType& t = *ggml_type_by_name(name);
            for (int64_t n_cols : widths(t)) {
                for (int64_t n_rows : {1, 3, 7}) {
                    INFO("path " << cpu_path_name(path) << ", " << name << ", " << n_rows << " x " << n_cols);
                    const auto bytes = random_matrix(t, n_rows, n_cols, rng);
                    const auto w = reference_dequant(t, bytes, n_rows, n_cols);
                    const auto x = random_x(n_cols, rng);
                    const BlockMatrix m = block_matrix(t, bytes.data(), n_rows, n_cols);
                    std::vector<float> y(static_cast<size_t>(n_rows), std::nanf(""));
                    matvec_on(path, m, x.data(), y.data(), 0, n_rows);
                    check_products(w, x, y, n_rows, n_cols);
                    // A row range starting inside the matrix writes from y[0].
                    if (n_rows > 1) {
                        std::vector<float> part(static_cast<size_t>(n_rows - 1));
                        matvec_on(path, m, x.data(), part.data(), 1, n_rows);
                        check_bits(part, std::vector<float>(y.begin() + 1, y.end()));
                    }
                }
            }
        }
    }
}

TEST_CASE("Each CPU path's dequantizer equals core/io/dequant bit for bit", "[quant]") {
    report_missing_paths();
    std::mt19937 rng(99);
    for (CpuPath path : supported_cpu_paths()) {
        for (const char* name : kFormats) {
            const GgmlType& t = *ggml_type_by_name(name);
            for (int64_t n_cols : widths(t)) {
                const int64_t n_rows = 5;
                INFO("path " << cpu_path_name(path) << ", " << name << ", " << n_rows << " x " << n_cols);
                const auto bytes = random_matrix(t, n_rows, n_cols, rng);
                const auto want = reference_dequant(t, bytes, n_rows, n_cols);
                const BlockMatrix m = block_matrix(t, bytes.data(), n_rows, n_cols);
                std::vector<float> got(want.size(), std::nanf(""));
                dequantize_on(path, m, got.data(), 0, n_rows);
                check_bits(got, want);
                std::vector<float> tail(static_cast<size_t>(2 * n_cols));
                dequantize_on(path, m, tail.data(), 3, 5);
                check_bits(tail, std::vector<float>(want.begin() + 3 * n_cols, want.end()));
            }
        }
    }
}

TEST_CASE("Threaded products and dequantization equal the single-threaded ones on every path", "[quant]") {
    report_missing_paths();
    PathGuard guard;
    std::mt19937 rng(7);
    const int threads_before = kernel_threads();
    for (int threads : {1, 2, 3}) {
        set_kernel_threads(threads);
        for (CpuPath path : supported_cpu_paths()) {
            set_cpu_path(path);
            REQUIRE(active_cpu_path() == path);
            for (const char* name : {"F16", "Q8_0", "Q4_1", "Q5_1", "Q2_K", "Q4_K", "Q6_K", "IQ4_XS"}) {
                INFO(threads << " threads, path " << cpu_path_name(path) << ", " << name);
                const GgmlType& t = *ggml_type_by_name(name);
                const int64_t n_cols = 512, rows_a = 301, rows_b = 77;
                const auto a = random_matrix(t, rows_a, n_cols, rng);
                const auto b = random_matrix(t, rows_b, n_cols, rng);
                const BlockMatrix ma = block_matrix(t, a.data(), rows_a, n_cols);
                const BlockMatrix mb = block_matrix(t, b.data(), rows_b, n_cols);
                const auto x = random_x(n_cols, rng);

                std::vector<float> want_a(rows_a), want_b(rows_b), got_a(rows_a), got_b(rows_b);
                matvec_on(path, ma, x.data(), want_a.data(), 0, rows_a);
                matvec_on(path, mb, x.data(), want_b.data(), 0, rows_b);
                matvec(ma, x.data(), got_a.data());
                check_bits(got_a, want_a);
                const BlockMatrix both[] = {ma, mb};
                float* ys[] = {got_a.data(), got_b.data()};
                std::fill(got_a.begin(), got_a.end(), 0.0f);
                matvec_many(both, ys, 2, x.data());
                check_bits(got_a, want_a);
                check_bits(got_b, want_b);

                std::vector<float> deq(static_cast<size_t>(200 * n_cols));
                dequantize(ma, 101, 200, deq.data());
                const auto ref = reference_dequant(t, a, rows_a, n_cols);
                check_bits(deq, std::vector<float>(ref.begin() + 101 * n_cols, ref.end()));
            }
        }
    }
    set_kernel_threads(threads_before);
}

TEST_CASE("Batched products give each input matvec_many's result bit for bit", "[quant]") {
    report_missing_paths();
    PathGuard guard;
    std::mt19937 rng(11);
    const int threads_before = kernel_threads();
    for (int threads : {1, 2, 3}) {
        set_kernel_threads(threads);
        for (CpuPath path : supported_cpu_paths()) {
            set_cpu_path(path);
            for (const char* name : {"F32", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K",
                                     "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"}) {
                const GgmlType& t = *ggml_type_by_name(name);
                for (const int64_t n : {5, 11}) {  // input groups of 8, 4, 2 and 1
                    INFO(threads << " threads, path " << cpu_path_name(path) << ", " << name << ", " << n << " inputs");
                    // Rows not a multiple of any tile, and a second matrix of another type.
                    const int64_t n_cols = 768, rows_a = 413, rows_b = 29;
                    const auto a = random_matrix(t, rows_a, n_cols, rng);
                    const GgmlType& tb = *ggml_type_by_name("Q4_1");
                    const auto b = random_matrix(tb, rows_b, n_cols, rng);
                    const BlockMatrix both[] = {block_matrix(t, a.data(), rows_a, n_cols),
                                                block_matrix(tb, b.data(), rows_b, n_cols)};
                    std::vector<float> x;
                    for (int64_t j = 0; j < n; ++j) {
                        const auto xj = random_x(n_cols, rng);
                        x.insert(x.end(), xj.begin(), xj.end());
                    }
                    std::vector<float> got_a(static_cast<size_t>(n * rows_a)), got_b(static_cast<size_t>(n * rows_b));
                    float* ys[] = {got_a.data(), got_b.data()};
                    matvec_many_batch(both, ys, 2, x.data(), n);
                    for (int64_t j = 0; j < n; ++j) {
                        std::vector<float> want_a(rows_a), want_b(rows_b);
                        float* ws[] = {want_a.data(), want_b.data()};
                        matvec_many(both, ws, 2, x.data() + j * n_cols);
                        INFO("input " << j << ", the " << name << " matrix");
                        check_bits(std::vector<float>(got_a.begin() + j * rows_a, got_a.begin() + (j + 1) * rows_a),
                                   want_a);
                        INFO("input " << j << ", the Q4_1 matrix");
                        check_bits(std::vector<float>(got_b.begin() + j * rows_b, got_b.begin() + (j + 1) * rows_b),
                                   want_b);
                    }
                }
            }
        }
    }
    set_kernel_threads(threads_before);
}

TEST_CASE("Weight views and CPU paths refuse what they cannot run, naming it", "[quant]") {
    PathGuard guard;
    const uint8_t bytes[512] = {};
    SECTION("a type without a kernel") {
        for (const char* name : {"IQ2_XXS", "IQ3_S", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "Q8_K"}) {
            INFO(name);
            const GgmlType& t = *ggml_type_by_name(name);
            CHECK_FALSE(kernel_supports(t));
            CHECK_THROWS_WITH(block_matrix(t, bytes, 1, 256),
                              Catch::Contains(name) && Catch::Contains("Q4_K") && Catch::Contains("IQ4_XS"));
        }
    }
    SECTION("a row that is not whole blocks") {
        CHECK_THROWS_AS(block_matrix(*ggml_type_by_name("Q4_0"), bytes, 2, 48), InputError);
        CHECK_THROWS_WITH(block_matrix(*ggml_type_by_name("Q4_0"), bytes, 2, 48),
                          Catch::Contains("2 x 48") && Catch::Contains("32"));
    }
    SECTION("an unknown or unavailable path") {
        CHECK_THROWS_WITH(parse_cpu_path("sse9", "--cpu-path"),
                          Catch::Contains("--cpu-path") && Catch::Contains("sse9") && Catch::Contains("avx2"));
        CHECK(parse_cpu_path("avx512", "x") == CpuPath::Avx512);
        for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512}) {
            if (cpu_path_supported(p)) {
                set_cpu_path(p);
                CHECK(active_cpu_path() == p);
            } else {
                CHECK_THROWS_WITH(set_cpu_path(p), Catch::Contains(cpu_path_name(p)));
            }
        }
        set_cpu_path(CpuPath::Scalar);
        CHECK(active_cpu_path() == CpuPath::Scalar);
        clear_cpu_path();
        // Back to SNAPKV_CPU_PATH when the suite runs under one (every path is tested that way),
        // else to the fastest path.
        const char* env = std::getenv("SNAPKV_CPU_PATH");
        const bool forced = env != nullptr && *env != '\0';
        CHECK(active_cpu_path() == (forced ? parse_cpu_path(env, "SNAPKV_CPU_PATH") : supported_cpu_paths().back()));
    }
}

namespace {

// IEEE half bits of v, for values a half holds exactly (here multiples of 1/64 up to 1 in size).
uint16_t exact_f16_bits(float v) {
    if (v == 0.0f) return std::signbit(v) ? 0x8000 : 0;
    int e = 0;
    const float f = std::frexp(std::fabs(v), &e);  // |v| = f 2^e, f in [0.5, 1)
    const auto frac = static_cast<uint16_t>(std::lround((2.0f * f - 1.0f) * 1024.0f));
    const auto exp = static_cast<uint16_t>(e + 14);
    return static_cast<uint16_t>((v < 0 ? 0x8000 : 0) | (exp << 10) | frac);
}

}  // namespace

TEST_CASE("Single-query attention and many-row score kernels match float64 on every path, threaded or not", "[quant]") {
    report_missing_paths();
    PathGuard guard;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int threads_before = kernel_threads();
    struct Shape {
        int64_t Hc, g, S, D, capacity;
    };
    // stories260K-like (D 8), SmolLM2-like (D 64) with a long cache, odd sizes, the many rows
    // per cache head of LayerScorer's window rows (an 8B-like head, G 4 x 7 rows, over several
    // key blocks and a partial one), a Gemma 3 global layer (4 query heads, D 256) and D 80 (value
    // column blocks of 4 vectors and a narrower rest).
    for (const Shape& sh :
         {Shape{4, 2, 37, 8, 64}, Shape{3, 3, 700, 64, 1024}, Shape{2, 1, 5, 17, 9}, Shape{2, 28, 300, 128, 320},
          Shape{1, 7, 129, 20, 130}, Shape{1, 4, 300, 256, 300}, Shape{2, 4, 100, 80, 128}}) {
        const int64_t Hc = sh.Hc, g = sh.g, S = sh.S, D = sh.D, stride = sh.capacity * D;
        std::vector<float> q(static_cast<size_t>(Hc * g * D)), k(static_cast<size_t>(Hc * stride)),
            v(static_cast<size_t>(Hc * stride)), p(static_cast<size_t>(Hc * g * S));
        for (auto* buf : {&q, &k, &v, &p})
            for (auto& x : *buf) x = u(rng);
        for (size_t i = 0; i < p.size(); i += 3) p[i] = 0.0f;  // masked slots
        // Keys on a grid of 1/64 so that f16 and bf16 hold them exactly: the 16-bit forms of the
        // many-row kernel must then give the float32 form's scores.
        // Values likewise: the decode kernels read a 16-bit cache's rows in place and must give the
        // bits of their float32 copy.
        for (auto* buf : {&k, &v})
            for (auto& x : *buf) x = std::round(x * 64.0f) / 64.0f;
        std::vector<uint16_t> k_f16(k.size()), k_bf16(k.size()), v_f16(v.size()), v_bf16(v.size());
        bool exact = true;
        for (auto [src, f16, bf16] : {std::tuple{&k, &k_f16, &k_bf16}, std::tuple{&v, &v_f16, &v_bf16}})
            for (size_t i = 0; i < src->size(); ++i) {
                const float x = (*src)[i];
                (*f16)[i] = exact_f16_bits(x);
                uint32_t bits = 0;
                std::memcpy(&bits, &x, 4);
                (*bf16)[i] = static_cast<uint16_t>(bits >> 16);
                exact = exact && half_to_float((*f16)[i]) == x && bf16_to_float((*bf16)[i]) == x;
            }
        REQUIRE(exact);
        auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
            return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
        };
        // A q8_0 cache's rows (head sizes that are whole 32-value blocks): int8 quants and f16
        // scales, and the float32 rows its decoder gives, q x scale.
        const bool q8_fits = D % 32 == 0;
        std::vector<int8_t> kq, vq;
        std::vector<uint16_t> kd, vd;
        std::vector<float> k8, v8;
        if (q8_fits) {
            std::uniform_int_distribution<int> qi(-127, 127);
            for (auto [quants, scales, floats] : {std::tuple{&kq, &kd, &k8}, std::tuple{&vq, &vd, &v8}}) {
                quants->resize(k.size());
                scales->resize(k.size() / 32);
                floats->resize(k.size());
                for (auto& x : *quants) x = static_cast<int8_t>(qi(rng));
                for (auto& x : *scales) x = exact_f16_bits(std::ldexp(std::round(u(rng) * 1024.0f), -14));
                for (size_t i = 0; i < k.size(); ++i)
                    (*floats)[i] = static_cast<float>((*quants)[i]) * half_to_float((*scales)[i / 32]);
            }
        }
        const Q8Rows k_q8{kq.data(), kd.data()}, v_q8{vq.data(), vd.data()};
        std::vector<double> want_s(p.size()), want_o(q.size()), mag_s(p.size()), mag_o(q.size());
        for (int64_t h = 0; h < Hc; ++h)
            for (int64_t j = 0; j < g; ++j)
                for (int64_t s = 0; s < S; ++s)
                    for (int64_t d = 0; d < D; ++d) {
                        const double a = q[(h * g + j) * D + d], b = k[h * stride + s * D + d];
                        want_s[(h * g + j) * S + s] += a * b;
                        mag_s[(h * g + j) * S + s] += std::fabs(a * b);
                        const double w = p[(h * g + j) * S + s], c = v[h * stride + s * D + d];
                        want_o[(h * g + j) * D + d] += w * c;
                        mag_o[(h * g + j) * D + d] += std::fabs(w * c);
                    }
        auto check = [](const std::vector<float>& got, const std::vector<double>& want,
                        const std::vector<double>& mag) {
            for (size_t i = 0; i < got.size(); ++i)
                if (!(std::fabs(got[i] - want[i]) <= 1e-5 * mag[i] + 1e-30))
                    FAIL("value " << i << ": got " << got[i] << ", float64 " << want[i]);
        };
        // The x86 kernels' value sums, one fused multiply-add per visible slot in slot order (how
        // their column blocks and query-head groups are cut changes no bit); the columns past the
        // last whole vector take a scalar tail.
        std::vector<float> fma_chain(q.size(), 0.0f);
        for (int64_t h = 0; h < Hc; ++h)
            for (int64_t j = 0; j < g; ++j)
                for (int64_t d = 0; d < D; ++d) {
                    float acc = 0.0f;
                    for (int64_t s = 0; s < S; ++s) {
                        const float w = p[(h * g + j) * S + s];
                        if (w != 0.0f) acc = std::fma(w, v[h * stride + s * D + d], acc);
                    }
                    fma_chain[(h * g + j) * D + d] = acc;
                }
        for (CpuPath path : supported_cpu_paths()) {
            INFO("path " << cpu_path_name(path) << ", Hc " << Hc << " g " << g << " S " << S << " D " << D);
            std::vector<float> scores(p.size()), out(q.size(), 99.0f);
            attention_scores_on(path, q.data(), k.data(), RowFormat::F32, stride, Hc, g, S, D, scores.data());
            check(scores, want_s, mag_s);
            for (RowFormat f : {RowFormat::F16, RowFormat::BF16}) {
                INFO("16-bit rows " << static_cast<int>(f));
                std::vector<float> s16(p.size()), o16(q.size());
                attention_scores_on(path, q.data(), f == RowFormat::F16 ? k_f16.data() : k_bf16.data(), f, stride, Hc,
                                    g, S, D, s16.data());
                CHECK(same_bits(s16, scores));
                std::vector<float> o32(q.size());
                attention_values_on(path, p.data(), v.data(), RowFormat::F32, stride, Hc, g, S, D, o32.data());
                attention_values_on(path, p.data(), f == RowFormat::F16 ? v_f16.data() : v_bf16.data(), f, stride, Hc,
                                    g, S, D, o16.data());
                CHECK(same_bits(o16, o32));
            }
            if (q8_fits) {
                INFO("q8_0 rows");
                std::vector<float> s32(p.size()), s8(p.size()), o32(q.size()), o8(q.size());
                attention_scores_on(path, q.data(), k8.data(), RowFormat::F32, stride, Hc, g, S, D, s32.data());
                attention_scores_on(path, q.data(), &k_q8, RowFormat::Q8_0, stride, Hc, g, S, D, s8.data());
                CHECK(same_bits(s8, s32));
                attention_values_on(path, p.data(), v8.data(), RowFormat::F32, stride, Hc, g, S, D, o32.data());
                attention_values_on(path, p.data(), &v_q8, RowFormat::Q8_0, stride, Hc, g, S, D, o8.data());
                CHECK(same_bits(o8, o32));
                CHECK_THROWS(
                    attention_score_rows_on(path, q.data(), &k_q8, RowFormat::Q8_0, stride, Hc, g, S, D, s8.data()));
            }
            for (RowFormat f : {RowFormat::F32, RowFormat::F16, RowFormat::BF16}) {
                INFO("key format " << static_cast<int>(f));
                std::fill(scores.begin(), scores.end(), 0.0f);
                const void* kp = f == RowFormat::F32   ? static_cast<const void*>(k.data())
                                 : f == RowFormat::F16 ? static_cast<const void*>(k_f16.data())
                                                       : static_cast<const void*>(k_bf16.data());
                attention_score_rows_on(path, q.data(), kp, f, stride, Hc, g, S, D, scores.data());
                check(scores, want_s, mag_s);
            }
            attention_values_on(path, p.data(), v.data(), RowFormat::F32, stride, Hc, g, S, D, out.data());
            check(out, want_o, mag_o);
            if (path != CpuPath::Scalar) {
                const int64_t whole = D / (path == CpuPath::Avx512 ? 16 : 8) * (path == CpuPath::Avx512 ? 16 : 8);
                int64_t differ = 0;
                for (int64_t r = 0; r < Hc * g; ++r)
                    for (int64_t d = 0; d < whole; ++d)
                        differ += std::memcmp(&out[static_cast<size_t>(r * D + d)],
                                              &fma_chain[static_cast<size_t>(r * D + d)], sizeof(float)) != 0;
                CHECK(differ == 0);
            }
            std::vector<float> scores_one(p.size());
            attention_scores_on(path, q.data(), k.data(), RowFormat::F32, stride, Hc, g, S, D, scores_one.data());
            set_cpu_path(path);
            std::vector<float> out_one;  // the threaded sums with one thread
            for (int threads : {1, 2, 3}) {
                INFO(threads << " threads");
                set_kernel_threads(threads);
                std::fill(scores.begin(), scores.end(), 0.0f);
                std::fill(out.begin(), out.end(), 99.0f);
                attention_scores(q.data(), k.data(), RowFormat::F32, stride, Hc, g, S, D, scores.data());
                check(scores, want_s, mag_s);
                // Each score is one dot product, whichever thread and slot range computed it; the
                // value sums are per fixed slot range, added in range order, on any threads.
                CHECK(std::memcmp(scores.data(), scores_one.data(), scores.size() * sizeof(float)) == 0);
                std::fill(scores.begin(), scores.end(), 0.0f);
                attention_score_rows(q.data(), k_f16.data(), RowFormat::F16, stride, Hc, g, S, D, scores.data());
                check(scores, want_s, mag_s);
                attention_values(p.data(), v.data(), RowFormat::F32, stride, Hc, g, S, D, out.data());
                check(out, want_o, mag_o);
                if (out_one.empty()) out_one = out;
                CHECK(std::memcmp(out.data(), out_one.data(), out.size() * sizeof(float)) == 0);
                std::vector<float> s16(p.size()), o16(q.size());
                attention_scores(q.data(), k_bf16.data(), RowFormat::BF16, stride, Hc, g, S, D, s16.data());
                CHECK(same_bits(s16, scores_one));
                attention_values(p.data(), v_f16.data(), RowFormat::F16, stride, Hc, g, S, D, o16.data());
                CHECK(same_bits(o16, out_one));
                if (q8_fits) {  // threaded: the same bits as one call on this path
                    std::vector<float> s32(p.size()), s8(p.size()), o32(q.size()), o8(q.size());
                    attention_scores_on(path, q.data(), k8.data(), RowFormat::F32, stride, Hc, g, S, D, s32.data());
                    attention_scores(q.data(), &k_q8, RowFormat::Q8_0, stride, Hc, g, S, D, s8.data());
                    CHECK(same_bits(s8, s32));
                    attention_values(p.data(), v8.data(), RowFormat::F32, stride, Hc, g, S, D, o32.data());
                    attention_values(p.data(), &v_q8, RowFormat::Q8_0, stride, Hc, g, S, D, o8.data());
                    CHECK(same_bits(o8, o32));
                }
            }
        }
    }
    set_kernel_threads(threads_before);
}

TEST_CASE(
    "Softmax, SwiGLU and GeGLU helpers match float64 on every path, odd lengths, the exp cutoff, -inf and NaN included",
    "[quant]") {
    report_missing_paths();
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> u(-30.0f, 30.0f);
    const float ninf = -std::numeric_limits<float>::infinity();
    for (CpuPath path : supported_cpu_paths()) {
        for (int64_t n : {1, 5, 16, 37, 513}) {
            INFO("path " << cpu_path_name(path) << ", n " << n);
            const int64_t rows = 3;
            std::vector<float> x(static_cast<size_t>(rows * n));
            for (auto& v : x) v = u(rng);
            for (size_t i = 1; i < x.size(); i += 4)
                if (i % static_cast<size_t>(n) != 0) x[i] = ninf;  // masked slots (each row keeps its first)
            if (n >= 16) {
                // The last row falls from 0 to -120: exp's cutoff (0 below -87.33654, where the
                // polynomial's own result is discarded), its neighbours and results near the smallest normal.
                float* ramp = x.data() + (rows - 1) * n;
                for (int64_t i = 0; i < n; ++i) ramp[i] = -120.0f * static_cast<float>(i) / static_cast<float>(n - 1);
                ramp[1] = -87.33654f;
                ramp[2] = std::nextafter(-87.33654f, 0.0f);
                ramp[3] = std::nextafter(-87.33654f, ninf);
                ramp[4] = -87.0f;
                ramp[5] = -0.0f;
            }
            std::vector<float> got = x;
            softmax_rows_on(path, got.data(), rows, n);
            for (int64_t r = 0; r < rows; ++r) {
                double mx = -1e300, sum = 0.0;
                for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double(x[r * n + i]));
                for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[r * n + i]) - mx);
                for (int64_t i = 0; i < n; ++i) {
                    const double want = std::exp(double(x[r * n + i]) - mx) / sum;
                    const double g = got[static_cast<size_t>(r * n + i)];
                    // x - max itself is rounded to float: up to |x - max| * 2^-24 off in the exponent.
                    const double arg = want > 0.0 ? std::fabs(double(x[r * n + i]) - mx) : 0.0;
                    if (!(std::fabs(g - want) <= (4e-7 + 6e-8 * arg) * want + 1e-37))
                        FAIL("row " << r << " value " << i << ": got " << g << ", float64 " << want);
                }
            }
            std::vector<float> gate(static_cast<size_t>(n)), up(static_cast<size_t>(n));
            for (auto& v : gate) v = u(rng);
            for (auto& v : up) v = u(rng) / 30.0f;
            if (n > 2) {
                gate[0] = 95.0f;   // exp(-95) underflows: silu = gate
                gate[1] = -95.0f;  // exp(95) overflows: silu = -0
            }
            std::vector<float> out = gate;
            silu_mul_on(path, out.data(), up.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                const double g = gate[static_cast<size_t>(i)];
                const double want = g / (1.0 + std::exp(-g)) * up[static_cast<size_t>(i)];
                if (!(std::fabs(out[static_cast<size_t>(i)] - want) <= 4e-7 * std::fabs(want) + 1e-37))
                    FAIL("silu value " << i << ": got " << out[static_cast<size_t>(i)] << ", float64 " << want);
            }
            out = gate;
            gelu_tanh_mul_on(path, out.data(), up.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                const double g = gate[static_cast<size_t>(i)];
                const double inner = 0.7978845608028654 * (g + 0.044715 * g * g * g);
                // 0.5 g (1 + tanh(inner)) in the form that keeps its digits for large negative g (there
                // 1 + tanh rounds to 0 even in float64); checked against the tanh form where it is exact.
                const double want = g / (1.0 + std::exp(-2.0 * inner)) * up[static_cast<size_t>(i)];
                if (g > -5.0)
                    CHECK(std::fabs(want - 0.5 * g * (1.0 + std::tanh(inner)) * up[static_cast<size_t>(i)]) <=
                          1e-9 * std::fabs(want) + 1e-300);
                // The float32 exponent -2u is itself rounded: up to |2u| * 2^-23 relative off in exp.
                const double tol = 4e-7 + 1.2e-7 * std::fabs(2.0 * inner);
                if (!(std::fabs(out[static_cast<size_t>(i)] - want) <= tol * std::fabs(want) + 1e-37))
                    FAIL("gelu value " << i << ": got " << out[static_cast<size_t>(i)] << ", float64 " << want);
            }
            // A NaN score keeps its NaN through exp (whatever the row maximum made of it), so the
            // row's sum and every probability are NaN: nothing hides a broken score.
            for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
                std::vector<float> row(static_cast<size_t>(n), -1.0f);
                row[static_cast<size_t>(at)] = std::numeric_limits<float>::quiet_NaN();
                softmax_rows_on(path, row.data(), 1, n);
                for (int64_t i = 0; i < n; ++i)
                    if (!std::isnan(row[static_cast<size_t>(i)]))
                        FAIL("NaN at " << at << ": value " << i << " is " << row[static_cast<size_t>(i)]);
            }
        }
    }
}

TEST_CASE("The Walsh-Hadamard transform of every path equals ggml's butterflies bit for bit", "[quant]") {
    report_missing_paths();
    std::mt19937 rng(23);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    const float inf = std::numeric_limits<float>::infinity();
    for (CpuPath path : supported_cpu_paths())
        for (int64_t n : {2, 4, 8, 16, 32, 64, 128, 256, 512}) {
            INFO("path " << cpu_path_name(path) << ", n " << n);
            const int64_t blocks = 5;
            std::vector<float> x(static_cast<size_t>(blocks * n));
            for (auto& v : x) v = nd(rng);
            // Values whose sums and differences round, overflow or keep a sign: any reordering
            // or regrouping of the butterflies changes some of these bits.
            x[0] = 3e38f;
            x[1] = 3e38f;
            x[static_cast<size_t>(n)] = -0.0f;
            if (n >= 4) {
                x[2] = 1e-40f;  // subnormal
                x[3] = 16777217.0f;
            }
            x[static_cast<size_t>(2 * n + 1)] = inf;
            x[static_cast<size_t>(3 * n) + static_cast<size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
            std::vector<float> want = x;
            ggml_fwht_blocks(want.data(), blocks, n);
            std::vector<float> got = x;
            fwht_blocks_on(path, got.data(), blocks, n);
            for (size_t i = 0; i < got.size(); ++i) {
                uint32_t a, b;
                std::memcpy(&a, &got[i], 4);
                std::memcpy(&b, &want[i], 4);
                const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
                if (a != b && !both_nan) FAIL("value " << i << ": got " << got[i] << ", want " << want[i]);
            }
        }
    std::vector<float> x(12, 1.0f);
    for (int64_t bad : {0, 1, 3, 12, -4}) CHECK_THROWS_AS(fwht_blocks(x.data(), 1, bad), InputError);
}
