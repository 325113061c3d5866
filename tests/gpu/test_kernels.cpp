// kernels/ against the CPU references in core, on a GPU: window_votes vs LayerScorer::votes,
// pool_topk vs pool_scores + group mean + top_k_positions, gather_kv vs plain loops and
// gather_cache; on random inputs (with forced ties) and on real captures of stories260K (always)
// and SmolLM2 ([smollm2], needs the model file). Selections must match exactly where the inputs
// are exact, and otherwise up to near-ties of the reference scores.
// Without a usable GPU every test that needs one FAILS with the reason; none passes silently.
// Only the argument checks run without one.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, D = head_dim, L = prompt tokens,
// Wmax = captured window, W = window, P = L - W, R = selected rows, k = kept per row,
// S = cache slots, M = kept slots.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "core/io/model_file.h"
#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"
#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/ranking.h"
#include "core/snapkv/selector.h"
#include "core/tokenizer/tokenizer.h"
#include "kernels/snapkv_kernels.h"
#include "tests/common/test_util.h"
#include "tests/snapkv/tensor_compare.h"

namespace kn = snapkv::kernels;
using snapkv_test::compare_tensors;

namespace {

// ---- device plumbing ---------------------------------------------------------------------------

#define REQUIRE_GPU()                                                                                                \
    do {                                                                                                             \
        std::string why_;                                                                                            \
        if (kn::cuda_device_count(&why_) == 0)                                                                       \
            FAIL("this test needs a CUDA GPU and none is usable: " << why_                                           \
                                                                   << " (run tests/gpu/check.sh on a GPU machine)"); \
    } while (false)

void cuda_ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) FAIL(what << ": " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e));
}

