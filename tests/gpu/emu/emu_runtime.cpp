// Host stand-ins for the CUDA runtime calls of kernels/ and test_kernels.cpp under the emulation
// (tests/gpu/emu/run.sh): "device" memory is host memory, one device, EMU_SMS multiprocessors
// (default 4, so that the kernels split their work into several blocks). Replaces cudart.
#include <cuda_runtime.h>
#include <cstdlib>
#include <cstring>
extern "C" {
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t) { return "emu"; }
const char* cudaGetErrorString(cudaError_t) { return "emu"; }
cudaError_t cudaGetDeviceCount(int* n) {
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
    *d = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
    *v = a == cudaDevAttrMultiProcessorCount ? (getenv("EMU_SMS") ? atoi(getenv("EMU_SMS")) : 4) : 232448;
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void*) {
    std::memset(a, 0, sizeof *a);
    a->type = cudaMemoryTypeDevice;
    a->device = 0;
    return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) {
    *p = std::malloc(n);
    std::memset(*p, 0x7f, n);
    return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t n) {
    *p = std::malloc(n);
    std::memset(*p, 0x7f, n);
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
    std::memcpy(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemset(void* d, int v, size_t n) {
    std::memset(d, v, n);
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) {
    *v = 0;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
    *v = 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties_v2(cudaDeviceProp* p, int) {
    std::memset(p, 0, sizeof *p);
    std::strcpy(p->name, "emulated");
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) { return cudaGetDeviceProperties_v2(p, d); }
}
