// window_votes: the SnapKV votes of one layer in two passes over the keys, never writing the
// [H, W, L] attention matrix (LayerScorer::votes is the reference; it keeps that matrix on purpose
// for retunes, this kernel is the one-shot GPU path).
//   pass 1  blocks (split, head): scores of the window queries against a contiguous run of key
//           tiles, online row maximum and sum of exponentials per query -> [H, W, splits]
//   combine one thread per (head, query): merge the splits -> [H, W] (max, 1 / sum)
//   pass 2  blocks (tile run, head) over the prefix keys only: the same scores again, softmax
//           probabilities summed over the window queries -> votes [H, P]
// A row's softmax needs its full normaliser before any probability is final, and the votes are a
// sum over rows of normalised probabilities, hence two passes (FlashAttention's single pass works
// because its output is a normalised weighted sum that can be rescaled at the end; this one is not).
// Scores are float32 on CUDA cores: products of float16/bfloat16 inputs are exact in float32, so the
// result equals the float32 reference on the same (converted) inputs up to summation order.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, D = head_dim, Dp = D rounded up to kBk,
// L = prompt tokens, W = window, P = L - W, BM = query rows per block (16 * TM), BN = keys per tile.
#include <algorithm>
#include <cmath>

#include "kernels/cuda_util.cuh"

