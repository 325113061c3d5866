// See runtime.h. The re-exec happens at most once (guarded by SNAPKV_BLAS_REEXEC) and never when
// the user set OPENBLAS_CORETYPE, so a wrong guess can always be overridden from the shell.
#include "core/session/runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <c10/core/DeviceType.h>
#include <torch/version.h>

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

// The OpenBLAS core for this CPU's widest vector unit, or "" to leave OpenBLAS's own choice.
std::string wanted_openblas_core() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
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
        if (!std::getenv("OPENBLAS_CORETYPE")) {
            const std::string core = wanted_openblas_core();
            auto get_core = blas_symbol<char* (*)()>("openblas_get_corename");
            auto lower = [](std::string s) {
                for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                return s;
            };
            // Only when OpenBLAS is the BLAS in use and picked other kernels than the CPU has.
            if (!core.empty() && get_core && lower(get_core()) != lower(core)) {
                setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
                reexec = true;
            }
        }
        if (reexec) {
            setenv("SNAPKV_BLAS_REEXEC", "1", 1);
            execv("/proc/self/exe", argv);
            // execv returned: carry on with the slower settings rather than fail.
        }
    }
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* t = std::getenv("SNAPKV_THREADS")) threads = std::max(1, std::atoi(t));
    if (threads < 1) threads = 1;
    at::set_num_threads(threads);
    auto set_blas_threads = blas_symbol<void (*)(int)>("openblas_set_num_threads");
    if (set_blas_threads) set_blas_threads(threads);
}

RuntimeInfo runtime_info() {
    RuntimeInfo info;
    info.intra_op_threads = at::get_num_threads();
    info.cores = static_cast<int>(std::thread::hardware_concurrency());
    info.cpu_features = cpu_feature_list();
    info.torch_version = TORCH_VERSION;
    auto get_core = blas_symbol<char* (*)()>("openblas_get_corename");
    auto get_config = blas_symbol<char* (*)()>("openblas_get_config");
    if (get_core) {
        info.blas_core = get_core();
        info.blas = std::string("OpenBLAS ") + (get_config ? get_config() : "") +
                    " (core: " + info.blas_core + ")";
    } else {
        info.blas = "not OpenBLAS (LibTorch's built-in BLAS/MKL)";
    }
    info.cuda_available = at::hasCUDA();
    return info;
}

}  // namespace snapkv
