// See runtime.h. The re-exec happens at most once (guarded by SNAPKV_BLAS_REEXEC).
// SNAPKV_OPENBLAS_CORETYPE always wins, so a wrong guess can be overridden from the shell.
#include "core/session/runtime.h"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include "core/quant/machine_bounds.h"
#include "core/quant/qkernels.h"
#include "core/session/memory_estimate.h"

#ifdef SNAPKV_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include "kernels/snapkv_kernels.h"
#endif

namespace snapkv {
namespace {

std::string cpu_feature_list() {
    std::string out;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) out += "avx512f ";
    if (__builtin_cpu_supports("avx2")) out += "avx2 ";
    if (__builtin_cpu_supports("fma")) out += "fma ";
    if (__builtin_cpu_supports("avx")) out += "avx ";
#endif
    if (!out.empty()) out.pop_back();
    return out;
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// How wide an OpenBLAS x86 core's kernels are: 2 AVX-512, 1 AVX2, 0 older or unknown names.
int openblas_core_rank(const std::string& name) {
    const std::string n = lower(name);
    for (const char* c : {"skylakex", "cooperlake", "sapphirerapids"})
        if (n == c) return 2;
    for (const char* c : {"haswell", "zen"})
        if (n == c) return 1;
    return 0;
}

// The OpenBLAS core for this CPU's widest vector unit, or "" to leave OpenBLAS's own choice.
std::string wanted_openblas_core() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return "";
}

template <typename Fn>
Fn blas_symbol(const char* name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void init_runtime(int argc, char** argv) {
    (void)argc;
    if (!std::getenv("SNAPKV_BLAS_REEXEC")) {
        bool reexec = false;
        // OpenMP threads that spin after each parallel region steal the cores OpenBLAS's own
        // threads need: on 2 cores a 128-token prefill ran 9x slower. libgomp reads the policy
        // at load time, like OpenBLAS its core type.
        if (!std::getenv("OMP_WAIT_POLICY")) {
            setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
            reexec = true;
        }
        // OpenBLAS's threads busy-wait 2^28 cycles (~0.1 s) after each product before they
        // sleep. Decode right after a prefill then ran with one of them spinning on a core the
        // kernel threads use: stories260K decoded at 850-1500 tok/s in half the runs instead of
        // ~3000-4000. 2^20 cycles (~0.3 ms, like the kernel pool's spin) keeps the threads
        // awake across one prefill's back-to-back products.
        if (!std::getenv("OPENBLAS_THREAD_TIMEOUT")) {
            setenv("OPENBLAS_THREAD_TIMEOUT", "20", 1);
            reexec = true;
        }
        // The OpenBLAS kernels: SNAPKV_OPENBLAS_CORETYPE when set; otherwise the widest this CPU
        // runs. An OPENBLAS_CORETYPE found in the environment is kept unless it names narrower
        // kernels than the CPU has: a machine-wide OPENBLAS_CORETYPE=Haswell on an AVX-512 AMD
        // EPYC made SmolLM2's prefill 1.5x slower (700 against 1,050 tok/s at 512 tokens).
        const char* forced = std::getenv("SNAPKV_OPENBLAS_CORETYPE");
        const char* inherited = std::getenv("OPENBLAS_CORETYPE");
        std::string core = forced && *forced ? std::string(forced) : wanted_openblas_core();
        if (!forced && inherited && openblas_core_rank(inherited) >= openblas_core_rank(core)) core = inherited;
        auto get_core = blas_symbol<char* (*)()>("openblas_get_corename");
        // Only when OpenBLAS is the BLAS in use and runs other kernels than the ones chosen.
        if (!core.empty() && get_core && lower(get_core()) != lower(core)) {
            if (inherited && !forced)
                setenv("SNAPKV_BLAS_NOTE",
                       ("OPENBLAS_CORETYPE=" + std::string(inherited) + " from the environment replaced by " + core +
                        " (narrower than this CPU; SNAPKV_OPENBLAS_CORETYPE forces a core)")
                           .c_str(),
                       1);
            setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
            reexec = true;
        }
        if (reexec) {
            setenv("SNAPKV_BLAS_REEXEC", "1", 1);
            execv("/proc/self/exe", argv);
            // execv returned: carry on with the slower settings rather than fail.
        }
    }
    // glibc serves blocks above its mmap threshold (at most 32 MiB, adjusted as blocks are freed)
    // with fresh pages from the kernel, and gives them back on free. A prefill allocates and frees
    // the same attention-chunk and MLP buffers (tens of MiB) for every layer, so every layer
    // paid page faults for them: SmolLM2 at 2048 tokens spent 7.4 s of 13.5 s in the kernel, and
    // prefill ran at 238 tok/s instead of 340. Blocks up to 256 MiB now come from the heap and
    // are reused; the heap is trimmed when 256 MiB sit free at its top. A user's
    // MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ still decide.
    if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 256 << 20);
    if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 256 << 20);
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* t = std::getenv("SNAPKV_THREADS")) threads = std::max(1, std::atoi(t));
    if (threads < 1) threads = 1;
    at::set_num_threads(threads);
    auto set_blas_threads = blas_symbol<void (*)(int)>("openblas_set_num_threads");
    if (set_blas_threads) set_blas_threads(threads);
    set_kernel_threads(threads);
}

