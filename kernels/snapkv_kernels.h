// CUDA kernels for the hot SnapKV steps, as free functions over raw device pointers: the fused
// window votes, pooling fused with top-k selection, and the gather of kept K/V rows. No LibTorch
// and no CUDA types here (streams are `void*` holding a cudaStream_t), so core can include this
// header in every build. It does not validate SnapKV parameters against each other (core/snapkv
// does); it checks only what would make a kernel read or write out of bounds.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, D = head_dim, L = prompt tokens,
// W = window, P = prefix length L - W, N = rows of a score matrix, k = positions kept per row,
// S = slots per head of a cache, M = slots kept per head.
//
// All functions are asynchronous on `stream` (nullptr: the legacy default stream, which is also
// LibTorch's default). Every launch is checked; errors, including bad arguments, throw KernelError
// whose message names the function, the item and the CUDA error text. A fault inside a kernel
// surfaces at the next synchronising call, as with any CUDA work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace snapkv::kernels {

// Element types of the inputs. Votes, pooled scores and all arithmetic are float32.
enum class DType { Float32, Float16, BFloat16 };
// Mirrors snapkv::Pooling (core/snapkv/snapkv_params.h) without depending on core.
enum class PoolKind { Max, Avg, None };
// Mirrors snapkv::TieBreak: which of equal scores a top-k keeps, the earlier or the later positions.
enum class TieOrder { Earlier, Later };

class KernelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

const char* dtype_name(DType t);  // "float32", "float16", "bfloat16"

// Devices usable by the CUDA runtime; 0 (and the reason in *why) when there is no driver, no
// device, or the runtime fails. Never throws.
int cuda_device_count(std::string* why = nullptr);
// "NVIDIA H200, compute 9.0, 132 SMs, 139.8 GiB; driver 13.0, runtime 13.0" for the current device,
// or the reason there is none. Never throws.
std::string cuda_device_summary();

// ---- Window votes ------------------------------------------------------------------------------
// Votes exactly as FasterDecoding/SnapKV snapkv_utils.py (and LayerScorer::votes): for query head h
// (reading KV head h / G, as repeat_kv does), scores q . k / sqrt(D) of the last W queries against
// all L keys, causal mask inside the window only (window query i sits at position L - W + i and sees
// keys <= L - W + i), softmax over each full row in float32, probabilities on the P = L - W prefix
// keys summed over the W queries. Two passes over the keys (row max and sum of exponentials, then
// the normalised sum); the [H, W, L] matrix never reaches global memory.
struct VotesShape {
    int64_t n_head = 0;      // H
    int64_t n_head_kv = 0;   // Hkv, divides H
    int64_t head_dim = 0;    // D, 1..256
    int64_t n_tokens = 0;    // L
    int64_t window = 0;      // W, 1 <= W < L
    int64_t query_rows = 0;  // rows per head in `queries` (>= W; 0: W). The last W rows are used, so
                             // a capture of the last Wmax queries serves every W <= Wmax.
    int64_t key_rows = 0;    // rows per head in `keys` (>= L; 0: L). The first L rows are used, so
                             // a cache buffer with spare capacity can be passed as it is.
};

// Device scratch window_votes needs, in bytes (a few MB at most: [H, W, splits] row statistics).
size_t window_votes_workspace_bytes(const VotesShape& shape);

// queries: [H, query_rows, D] post-RoPE; keys: [Hkv, key_rows, D] post-RoPE; votes: [H, P] float32.
// Type pairs: float32 queries with keys of any DType, or both float16, or both bfloat16.
// workspace: at least window_votes_workspace_bytes(shape) bytes of device memory, or nullptr to
// allocate it stream-ordered (cudaMallocAsync) for this call.
void window_votes(const VotesShape& shape, const void* queries, DType query_dtype, const void* keys, DType key_dtype,
                  float* votes, void* workspace = nullptr, size_t workspace_bytes = 0, void* stream = nullptr);

// ---- Pooling + top-k -------------------------------------------------------------------------
// SnapKV's clustering and selection (selector.h pool_scores + top_k_positions): per row of votes,
// 1-D pooling with stride 1 and padding K / 2 (max: padding never wins, NaN propagates as in
// F.max_pool1d; avg: zero padding counted, divided by K, F.avg_pool1d's defaults; none: the votes),
// then optionally the mean over G consecutive pooled rows (kvpress KvHead mode: pool per query head,
// average the G heads of a KV group), then the k best positions of each resulting row in increasing
// position order. Ties go to the later positions (TieOrder::Later, torch.topk's choice in every
// tied case compared) or to the earlier ones; NaN ranks like -inf; -0 equals +0.
struct PoolTopkShape {
    int64_t n_rows = 0;    // N rows of votes (H)
    int64_t n_prefix = 0;  // P
    int64_t group = 1;     // G: 1 (QueryHead, N output rows) or H / Hkv (KvHead, N / G rows)
    int64_t kernel = 1;    // K: odd, 1 <= K <= P (not read for PoolKind::None)
    PoolKind pooling = PoolKind::Max;
    int64_t k = 0;  // positions kept per output row, 0 <= k <= P (C - W)
    TieOrder ties = TieOrder::Later;
};

size_t pool_topk_workspace_bytes(const PoolTopkShape& shape);  // 0 when `pooled` is given

// votes: [N, P] float32; positions: [N / G, k] int64 out, sorted; pooled: [N / G, P] float32 out,
// or nullptr when not wanted (then the workspace holds it: pool_topk_workspace_bytes, or nullptr to
// allocate it for this call).
void pool_topk(const PoolTopkShape& shape, const float* votes, int64_t* positions, float* pooled,
               void* workspace = nullptr, size_t workspace_bytes = 0, void* stream = nullptr);

// ---- Gather of kept K/V ------------------------------------------------------------------------
// dst[h, m, :] = src[h / repeat, index[h, m], :] for the Hdst = Hsrc * repeat heads of a compressed
// cache (repeat = G for query-head SnapKV, where each KV head is repeated to its group; 1 otherwise).
// An index outside [0, n_slots) marks a padding slot (AdaKV's ragged heads): its row is zero-filled,
// as core's gather_cache does; the caller gives it the padding position.
struct GatherShape {
    int64_t n_head_src = 0;  // Hsrc
    int64_t n_slots = 0;     // S: valid slots per source head
    int64_t src_rows = 0;    // rows per head in the src buffer (>= S; 0: S)
    int64_t head_dim = 0;    // D
    int64_t repeat = 1;      // Hdst / Hsrc
    int64_t n_keep = 0;      // M
    int64_t dst_rows = 0;    // rows per head in the dst buffer (>= M; 0: M), room for decode appends
};

// src: [Hsrc, src_rows, D]; index: [Hdst, M] int64; dst: [Hdst, dst_rows, D], rows [0, M) written.
// Call once for keys and once for values; both buffers of the given dtype.
void gather_kv(const GatherShape& shape, DType dtype, const void* src, const int64_t* index, void* dst,
               void* stream = nullptr);

}  // namespace snapkv::kernels
