// snapkv_kernel_bench: the fused kernels (window_votes -> pool_topk -> gather_kv for K and V)
// against the same steps in LibTorch ops on the GPU (bmm, mask, softmax, sum, max_pool1d, topk,
// sort, gather), at L = 4K..128K and W = 32/64/128, for two model shapes. Prints a table and
// writes JSON. Timings are CUDA-event medians on the default stream (LibTorch's too). Without a
// CUDA LibTorch the LibTorch column is left out and says why; without a GPU it exits 2.
// It times; correctness is test_gpu's job.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, D = head_dim, L = prompt tokens,
// W = window, P = L - W, C = budget (window included), k = C - W.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "kernels/snapkv_kernels.h"

namespace kn = snapkv::kernels;
using json = nlohmann::json;

namespace {

void ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "snapkv_kernel_bench: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

struct Shape {
    std::string name;
    int64_t H, Hkv, D;
};

// Median milliseconds of `reps` runs of f after `warm` warm-ups, timed with events on stream 0.
double time_ms(const std::function<void()>& f, int warm, int reps) {
    for (int i = 0; i < warm; ++i) f();
    ok(cudaDeviceSynchronize(), "warm-up");
    cudaEvent_t a, b;
    ok(cudaEventCreate(&a), "event");
    ok(cudaEventCreate(&b), "event");
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        ok(cudaEventRecord(a, nullptr), "record");
        f();
        ok(cudaEventRecord(b, nullptr), "record");
        ok(cudaEventSynchronize(b), "sync");
        float t = 0;
        ok(cudaEventElapsedTime(&t, a, b), "elapsed");
        ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

struct Buffers {
    void* q = nullptr;         // [H, W, D]
    void* k = nullptr;         // [Hkv, L, D]
    void* v = nullptr;         // [Hkv, L, D]
    float* votes = nullptr;    // [H, P]
    float* pooled = nullptr;   // [H, P]
    int64_t* pos = nullptr;    // [H, C]
    int64_t* index = nullptr;  // [H, C] kept prefix positions + window
    void* k_out = nullptr;     // [H, C, D]
    void* v_out = nullptr;
    void* work = nullptr;
    size_t work_bytes = 0;
    ~Buffers() {
        for (void* p : {q, k, v, static_cast<void*>(votes), static_cast<void*>(pooled), static_cast<void*>(pos),
                        static_cast<void*>(index), k_out, v_out, work})
            cudaFree(p);
    }
};

at::ScalarType torch_type(kn::DType t) {
    return t == kn::DType::Float16 ? at::kHalf : t == kn::DType::BFloat16 ? at::kBFloat16 : at::kFloat;
}

}  // namespace

int main(int argc, char** argv) {
    std::string out_json;
    std::string dtype_name = "float32";
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json" && i + 1 < argc) out_json = argv[++i];
        else if (a == "--dtype" && i + 1 < argc) dtype_name = argv[++i];
        else if (a == "--quick") quick = true;
        else {
            std::fprintf(stderr,
                         "usage: snapkv_kernel_bench [--json FILE] [--dtype float32|float16|bfloat16] [--quick]\n");
            return 2;
        }
    }
    const kn::DType kv_type = dtype_name == "float16"    ? kn::DType::Float16
                              : dtype_name == "bfloat16" ? kn::DType::BFloat16
                                                         : kn::DType::Float32;
    std::string why;
    if (kn::cuda_device_count(&why) == 0) {
        std::fprintf(stderr, "snapkv_kernel_bench: no CUDA device: %s\n", why.c_str());
        return 2;
    }
    c10::InferenceMode guard;
    const bool torch_cuda = at::hasCUDA();
    const std::string torch_note = torch_cuda ? "" : "this LibTorch has no CUDA: LibTorch-ops timings left out";
    std::printf("device   %s\nkv dtype %s (queries float32)\n%s\n", kn::cuda_device_summary().c_str(),
                dtype_name.c_str(), torch_note.c_str());

    const std::vector<Shape> shapes = {{"llama3-8b", 32, 8, 128}, {"smollm2-135m", 9, 3, 64}};
    const std::vector<int64_t> lengths = quick ? std::vector<int64_t>{4096, 16384}
                                               : std::vector<int64_t>{4096, 16384, 65536, 131072};
    const std::vector<int64_t> windows = {32, 64, 128};
    const int64_t budget = 2048, kernel = 7;
    const int warm = 2, reps = quick ? 3 : 7;
    const size_t esize = kv_type == kn::DType::Float32 ? 4 : 2;