void sync_ok() { cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the kernels"); }

class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t bytes) : m_bytes(bytes) {
        cuda_ok(cudaMalloc(&m_ptr, std::max<size_t>(bytes, 1)), "cudaMalloc");
    }
    ~DeviceBuffer() { cudaFree(m_ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    template <class T = void>
    T* get() const {
        return static_cast<T*>(m_ptr);
    }
    size_t bytes() const { return m_bytes; }

private:
    void* m_ptr = nullptr;
    size_t m_bytes = 0;
};

// A CPU tensor's bytes on the device (made contiguous first).
std::unique_ptr<DeviceBuffer> upload(const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    const size_t bytes = static_cast<size_t>(c.numel()) * c.element_size();
    auto buf = std::make_unique<DeviceBuffer>(bytes);
    cuda_ok(cudaMemcpy(buf->get(), c.data_ptr(), bytes, cudaMemcpyHostToDevice), "upload");
    return buf;
}

at::Tensor download(const void* dev, std::vector<int64_t> shape, at::ScalarType type) {
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    cuda_ok(cudaMemcpy(t.data_ptr(), dev, static_cast<size_t>(t.numel()) * t.element_size(), cudaMemcpyDeviceToHost),
            "download");
    return t;
}

kn::DType dtype_of(at::ScalarType t) {
    if (t == at::kHalf) return kn::DType::Float16;
    if (t == at::kBFloat16) return kn::DType::BFloat16;
    return kn::DType::Float32;
}

kn::PoolKind pool_kind(snapkv::Pooling p) {
    return p == snapkv::Pooling::Max   ? kn::PoolKind::Max
           : p == snapkv::Pooling::Avg ? kn::PoolKind::Avg
                                       : kn::PoolKind::None;
}

// ---- the GPU pipeline and its CPU reference ----------------------------------------------------

// window_votes on q [H, Wq, D] and k [Hkv, Sk, D] (CPU tensors of one or two dtypes) for window W
// over the first L keys -> [H, L - W] float32 on the CPU.
at::Tensor gpu_votes(const at::Tensor& q, const at::Tensor& k, int64_t L, int64_t W) {
    kn::VotesShape s;
    s.n_head = q.size(0);
    s.n_head_kv = k.size(0);
    s.head_dim = q.size(2);
    s.n_tokens = L;
    s.window = W;
    s.query_rows = q.size(1);
    s.key_rows = k.size(1);
    auto dq = upload(q);
    auto dk = upload(k);
    DeviceBuffer votes(static_cast<size_t>(s.n_head * (L - W)) * sizeof(float));
    kn::window_votes(s, dq->get(), dtype_of(q.scalar_type()), dk->get(), dtype_of(k.scalar_type()), votes.get<float>());
    sync_ok();
    return download(votes.get(), {s.n_head, L - W}, at::kFloat);
}

struct GpuSelection {
    at::Tensor positions;  // [R, k] int64
    at::Tensor pooled;     // [R, P] float32
};

// pool_topk on votes [N, P] (CPU float32), with or without the pooled output.
GpuSelection gpu_pool_topk(const at::Tensor& votes, int64_t group, int64_t kernel, snapkv::Pooling pooling, int64_t k,
                           snapkv::TieBreak tie, bool want_pooled = true) {
    kn::PoolTopkShape s;
    s.ties = tie == snapkv::TieBreak::Earlier ? kn::TieOrder::Earlier : kn::TieOrder::Later;
    s.n_rows = votes.size(0);
    s.n_prefix = votes.size(1);
    s.group = group;
    s.kernel = kernel;
    s.pooling = pool_kind(pooling);
    s.k = k;
    const int64_t R = s.n_rows / group;
    auto dv = upload(votes);
    DeviceBuffer pos(static_cast<size_t>(R * k) * sizeof(int64_t));
    DeviceBuffer pooled(static_cast<size_t>(R * s.n_prefix) * sizeof(float));
    kn::pool_topk(s, dv->get<float>(), pos.get<int64_t>(), want_pooled ? pooled.get<float>() : nullptr);
    sync_ok();
    GpuSelection out;
    out.positions = download(pos.get(), {R, k}, at::kLong);
    if (want_pooled) out.pooled = download(pooled.get(), {R, s.n_prefix}, at::kFloat);
    return out;
}

// The reference of pool_topk: selector.cpp's order (pool per row, then the group mean).
at::Tensor cpu_pooled(const at::Tensor& votes, int64_t group, int64_t kernel, snapkv::Pooling pooling) {
    at::Tensor pooled = snapkv::pool_scores(votes, kernel, pooling);  // [N, P]
    if (group == 1) return pooled.contiguous();
    return pooled.view({votes.size(0) / group, group, votes.size(1)}).mean(1).contiguous();  // [R, P]
}

// "Exact up to ties": got [R, k] must be sorted, unique, in range, and differ from want [R, k]
// only by positions whose reference score is within tol of the row's k-th best score.
struct SelectionCheck {
    bool ok = true;
    int64_t differing = 0;  // positions in got but not in want, over all rows
    std::string report;
};

SelectionCheck check_selection(const at::Tensor& got, const at::Tensor& want, const at::Tensor& scores,
                               double rel_tol) {
    SelectionCheck c;
    std::ostringstream os;
    if (got.sizes() != want.sizes()) {
        c.ok = false;
        os << "shape " << snapkv_test::shape_of(got) << ", want " << snapkv_test::shape_of(want);
        c.report = os.str();
        return c;
    }
    const int64_t R = got.size(0), k = got.size(1), P = scores.size(1);
    at::Tensor g = got.contiguous(), w = want.contiguous(), s = scores.to(at::kFloat).contiguous();
    auto key = [](float v) { return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v; };
    for (int64_t r = 0; r < R && k > 0; ++r) {
        const int64_t* gr = g.data_ptr<int64_t>() + r * k;
        const int64_t* wr = w.data_ptr<int64_t>() + r * k;
        const float* sr = s.data_ptr<float>() + r * P;
        for (int64_t i = 0; i < k; ++i) {
            if (gr[i] < 0 || gr[i] >= P || (i > 0 && gr[i] <= gr[i - 1])) {
                c.ok = false;
                os << "row " << r << ": positions not sorted, unique and in [0, " << P << ") at " << i << " (" << gr[i]
                   << "); ";
                break;
            }
        }
        float thr = std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < k; ++i) thr = std::min(thr, key(sr[wr[i]]));
        const double tol = rel_tol * std::fabs(double(thr)) + 1e-30;
        std::set<int64_t> gs(gr, gr + k), ws(wr, wr + k);
        for (int64_t p : gs) {
            if (ws.count(p)) continue;
            ++c.differing;
            if (double(key(sr[p])) < double(thr) - tol) {
                c.ok = false;
                os << "row " << r << ": kept " << p << " scoring " << sr[p] << ", below the k-th best " << thr << "; ";
            }
        }
        for (int64_t p : ws) {
            if (gs.count(p)) continue;
            if (double(key(sr[p])) > double(thr) + tol) {
                c.ok = false;
                os << "row " << r << ": dropped " << p << " scoring " << sr[p] << ", above the k-th best " << thr
                   << "; ";
            }
        }
    }
    os << c.differing << " of " << R * k << " positions differ from the reference (near-ties allowed: rel " << rel_tol
       << ")";
    c.report = os.str();
    return c;
}

