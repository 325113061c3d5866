// This machine's limits for a roofline, measured, not looked up: the float32 FMA peak (every
// thread running independent fused multiply-add chains of one vector width) and the memory read
// bandwidth (every thread summing its share of a buffer far larger than the caches, STREAM-like).
// `snapkv bench --roofline` puts each phase's speed next to them; bench_attention prints the peak.
// No LibTorch.
#pragma once

#include <cstddef>

#include "core/quant/cpu_features.h"

namespace snapkv {

// GFLOP/s of `threads` threads running 12 FMA chains of the path's vector width (256-bit for
// avx2, 512-bit for avx512), best of 3 runs of about `seconds` each (a shorter run reads low while
// the clock ramps up). 0 for the scalar path (no vector FMA to measure).
double measure_fma_peak(CpuPath path, int threads, double seconds = 0.4);

// GB/s (1e9 bytes) read by `threads` threads, each summing its contiguous share of a buffer of
// `bytes` bytes (written once first, so its pages exist), best of 5 passes.
double measure_read_bandwidth(int threads, size_t bytes = size_t(1) << 30);

// The widest vector path this CPU supports (avx512, else avx2, else scalar): the FMA peak's.
CpuPath widest_cpu_path();

}  // namespace snapkv
