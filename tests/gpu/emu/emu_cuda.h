// CPU emulation of the CUDA features kernels/ uses, for checking kernel logic on a machine without
// a GPU (tests/gpu/emu/run.sh): one std::thread per CUDA thread, blocks run one after another,
// std::barrier for __syncthreads, a per-warp exchange for shuffles and __match_any_sync. It is
// slow (thread creation and barriers), knows nothing of memory ordering, occupancy or timing, and
// is never a substitute for the GPU run. Forced-included before each preprocessed kernel file.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __shared__
#define __shared__ static  // blocks run one at a time, so one static object per kernel is enough
#undef __launch_bounds__
#define __launch_bounds__(...)

using std::isnan;
using std::max;
using std::min;

namespace emu {

struct Warp {
    std::barrier<> bar{32};
    uint64_t vals[32];
};

struct Block {
    std::unique_ptr<std::barrier<>> bar;
    std::vector<std::unique_ptr<Warp>> warps;
    std::vector<char> smem;  // dynamic shared memory
};

inline thread_local dim3 t_tid, t_bid, t_bdim, t_gdim;
inline thread_local Block* t_block = nullptr;

inline int linear_tid() { return t_tid.x + t_tid.y * t_bdim.x + t_tid.z * t_bdim.x * t_bdim.y; }
inline Warp& warp() { return *t_block->warps[linear_tid() / 32]; }

template <class T>
T* dyn_smem() {
    return reinterpret_cast<T*>(t_block->smem.data());
}

// Every lane publishes v, then reads lane src's value.
inline uint64_t exchange(uint64_t v, int src) {
    Warp& w = warp();
    w.vals[linear_tid() % 32] = v;
    w.bar.arrive_and_wait();
    const uint64_t r = w.vals[src & 31];
    w.bar.arrive_and_wait();
    return r;
}

// kernel<<<grid, block, smem, stream>>>(args...), rewritten by prep.py.
template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t, A&&... args) {
    const unsigned n = block.x * block.y * block.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                Block b;
                b.bar = std::make_unique<std::barrier<>>(n);
                for (unsigned w = 0; w < (n + 31) / 32; ++w) b.warps.push_back(std::make_unique<Warp>());
                b.smem.assign(smem + 16, 0x7f);  // not zero: uninitialised reads show up
                std::vector<std::thread> threads;
                for (unsigned t = 0; t < n; ++t)
                    threads.emplace_back([&, t] {
                        t_block = &b;
                        t_bdim = block;
                        t_gdim = grid;
                        t_bid = dim3(bx, by, bz);
                        t_tid = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
                        kernel(args...);
                    });
                for (auto& th : threads) th.join();
            }
}

}  // namespace emu

#define threadIdx emu::t_tid
#define blockIdx emu::t_bid
#define blockDim emu::t_bdim
#define gridDim emu::t_gdim

inline void __syncthreads() { emu::t_block->bar->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned, float v, int off) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    const auto r = static_cast<uint32_t>(emu::exchange(u, (emu::linear_tid() % 32) ^ off));
    float f;
    std::memcpy(&f, &r, 4);
    return f;
}

inline int __shfl_up_sync(unsigned, int v, int off) {
    const int lane = emu::linear_tid() % 32;
    const int src = lane - off < 0 ? lane : lane - off;
    return static_cast<int>(static_cast<uint32_t>(emu::exchange(static_cast<uint32_t>(v), src)));
}

inline unsigned __match_any_sync(unsigned, unsigned v) {
    emu::Warp& w = emu::warp();
    w.vals[emu::linear_tid() % 32] = v;
    w.bar.arrive_and_wait();
    unsigned m = 0;
    for (int i = 0; i < 32; ++i)
        if (w.vals[i] == v) m |= 1u << i;
    w.bar.arrive_and_wait();
    return m;
}

inline unsigned atomicAdd(unsigned* a, unsigned v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
inline uint32_t __float_as_uint(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }

// cuda_runtime.h declares this template only for nvcc.
template <class T>
cudaError_t cudaFuncSetAttribute(T* f, cudaFuncAttribute a, int v) {
    return cudaFuncSetAttribute(reinterpret_cast<const void*>(f), a, v);
}