namespace snapkv::kernels {
namespace {

using namespace detail;

constexpr int kThreads = 256;    // 16 x 16: ty picks query rows, tx picks keys
constexpr int kTn = 8;           // keys per thread
constexpr int kBn = 16 * kTn;    // keys per tile
constexpr int kBk = 32;          // head_dim slice per shared-memory step
constexpr int kMaxSplits = 128;  // key splits of pass 1 (bounds the workspace)
constexpr int kMaxHeadDim = 256;
constexpr int kBlocksPerSm = 4;  // grid sizing target: about two waves of two resident blocks
// Both passes are bounded to two resident blocks per SM (128 registers a thread): unbounded, pass 1
// with TM = 8 takes 230 registers and one block per SM; bounded it spills under 100 bytes, in the
// per-tile epilogue, outside the dot-product loop.

struct Params {
    const void* queries;  // [H, q_rows, D]
    const void* keys;     // [Hkv, k_rows, D]
    int64_t group;        // G
    int64_t head_dim;     // D
    int64_t dim_pad;      // Dp
    int64_t n_tokens;     // L
    int64_t window;       // W
    int64_t q_rows;
    int64_t k_rows;
    float sqrt_d;         // sqrt(D): scores are divided by it, as the reference does
    int n_split;          // pass 1 key splits
    int tiles_per_split;  // pass 1 key tiles per split
    int tiles_per_block;  // pass 2 prefix tiles per block
    float2* partial;      // [H, W, n_split] (row max, sum of exp(score - max))
    float2* stats;        // [H, W] (row max, 1 / sum)
    float* votes;         // [H, P]
};

constexpr float kNegInf = -INFINITY;

// (m, l) <- the merge of two partial softmax normalisers, each sum taken relative to its max.
__device__ __forceinline__ void merge_stats(float& m, float& l, float m2, float l2) {
    if (m2 == kNegInf) return;
    if (m == kNegInf) {
        m = m2;
        l = l2;
        return;
    }
    const float mn = fmaxf(m, m2);
    l = l * expf(m - mn) + l2 * expf(m2 - mn);
    m = mn;
}

// Query rows [c0, c0 + BM) of head h's window, converted to float, transposed into
// Qs[Dp][BM + 1] (the +1 keeps the transposing stores free of bank conflicts). Rows past W and
// dimensions past D are zero.
template <class TQ, int BM>
__device__ void load_queries(float* Qs, const Params& p, int64_t h, int64_t c0) {
    const TQ* q = static_cast<const TQ*>(p.queries) + (h * p.q_rows + (p.q_rows - p.window)) * p.head_dim;
    const int dp = static_cast<int>(p.dim_pad);
    for (int idx = threadIdx.x; idx < BM * dp; idx += kThreads) {
        const int m = idx / dp;
        const int d = idx - m * dp;
        const int64_t i = c0 + m;
        Qs[d * (BM + 1) + m] = (i < p.window && d < p.head_dim) ? to_float(q[i * p.head_dim + d]) : 0.0f;
    }
}

// Keys [key0, key0 + BN) of KV head kvh, dimensions [d0, d0 + kBk), into Ks[kBk][BN + 1].
template <class TK>
__device__ void load_keys(float* Ks, const Params& p, int64_t kvh, int64_t key0, int d0) {
    const TK* k = static_cast<const TK*>(p.keys) + kvh * p.k_rows * p.head_dim;
    for (int idx = threadIdx.x; idx < kBn * kBk; idx += kThreads) {
        const int n = idx / kBk;
        const int kk = idx - n * kBk;
        const int64_t j = key0 + n;
        const int d = d0 + kk;
        Ks[kk * (kBn + 1) + n] = (j < p.n_tokens && d < p.head_dim) ? to_float(k[j * p.head_dim + d]) : 0.0f;
    }
}

// acc[a][b] = q(row ty + 16a) . k(key key0 + tx + 16b) over all D, for the queries already in Qs.
// Starts with a barrier, so the caller may have just written Qs or still be reading Ks.
template <class TK, int TM>
__device__ void tile_dots(float (&acc)[TM][kTn], const float* Qs, float* Ks, const Params& p, int64_t kvh, int64_t key0,
                          int tx, int ty) {
    constexpr int BM = 16 * TM;
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
        for (int b = 0; b < kTn; ++b) acc[a][b] = 0.0f;
    for (int d0 = 0; d0 < p.dim_pad; d0 += kBk) {
        __syncthreads();
        load_keys<TK>(Ks, p, kvh, key0, d0);
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < kBk; ++kk) {
            float qa[TM], kb[kTn];
#pragma unroll
            for (int a = 0; a < TM; ++a) qa[a] = Qs[(d0 + kk) * (BM + 1) + ty + 16 * a];
#pragma unroll
            for (int b = 0; b < kTn; ++b) kb[b] = Ks[kk * (kBn + 1) + tx + 16 * b];
#pragma unroll
            for (int a = 0; a < TM; ++a)
#pragma unroll
                for (int b = 0; b < kTn; ++b) acc[a][b] = fmaf(qa[a], kb[b], acc[a][b]);
        }
    }
}

// Pass 1: per window query, max and sum of exponentials of its visible scores over this split's
// keys. Grid (n_split, H).
template <class TQ, class TK, int TM>
__global__ void __launch_bounds__(kThreads, 2) row_stats_kernel(Params p) {
    constexpr int BM = 16 * TM;
    extern __shared__ float smem[];
    float* Qs = smem;                         // [Dp][BM + 1]
    float* Ks = smem + p.dim_pad * (BM + 1);  // [kBk][BN + 1]
    const int tx = threadIdx.x & 15;
    const int ty = threadIdx.x >> 4;
    const int split = blockIdx.x;
    const int64_t h = blockIdx.y;
    const int64_t kvh = h / p.group;
    const int64_t L = p.n_tokens, W = p.window;
    const int64_t n_tiles = (L + kBn - 1) / kBn;
    const int64_t t_begin = static_cast<int64_t>(split) * p.tiles_per_split;
    const int64_t t_end = min(n_tiles, t_begin + p.tiles_per_split);

    for (int64_t c0 = 0; c0 < W; c0 += BM) {
        __syncthreads();  // the previous chunk's readers of Qs are done
        load_queries<TQ, BM>(Qs, p, h, c0);
        float m[TM], l[TM];
#pragma unroll
        for (int a = 0; a < TM; ++a) {
            m[a] = kNegInf;
            l[a] = 0.0f;
        }
        for (int64_t t = t_begin; t < t_end; ++t) {
            const int64_t key0 = t * kBn;
            float acc[TM][kTn];
            tile_dots<TK, TM>(acc, Qs, Ks, p, kvh, key0, tx, ty);
#pragma unroll
            for (int a = 0; a < TM; ++a) {
                const int64_t i = c0 + ty + 16 * a;
                // Window query i sits at position L - W + i and sees keys <= L - W + i.
                const int64_t last = i < W ? L - W + i : -1;
                float s[kTn];
                float tmax = kNegInf;
#pragma unroll
                for (int b = 0; b < kTn; ++b) {
                    const int64_t j = key0 + tx + 16 * b;
                    s[b] = j <= last ? acc[a][b] / p.sqrt_d : kNegInf;
                    tmax = fmaxf(tmax, s[b]);
                }
                if (tmax == kNegInf) continue;
                const float mn = fmaxf(m[a], tmax);
                float sum = 0.0f;
#pragma unroll
                for (int b = 0; b < kTn; ++b) sum += expf(s[b] - mn);
                l[a] = (m[a] == kNegInf ? 0.0f : l[a] * expf(m[a] - mn)) + sum;
                m[a] = mn;
            }
        }
        // The 16 threads of a query row (same ty) are 16 consecutive lanes of one warp.
#pragma unroll
        for (int a = 0; a < TM; ++a) {
#pragma unroll
            for (int off = 8; off > 0; off >>= 1) {
                const float m2 = __shfl_xor_sync(0xffffffffu, m[a], off);
                const float l2 = __shfl_xor_sync(0xffffffffu, l[a], off);
                merge_stats(m[a], l[a], m2, l2);
            }
            const int64_t i = c0 + ty + 16 * a;
            if (tx == 0 && i < W) p.partial[(h * W + i) * p.n_split + split] = make_float2(m[a], l[a]);
        }
    }
}

// Merge the splits of every (head, query) row: stats = (max, 1 / sum).
__global__ void combine_stats_kernel(const float2* partial, float2* stats, int64_t rows, int n_split) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = kNegInf, l = 0.0f;
    for (int s = 0; s < n_split; ++s) {
        const float2 v = partial[r * n_split + s];
        merge_stats(m, l, v.x, v.y);
    }
    // Every window query sees at least key 0, so l >= 1 here.
    stats[r] = make_float2(m, 1.0f / l);
}

