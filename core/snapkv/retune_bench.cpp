// The retune benchmark: a fixed script of parameter changes, each timed with a steady clock: the
// first call after the change (what a user waits for: a new window recomputes the rows above its
// checkpoint, see layer_scorer.h) and the median over a few repeats (the scorers then hold that
// window's votes, so repeats time pooling, ranking and the kept mass).
#include "core/snapkv/retune_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/errors.h"
#include "core/snapkv/policy_table.h"
#include "core/snapkv/selector.h"

namespace snapkv {
namespace {

double median_ms(int repeats, const std::function<void()>& f) {
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

struct Step {
    std::string name;
    std::function<void(SelectionParams&)> change;
};

}  // namespace

std::string run_retune_benchmark(const std::vector<LayerScorer>& layers, const SelectionParams& base, int repeats) {
    repeats = std::max(repeats, 1);
    std::string out;
    char line[256];
    if (layers.empty()) return "retune benchmark: no layers\n";
    const LayerScorer& s0 = layers.front();
    double cache_mb = 0.0;
    for (const auto& l : layers) cache_mb += double(l.cache_bytes()) / (1024.0 * 1024.0);
    std::snprintf(line, sizeof line,
                  "retune benchmark: L=%lld, layers=%zu, H=%lld, Hkv=%lld, D=%lld, Wmax=%lld, "
                  "checkpoint stride %lld, scorer cache %.1f MiB; first call and median of %d runs\n",
                  static_cast<long long>(s0.n_tokens()), layers.size(), static_cast<long long>(s0.n_head()),
                  static_cast<long long>(s0.n_head_kv()), static_cast<long long>(s0.head_dim()),
                  static_cast<long long>(s0.max_window()), static_cast<long long>(s0.checkpoint_stride()), cache_mb,
                  repeats);
    out += line;
    std::snprintf(line, sizeof line, "%-22s %10s %14s %16s  %s\n", "step", "first ms", "select median ms",
                  "positions ms", "kept per head (layer 0)");
    out += line;

    auto set_policy = [](Policy p) { return [p](SelectionParams& q) { q.policy = p; }; };
    auto set_window = [](int64_t w) { return [w](SelectionParams& q) { q.window = w; }; };
    std::vector<Step> steps = {
        {"base", [](SelectionParams&) {}},
        {"kernel 5", [](SelectionParams& q) { q.kernel = 5; }},
        {"kernel 7", [](SelectionParams& q) { q.kernel = 7; }},
        {"kernel 9", [](SelectionParams& q) { q.kernel = 9; }},
        {"pooling avg", [](SelectionParams& q) { q.pooling = Pooling::Avg; }},
        {"pooling max", [](SelectionParams& q) { q.pooling = Pooling::Max; }},
        {"budget 1024",
         [](SelectionParams& q) {
             q.budget = 1024;
             q.ratio = -1.0;
         }},
        {"budget 2048",
         [](SelectionParams& q) {
             q.budget = 2048;
             q.ratio = -1.0;
         }},
        {"budget " + std::to_string(base.budget) + " (base)",
         [b = base.budget, r = base.ratio](SelectionParams& q) {
             q.budget = b;
             q.ratio = r;
         }},
        {"window 32", set_window(32)},
        {"window 64", set_window(64)},
        {"window 128", set_window(128)},
        {"window 47", set_window(47)},    // 15 rows above a checkpoint (stride 32)
        {"window 127", set_window(127)},  // 31 rows above one: the most recomputed
        {"window " + std::to_string(base.window) + " (base)", set_window(base.window)},
    };
    // Every other policy of the table, then back to the base's. A policy whose scores prefill
    // makes ahead (captures of its own) and that reads n_sink also retunes n_sink: those scores
    // are made for the default n_sink only, so a new n_sink is a first call of its own
    // (ExpectedAttention's: 10 is the farthest from both its anchors, 4 and 16).
    auto set_sink = [](int64_t n) { return [n](SelectionParams& q) { q.n_sink = n; }; };
    for (Policy p : all_policies()) {
        if (p == base.policy) continue;
        steps.push_back({"policy " + policy_name(p), set_policy(p)});
        const PolicyInfo& info = policy_info(p);
        if (info.captures == 0 || !info.reads_param(kReadsSink)) continue;
        for (int64_t n : {int64_t(0), int64_t(2), int64_t(8), int64_t(10), int64_t(16)})
            steps.push_back({"  n_sink " + std::to_string(n), set_sink(n)});
        steps.push_back({"  n_sink " + std::to_string(base.n_sink) + " (base)", set_sink(base.n_sink)});
    }
    steps.push_back({"policy " + policy_name(base.policy), set_policy(base.policy)});
    steps.push_back({"gqa kv-head", [](SelectionParams& q) { q.gqa = GqaMode::KvHead; }});
    steps.push_back({"gqa query-head", [](SelectionParams& q) { q.gqa = GqaMode::QueryHead; }});

    SelectionParams params = base;
    for (const Step& step : steps) {
        SelectionParams next = params;
        step.change(next);
        try {
            Selection sel;
            const double first = median_ms(1, [&] { sel = select(layers, next, true); });
            const double ms = median_ms(repeats, [&] { sel = select(layers, next, true); });
            std::string positions = "-";
            if (!policy_info(next.policy).ragged) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.1f", median_ms(repeats, [&] { select_positions(layers, next); }));
                positions = buf;
            }
            std::string kept;
            const auto& heads = sel.layers.front().heads;
            size_t lo = heads.empty() ? 0 : heads.front().kept.size(), hi = lo;
            for (const auto& h : heads) {
                lo = std::min(lo, h.kept.size());
                hi = std::max(hi, h.kept.size());
            }
            kept = lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
            if (!sel.compressed) kept += " (not compressed)";
            std::snprintf(line, sizeof line, "%-22s %10.1f %14.1f %16s  %s\n", step.name.c_str(), first, ms,
                          positions.c_str(), kept.c_str());
            out += line;
            params = next;
        } catch (const InputError& e) {
            out += step.name + ": skipped (" + e.what() + ")\n";
        }
    }
    return out;
}

}  // namespace snapkv
