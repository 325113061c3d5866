// Compressed cache building (see compressed_cache.h): slot lists from a Selection, the compressed
// and the sliding-window-trimmed caches through core/kv's gather_cache, and the kept masks.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = n_tokens, W = window, P = prefix length L - W.
#include "core/snapkv/compressed_cache.h"

#include <algorithm>
#include <numeric>

namespace snapkv {
namespace {

// Every cache head keeps [first, n_tokens).
LayerKeep suffix_keep(int64_t n_heads, int64_t first, int64_t n_tokens) {
    std::vector<int64_t> slots(static_cast<size_t>(n_tokens - first));
    std::iota(slots.begin(), slots.end(), first);
    return LayerKeep(static_cast<size_t>(n_heads), slots);
}

}  // namespace

int64_t first_visible(int64_t sliding_window, int64_t n_tokens) {
    return sliding_window > 0 ? std::max<int64_t>(0, n_tokens - sliding_window + 1) : 0;
}

std::vector<LayerKeep> keep_lists(const Selection& sel, int64_t n_tokens, int64_t n_head_kv) {
    std::vector<LayerKeep> keep(sel.layers.size());
    const int64_t W = sel.window;
    for (size_t l = 0; l < sel.layers.size(); ++l) {
        const LayerSelection& ls = sel.layers[l];
        const int64_t first = first_visible(ls.sliding_window, n_tokens);
        if (!ls.compressed) {
            // Whole, or for a sliding layer what its window reaches (one list per KV head).
            if (first > 0) keep[l] = suffix_keep(n_head_kv, first, n_tokens);
            continue;
        }
        LayerKeep& k = keep[l];
        k.resize(ls.heads.size());
        for (size_t h = 0; h < ls.heads.size(); ++h) {
            k[h] = ls.heads[h].kept;
            for (int64_t p = std::max(n_tokens - W, first); p < n_tokens; ++p) k[h].push_back(p);
        }
    }
    return keep;
}

KvCache compressed_cache(const KvCache& prefill, const Selection& sel, int64_t n_head_kv, int64_t extra_capacity) {
    TORCH_CHECK(sel.n_tokens <= prefill.n_past(), "compressed cache: the selection covers ", sel.n_tokens,
                " tokens but the cache holds ", prefill.n_past());
    const std::vector<LayerKeep> keep = keep_lists(sel, sel.n_tokens, n_head_kv);
    if (sel.n_tokens == prefill.n_past()) return gather_cache(prefill, keep, extra_capacity);
    // Query-agnostic: the selection covers the context alone (the cache's first n_tokens slots, a
    // fresh prefill's positions 0 .. n_tokens - 1); the question is fed afterwards.
    return gather_cache(prefill, keep, extra_capacity, sel.n_tokens);
}

std::vector<at::Tensor> kept_masks(const Selection& sel, int64_t n_head, at::Device device) {
    std::vector<at::Tensor> out;
    const int64_t P = sel.n_tokens - sel.window;
    for (const auto& ls : sel.layers) {
        if (!ls.compressed) {
            out.emplace_back();
            continue;
        }
        const auto hs = static_cast<int64_t>(ls.heads.size());
        const int64_t g = n_head / hs;                        // 1 in query-head mode, group size in kv-head mode
        at::Tensor mask = at::zeros({n_head, P}, at::kBool);  // [H, P]
        auto acc = mask.accessor<bool, 2>();
        for (int64_t h = 0; h < n_head; ++h)
            for (int64_t p : ls.heads[static_cast<size_t>(h / g)].kept) acc[h][p] = true;
        out.push_back(mask.to(device));
    }
    return out;
}

KvCache window_trimmed_cache(const KvCache& cache, const ModelConfig& config, int64_t n_tokens,
                             int64_t extra_capacity) {
    // A layer kept whole is copied with its room for extra_capacity at once (gather_cache's
    // copy_prefix): a clone grown afterwards would hold each layer twice while it grows.
    std::vector<LayerKeep> keep(static_cast<size_t>(config.n_layer));
    for (int64_t l = 0; l < config.n_layer; ++l) {
        const int64_t first = first_visible(config.layers[static_cast<size_t>(l)].sliding_window, n_tokens);
        if (first > 0) keep[static_cast<size_t>(l)] = suffix_keep(config.n_head_kv, first, n_tokens);
    }
    return gather_cache(cache, keep, extra_capacity);
}

}  // namespace snapkv