#define CHECK_SELECTION(got, want, scores, tol)                                     \
    do {                                                                            \
        const SelectionCheck sc_ = check_selection((got), (want), (scores), (tol)); \
        INFO(#got " vs " #want ": " << sc_.report);                                 \
        CHECK(sc_.ok);                                                              \
    } while (false)

// Vote-like rows: non-negative, quantised to 1/16 so that sums of up to 16 of them are exact in
// float32 (avg pooling and group means then match the CPU bit for bit) and ties abound.
at::Tensor quantised_votes(int64_t n, int64_t p, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> level(0, 15);
    at::Tensor t = at::empty({n, p}, at::kFloat);
    float* d = t.data_ptr<float>();
    for (int64_t i = 0; i < n * p; ++i) d[i] = static_cast<float>(level(rng)) / 16.0f;
    return t;
}

at::Tensor random_normal(std::vector<int64_t> shape, unsigned seed, float scale = 1.0f) {
    at::manual_seed(seed);
    return at::randn(shape, at::kFloat) * scale;
}

// Votes from the CPU reference: the last W of the Wmax queries against the first L keys.
at::Tensor cpu_votes(const at::Tensor& q, const at::Tensor& k, int64_t L, int64_t W) {
    snapkv::LayerCapture cap;
    cap.window_queries = q.to(at::kFloat).contiguous();
    cap.keys = k.narrow(1, 0, L).to(at::kFloat).contiguous();
    return snapkv::LayerScorer(cap).votes(W);
}

// ---- a captured prompt of a real model ----------------------------------------------------------

struct Captured {
    std::vector<at::Tensor> queries;  // per layer [H, Wmax, D] float32
    std::vector<at::Tensor> keys;     // per layer [Hkv, L, D]
    std::vector<at::Tensor> values;   // per layer [Hkv, L, D]
    snapkv::KvCache cache;
    int64_t n_tokens = 0;
};

Captured capture_prompt(const std::string& model_path, int64_t max_tokens, int64_t max_window) {
    c10::InferenceMode guard;
    auto file = snapkv::ModelFile::open(model_path);
    auto tok = snapkv::Tokenizer::create(file->vocab());
    auto model = snapkv::LlamaModel::load(*file);
    std::vector<int32_t> ids = tok->encode(snapkv::test::read_text(snapkv::test::data_path("reference/ppl-text.txt")));
    if (static_cast<int64_t>(ids.size()) > max_tokens) ids.resize(static_cast<size_t>(max_tokens));
    Captured c;
    c.n_tokens = static_cast<int64_t>(ids.size());
    c.cache = model->new_cache(c.n_tokens + 8);
    snapkv::PrefillCapture cap;
    cap.max_window = max_window;
    snapkv::ForwardOptions fo;
    fo.capture = &cap;
    model->forward(ids, c.cache, fo);
    for (int64_t l = 0; l < c.cache.n_layer(); ++l) {
        c.queries.push_back(cap.window_queries[static_cast<size_t>(l)].to(at::kFloat).contiguous());
        c.keys.push_back(c.cache.layer(l).keys().narrow(1, 0, c.n_tokens).contiguous());
        c.values.push_back(c.cache.layer(l).values().narrow(1, 0, c.n_tokens).contiguous());
    }
    return c;
}

// Every layer of a capture through the whole GPU path against the CPU path, both GQA modes.
void check_capture(const Captured& c, const std::vector<int64_t>& windows, int64_t keep, double votes_rtol) {
    const int64_t L = c.n_tokens;
    for (size_t l = 0; l < c.queries.size(); ++l) {
        const at::Tensor& q = c.queries[l];
        const at::Tensor& k = c.keys[l];
        const int64_t H = q.size(0), Hkv = k.size(0), G = H / Hkv;
        for (int64_t W : windows) {
            if (W >= L || W > q.size(1)) continue;
            INFO("layer " << l << ", W " << W << ", L " << L << ", H " << H << ", Hkv " << Hkv << ", D " << q.size(2));
            const at::Tensor want_votes = cpu_votes(q, k, L, W);  // [H, P]
            const at::Tensor got_votes = gpu_votes(q, k, L, W);
            CHECK_TENSORS_CLOSE(got_votes, want_votes, 1e-6, votes_rtol);
            const int64_t P = L - W;
            const int64_t kk = std::min(keep, P);
            for (int64_t group : {int64_t{1}, G}) {
                INFO("group " << group);
                const at::Tensor want_pooled = cpu_pooled(want_votes, group, 7, snapkv::Pooling::Max);
                const at::Tensor want_pos = snapkv::top_k_positions(want_pooled, kk);
                const GpuSelection got = gpu_pool_topk(got_votes, group, 7, snapkv::Pooling::Max, kk,
                                                       snapkv::TieBreak::Later);
                CHECK_TENSORS_CLOSE(got.pooled, want_pooled, 1e-6, votes_rtol);
                CHECK_SELECTION(got.positions, want_pos, want_pooled, 10 * votes_rtol);
                if (group != 1) continue;
                // The gather of the kept K/V (query-head mode: each KV head repeated to its group)
                // against core's gather_cache on the same selection plus the window.
                snapkv::LayerKeep keep_heads(static_cast<size_t>(H));
                at::Tensor pos = got.positions.contiguous();
                for (int64_t h = 0; h < H; ++h) {
                    const int64_t* row = pos.data_ptr<int64_t>() + h * kk;
                    keep_heads[static_cast<size_t>(h)].assign(row, row + kk);
                    for (int64_t t = P; t < L; ++t) keep_heads[static_cast<size_t>(h)].push_back(t);
                }
                std::vector<snapkv::LayerKeep> keep_all(c.queries.size());
                keep_all[l] = keep_heads;
                const snapkv::KvCache want_cache = snapkv::gather_cache(c.cache, keep_all);
                const int64_t M = kk + W;
                at::Tensor index = at::empty({H, M}, at::kLong);
                for (int64_t h = 0; h < H; ++h)
                    std::copy(keep_heads[static_cast<size_t>(h)].begin(), keep_heads[static_cast<size_t>(h)].end(),
                              index.data_ptr<int64_t>() + h * M);
                auto dindex = upload(index);
                for (int which = 0; which < 2; ++which) {
                    const at::Tensor& src = which == 0 ? k : c.values[l];
                    kn::GatherShape gs;
                    gs.n_head_src = Hkv;
                    gs.n_slots = L;
                    gs.head_dim = src.size(2);
                    gs.repeat = G;
                    gs.n_keep = M;
                    auto dsrc = upload(src);
                    DeviceBuffer dst(static_cast<size_t>(H * M * src.size(2)) * src.element_size());
                    kn::gather_kv(gs, dtype_of(src.scalar_type()), dsrc->get(), dindex->get<int64_t>(), dst.get());
                    sync_ok();
                    const at::Tensor got_kv = download(dst.get(), {H, M, src.size(2)}, src.scalar_type());
                    const at::Tensor want_kv = which == 0 ? want_cache.layer(static_cast<int64_t>(l)).keys()
                                                          : want_cache.layer(static_cast<int64_t>(l)).values();
                    INFO((which == 0 ? "keys" : "values"));
                    CHECK(at::equal(got_kv, want_kv.contiguous()));
                }
            }
        }
    }
}

}  // namespace

