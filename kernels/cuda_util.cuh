// Private helpers of the kernels/ .cu files: CUDA error checks that throw KernelError, argument
// checks, the stream-ordered scratch buffer, and float conversion of the element types. Not part of
// the public API (snapkv_kernels.h); never included by core.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/snapkv_kernels.h"

namespace snapkv::kernels::detail {

// "window_votes: pass 1 launch: cudaErrorInvalidValue: invalid argument"
[[noreturn]] void throw_cuda(cudaError_t err, const std::string& where);

inline void check_cuda(cudaError_t err, const std::string& where) {
    if (err != cudaSuccess) throw_cuda(err, where);
}
// After a launch: configuration errors now, and sticky errors of earlier work.
inline void check_launch(const std::string& where) { check_cuda(cudaGetLastError(), where); }

[[noreturn]] void throw_arg(const std::string& fn, const std::string& msg);

// Throws unless ptr is device (or managed) memory of the current device: a host pointer handed to
// a kernel would fault and poison the whole CUDA context, LibTorch's included.
void require_device_pointer(const void* ptr, const char* fn, const char* what);

int current_device(const char* fn);
int sm_count(int device, const char* fn);

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// The caller's workspace, or a stream-ordered allocation released (stream-ordered) at scope exit.
class Scratch {
public:
    Scratch(void* given, size_t given_bytes, size_t need, cudaStream_t stream, const char* fn);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    char* data() const { return m_ptr; }

private:
    char* m_ptr = nullptr;
    bool m_owned = false;
    cudaStream_t m_stream = nullptr;
};

inline size_t align_up(size_t n, size_t a = 256) { return (n + a - 1) / a * a; }

template <class T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ float to_float<__half>(__half v) {
    return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}

}  // namespace snapkv::kernels::detail
