// Scoring adapters over kernels/snapkv_kernels.h (see gpu_ops.h and kernels/README.md "Calling them
// from core"). Each checks what the kernel cannot know (devices, dtypes, row layout), launches on
// the current stream of the tensors' device with scratch from LibTorch's caching allocator, and
// maps kernels::KernelError to snapkv::Error (core/ops/kernel_launch.h). Without SNAPKV_HAVE_CUDA
// this file is empty.
//
// Dimensions: H = n_head, Hkv = n_head_kv, D = head_dim, L = prompt tokens, W = window,
// P = L - W, N = vote rows, G = group, k = kept per row.
#include "core/snapkv/gpu_ops.h"

#ifdef SNAPKV_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "core/ops/kernel_launch.h"

namespace snapkv {

using gpu::current_stream;
using gpu::dense_rows;
using gpu::kernel_dtype;
using gpu::kernel_dtype_ok;
using gpu::launch;
using gpu::workspace;
namespace kn = snapkv::kernels;

namespace {

kn::PoolKind pool_kind(Pooling p) {
    switch (p) {
    case Pooling::Avg: return kn::PoolKind::Avg;
    case Pooling::None: return kn::PoolKind::None;
    default: return kn::PoolKind::Max;
    }
}

}  // namespace

at::Tensor gpu_votes(const at::Tensor& q, const at::Tensor& k, int64_t n_tokens, int64_t window) {
    // q: [H, Wmax, D]; k: [Hkv, L, D]
    TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && q.size(2) == k.size(2),
                "gpu_votes: queries [H, Wmax, D] and keys [Hkv, L, D] expected, got ", q.sizes(), " and ", k.sizes());
    TORCH_CHECK(q.is_cuda() && k.device() == q.device(), "gpu_votes: queries on ", q.device(), " and keys on ",
                k.device(), "; both must be on one CUDA device");
    TORCH_CHECK(n_tokens <= k.size(1), "gpu_votes: ", n_tokens, " tokens but keys hold ", k.size(1));
    c10::cuda::CUDAGuard device(q.device());
    // Same 16-bit type on both sides, or float32 queries (lossless from any 16-bit type) with keys
    // of a kernel type: the pairs window_votes accepts.
    at::Tensor kk = kernel_dtype_ok(k.scalar_type()) ? k : k.to(at::kFloat);
    at::Tensor qq = (q.scalar_type() == kk.scalar_type()) ? q : q.to(at::kFloat);
    int64_t q_rows = 0, k_rows = 0;
    qq = dense_rows(qq, &q_rows);  // [H, Wmax, D]
    kk = dense_rows(kk, &k_rows);  // [Hkv, L, D]
    kn::VotesShape s{qq.size(0), kk.size(0), qq.size(2), n_tokens, window, q_rows, k_rows};
    at::Tensor votes = at::empty({s.n_head, n_tokens - window}, q.options().dtype(at::kFloat));  // [H, P]
    launch("gpu_votes", [&] {
        at::Tensor ws = workspace(kn::window_votes_workspace_bytes(s), qq);
        kn::window_votes(s, qq.data_ptr(), kernel_dtype(qq), kk.data_ptr(), kernel_dtype(kk), votes.data_ptr<float>(),
                         ws.data_ptr(), static_cast<size_t>(ws.numel()), current_stream(qq));
    });
    return votes;
}

std::pair<at::Tensor, at::Tensor> gpu_pool_topk(const at::Tensor& votes, int64_t group, int64_t kernel, Pooling pooling,
                                                int64_t k, TieBreak tie) {
    // votes: [N, P]
    TORCH_CHECK(votes.dim() == 2 && votes.is_cuda(), "gpu_pool_topk: votes must be a [N, P] CUDA tensor, got ",
                votes.sizes(), " on ", votes.device());
    TORCH_CHECK(group >= 1 && votes.size(0) % group == 0, "gpu_pool_topk: group ", group, " must divide the ",
                votes.size(0), " vote rows");
    c10::cuda::CUDAGuard device(votes.device());
    at::Tensor v = votes.to(at::kFloat).contiguous();  // [N, P]
    kn::PoolTopkShape s{v.size(0),
                        v.size(1),
                        group,
                        kernel,
                        pool_kind(pooling),
                        k,
                        tie == TieBreak::Earlier ? kn::TieOrder::Earlier : kn::TieOrder::Later};
    at::Tensor pos = at::empty({s.n_rows / group, k}, v.options().dtype(at::kLong));  // [N / G, k]
    at::Tensor pooled = at::empty({s.n_rows / group, s.n_prefix}, v.options());       // [N / G, P]
    launch("gpu_pool_topk", [&] {
        kn::pool_topk(s, v.data_ptr<float>(), pos.data_ptr<int64_t>(), pooled.data_ptr<float>(), nullptr, 0,
                      current_stream(v));
    });
    return {pooled, pos};
}

}  // namespace snapkv

#endif  // SNAPKV_HAVE_CUDA