// ---- argument checks (no GPU needed) -----------------------------------------------------------

TEST_CASE("kernel argument errors name the parameter, the value and what is allowed", "[gpu][kernels]") {
    float host[4] = {0, 0, 0, 0};
    kn::VotesShape s;
    s.n_head = 4;
    s.n_head_kv = 3;
    s.head_dim = 8;
    s.n_tokens = 10;
    s.window = 2;
    CHECK_THROWS_WITH(kn::window_votes(s, host, kn::DType::Float32, host, kn::DType::Float32, host),
                      Catch::Matchers::Contains("n_head 4 must be a positive multiple of n_head_kv 3"));
    s.n_head_kv = 2;
    s.head_dim = 300;
    CHECK_THROWS_WITH(kn::window_votes(s, host, kn::DType::Float32, host, kn::DType::Float32, host),
                      Catch::Matchers::Contains("head_dim 300 is out of range; allowed 1..256"));
    s.head_dim = 8;
    s.window = 10;
    CHECK_THROWS_WITH(kn::window_votes(s, host, kn::DType::Float32, host, kn::DType::Float32, host),
                      Catch::Matchers::Contains("window 10 must be at least 1 and less than n_tokens 10"));
    s.window = 2;
    CHECK_THROWS_WITH(kn::window_votes(s, host, kn::DType::Float16, host, kn::DType::BFloat16, host),
                      Catch::Matchers::Contains("queries float16 with keys bfloat16 is not supported"));
    // A host pointer never reaches a kernel (it would poison the CUDA context).
    CHECK_THROWS_AS(kn::window_votes(s, host, kn::DType::Float32, host, kn::DType::Float32, host), kn::KernelError);

    kn::PoolTopkShape p;
    p.n_rows = 6;
    p.n_prefix = 10;
    p.group = 4;
    CHECK_THROWS_WITH(kn::pool_topk(p, host, nullptr, nullptr),
                      Catch::Matchers::Contains("group 4 must be positive and divide n_rows 6"));
    p.group = 3;
    p.kernel = 4;
    CHECK_THROWS_WITH(kn::pool_topk(p, host, nullptr, nullptr), Catch::Matchers::Contains("kernel 4 must be odd"));
    p.kernel = 3;
    p.k = 11;
    CHECK_THROWS_WITH(kn::pool_topk(p, host, nullptr, nullptr),
                      Catch::Matchers::Contains("k 11 is out of range; allowed 0..10"));

    kn::GatherShape g;
    g.n_head_src = 2;
    g.n_slots = 5;
    g.src_rows = 4;
    g.head_dim = 8;
    g.n_keep = 3;
    CHECK_THROWS_WITH(kn::gather_kv(g, kn::DType::Float32, host, nullptr, host),
                      Catch::Matchers::Contains("src_rows 4 is less than n_slots 5"));
}