// Pass 2: votes[h, j] = sum_i exp(score(i, j) - max_i) / sum_i over the prefix keys j < P, which
// every window query sees (no mask needed). Grid (blocks over prefix tiles, H).
template <class TQ, class TK, int TM>
__global__ void __launch_bounds__(kThreads, 2) votes_kernel(Params p) {
    constexpr int BM = 16 * TM;
    extern __shared__ float smem[];
    float* Qs = smem;                         // [Dp][BM + 1]
    float* Ks = smem + p.dim_pad * (BM + 1);  // [kBk][BN + 1]
    float* red = Ks + kBk * (kBn + 1);        // [16][BN] column sums per ty
    const int tx = threadIdx.x & 15;
    const int ty = threadIdx.x >> 4;
    const int64_t h = blockIdx.y;
    const int64_t kvh = h / p.group;
    const int64_t W = p.window;
    const int64_t P = p.n_tokens - W;
    const int64_t n_tiles = (P + kBn - 1) / kBn;
    const int64_t t_begin = static_cast<int64_t>(blockIdx.x) * p.tiles_per_block;
    const int64_t t_end = min(n_tiles, t_begin + p.tiles_per_block);
    float* votes = p.votes + h * P;

    for (int64_t c0 = 0; c0 < W; c0 += BM) {
        __syncthreads();
        load_queries<TQ, BM>(Qs, p, h, c0);
        float row_max[TM], row_inv[TM];
#pragma unroll
        for (int a = 0; a < TM; ++a) {
            const int64_t i = c0 + ty + 16 * a;
            const float2 st = i < W ? p.stats[h * W + i] : make_float2(0.0f, 0.0f);
            row_max[a] = st.x;
            row_inv[a] = st.y;
        }
        for (int64_t t = t_begin; t < t_end; ++t) {
            const int64_t key0 = t * kBn;
            float acc[TM][kTn];
            tile_dots<TK, TM>(acc, Qs, Ks, p, kvh, key0, tx, ty);
            float col[kTn];
#pragma unroll
            for (int b = 0; b < kTn; ++b) col[b] = 0.0f;
#pragma unroll
            for (int a = 0; a < TM; ++a) {
                if (c0 + ty + 16 * a >= W) continue;
#pragma unroll
                for (int b = 0; b < kTn; ++b) col[b] += expf(acc[a][b] / p.sqrt_d - row_max[a]) * row_inv[a];
            }
#pragma unroll
            for (int b = 0; b < kTn; ++b) red[ty * kBn + tx + 16 * b] = col[b];
            __syncthreads();
            if (threadIdx.x < kBn) {
                const int64_t j = key0 + threadIdx.x;
                if (j < P) {
                    float v = 0.0f;
#pragma unroll
                    for (int y = 0; y < 16; ++y) v += red[y * kBn + threadIdx.x];
                    // Later query chunks (W > BM) add to what this same thread wrote before.
                    votes[j] = c0 == 0 ? v : votes[j] + v;
                }
            }
            // The next tile_dots starts with a barrier before anything overwrites red's readers.
        }
    }
}

