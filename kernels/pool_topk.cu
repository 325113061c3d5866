// pool_topk: SnapKV's clustering and selection in one launch, one block per selected row:
//   1. pool each of the G vote rows of the group (max / avg / none, stride 1, padding K / 2) and
//      average them -> the pooled row (kept in `pooled` or the workspace; it stays in L2)
//   2. radix select on the order-preserving 32-bit keys of the pooled scores, 8 bits per pass from
//      the top, to find the k-th best key T, how many entries equal to T there are and how many of
//      them are still needed
//   3. one pass in position order: keep every key > T and the needed keys == T (the first ones for
//      TieOrder::Earlier, the last ones for Later), written compacted -> positions are sorted by
//      construction
// The CPU reference is selector.h pool_scores / top_k_positions (std::nth_element under the same
// total order). Rows are independent; nothing is sorted and nothing is sent back to the host.
//
// Dimensions: N = vote rows, G = rows per group, R = N / G selected rows, P = prefix length,
// K = pooling kernel, k = positions kept per row.
#include <algorithm>

#include "kernels/cuda_util.cuh"

namespace snapkv::kernels {
namespace {

using namespace detail;

constexpr int kThreads = 512;  // 1024 would cap registers at 64 and spill
constexpr int kWarps = kThreads / 32;
constexpr int kBins = 256;

// Order-preserving map of a score to 32 bits (larger score, larger key). NaN ranks like -inf, as
// ranking.cpp's rank_key does, and -0 equals +0 (their float comparison says so).
__device__ __forceinline__ uint32_t rank_bits(float v) {
    if (isnan(v)) v = -INFINITY;
    const uint32_t u = v == 0.0f ? 0u : __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Exclusive prefix sum over the block (every thread must call it); *total gets the block's sum.
__device__ __forceinline__ int block_exclusive_sum(int v, int* warp_sums, int* total) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    int x = v;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int s = lane < kWarps ? warp_sums[lane] : 0;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, s, off);
            if (lane >= off) s += y;
        }
        if (lane < kWarps) warp_sums[lane] = s;  // inclusive over warps
    }
    __syncthreads();
    const int before = warp > 0 ? warp_sums[warp - 1] : 0;
    *total = warp_sums[kWarps - 1];
    __syncthreads();  // warp_sums may be reused by the next call
    return before + x - v;
}

struct Params {
    const float* votes;  // [N, P]
    int64_t n_prefix;    // P
    int64_t group;       // G
    int64_t kernel;      // K
    PoolKind pooling;
    int64_t k;
    bool ties_later;     // keep the last needed ties instead of the first
    float* pooled;       // [R, P]
    int64_t* positions;  // [R, k]
};

__global__ void __launch_bounds__(kThreads) pool_topk_kernel(Params p) {
    __shared__ unsigned int hist[kBins + 1];  // the extra bin takes the lanes that do not count
    __shared__ int warp_sums[kWarps];
    __shared__ unsigned int s_digit;
    __shared__ long long s_need;
    __shared__ long long s_equal;  // entries matching the prefix and this pass's digit

    const int64_t r = blockIdx.x;
    const int64_t P = p.n_prefix;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    float* row = p.pooled + r * P;

    // 1. Pooling, summed over the group in head order, then divided by G (torch's mean on the CPU:
    //    sum, then div). Window sums run left to right and divide by K, as ATen's avg_pool does.
    const int64_t half = p.kernel / 2;
    for (int64_t t = tid; t < P; t += kThreads) {
        const int64_t lo = t > half ? t - half : 0;  // window clipped to [0, P)
        const int64_t hi = t + half < P - 1 ? t + half : P - 1;
        float acc = 0.0f;
        for (int64_t g = 0; g < p.group; ++g) {
            const float* v = p.votes + (r * p.group + g) * P;
            float x;
            if (p.pooling == PoolKind::Max) {
                x = -INFINITY;  // padding never wins
                for (int64_t q = lo; q <= hi; ++q) {
                    const float y = v[q];
                    if (y > x || isnan(y)) x = y;  // F.max_pool1d propagates NaN
                }
            } else if (p.pooling == PoolKind::Avg) {
                float s = 0.0f;  // zero padding adds nothing but is counted in K
                for (int64_t q = lo; q <= hi; ++q) s += v[q];
                x = s / static_cast<float>(p.kernel);
            } else {
                x = v[t];
            }
            acc = g == 0 ? x : acc + x;
        }
        row[t] = p.group == 1 ? acc : acc / static_cast<float>(p.group);
    }
    __syncthreads();  // the block's global writes are visible to the block after the barrier
    if (p.k == 0) return;
    int64_t* out = p.positions + r * p.k;
    if (p.k >= P) {
        for (int64_t t = tid; t < P; t += kThreads) out[t] = t;
        return;
    }

    // 2. Radix select of the k-th largest key, most significant byte first.
    uint32_t prefix = 0, mask = 0;
    long long need = p.k;  // entries still to take among those matching prefix
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = tid; i <= kBins; i += kThreads) hist[i] = 0;
        __syncthreads();
        for (int64_t base = 0; base < P; base += kThreads) {
            const int64_t t = base + tid;
            unsigned int bin = kBins;
            if (t < P) {
                const uint32_t u = rank_bits(row[t]);
                if ((u & mask) == prefix) bin = (u >> shift) & 0xffu;
            }
            // Lanes with the same bin add once (scores cluster in few bins at the top byte).
            const unsigned int peers = __match_any_sync(0xffffffffu, bin);
            if (bin != kBins && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], __popc(peers));
        }
        __syncthreads();
        if (tid == 0) {
            long long above = 0;
            int d = kBins - 1;
            for (; d > 0; --d) {
                if (above + hist[d] >= need) break;
                above += hist[d];
            }
            s_digit = static_cast<unsigned int>(d);
            s_need = need - above;
            s_equal = hist[d];
        }
        __syncthreads();
        prefix |= s_digit << shift;
        mask |= 0xffu << shift;
        need = s_need;
        __syncthreads();  // s_digit / s_need / hist are rewritten by the next pass
    }
    // The k-th largest key; `need` of the `n_equal` entries equal to it are kept (after the last
    // pass the entries matching the whole prefix are exactly those equal to kth).
    const uint32_t kth = prefix;
    const long long n_equal = s_equal;
    // Ties taken are those whose rank among the ties (in position order) is in [first_tie,
    // first_tie + need): the first `need` ones, or the last.
    const long long first_tie = p.ties_later ? n_equal - need : 0;

    // 3. Compaction in position order.
    long long written = 0, ties_seen = 0;
    for (int64_t base = 0; base < P && written < p.k; base += kThreads) {
        const int64_t t = base + tid;
        const uint32_t u = t < P ? rank_bits(row[t]) : 0u;
        const bool above = t < P && u > kth;
        const bool tie = t < P && u == kth;
        int n_ties = 0;
        const int tie_rank = block_exclusive_sum(tie ? 1 : 0, warp_sums, &n_ties);
        const long long rank = ties_seen + tie_rank;
        const bool take = above || (tie && rank >= first_tie && rank < first_tie + need);
        int n_take = 0;
        const int slot = block_exclusive_sum(take ? 1 : 0, warp_sums, &n_take);
        if (take) out[written + slot] = t;
        ties_seen += n_ties;
        written += n_take;
    }
}

