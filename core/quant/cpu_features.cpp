// CPU feature detection for the weight kernels. GCC's and Clang's __builtin_cpu_supports read CPUID
// and check with XGETBV that the OS saves the YMM/ZMM registers, so a feature reported here is
// usable. Non-x86 builds have the scalar path only.
#include "core/quant/cpu_features.h"

#include <atomic>
#include <cstdlib>

#include "core/common/errors.h"

namespace snapkv {

namespace {

constexpr int kNoOverride = -1;
std::atomic<int> g_override{kNoOverride};

bool detect(CpuPath path) {
    switch (path) {
    case CpuPath::Scalar: return true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    case CpuPath::Avx2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case CpuPath::Avx512: __builtin_cpu_init(); return detect(CpuPath::Avx2) && __builtin_cpu_supports("avx512f");
#endif
    default: return false;
    }
}

CpuPath fastest() {
    static const CpuPath best = [] {
        if (detect(CpuPath::Avx512)) return CpuPath::Avx512;
        if (detect(CpuPath::Avx2)) return CpuPath::Avx2;
        return CpuPath::Scalar;
    }();
    return best;
}

// SNAPKV_CPU_PATH, read once; kNoOverride when unset or empty.
int from_environment() {
    static const int path = [] {
        const char* env = std::getenv("SNAPKV_CPU_PATH");
        if (env == nullptr || *env == '\0') return kNoOverride;
        const CpuPath p = parse_cpu_path(env, "SNAPKV_CPU_PATH");
        if (!detect(p))
            throw InputError(std::string("SNAPKV_CPU_PATH=") + env +
                             ": this CPU cannot run that path (fastest here: " + cpu_path_name(fastest()) + ")");
        return static_cast<int>(p);
    }();
    return path;
}

}  // namespace

const char* cpu_path_name(CpuPath path) {
    switch (path) {
    case CpuPath::Scalar: return "scalar";
    case CpuPath::Avx2: return "avx2";
    case CpuPath::Avx512: return "avx512";
    }
    return "?";
}

CpuPath parse_cpu_path(const std::string& text, const std::string& what) {
    for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512})
        if (text == cpu_path_name(p)) return p;
    throw InputError(what + " '" + text + "' is not a CPU path (scalar, avx2, avx512)");
}

std::vector<CpuPath> supported_cpu_paths() {
    std::vector<CpuPath> out;
    for (CpuPath p : {CpuPath::Scalar, CpuPath::Avx2, CpuPath::Avx512})
        if (detect(p)) out.push_back(p);
    return out;
}

bool cpu_path_supported(CpuPath path) { return detect(path); }

CpuPath active_cpu_path() {
    const int forced = g_override.load(std::memory_order_relaxed);
    if (forced != kNoOverride) return static_cast<CpuPath>(forced);
    const int env = from_environment();
    return env != kNoOverride ? static_cast<CpuPath>(env) : fastest();
}

void set_cpu_path(CpuPath path) {
    if (!detect(path))
        throw InputError(std::string("CPU path '") + cpu_path_name(path) +
                         "' cannot run on this CPU (fastest here: " + cpu_path_name(fastest()) + ")");
    g_override.store(static_cast<int>(path), std::memory_order_relaxed);
}

void clear_cpu_path() { g_override.store(kNoOverride, std::memory_order_relaxed); }

}  // namespace snapkv