    json rows = json::array();
    std::printf("\n%-13s %7s %4s %10s %10s %7s %10s %10s %7s %12s %12s\n", "shape", "L", "W", "votes ms", "torch ms",
                "ratio", "all ms", "torch ms", "ratio", "fused MB", "torch MB");
    for (const Shape& sh : shapes) {
        const int64_t H = sh.H, Hkv = sh.Hkv, D = sh.D, G = H / Hkv;
        for (int64_t L : lengths) {
            for (int64_t W : windows) {
                const int64_t P = L - W, k = budget - W, C = budget;
                Buffers b;
                ok(cudaMalloc(&b.q, H * W * D * 4), "malloc q");
                ok(cudaMalloc(&b.k, Hkv * L * D * esize), "malloc k");
                ok(cudaMalloc(&b.v, Hkv * L * D * esize), "malloc v");
                ok(cudaMalloc(&b.votes, H * P * 4), "malloc votes");
                ok(cudaMalloc(&b.pooled, H * P * 4), "malloc pooled");
                ok(cudaMalloc(&b.pos, H * C * 8), "malloc pos");
                ok(cudaMalloc(&b.index, H * C * 8), "malloc index");
                ok(cudaMalloc(&b.k_out, H * C * D * esize), "malloc k_out");
                ok(cudaMalloc(&b.v_out, H * C * D * esize), "malloc v_out");
                kn::VotesShape vs{H, Hkv, D, L, W, 0, 0};
                b.work_bytes = kn::window_votes_workspace_bytes(vs);
                ok(cudaMalloc(&b.work, b.work_bytes), "malloc workspace");
                // Random inputs through LibTorch when it can reach the GPU, else a fixed pattern.
                if (torch_cuda) {
                    auto opts = at::TensorOptions().device(at::kCUDA);
                    at::from_blob(b.q, {H, W, D}, opts.dtype(at::kFloat)).normal_(0.0, 1.5);
                    at::from_blob(b.k, {Hkv, L, D}, opts.dtype(torch_type(kv_type))).normal_();
                    at::from_blob(b.v, {Hkv, L, D}, opts.dtype(torch_type(kv_type))).normal_();
                } else {
                    ok(cudaMemset(b.q, 0x3c, H * W * D * 4), "memset");
                    ok(cudaMemset(b.k, 0x3c, Hkv * L * D * esize), "memset");
                    ok(cudaMemset(b.v, 0x3c, Hkv * L * D * esize), "memset");
                }
                kn::PoolTopkShape ps{H, P, 1, kernel, kn::PoolKind::Max, k};
                kn::GatherShape gs{Hkv, L, 0, D, G, C, 0};
                // Index for the gather: the selection's positions then the window (built once;
                // the copy is part of the fused step below).
                auto fused_votes = [&] {
                    kn::window_votes(vs, b.q, kn::DType::Float32, b.k, kv_type, b.votes, b.work, b.work_bytes);
                };
                auto fused_all = [&] {
                    fused_votes();
                    kn::pool_topk(ps, b.votes, b.pos, b.pooled);
                    ok(cudaMemcpy2DAsync(b.index, C * 8, b.pos, k * 8, k * 8, H, cudaMemcpyDeviceToDevice, nullptr),
                       "index copy");
                    kn::gather_kv(gs, kv_type, b.k, b.index, b.k_out);
                    kn::gather_kv(gs, kv_type, b.v, b.index, b.v_out);
                };
                // The window slots of the index (positions P..L-1), written once.
                {
                    std::vector<int64_t> idx(static_cast<size_t>(H * C));
                    for (int64_t h = 0; h < H; ++h)
                        for (int64_t i = 0; i < W; ++i) idx[static_cast<size_t>(h * C + k + i)] = P + i;
                    ok(cudaMemcpy(b.index, idx.data(), idx.size() * 8, cudaMemcpyHostToDevice), "index");
                }
                const double votes_ms = time_ms(fused_votes, warm, reps);
                const double all_ms = time_ms(fused_all, warm, reps);
                ok(cudaGetLastError(), "fused path");
                const double fused_mb = (b.work_bytes + 2.0 * H * P * 4) / 1e6;  // workspace, votes, pooled

                json row = {{"shape", sh.name},
                            {"n_head", H},
                            {"n_head_kv", Hkv},
                            {"head_dim", D},
                            {"n_tokens", L},
                            {"window", W},
                            {"budget", C},
                            {"kernel", kernel},
                            {"kv_dtype", dtype_name},
                            {"fused_votes_ms", votes_ms},
                            {"fused_all_ms", all_ms},
                            {"fused_intermediate_mb", fused_mb}};
                double torch_votes_ms = NAN, torch_all_ms = NAN, torch_mb = NAN;
                if (torch_cuda) {
                    auto opts = at::TensorOptions().device(at::kCUDA);
                    at::Tensor q = at::from_blob(b.q, {H, W, D}, opts.dtype(at::kFloat));
                    at::Tensor kt = at::from_blob(b.k, {Hkv, L, D}, opts.dtype(torch_type(kv_type)));
                    at::Tensor vt = at::from_blob(b.v, {Hkv, L, D}, opts.dtype(torch_type(kv_type)));
                    at::Tensor hidden = at::ones({W, W}, opts.dtype(at::kBool)).triu(1);
                    at::Tensor votes;
                    auto torch_votes = [&] {  // LayerScorer's ops for one window
                        at::Tensor s =
                            at::bmm(q.view({Hkv, G * W, D}), kt.to(at::kFloat).transpose(1, 2)).view({H, W, L});
                        s.div_(std::sqrt(static_cast<double>(D)));
                        s.narrow(2, L - W, W).masked_fill_(hidden, -std::numeric_limits<float>::infinity());
                        votes = at::softmax(s, -1).narrow(2, 0, P).sum(1);  // [H, P]
                    };
                    auto torch_all = [&] {
                        torch_votes();
                        at::Tensor pooled = at::max_pool1d(votes.unsqueeze(1), {kernel}, {1}, {kernel / 2}).squeeze(1);
                        at::Tensor idx = std::get<0>(std::get<1>(pooled.topk(k, -1)).sort(-1));  // [H, k]
                        at::Tensor window = at::arange(P, L, opts.dtype(at::kLong)).expand({H, W});
                        at::Tensor index = at::cat({idx, window}, 1).unsqueeze(2).expand({H, C, D});
                        at::Tensor k_kept = kt.repeat_interleave(G, 0).gather(1, index);  // [H, C, D]
                        at::Tensor v_kept = vt.repeat_interleave(G, 0).gather(1, index);
                        (void)k_kept;
                        (void)v_kept;
                    };
                    torch_votes_ms = time_ms(torch_votes, warm, reps);
                    torch_all_ms = time_ms(torch_all, warm, reps);
                    // Scores and softmax [H, W, L] float32 (plus a float32 copy of the keys when
                    // they are 16-bit), the dominant intermediates of the ops path.
                    torch_mb = (2.0 * H * W * L * 4 + (esize == 2 ? Hkv * L * D * 4.0 : 0.0)) / 1e6;
                    row["torch_votes_ms"] = torch_votes_ms;
                    row["torch_all_ms"] = torch_all_ms;
                    row["torch_intermediate_mb"] = torch_mb;
                    row["votes_speedup"] = torch_votes_ms / votes_ms;
                    row["all_speedup"] = torch_all_ms / all_ms;
                } else {
                    row["torch_note"] = torch_note;
                }
                rows.push_back(row);
                std::printf("%-13s %7lld %4lld %10.3f %10.3f %7.2f %10.3f %10.3f %7.2f %12.1f %12.1f\n",
                            sh.name.c_str(), static_cast<long long>(L), static_cast<long long>(W), votes_ms,
                            torch_votes_ms, torch_votes_ms / votes_ms, all_ms, torch_all_ms, torch_all_ms / all_ms,
                            fused_mb, torch_mb);
                std::fflush(stdout);
            }
        }
    }
    ok(cudaDeviceSynchronize(), "final sync");
    if (!out_json.empty()) {
        json j = {{"device", kn::cuda_device_summary()},
                  {"kv_dtype", dtype_name},
                  {"torch_cuda", torch_cuda},
                  {"rows", rows}};
        std::ofstream(out_json) << j.dump(2) << "\n";
    }
    return 0;
}