struct Plan {
    int tm = 8;
    int64_t n_tiles = 0, n_prefix_tiles = 0;
    int n_split = 1, tiles_per_split = 1;
    int pass2_blocks = 1, tiles_per_block = 1;
    size_t smem1 = 0, smem2 = 0;
    size_t partial_bytes = 0, stats_bytes = 0;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Plan make_plan(const VotesShape& s, int sms) {
    Plan pl;
    const int64_t W = s.window;
    pl.tm = W <= 32 ? 2 : W <= 64 ? 4 : 8;
    const int64_t bm = 16 * pl.tm;
    const int64_t dp = ceil_div(s.head_dim, kBk) * kBk;
    pl.smem1 = static_cast<size_t>(dp * (bm + 1) + kBk * (kBn + 1)) * sizeof(float);
    pl.smem2 = pl.smem1 + static_cast<size_t>(16 * kBn) * sizeof(float);
    pl.n_tiles = ceil_div(s.n_tokens, kBn);
    pl.n_prefix_tiles = ceil_div(s.n_tokens - W, kBn);
    const int64_t target = std::max<int64_t>(1, ceil_div(static_cast<int64_t>(kBlocksPerSm) * sms, s.n_head));
    const int64_t splits = std::min<int64_t>({target, pl.n_tiles, kMaxSplits});
    pl.tiles_per_split = static_cast<int>(ceil_div(pl.n_tiles, splits));
    pl.n_split = static_cast<int>(ceil_div(pl.n_tiles, pl.tiles_per_split));
    const int64_t blocks2 = std::min<int64_t>(target, pl.n_prefix_tiles);
    pl.tiles_per_block = static_cast<int>(ceil_div(pl.n_prefix_tiles, blocks2));
    pl.pass2_blocks = static_cast<int>(ceil_div(pl.n_prefix_tiles, pl.tiles_per_block));
    return pl;
}

size_t workspace_for(const VotesShape& s) {
    const int64_t rows = s.n_head * s.window;
    const int64_t splits = std::min<int64_t>(ceil_div(s.n_tokens, kBn), kMaxSplits);
    return align_up(static_cast<size_t>(rows * splits) * sizeof(float2)) +
           align_up(static_cast<size_t>(rows) * sizeof(float2));
}

void check_shape(const VotesShape& s) {
    const char* fn = "window_votes";
    if (s.n_head < 1 || s.n_head_kv < 1 || s.n_head % s.n_head_kv != 0)
        throw_arg(fn, "n_head " + std::to_string(s.n_head) + " must be a positive multiple of n_head_kv " +
                          std::to_string(s.n_head_kv));
    if (s.n_head > 65535) throw_arg(fn, "n_head " + std::to_string(s.n_head) + " is over the grid limit 65535");
    if (s.head_dim < 1 || s.head_dim > kMaxHeadDim)
        throw_arg(fn, "head_dim " + std::to_string(s.head_dim) + " is out of range; allowed 1.." +
                          std::to_string(kMaxHeadDim));
    if (s.window < 1 || s.window >= s.n_tokens)
        throw_arg(fn, "window " + std::to_string(s.window) + " must be at least 1 and less than n_tokens " +
                          std::to_string(s.n_tokens));
    if (s.query_rows != 0 && s.query_rows < s.window)
        throw_arg(
            fn, "query_rows " + std::to_string(s.query_rows) + " is less than the window " + std::to_string(s.window));
    if (s.key_rows != 0 && s.key_rows < s.n_tokens)
        throw_arg(fn,
                  "key_rows " + std::to_string(s.key_rows) + " is less than n_tokens " + std::to_string(s.n_tokens));
}

template <class TQ, class TK, int TM>
void launch(const Params& p, const Plan& pl, int64_t n_head, int max_smem, cudaStream_t stream) {
    const char* fn = "window_votes";
    if (pl.smem2 > static_cast<size_t>(max_smem))
        throw_arg(fn, "needs " + std::to_string(pl.smem2) + " bytes of shared memory per block, the device allows " +
                          std::to_string(max_smem) + " (head_dim " + std::to_string(p.head_dim) + ")");
    auto* k1 = row_stats_kernel<TQ, TK, TM>;
    auto* k2 = votes_kernel<TQ, TK, TM>;
    check_cuda(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(pl.smem1)),
               "window_votes: pass 1 shared memory size");
    check_cuda(cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(pl.smem2)),
               "window_votes: pass 2 shared memory size");
    const dim3 block(kThreads);
    k1<<<dim3(pl.n_split, static_cast<unsigned>(n_head)), block, pl.smem1, stream>>>(p);
    check_launch("window_votes: pass 1 (row statistics) launch");
    const int64_t rows = n_head * p.window;
    combine_stats_kernel<<<static_cast<unsigned>(ceil_div(rows, 256)), 256, 0, stream>>>(p.partial, p.stats, rows,
                                                                                         p.n_split);
    check_launch("window_votes: statistics merge launch");
    k2<<<dim3(pl.pass2_blocks, static_cast<unsigned>(n_head)), block, pl.smem2, stream>>>(p);
    check_launch("window_votes: pass 2 (votes) launch");
}