MachineBounds measure_machine_bounds() {
    MachineBounds b;
    b.threads = std::max(1, at::get_num_threads());
    const CpuPath path = widest_cpu_path();
    b.fma_path = cpu_path_name(path);
    b.fma_gflops = measure_fma_peak(path, b.threads);
    b.read_gbs = measure_read_bandwidth(b.threads);
    return b;
}

std::string roofline_state_path() {
    auto env = [](const char* name) {
        const char* v = std::getenv(name);
        return v && *v ? std::string(v) : std::string();
    };
    if (const std::string d = env("SNAPKV_STATE_DIR"); !d.empty()) return d + "/roofline.json";
    if (const std::string d = env("XDG_STATE_HOME"); !d.empty()) return d + "/snapkv/roofline.json";
    if (const std::string d = env("HOME"); !d.empty()) return d + "/.local/state/snapkv/roofline.json";
    return {};
}

RuntimeInfo runtime_info() {
    RuntimeInfo info;
    info.intra_op_threads = at::get_num_threads();
    info.cores = static_cast<int>(std::thread::hardware_concurrency());
    info.cpu_features = cpu_feature_list();
    info.kernel_path = cpu_path_name(active_cpu_path());
    info.torch_version = TORCH_VERSION;
    auto get_core = blas_symbol<char* (*)()>("openblas_get_corename");
    auto get_config = blas_symbol<char* (*)()>("openblas_get_config");
    if (get_core) {
        info.blas_core = get_core();
        info.blas = std::string("OpenBLAS ") + (get_config ? get_config() : "") + " (core: " + info.blas_core + ")";
        if (const char* note = std::getenv("SNAPKV_BLAS_NOTE")) info.blas += "; " + std::string(note);
    } else {
        info.blas = "not OpenBLAS (LibTorch's built-in BLAS/MKL)";
    }
    info.cuda_available = at::hasCUDA();
#ifdef SNAPKV_HAVE_CUDA
    if (info.cuda_available && c10::cuda::device_count() > 0) {
        try {
            info.cuda_device = at::cuda::getCurrentDeviceProperties()->name;
        } catch (const c10::Error&) {
            // no usable device after all: leave the name empty
        }
        info.cuda_summary = snapkv::kernels::cuda_device_summary();
    }
#endif
    return info;
}

// The allocator's statistics exist once CUDA is initialised on the device; before that (or
// without a device) it throws c10::Error, and nothing has been allocated: peak 0, nothing to reset.
void reset_peak_device_memory() {
#ifdef SNAPKV_HAVE_CUDA
    try {
        if (c10::cuda::device_count() > 0) c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
    } catch (const c10::Error&) {}
#endif
}

int64_t peak_device_memory_bytes() {
#ifdef SNAPKV_HAVE_CUDA
    try {
        if (c10::cuda::device_count() == 0) return 0;
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
        return stats.allocated_bytes[0].peak;  // [0]: StatType::AGGREGATE (all pools)
    } catch (const c10::Error&) {
        return 0;
    }
#else
    return 0;
#endif
}

std::string out_of_memory_text(const std::string& message) {
    const std::string first_line = message.substr(0, message.find('\n'));
    if (message.find("out of memory") != std::string::npos) {  // CUDA: keep LibTorch's numbers
        const size_t at = first_line.find("out of memory");
        return first_line.substr(at == std::string::npos ? 0 : at);
    }
    const std::string cpu = "tried to allocate ";
    const size_t at = message.find(cpu);
    if (message.find("can't allocate memory") == std::string::npos || at == std::string::npos) return {};
    const long long bytes = std::atoll(message.c_str() + at + cpu.size());
    std::string text = "could not allocate " + format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)";
    try {
        const AvailableMemory a = available_memory("cpu");
        if (a.bytes >= 0) text += "; " + format_bytes(a.bytes) + " is available (" + a.source + ")";
    } catch (const std::exception&) {
        // a malformed SNAPKV_MEMORY_LIMIT: the allocation failure is what matters here
    }
    return text;
}

std::string describe_exception(const std::exception& e) {
    std::string msg = e.what();
    if (const auto* c10e = dynamic_cast<const c10::Error*>(&e)) msg = c10e->what_without_backtrace();
    const std::string oom = out_of_memory_text(msg);
    if (!oom.empty()) return "out of memory: " + oom;
    return "internal error: " + msg.substr(0, msg.find('\n'));
}

}  // namespace snapkv