// ---- window votes --------------------------------------------------------------------------------

TEST_CASE("window votes equal LayerScorer's on random inputs for every shape class", "[gpu][kernels][votes]") {
    REQUIRE_GPU();
    INFO(kn::cuda_device_summary());
    // H, Hkv, Wmax, L, D: GQA and MHA, W below/at/above the 32/64/128-row tiles, W > 128 (query
    // chunks), D not a multiple of 32, D = 256 (the largest), one prefix token, many key splits.
    const auto shape = GENERATE(std::vector<int64_t>{4, 2, 40, 300, 64}, std::vector<int64_t>{9, 3, 128, 1000, 64},
                                std::vector<int64_t>{6, 6, 16, 17, 8}, std::vector<int64_t>{8, 4, 200, 1500, 80},
                                std::vector<int64_t>{2, 1, 70, 2000, 256}, std::vector<int64_t>{4, 2, 128, 32768, 128},
                                std::vector<int64_t>{2, 1, 32, 131072, 64});
    const int64_t H = shape[0], Hkv = shape[1], Wmax = shape[2], L = shape[3], D = shape[4];
    INFO("H " << H << ", Hkv " << Hkv << ", Wmax " << Wmax << ", L " << L << ", D " << D);
    const at::Tensor q = random_normal({H, Wmax, D}, 1, 1.5f);
    // Spare key rows past L hold NaN: the kernel must read the first L rows only.
    at::Tensor k = random_normal({Hkv, L + 37, D}, 2);
    k.narrow(1, L, 37).fill_(std::numeric_limits<float>::quiet_NaN());
    std::vector<int64_t> windows{1, Wmax / 2, Wmax};
    for (int64_t W : windows) {
        if (W < 1 || W >= L) continue;
        INFO("W " << W);
        CHECK_TENSORS_CLOSE(gpu_votes(q, k, L, W), cpu_votes(q, k, L, W), 1e-7, 2e-4);
    }
}

