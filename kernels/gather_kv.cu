// gather_kv: copies the kept K (or V) rows of every head into a compressed cache, repeating each
// source head to its group for query-head SnapKV; padding slots (index outside the source) become
// zero rows. One warp per destination row, moving 16, 8, 4 or 2 bytes per lane and step, whatever
// the alignment allows; blocks over (kept rows, destination head). The CPU/LibTorch reference is core/kv gather_cache. It does not gather the
// slot positions (a small int64 gather core does with LibTorch).
//
// Dimensions: Hsrc = source heads, Hdst = Hsrc * repeat, S = valid source slots, M = kept slots,
// D = head_dim.
#include <algorithm>

#include "kernels/cuda_util.cuh"

namespace snapkv::kernels {
namespace {

using namespace detail;

constexpr int kRowsPerBlock = 8;  // warps per block, one destination row each

struct Params {
    const void* src;       // [Hsrc, src_rows, D]
    const int64_t* index;  // [Hdst, M]
    void* dst;             // [Hdst, dst_rows, D]
    int64_t n_keep;        // M
    int64_t repeat;
    int64_t n_slots;  // S
    int64_t src_rows;
    int64_t dst_rows;
    int64_t units;  // vector units per row
};

template <class V>
__device__ __forceinline__ V zero_unit() {
    return V(0);
}
template <>
__device__ __forceinline__ uint2 zero_unit<uint2>() {
    return make_uint2(0, 0);
}
template <>
__device__ __forceinline__ uint4 zero_unit<uint4>() {
    return make_uint4(0, 0, 0, 0);
}

template <class V>
__global__ void __launch_bounds__(32 * kRowsPerBlock) gather_rows_kernel(Params p) {
    const V* src = static_cast<const V*>(p.src);
    V* dst = static_cast<V*>(p.dst);
    const int h = blockIdx.y;                       // destination head
    const int hs = h / static_cast<int>(p.repeat);  // its source head
    const int64_t* index = p.index + h * p.n_keep;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
    for (int64_t m = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y; m < p.n_keep; m += stride) {
        const int64_t slot = index[m];
        V* d = dst + (h * p.dst_rows + m) * p.units;
        if (slot < 0 || slot >= p.n_slots) {
            for (int64_t c = threadIdx.x; c < p.units; c += 32) d[c] = zero_unit<V>();
            continue;
        }
        const V* s = src + (hs * p.src_rows + slot) * p.units;
        for (int64_t c = threadIdx.x; c < p.units; c += 32) d[c] = s[c];
    }
}

void check_shape(const GatherShape& s) {
    const char* fn = "gather_kv";
    if (s.n_head_src < 1 || s.head_dim < 1 || s.repeat < 1)
        throw_arg(fn, "n_head_src " + std::to_string(s.n_head_src) + ", head_dim " + std::to_string(s.head_dim) +
                          ", repeat " + std::to_string(s.repeat) + ": all must be at least 1");
    if (s.n_head_src * s.repeat > 65535)
        throw_arg(fn, "n_head_src * repeat = " + std::to_string(s.n_head_src * s.repeat) +
                          " destination heads is over the grid limit 65535");
    if (s.n_slots < 0 || s.n_keep < 0)
        throw_arg(fn, "n_slots " + std::to_string(s.n_slots) + " and n_keep " + std::to_string(s.n_keep) +
                          " must not be negative");
    if (s.src_rows != 0 && s.src_rows < s.n_slots)
        throw_arg(fn, "src_rows " + std::to_string(s.src_rows) + " is less than n_slots " + std::to_string(s.n_slots));
    if (s.dst_rows != 0 && s.dst_rows < s.n_keep)
        throw_arg(fn, "dst_rows " + std::to_string(s.dst_rows) + " is less than n_keep " + std::to_string(s.n_keep));
}

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

void gather_kv(const GatherShape& shape, DType dtype, const void* src, const int64_t* index, void* dst, void* stream) {
    const char* fn = "gather_kv";
    check_shape(shape);
    const int64_t n_rows = shape.n_head_src * shape.repeat * shape.n_keep;
    if (n_rows == 0) return;
    if (shape.n_slots > 0) require_device_pointer(src, fn, "src");
    require_device_pointer(index, fn, "index");
    require_device_pointer(dst, fn, "dst");

    const size_t elem = dtype == DType::Float32 ? 4 : 2;
    const size_t row_bytes = static_cast<size_t>(shape.head_dim) * elem;
    const int64_t src_rows = shape.src_rows ? shape.src_rows : shape.n_slots;
    const int64_t dst_rows = shape.dst_rows ? shape.dst_rows : shape.n_keep;
    // The widest unit that divides a row and both base addresses.
    size_t unit = 16;
    while (unit > 2 && (row_bytes % unit != 0 || !aligned(src, unit) || !aligned(dst, unit))) unit /= 2;

    Params p{};
    p.src = src;
    p.index = index;
    p.dst = dst;
    p.n_keep = shape.n_keep;
    p.repeat = shape.repeat;
    p.n_slots = shape.n_slots;
    p.src_rows = src_rows;
    p.dst_rows = dst_rows;
    p.units = static_cast<int64_t>(row_bytes / unit);

    const int dev = current_device(fn);
    const int64_t want = (shape.n_keep + kRowsPerBlock - 1) / kRowsPerBlock;
    const int64_t n_dst = shape.n_head_src * shape.repeat;
    const auto blocks = static_cast<unsigned int>(
        std::min<int64_t>(want, std::max<int64_t>(1, static_cast<int64_t>(sm_count(dev, fn)) * 16 / n_dst)));
    const dim3 grid(blocks, static_cast<unsigned int>(n_dst));
    const dim3 block(32, kRowsPerBlock);
    const cudaStream_t st = as_stream(stream);
    switch (unit) {
    case 16: gather_rows_kernel<uint4><<<grid, block, 0, st>>>(p); break;
    case 8: gather_rows_kernel<uint2><<<grid, block, 0, st>>>(p); break;
    case 4: gather_rows_kernel<uint32_t><<<grid, block, 0, st>>>(p); break;
    default: gather_rows_kernel<uint16_t><<<grid, block, 0, st>>>(p); break;
    }
    check_launch(std::string("gather_kv: launch (") + dtype_name(dtype) + ")");
}

}  // namespace snapkv::kernels
