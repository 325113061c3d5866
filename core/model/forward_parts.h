// Pieces shared by LlamaModel::forward's two layer paths (llama_model.cpp: a whole prompt at once;
// long_prompt_layer.cpp: a long prompt's layer in token chunks): the stage clock of a
// ForwardProfile, ExpectedAttention's query statistics and the chunk length. Internal to core/model.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <vector>

#include "core/common/errors.h"
#include "core/model/llama_model.h"
#include "core/model/prefill_ops.h"
#include "core/model/weight_matrix.h"

namespace snapkv {

// Prompts longer than this run each layer's projections and feed-forward in chunks of this many
// tokens on the CPU in float32 (long_prompt_layer.cpp), so that no [T, F] or second [T, E]
// intermediate is held.
inline constexpr int64_t kLayerChunk = 1024;

inline void check_cancel(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
}

// q [T, H, D] pre-RoPE queries at positions pos0 .. pos0 + T - 1 (any strides) -> their QueryStats.
QueryStats query_stats(const at::Tensor& q, int64_t pos0);

// Adds the wall time between laps to the stages of a ForwardProfile, and on destruction the time
// spent dequantizing weight tiles meanwhile. Does nothing without a profile.
class StageClock {
public:
    explicit StageClock(ForwardProfile* p) : m_p(p), m_dequant0(p ? WeightMatrix::dequant_ns() : 0) {
        if (m_p) m_t = std::chrono::steady_clock::now();
    }
    StageClock(const StageClock&) = delete;
    StageClock& operator=(const StageClock&) = delete;
    void lap(ForwardProfile::Stage s) {
        if (!m_p) return;
        const auto now = std::chrono::steady_clock::now();
        m_p->ms[s] += std::chrono::duration<double, std::milli>(now - m_t).count();
        m_t = now;
    }
    ~StageClock() {
        if (m_p) m_p->dequant_ms += static_cast<double>(WeightMatrix::dequant_ns() - m_dequant0) / 1e6;
    }

private:
    ForwardProfile* m_p;
    int64_t m_dequant0;
    std::chrono::steady_clock::time_point m_t;
};

// One forward call of LlamaModel between its layers: tokens at positions pos0 .. pos0 + T - 1, the
// residual stream, RoPE rows per table (computed on first use) and the call's stage clock.
struct LlamaModel::Pass {
    explicit Pass(const ForwardOptions& o) : opts(o), clk(o.profile) {}
    const ForwardOptions& opts;
    int64_t T = 0, pos0 = 0;
    at::Tensor pos;      // [T] int64 (CPU)
    at::Tensor x;        // [T, E]
    bool fused = false;  // float32 on the CPU: core/quant's fused row loops
    std::vector<std::optional<prefill_ops::RopeTableRows>> rope_rows;
    StageClock clk;
};

// x += y, or x += rms_norm(y, post_norm) when the architecture has post-norms (Gemma 2/3), with the
// profile's laps: what both layer paths do after attention and after the feed-forward.
inline void add_residual(at::Tensor& x, at::Tensor y, const at::Tensor& post_norm, float eps, StageClock& clk) {
    if (post_norm.defined()) {
        y = model_ops::rms_norm(y, post_norm, eps);
        clk.lap(ForwardProfile::Norms);
    }
    x.add_(y);
    clk.lap(ForwardProfile::Residual);
}

}  // namespace snapkv