TEST_CASE("window votes of float16 and bfloat16 inputs equal the float32 reference on the same values",
          "[gpu][kernels][votes]") {
    REQUIRE_GPU();
    const int64_t H = 8, Hkv = 2, W = 64, L = 3000, D = 128;
    const auto type = GENERATE(at::kHalf, at::kBFloat16);
    const bool float_queries = GENERATE(true, false);
    INFO("keys " << c10::toString(type) << ", queries " << (float_queries ? "float32" : "the same"));
    const at::Tensor q = random_normal({H, W, D}, 3, 1.5f).to(float_queries ? at::kFloat : type);
    const at::Tensor k = random_normal({Hkv, L, D}, 4).to(type);
    CHECK_TENSORS_CLOSE(gpu_votes(q, k, L, W), cpu_votes(q, k, L, W), 1e-7, 2e-4);
}

// ---- pooling + top-k ------------------------------------------------------------------------------

TEST_CASE("pool_topk equals pool_scores and top_k_positions on exact inputs, ties included", "[gpu][kernels][topk]") {
    REQUIRE_GPU();
    const auto pooling = GENERATE(snapkv::Pooling::Max, snapkv::Pooling::Avg, snapkv::Pooling::None);
    const auto case_ = GENERATE(std::vector<int64_t>{8, 4000, 1, 7, 1000},  // N, P, G, K, k
                                std::vector<int64_t>{8, 4000, 4, 7, 1000}, std::vector<int64_t>{9, 777, 3, 15, 100},
                                std::vector<int64_t>{4, 5, 2, 5, 3},           // K = P
                                std::vector<int64_t>{3, 1, 1, 1, 1},           // P = 1
                                std::vector<int64_t>{2, 50, 1, 3, 0},          // k = 0
                                std::vector<int64_t>{2, 50, 2, 3, 50},         // k = P
                                std::vector<int64_t>{8, 131000, 4, 7, 3968});  // long rows
    const auto tie = GENERATE(snapkv::TieBreak::Earlier, snapkv::TieBreak::Later);
    const int64_t N = case_[0], P = case_[1], G = case_[2], K = case_[3], k = case_[4];
    INFO("pooling " << snapkv::pooling_name(pooling) << ", N " << N << ", P " << P << ", G " << G << ", K " << K
                    << ", k " << k << ", ties " << snapkv::tie_break_name(tie));
    const at::Tensor votes = quantised_votes(N, P, 5);
    const at::Tensor want_pooled = cpu_pooled(votes, G, K, pooling);
    const at::Tensor want_pos = snapkv::top_k_positions(want_pooled, k, tie);
    const GpuSelection got = gpu_pool_topk(votes, G, K, pooling, k, tie);
    if (pooling != snapkv::Pooling::Avg || G == 1) {
        // Max / none: exact values, sums of at most 4 multiples of 1/16 and one division; avg of a
        // single row: one exact window sum and one division. Bit-identical to the CPU.
        CHECK(at::equal(got.pooled, want_pooled));
        CHECK(at::equal(got.positions, want_pos));
    } else {
        // The group mean of rounded averages depends on the summation order of torch's mean.
        CHECK_TENSORS_CLOSE(got.pooled, want_pooled, 0.0, 1e-6);
        CHECK_SELECTION(got.positions, want_pos, want_pooled, 1e-6);
    }
    // Without the pooled output the workspace takes it; same selection.
    CHECK(at::equal(gpu_pool_topk(votes, G, K, pooling, k, tie, false).positions, want_pos));
}

