// See gpu_gather.h. Checks what the gather kernel cannot know (devices, dtypes, row layout), then
// launches on the current stream of the tensors' device. Without SNAPKV_HAVE_CUDA only
// gpu_kernels_available(), which answers false.
//
// Dimensions: Hsrc / Hdst = cache heads, S = valid slots, M = kept slots, D = head_dim.
#include "core/ops/gpu_gather.h"

#ifdef SNAPKV_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "core/ops/kernel_launch.h"
#endif

namespace snapkv {

#ifndef SNAPKV_HAVE_CUDA

bool gpu_kernels_available() { return false; }

#else

bool gpu_kernels_available() {
    static const bool available = kernels::cuda_device_count() > 0;
    return available;
}

void gpu_gather(const at::Tensor& src, const at::Tensor& index, at::Tensor& dst) {
    // src: [Hsrc, S, D]; index: [Hdst, M]; dst: [Hdst, >= M, D]
    TORCH_CHECK(src.dim() == 3 && index.dim() == 2 && dst.dim() == 3,
                "gpu_gather: src [Hsrc, S, D], index [Hdst, M], dst [Hdst, M, D] expected, got ", src.sizes(), ", ",
                index.sizes(), ", ", dst.sizes());
    TORCH_CHECK(src.is_cuda() && index.device() == src.device() && dst.device() == src.device(), "gpu_gather: src on ",
                src.device(), ", index on ", index.device(), ", dst on ", dst.device(),
                "; all must be on one CUDA device");
    TORCH_CHECK(gpu::kernel_dtype_ok(src.scalar_type()) && dst.scalar_type() == src.scalar_type(), "gpu_gather: src ",
                src.scalar_type(), " and dst ", dst.scalar_type(),
                " must be one of float32, float16, bfloat16, and equal");
    TORCH_CHECK(index.scalar_type() == at::kLong, "gpu_gather: index must be int64, got ", index.scalar_type());
    TORCH_CHECK(index.size(0) % src.size(0) == 0 && dst.size(0) == index.size(0) && dst.size(1) >= index.size(1) &&
                    dst.size(2) == src.size(2),
                "gpu_gather: index ", index.sizes(), " and dst ", dst.sizes(), " do not fit src ", src.sizes(),
                " (Hdst a multiple of Hsrc, dst at least M rows of D)");
    TORCH_CHECK(dst.is_contiguous(), "gpu_gather: dst must be contiguous");
    c10::cuda::CUDAGuard device(src.device());
    int64_t src_rows = 0;
    at::Tensor in = gpu::dense_rows(src, &src_rows);  // [Hsrc, S, D]
    at::Tensor idx = index.contiguous();              // [Hdst, M]
    kernels::GatherShape s{in.size(0),  in.size(1), src_rows, in.size(2), idx.size(0) / in.size(0),
                           idx.size(1), dst.size(1)};
    gpu::launch("gpu_gather", [&] {
        kernels::gather_kv(s, gpu::kernel_dtype(in), in.data_ptr(), idx.data_ptr<int64_t>(), dst.data_ptr(),
                           gpu::current_stream(in));
    });
}

#endif  // SNAPKV_HAVE_CUDA

}  // namespace snapkv
