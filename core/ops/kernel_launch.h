// Helpers shared by the .cpp files that call kernels/snapkv_kernels.h (core/ops/gpu_gather.cpp,
// core/snapkv/gpu_ops.cpp): dtype mapping, the tensors' current stream, scratch from LibTorch's
// caching allocator, dense row views, and KernelError -> snapkv::Error. Include it only from .cpp
// files and only under SNAPKV_HAVE_CUDA; it is not an interface for the rest of core.
//
// Dimensions: N = heads (or rows of heads), R = rows per head, D = row width.
#pragma once

#ifndef SNAPKV_HAVE_CUDA
#error "core/ops/kernel_launch.h is for CUDA builds (SNAPKV_HAVE_CUDA) only"
#endif

#include <cstddef>
#include <cstdint>
#include <string>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "core/common/errors.h"
#include "kernels/snapkv_kernels.h"

namespace snapkv::gpu {

namespace kn = snapkv::kernels;

// The element types the kernels read and write; anything else is converted by the caller first.
inline bool kernel_dtype_ok(at::ScalarType t) { return t == at::kFloat || t == at::kHalf || t == at::kBFloat16; }

inline kn::DType kernel_dtype(const at::Tensor& t) {
    switch (t.scalar_type()) {
    case at::kHalf: return kn::DType::Float16;
    case at::kBFloat16: return kn::DType::BFloat16;
    default: return kn::DType::Float32;  // callers convert anything else first
    }
}

inline void* current_stream(const at::Tensor& t) { return at::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

inline at::Tensor workspace(size_t bytes, const at::Tensor& like) {  // from LibTorch's caching allocator
    return at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
}

// t: [N, R, D]. The kernels take a base pointer and rows per head, so a narrow view of a larger
// buffer (a cache with spare capacity) can be read in place when its rows are dense. Returns t or
// a contiguous copy, and the rows per head of what it returns.
inline at::Tensor dense_rows(const at::Tensor& t, int64_t* rows) {
    const int64_t d = t.size(2);
    if (!t.is_contiguous() && t.size(0) > 1 && t.stride(2) == 1 && t.stride(1) == d && d > 0 && t.stride(0) % d == 0 &&
        t.stride(0) / d >= t.size(1)) {
        *rows = t.stride(0) / d;
        return t;
    }
    *rows = t.size(1);
    return t.contiguous();
}

// Runs fn, turning the kernels' own error type into core's at the boundary.
template <typename Fn>
void launch(const char* what, Fn&& fn) {
    try {
        fn();
    } catch (const kn::KernelError& e) {
        throw Error(std::string(what) + ": " + e.what());
    }
}

}  // namespace snapkv::gpu