TEST_CASE("pool_topk ranks NaN like -inf, -0 like +0, and breaks ties to the earlier or later position",
          "[gpu][kernels][topk]") {
    REQUIRE_GPU();
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> v{nan, -inf, -0.0f, 0.0f, 1.0f, nan, -1.0f, 1.0f, -inf, 0.0f, 2.0f, -0.0f};
    const at::Tensor votes = at::from_blob(v.data(), {1, int64_t(v.size())}, at::kFloat).clone();
    for (const auto tie : {snapkv::TieBreak::Earlier, snapkv::TieBreak::Later})
        for (int64_t k = 0; k <= votes.size(1); ++k) {
            INFO("k " << k << ", ties " << snapkv::tie_break_name(tie));
            std::vector<int64_t> want(static_cast<size_t>(k));
            snapkv::top_k_positions(v.data(), votes.size(1), k, tie, want.data());
            const GpuSelection got = gpu_pool_topk(votes, 1, 1, snapkv::Pooling::None, k, tie);
            const at::Tensor g = got.positions.contiguous();
            CHECK(std::vector<int64_t>(g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + k) == want);
        }
    // Hand-made: one tied run of 5 after max pooling, 3 of them needed.
    const std::vector<float> run{0, 1, 0, 0, 9, 0, 0, 0, 0, 1};  // max pool K 5: 9 at 2..6
    const at::Tensor rv = at::from_blob(const_cast<float*>(run.data()), {1, 10}, at::kFloat).clone();
    auto kept = [&](snapkv::TieBreak tie) {
        const at::Tensor g = gpu_pool_topk(rv, 1, 5, snapkv::Pooling::Max, 3, tie).positions.contiguous();
        return std::vector<int64_t>(g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + 3);
    };
    CHECK(kept(snapkv::TieBreak::Earlier) == std::vector<int64_t>{2, 3, 4});
    CHECK(kept(snapkv::TieBreak::Later) == std::vector<int64_t>{4, 5, 6});
}

TEST_CASE("pool_topk on continuous scores agrees up to near-ties", "[gpu][kernels][topk]") {
    REQUIRE_GPU();
    const auto pooling = GENERATE(snapkv::Pooling::Max, snapkv::Pooling::Avg);
    const int64_t G = GENERATE(1, 4);
    const at::Tensor votes = at::rand({16, 20000}, at::kFloat).pow(4);  // skewed, like votes
    const at::Tensor want_pooled = cpu_pooled(votes, G, 9, pooling);
    const at::Tensor want_pos = snapkv::top_k_positions(want_pooled, 2000);
    const GpuSelection got = gpu_pool_topk(votes, G, 9, pooling, 2000, snapkv::TieBreak::Later);
    CHECK_TENSORS_CLOSE(got.pooled, want_pooled, 0.0, 1e-6);
    CHECK_SELECTION(got.positions, want_pos, want_pooled, 1e-6);
}

// ---- gather ----------------------------------------------------------------------------------------