template <class TQ, class TK>
void dispatch_tm(const Params& p, const Plan& pl, int64_t n_head, int max_smem, cudaStream_t stream) {
    switch (pl.tm) {
    case 2: launch<TQ, TK, 2>(p, pl, n_head, max_smem, stream); break;
    case 4: launch<TQ, TK, 4>(p, pl, n_head, max_smem, stream); break;
    default: launch<TQ, TK, 8>(p, pl, n_head, max_smem, stream); break;
    }
}

}  // namespace

size_t window_votes_workspace_bytes(const VotesShape& shape) {
    check_shape(shape);
    return workspace_for(shape);
}

void window_votes(const VotesShape& shape, const void* queries, DType query_dtype, const void* keys, DType key_dtype,
                  float* votes, void* workspace, size_t workspace_bytes, void* stream) {
    const char* fn = "window_votes";
    check_shape(shape);
    if (query_dtype != DType::Float32 && query_dtype != key_dtype)
        throw_arg(fn, std::string("queries ") + dtype_name(query_dtype) + " with keys " + dtype_name(key_dtype) +
                          " is not supported; allowed: float32 queries with any keys, or both of one type");
    require_device_pointer(queries, fn, "queries");
    require_device_pointer(keys, fn, "keys");
    require_device_pointer(votes, fn, "votes");
    if (workspace) require_device_pointer(workspace, fn, "workspace");

    const int dev = current_device(fn);
    int max_smem = 0;
    check_cuda(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
               "window_votes: shared memory limit");
    const Plan pl = make_plan(shape, sm_count(dev, fn));
    const cudaStream_t st = as_stream(stream);
    const size_t need = workspace_for(shape);
    Scratch scratch(workspace, workspace_bytes, need, st, fn);

    Params p{};
    p.queries = queries;
    p.keys = keys;
    p.group = shape.n_head / shape.n_head_kv;
    p.head_dim = shape.head_dim;
    p.dim_pad = ceil_div(shape.head_dim, kBk) * kBk;
    p.n_tokens = shape.n_tokens;
    p.window = shape.window;
    p.q_rows = shape.query_rows ? shape.query_rows : shape.window;
    p.k_rows = shape.key_rows ? shape.key_rows : shape.n_tokens;
    // The reference divides by math.sqrt(head_dim) (a double) after the product; in float32 that is
    // a division by the float nearest to it.
    p.sqrt_d = static_cast<float>(std::sqrt(static_cast<double>(shape.head_dim)));
    p.n_split = pl.n_split;
    p.tiles_per_split = pl.tiles_per_split;
    p.tiles_per_block = pl.tiles_per_block;
    const int64_t rows = shape.n_head * shape.window;
    const int64_t splits_cap = std::min<int64_t>(ceil_div(shape.n_tokens, kBn), kMaxSplits);
    p.partial = reinterpret_cast<float2*>(scratch.data());
    p.stats = reinterpret_cast<float2*>(scratch.data() +
                                        align_up(static_cast<size_t>(rows * splits_cap) * sizeof(float2)));
    p.votes = votes;

    const int64_t H = shape.n_head;
    switch (key_dtype) {
    case DType::Float32: dispatch_tm<float, float>(p, pl, H, max_smem, st); break;
    case DType::Float16:
        if (query_dtype == DType::Float32) dispatch_tm<float, __half>(p, pl, H, max_smem, st);
        else dispatch_tm<__half, __half>(p, pl, H, max_smem, st);
        break;
    case DType::BFloat16:
        if (query_dtype == DType::Float32) dispatch_tm<float, __nv_bfloat16>(p, pl, H, max_smem, st);
        else dispatch_tm<__nv_bfloat16, __nv_bfloat16>(p, pl, H, max_smem, st);
        break;
    }
}

}  // namespace snapkv::kernels
