// The part of the LibTorch adapters over kernels/snapkv_kernels.h that core/kv needs: whether the
// kernels can run, and the gather of kept K/V rows into a compressed cache. It sits below kv so the
// cache never reaches up into core/snapkv; the scoring adapters (votes, pooling + top-k) stay in
// core/snapkv/gpu_ops.h. No CUDA types here; gpu_gather exists only with SNAPKV_HAVE_CUDA.
//
// Dimensions: Hsrc / Hdst = heads of a source / compressed cache, S = valid slots per source head,
// M = slots kept per head, D = head_dim.
#pragma once

#include <ATen/ATen.h>

namespace snapkv {

// True when core was built with the kernels (SNAPKV_HAVE_CUDA) and the CUDA runtime sees at least
// one device (checked once). False in CPU-only builds: callers then keep their LibTorch path.
bool gpu_kernels_available();

#ifdef SNAPKV_HAVE_CUDA
// kernels::gather_kv for one of K or V. src: [Hsrc, S, D] CUDA (a narrow view of a cache buffer is
// read in place); index: [Hdst, M] int64 on the same device, Hdst a multiple of Hsrc (each source
// head repeated to its group), an index outside [0, S) marks a padding row, zero-filled;
// dst: [Hdst, M, D] (or more rows per head), same dtype and device as src, float32/16/bf16.
// The LibTorch reference is gather_cache's CPU path (core/kv/kv_cache.cpp).
void gpu_gather(const at::Tensor& src, const at::Tensor& index, at::Tensor& dst);
#endif

}  // namespace snapkv
