// KernelPool: a generation counter announces each job; workers spin on it (with a pause
// instruction) for kSpin after a spinning job, then sleep on a condition variable. The caller
// notifies only when some worker sleeps; sleepers and generation are sequentially consistent so
// that a worker going to sleep and a caller posting a job always see each other (Dekker's rule).
#include "core/quant/kernel_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace snapkv {

namespace {

// How long an idle worker polls after a decode product: longer than the gap between two
// products of one token (norms, RoPE, attention), shorter than anything a user would notice.
constexpr auto kSpin = std::chrono::microseconds(300);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

}  // namespace

struct KernelPool::State {
    int n_threads = 1;
    std::vector<std::thread> workers;
    std::mutex busy;  // held by the caller of run() for the whole job
    std::atomic<uint64_t> generation{0};
    std::atomic<int> pending{0};
    std::atomic<int> sleepers{0};
    std::atomic<bool> spin{false};
    std::atomic<bool> stop{false};
    const std::function<void(int)>* job = nullptr;
    std::mutex sleep_mutex;
    std::condition_variable wake;

    void worker(int index) {
        uint64_t seen = 0;
        bool spin_next = false;
        for (;;) {
            const auto deadline = std::chrono::steady_clock::now() + kSpin;
            uint64_t g = generation.load();
            for (int i = 0; g == seen && spin_next; ++i) {
                cpu_relax();
                g = generation.load();
                if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
            }
            if (g == seen) {
                std::unique_lock<std::mutex> lock(sleep_mutex);
                sleepers.fetch_add(1);
                wake.wait(lock, [&] { return generation.load() != seen || stop.load(); });
                sleepers.fetch_sub(1);
                g = generation.load();
            }
            if (stop.load()) return;
            seen = g;
            spin_next = spin.load(std::memory_order_relaxed);
            (*job)(index);
            pending.fetch_sub(1, std::memory_order_release);
        }
    }
};

KernelPool::KernelPool(int n_threads) : m(std::make_unique<State>()) {
    m->n_threads = n_threads < 1 ? 1 : n_threads;
    for (int i = 1; i < m->n_threads; ++i) m->workers.emplace_back([this, i] { m->worker(i); });
}

KernelPool::~KernelPool() {
    {
        std::lock_guard<std::mutex> lock(m->sleep_mutex);
        m->stop.store(true);
    }
    m->wake.notify_all();
    for (std::thread& t : m->workers) t.join();
}

int KernelPool::size() const { return m->n_threads; }

void KernelPool::run(const std::function<void(int)>& fn, bool spin) {
    std::unique_lock<std::mutex> busy(m->busy, std::try_to_lock);
    if (m->n_threads == 1 || !busy.owns_lock()) {
        for (int i = 0; i < m->n_threads; ++i) fn(i);
        return;
    }
    m->job = &fn;
    m->spin.store(spin, std::memory_order_relaxed);
    m->pending.store(m->n_threads - 1, std::memory_order_relaxed);
    m->generation.fetch_add(1);  // seq_cst: publishes job, spin and pending too
    if (m->sleepers.load() > 0) {
        std::lock_guard<std::mutex> lock(m->sleep_mutex);
        m->wake.notify_all();
    }
    fn(0);
    for (int i = 0; m->pending.load(std::memory_order_acquire) != 0; ++i) {
        if (i < 4096) {
            cpu_relax();
        } else {
            std::this_thread::yield();  // a worker was descheduled: let it run
        }
    }
}

}  // namespace snapkv
