// Session, selection: retunes from the captured tensors (select), heatmap rows (window_attention),
// the bytes of a full and a compressed cache, and the retune benchmark. Runs no model and keeps
// no state of its own beyond the scorers the prefill built.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Lc = context tokens, W = window,
// S = cache slots, V = n_vocab, D = head_dim.
#include <algorithm>
#include <cstdio>

#include "core/common/units.h"
#include "core/session/session_impl.h"
#include "core/snapkv/compressed_cache.h"
#include "core/snapkv/retune_bench.h"
#include "core/snapkv/selector.h"

namespace snapkv {

Selection Session::select(const SelectionParams& params, bool query_agnostic, bool with_scores) {
    return snapkv::select(m->scorers(query_agnostic), params, with_scores);
}

std::vector<float> Session::window_attention(int64_t layer, int64_t head, int64_t window, bool query_agnostic) {
    const auto& sc = m->scorers(query_agnostic);
    if (layer < 0 || layer >= static_cast<int64_t>(sc.size()))
        throw InputError("layer " + std::to_string(layer) + " out of range (0.." + std::to_string(sc.size() - 1) + ")");
    if (head < 0 || head >= sc[static_cast<size_t>(layer)].n_head())
        throw InputError("head " + std::to_string(head) + " out of range (0.." +
                         std::to_string(sc[static_cast<size_t>(layer)].n_head() - 1) + ")");
    at::Tensor a = sc[static_cast<size_t>(layer)].window_attention(head, window).to(at::kCPU).contiguous();  // [W, L]
    return std::vector<float>(a.data_ptr<float>(), a.data_ptr<float>() + a.numel());
}

std::pair<int64_t, int64_t> Session::kv_bytes(const Selection& sel) const {
    m->require_prefill();
    const ModelConfig& c = m->model->config();
    // K and V of one token in one head, as the prefill's cache stores them (its type's real bytes).
    const KvCache& cache = m->state->cache;
    const int64_t per_token_head = 2 * (cache.n_layer() > 0
                                            ? cache.layer(0).row_bytes()
                                            : c.head_dim *
                                                  static_cast<int64_t>(c10::elementSize(m->model->options().dtype)));
    const int64_t L = sel.n_tokens;
    int64_t full = 0, comp = 0;
    for (const auto& ls : sel.layers) {
        // A sliding-window layer needs only what the next token can see, compressed or not: both
        // sides count that, so selecting inside a window claims no memory the layer never used.
        const int64_t first = first_visible(ls.sliding_window, L);
        const int64_t layer_full = c.n_head_kv * (L - first) * per_token_head;
        full += layer_full;
        if (!ls.compressed) {
            comp += layer_full;
            continue;
        }
        const int64_t window = L - std::max(L - sel.window, first);
        for (const auto& h : ls.heads) comp += (static_cast<int64_t>(h.kept.size()) + window) * per_token_head;
    }
    return {full, comp};
}

std::string Session::retune_benchmark(const SelectionParams& base) {
    const std::vector<LayerScorer>& scorers = m->scorers(false);
    // What capture costs next to what any run holds: the scorers' caches are meant to stay within
    // 25 % of weights + full KV at 8K tokens (they once reached ~1 GB for SmolLM2 at 8K).
    const int64_t weights = m->model->weight_bytes();
    const int64_t kv = m->summary.kv_bytes_full;
    const int64_t capture = capture_bytes(*m->state, scorers);
    char line[256];
    std::snprintf(line, sizeof line,
                  "capture overhead %s (window queries, H2O scores, scorer caches) = %.1f%% of weights %s + "
                  "full KV cache %s\n",
                  format_bytes(capture).c_str(), 100.0 * double(capture) / double(std::max<int64_t>(weights + kv, 1)),
                  format_bytes(weights).c_str(), format_bytes(kv).c_str());
    return line + run_retune_benchmark(scorers, base);
}
}  // namespace snapkv
