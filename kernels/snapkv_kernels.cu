// The non-kernel half of kernels/: device queries, error text, argument and pointer checks, and the
// scratch buffer shared by the kernel files. The kernels themselves live one per file
// (window_votes.cu, pool_topk.cu, gather_kv.cu).
#include <cstdio>

#include "kernels/cuda_util.cuh"

namespace snapkv::kernels {

const char* dtype_name(DType t) {
    switch (t) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    }
    return "unknown";
}

int cuda_device_count(std::string* why) {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        if (why)
            *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
        cudaGetLastError();  // not sticky: clear it so later calls start clean
        return 0;
    }
    if (n == 0 && why) *why = "the CUDA runtime reports no device";
    return n;
}

std::string cuda_device_summary() {
    std::string why;
    if (cuda_device_count(&why) == 0) return "no CUDA device (" + why + ")";
    int dev = 0, driver = 0, runtime = 0;
    cudaDeviceProp p{};
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        cudaGetLastError();
        return "CUDA device present but its properties cannot be read";
    }
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s, compute %d.%d, %d SMs, %.1f GiB; driver %d.%d, runtime %d.%d", p.name, p.major,
                  p.minor, p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                  driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    return buf;
}

namespace detail {

void throw_cuda(cudaError_t err, const std::string& where) {
    throw KernelError("snapkv kernels: " + where + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

void throw_arg(const std::string& fn, const std::string& msg) {
    throw KernelError("snapkv kernels: " + fn + ": " + msg);
}

void require_device_pointer(const void* ptr, const char* fn, const char* what) {
    if (ptr == nullptr) throw_arg(fn, std::string(what) + " is a null pointer");
    cudaPointerAttributes a{};
    const cudaError_t err = cudaPointerGetAttributes(&a, ptr);
    if (err != cudaSuccess) {
        cudaGetLastError();
        throw_arg(fn, std::string(what) + " is not a CUDA pointer (" + cudaGetErrorString(err) + ")");
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
        throw_arg(fn, std::string(what) + " points to host memory; device memory is required");
    const int dev = current_device(fn);
    if (a.type == cudaMemoryTypeDevice && a.device != dev)
        throw_arg(fn, std::string(what) + " lives on device " + std::to_string(a.device) +
                          " but the current device is " + std::to_string(dev));
}

int current_device(const char* fn) {
    int dev = 0;
    check_cuda(cudaGetDevice(&dev), std::string(fn) + ": cudaGetDevice");
    return dev;
}

int sm_count(int device, const char* fn) {
    int n = 0;
    check_cuda(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device),
               std::string(fn) + ": multiprocessor count");
    return n;
}

Scratch::Scratch(void* given, size_t given_bytes, size_t need, cudaStream_t stream, const char* fn) : m_stream(stream) {
    if (need == 0) return;
    if (given != nullptr) {
        if (given_bytes < need)
            throw_arg(fn,
                      "workspace of " + std::to_string(given_bytes) + " bytes, " + std::to_string(need) + " needed");
        m_ptr = static_cast<char*>(given);
        return;
    }
    void* p = nullptr;
    check_cuda(cudaMallocAsync(&p, need, stream),
               std::string(fn) + ": workspace of " + std::to_string(need) + " bytes");
    m_ptr = static_cast<char*>(p);
    m_owned = true;
}

Scratch::~Scratch() {
    if (m_owned) cudaFreeAsync(m_ptr, m_stream);  // an error here resurfaces at the next check
}

}  // namespace detail
}  // namespace snapkv::kernels