void check_shape(const PoolTopkShape& s) {
    const char* fn = "pool_topk";
    if (s.n_rows < 1 || s.n_prefix < 1)
        throw_arg(fn, "votes are [" + std::to_string(s.n_rows) + ", " + std::to_string(s.n_prefix) +
                          "]; both sizes must be at least 1");
    if (s.group < 1 || s.n_rows % s.group != 0)
        throw_arg(
            fn, "group " + std::to_string(s.group) + " must be positive and divide n_rows " + std::to_string(s.n_rows));
    if (s.n_rows / s.group > 2147483647LL)
        throw_arg(fn, "too many selected rows: " + std::to_string(s.n_rows / s.group));
    if (s.pooling != PoolKind::None && (s.kernel < 1 || s.kernel % 2 == 0 || s.kernel > s.n_prefix))
        throw_arg(fn, "kernel " + std::to_string(s.kernel) + " must be odd, at least 1 and at most n_prefix " +
                          std::to_string(s.n_prefix));
    if (s.k < 0 || s.k > s.n_prefix)
        throw_arg(fn, "k " + std::to_string(s.k) + " is out of range; allowed 0.." + std::to_string(s.n_prefix));
}

}  // namespace

size_t pool_topk_workspace_bytes(const PoolTopkShape& shape) {
    check_shape(shape);
    return align_up(static_cast<size_t>(shape.n_rows / shape.group * shape.n_prefix) * sizeof(float));
}

void pool_topk(const PoolTopkShape& shape, const float* votes, int64_t* positions, float* pooled, void* workspace,
               size_t workspace_bytes, void* stream) {
    const char* fn = "pool_topk";
    check_shape(shape);
    require_device_pointer(votes, fn, "votes");
    if (shape.k > 0) require_device_pointer(positions, fn, "positions");
    if (pooled) require_device_pointer(pooled, fn, "pooled");
    if (workspace) require_device_pointer(workspace, fn, "workspace");
    const cudaStream_t st = as_stream(stream);
    const size_t need = pooled ? 0 : pool_topk_workspace_bytes(shape);
    Scratch scratch(workspace, workspace_bytes, need, st, fn);

    Params p{};
    p.votes = votes;
    p.n_prefix = shape.n_prefix;
    p.group = shape.group;
    p.kernel = shape.pooling == PoolKind::None ? 1 : shape.kernel;
    p.pooling = shape.pooling;
    p.k = shape.k;
    p.ties_later = shape.ties == TieOrder::Later;
    p.pooled = pooled ? pooled : reinterpret_cast<float*>(scratch.data());
    p.positions = positions;
    const auto rows = static_cast<unsigned int>(shape.n_rows / shape.group);
    pool_topk_kernel<<<rows, kThreads, 0, st>>>(p);
    check_launch("pool_topk: launch");
}

}  // namespace snapkv::kernels
