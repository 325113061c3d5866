// A fixed set of persistent worker threads for the weight kernels: run(fn) calls fn(i) for every
// thread index i (0 on the caller) and returns when all have finished. After a job marked `spin`
// the workers poll for the next one for a short while instead of sleeping, because a decode step
// issues its matrix-vector products back to back and waking a sleeping thread costs more than
// one product; after other jobs (prefill) they sleep at once so BLAS's own threads get the cores.
// One job at a time: a run() that finds the pool busy (another thread, or a call from inside a
// job) runs every index on its caller. No LibTorch, no work splitting (callers split).
#pragma once

#include <functional>
#include <memory>

namespace snapkv {

class KernelPool {
public:
    explicit KernelPool(int n_threads);  // n_threads >= 1, the caller included
    ~KernelPool();
    KernelPool(const KernelPool&) = delete;
    KernelPool& operator=(const KernelPool&) = delete;

    int size() const;
    // fn must not throw.
    void run(const std::function<void(int)>& fn, bool spin);

private:
    struct State;
    std::unique_ptr<State> m;
};

}  // namespace snapkv
