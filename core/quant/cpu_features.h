// Which SIMD code path the weight kernels (qkernels.h) run on this CPU: AVX-512, AVX2+FMA+F16C or
// portable scalar C++, detected once from CPUID (with the OS's register-state support). Tests and
// benchmarks can force a path (set_cpu_path, or SNAPKV_CPU_PATH=scalar|avx2|avx512 in the
// environment); a path the CPU cannot run is refused. No kernels here, only the choice.
#pragma once

#include <string>
#include <vector>

namespace snapkv {

enum class CpuPath { Scalar, Avx2, Avx512 };

const char* cpu_path_name(CpuPath path);  // "scalar", "avx2", "avx512"
// Paths this CPU (and this build) can run, slowest first; scalar is always there.
std::vector<CpuPath> supported_cpu_paths();
bool cpu_path_supported(CpuPath path);
// The path the kernels use now: the override if one is set, else SNAPKV_CPU_PATH if set (read
// once; an unknown or unsupported value throws InputError naming it), else the fastest supported.
CpuPath active_cpu_path();
// Forces a path (InputError when this CPU cannot run it). Not thread-safe against running kernels:
// set it before work starts (tests, benchmarks).
void set_cpu_path(CpuPath path);
// Back to the environment's choice or the fastest supported path.
void clear_cpu_path();
// Parses "scalar" | "avx2" | "avx512"; InputError naming `what` and the allowed values otherwise.
CpuPath parse_cpu_path(const std::string& text, const std::string& what);

}  // namespace snapkv
