// The 8-bit-input products of qkernels_q8_avx2.h built with AVX-512 VNNI, BW and VL (this file
// only), for the AVX-512 path on CPUs that have them: the same 256-bit kernels with fused byte and
// word multiply-adds (vpdpbusd, vpdpwssd) and mask-to-byte moves, and the same integers, so the
// same results as every other path.
#include "core/quant/qkernels_q8_avx2.h"

static_assert(SNAPKV_Q8_VNNI, "qkernels_q8_vnni.cpp needs -mavx512vnni -mavx512vl -mavx512bw");

namespace snapkv::quant_detail {

void fill_q8_vnni(KernelTable& t) { fill_q8(t); }

}  // namespace snapkv::quant_detail
