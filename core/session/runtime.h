// Process-wide runtime set-up shared by the CLI, the GUI and the tests: pick OpenBLAS kernels for
// the CPU at hand and use every core for LibTorch's intra-op threads. Torch-free header.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace snapkv {

// Call first thing in main(). Debian's OpenBLAS takes recent Xeons for SSE3-only "Prescott" parts
// and runs 5x slower GEMMs; OpenBLAS reads OPENBLAS_CORETYPE only when it is loaded, which happens
// before main(), so we set it from CPUID and re-execute ourselves once. An OPENBLAS_CORETYPE already
// in the environment is kept unless it names narrower kernels than the CPU runs (then RuntimeInfo's
// blas line says it was replaced); SNAPKV_OPENBLAS_CORETYPE forces a core. OMP_WAIT_POLICY defaults to PASSIVE (set in the
// same re-exec) so that idle OpenMP threads do not spin on the cores OpenBLAS is using, and
// OPENBLAS_THREAD_TIMEOUT to 20 (OpenBLAS's threads spin ~0.3 ms after a product, not ~0.1 s, so
// a decode after a prefill gets the cores). Then sets LibTorch intra-op threads to the core count
// (or SNAPKV_THREADS).
void init_runtime(int argc, char** argv);

struct RuntimeInfo {
    int intra_op_threads = 0;
    int cores = 0;
    std::string blas;          // "OpenBLAS 0.3.21 ... (core: SkylakeX)" or what LibTorch reports
    std::string blas_core;     // "SkylakeX", "Haswell", "Prescott", ... or "" if not OpenBLAS
    std::string cpu_features;  // "avx512f avx2 fma"
    std::string kernel_path;   // CPU path of the weight kernels: "avx512", "avx2" or "scalar"
    std::string torch_version;
    bool cuda_available = false;
    std::string cuda_device;   // name of the current CUDA device ("NVIDIA H200"), if any
    std::string cuda_summary;  // kernels' summary: "NVIDIA H200, compute 9.0, 132 SMs, ...;
                               // driver 13.0, runtime 13.0" (builds with the kernels), or ""
};
RuntimeInfo runtime_info();

// This machine's roofline bounds, measured with every intra-op thread busy (core/quant's
// machine_bounds.h): the float32 FMA peak of the widest vector path the CPU has, and the memory
// read bandwidth over a 1 GiB buffer. Takes about 3 s.
struct MachineBounds {
    double fma_gflops = 0;  // GFLOP/s (0 where the CPU has no vector FMA)
    std::string fma_path;   // "avx512", "avx2" (the width measured) or "scalar"
    double read_gbs = 0;    // GB/s (1e9 bytes)
    int threads = 0;
};
MachineBounds measure_machine_bounds();

// Where `snapkv bench --roofline` keeps its last figures for the app's About box:
// $SNAPKV_STATE_DIR/roofline.json, else $XDG_STATE_HOME/snapkv/roofline.json, else
// $HOME/.local/state/snapkv/roofline.json ("" when none of them is set).
std::string roofline_state_path();

// Peak device memory allocated through LibTorch's CUDA caching allocator on the current device,
// since the process started or the last reset_peak_device_memory(): tensors only, not the
// allocator's cached free blocks or the CUDA context. 0 in CPU-only builds and before any CUDA use.
void reset_peak_device_memory();
int64_t peak_device_memory_bytes();

// LibTorch's allocation failures ("DefaultCPUAllocator: can't allocate memory: you tried to
// allocate N bytes ...", "CUDA out of memory. Tried to allocate ...") as one plain line with the
// numbers: "could not allocate 12.0 GiB (12884901888 bytes); 3.1 GiB is available (MemAvailable
// in /proc/meminfo)". Empty when message is not an allocation failure.
std::string out_of_memory_text(const std::string& message);

// One line for an exception that is not a snapkv::Error (those speak for themselves): an
// allocation failure as above prefixed "out of memory: ", anything else "internal error: " and
// the first line of the library's message, without its backtrace.
std::string describe_exception(const std::exception& e);

}  // namespace snapkv
