// Adapters over kernels/snapkv_kernels.h (see gpu_ops.h and kernels/README.md "Calling them from
// core"). Each checks what the kernel cannot know (devices, dtypes, row layout), launches on the
// current stream of the tensors' device with scratch from LibTorch's caching allocator, and maps
// kernels::KernelError to snapkv::Error. Without SNAPKV_HAVE_CUDA only gpu_kernels_available().
//
// Dimensions: H = n_head, Hkv = n_head_kv, D = head_dim, L = prompt tokens, W = window,
// P = L - W, N = vote rows, G = group, k = kept per row, Hsrc / Hdst = cache heads, S = valid
// slots, M = kept slots.
#include "core/snapkv/gpu_ops.h"

#ifdef SNAPKV_HAVE_CUDA
#include <string>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "core/common/errors.h"
#include "kernels/snapkv_kernels.h"
#endif

namespace snapkv {

#ifndef SNAPKV_HAVE_CUDA

bool gpu_kernels_available() { return false; }

#else

namespace kn = snapkv::kernels;

namespace {

bool kernel_dtype_ok(at::ScalarType t) {
    return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

kn::DType kernel_dtype(const at::Tensor& t) {
    switch (t.scalar_type()) {
    case at::kHalf: return kn::DType::Float16;
    case at::kBFloat16: return kn::DType::BFloat16;
    default: return kn::DType::Float32;   // callers convert anything else first
    }
}

kn::PoolKind pool_kind(Pooling p) {
    switch (p) {
    case Pooling::Avg: return kn::PoolKind::Avg;
    case Pooling::None: return kn::PoolKind::None;
    default: return kn::PoolKind::Max;
    }
}

void* current_stream(const at::Tensor& t) {
    return at::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

at::Tensor workspace(size_t bytes, const at::Tensor& like) {   // from LibTorch's caching allocator
    return at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
}

// t: [N, R, D]. The kernels take a base pointer and rows per head, so a narrow view of a larger
// buffer (a cache with spare capacity) can be read in place when its rows are dense. Returns t or
// a contiguous copy, and the rows per head of what it returns.
at::Tensor dense_rows(const at::Tensor& t, int64_t* rows) {
    const int64_t d = t.size(2);
    if (!t.is_contiguous() && t.size(0) > 1 && t.stride(2) == 1 && t.stride(1) == d &&
        d > 0 && t.stride(0) % d == 0 && t.stride(0) / d >= t.size(1)) {
        *rows = t.stride(0) / d;
        return t;
    }
    *rows = t.size(1);
    return t.contiguous();
}

template <typename Fn>
void launch(const char* what, Fn&& fn) {
    try {
        fn();
    } catch (const kn::KernelError& e) {
        throw Error(std::string(what) + ": " + e.what());
    }
}

}  // namespace

bool gpu_kernels_available() {
    static const bool available = kn::cuda_device_count() > 0;
    return available;
}

at::Tensor gpu_votes(const at::Tensor& q, const at::Tensor& k, int64_t n_tokens, int64_t window) {
    // q: [H, Wmax, D]; k: [Hkv, L, D]
    TORCH_CHECK(q.dim() == 3 && k.dim() == 3 && q.size(2) == k.size(2),
                "gpu_votes: queries [H, Wmax, D] and keys [Hkv, L, D] expected, got ", q.sizes(),
                " and ", k.sizes());
    TORCH_CHECK(q.is_cuda() && k.device() == q.device(), "gpu_votes: queries on ", q.device(),
                " and keys on ", k.device(), "; both must be on one CUDA device");
    TORCH_CHECK(n_tokens <= k.size(1), "gpu_votes: ", n_tokens, " tokens but keys hold ", k.size(1));
    c10::cuda::CUDAGuard device(q.device());
    // Same 16-bit type on both sides, or float32 queries (lossless from any 16-bit type) with keys
    // of a kernel type: the pairs window_votes accepts.
    at::Tensor kk = kernel_dtype_ok(k.scalar_type()) ? k : k.to(at::kFloat);
    at::Tensor qq = (q.scalar_type() == kk.scalar_type()) ? q : q.to(at::kFloat);
    int64_t q_rows = 0, k_rows = 0;
    qq = dense_rows(qq, &q_rows);                                          // [H, Wmax, D]
    kk = dense_rows(kk, &k_rows);                                          // [Hkv, L, D]
    kn::VotesShape s{qq.size(0), kk.size(0), qq.size(2), n_tokens, window, q_rows, k_rows};
    at::Tensor votes = at::empty({s.n_head, n_tokens - window}, q.options().dtype(at::kFloat));  // [H, P]
    launch("gpu_votes", [&] {
        at::Tensor ws = workspace(kn::window_votes_workspace_bytes(s), qq);
        kn::window_votes(s, qq.data_ptr(), kernel_dtype(qq), kk.data_ptr(), kernel_dtype(kk),
                         votes.data_ptr<float>(), ws.data_ptr(), static_cast<size_t>(ws.numel()),
                         current_stream(qq));
    });
    return votes;
}

std::pair<at::Tensor, at::Tensor> gpu_pool_topk(const at::Tensor& votes, int64_t group, int64_t kernel,
                                                Pooling pooling, int64_t k, TieBreak tie) {
    // votes: [N, P]
    TORCH_CHECK(votes.dim() == 2 && votes.is_cuda(), "gpu_pool_topk: votes must be a [N, P] CUDA tensor, got ",
                votes.sizes(), " on ", votes.device());
    TORCH_CHECK(group >= 1 && votes.size(0) % group == 0, "gpu_pool_topk: group ", group,
                " must divide the ", votes.size(0), " vote rows");
    c10::cuda::CUDAGuard device(votes.device());
    at::Tensor v = votes.to(at::kFloat).contiguous();                      // [N, P]
    kn::PoolTopkShape s{v.size(0), v.size(1), group, kernel, pool_kind(pooling), k,
                        tie == TieBreak::Earlier ? kn::TieOrder::Earlier : kn::TieOrder::Later};
    at::Tensor pos = at::empty({s.n_rows / group, k}, v.options().dtype(at::kLong));  // [N / G, k]
    at::Tensor pooled = at::empty({s.n_rows / group, s.n_prefix}, v.options());     // [N / G, P]
    launch("gpu_pool_topk", [&] {
        kn::pool_topk(s, v.data_ptr<float>(), pos.data_ptr<int64_t>(), pooled.data_ptr<float>(),
                      nullptr, 0, current_stream(v));
    });
    return {pooled, pos};
}

void gpu_gather(const at::Tensor& src, const at::Tensor& index, at::Tensor& dst) {
    // src: [Hsrc, S, D]; index: [Hdst, M]; dst: [Hdst, >= M, D]
    TORCH_CHECK(src.dim() == 3 && index.dim() == 2 && dst.dim() == 3,
                "gpu_gather: src [Hsrc, S, D], index [Hdst, M], dst [Hdst, M, D] expected, got ",
                src.sizes(), ", ", index.sizes(), ", ", dst.sizes());
    TORCH_CHECK(src.is_cuda() && index.device() == src.device() && dst.device() == src.device(),
                "gpu_gather: src on ", src.device(), ", index on ", index.device(), ", dst on ",
                dst.device(), "; all must be on one CUDA device");
    TORCH_CHECK(kernel_dtype_ok(src.scalar_type()) && dst.scalar_type() == src.scalar_type(),
                "gpu_gather: src ", src.scalar_type(), " and dst ", dst.scalar_type(),
                " must be one of float32, float16, bfloat16, and equal");
    TORCH_CHECK(index.scalar_type() == at::kLong, "gpu_gather: index must be int64, got ", index.scalar_type());
    TORCH_CHECK(index.size(0) % src.size(0) == 0 && dst.size(0) == index.size(0) &&
                    dst.size(1) >= index.size(1) && dst.size(2) == src.size(2),
                "gpu_gather: index ", index.sizes(), " and dst ", dst.sizes(), " do not fit src ",
                src.sizes(), " (Hdst a multiple of Hsrc, dst at least M rows of D)");
    TORCH_CHECK(dst.is_contiguous(), "gpu_gather: dst must be contiguous");
    c10::cuda::CUDAGuard device(src.device());
    int64_t src_rows = 0;
    at::Tensor in = dense_rows(src, &src_rows);                            // [Hsrc, S, D]
    at::Tensor idx = index.contiguous();                                   // [Hdst, M]
    kn::GatherShape s{in.size(0), in.size(1), src_rows, in.size(2), idx.size(0) / in.size(0),
                      idx.size(1), dst.size(1)};
    launch("gpu_gather", [&] {
        kn::gather_kv(s, kernel_dtype(in), in.data_ptr(), idx.data_ptr<int64_t>(), dst.data_ptr(),
                      current_stream(in));
    });
}

#endif  // SNAPKV_HAVE_CUDA

}  // namespace snapkv