TEST_CASE("gather_kv copies kept rows, repeats heads to their group and zero-fills padding", "[gpu][kernels][gather]") {
    REQUIRE_GPU();
    const auto type = GENERATE(at::kFloat, at::kHalf, at::kBFloat16);
    const int64_t D = GENERATE(3, 5, 8, 64, 128);  // row sizes hitting 2/4/8/16-byte units
    const int64_t repeat = GENERATE(1, 3);
    const int64_t Hsrc = 2, S = 50, src_rows = 57, M = 20, dst_rows = 25, Hdst = Hsrc * repeat;
    INFO(c10::toString(type) << ", D " << D << ", repeat " << repeat);
    const at::Tensor src = random_normal({Hsrc, src_rows, D}, 6).to(type);
    at::Tensor index = at::randint(0, S, {Hdst, M}, at::kLong);
    index[0][3] = -1;        // padding
    index[Hdst - 1][7] = S;  // past the valid slots (inside the buffer): padding too
    kn::GatherShape gs;
    gs.n_head_src = Hsrc;
    gs.n_slots = S;
    gs.src_rows = src_rows;
    gs.head_dim = D;
    gs.repeat = repeat;
    gs.n_keep = M;
    gs.dst_rows = dst_rows;
    auto dsrc = upload(src);
    auto dindex = upload(index);
    DeviceBuffer dst(static_cast<size_t>(Hdst * dst_rows * D) * src.element_size());
    cuda_ok(cudaMemset(dst.get(), 0xff, dst.bytes()), "cudaMemset");
    kn::gather_kv(gs, dtype_of(type), dsrc->get(), dindex->get<int64_t>(), dst.get());
    sync_ok();
    const at::Tensor got = download(dst.get(), {Hdst, dst_rows, D}, type);
    at::Tensor want = at::zeros({Hdst, M, D}, type);
    for (int64_t h = 0; h < Hdst; ++h)
        for (int64_t m = 0; m < M; ++m) {
            const int64_t slot = index[h][m].item<int64_t>();
            if (slot >= 0 && slot < S) want[h][m].copy_(src[h / repeat][slot]);
        }
    CHECK(at::equal(got.narrow(1, 0, M), want));
    // Rows past M are untouched (room for decode appends).
    const at::Tensor tail = got.narrow(1, M, dst_rows - M).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(tail.data_ptr());
    CHECK(std::all_of(bytes, bytes + tail.numel() * tail.element_size(), [](unsigned char b) { return b == 0xff; }));
}

// ---- real captures -----------------------------------------------------------------------------------

TEST_CASE("the GPU path reproduces the CPU path on a stories260K capture, every layer", "[gpu][kernels][model]") {
    REQUIRE_GPU();
    const Captured c = capture_prompt(snapkv::test::data_path("stories260K.gguf"), 400, 64);
    REQUIRE(c.n_tokens > 200);
    check_capture(c, {8, 32, 64}, 64, 5e-4);
}

TEST_CASE("the GPU path reproduces the CPU path on a SmolLM2 capture, every layer", "[gpu][kernels][model][smollm2]") {
    REQUIRE_GPU();
    const std::string path = snapkv::test::smollm2_path();
    if (!snapkv::test::file_exists(path))
        FAIL("SmolLM2 not found at " << path << "; set SNAPKV_SMOLLM2 or exclude [smollm2]");
    const Captured c = capture_prompt(path, 2048, 128);
    REQUIRE(c.n_tokens > 1024);
    check_capture(c, {32, 128}, 512, 1e-3);
    // Keys in float16 / bfloat16, as a half-precision cache holds them: the reference sees the
    // same rounded values.
    for (auto type : {at::kHalf, at::kBFloat16}) {
        INFO("keys " << c10::toString(type));
        const at::Tensor k = c.keys[5].to(type);
        CHECK_TENSORS_CLOSE(gpu_votes(c.queries[5], k, c.n_tokens, 64), cpu_votes(c.queries[5], k, c.n_tokens, 64),
                            1e-6, 1e-3);
    }
}
