// See memory_estimate.h. Shapes per layer, with T = tokens of the forward call, S = cache slots,
// E = n_embd, F = n_ff, H = n_head, Hkv = n_head_kv, D = head_dim, V = n_vocab, Wmax = captured
// window, Nc = scorer checkpoints, Sc = checkpoint stride, Q = attention query chunk (512).
#include "core/session/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifdef SNAPKV_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>  // cudaMemGetInfo (cuda_runtime_api.h)
#endif

#include "core/common/errors.h"
#include "core/snapkv/layer_scorer.h"
#include "core/snapkv/policy_table.h"

namespace snapkv {
namespace {

// Saturating arithmetic: absurd requests (2^62 tokens) must give a huge estimate, not a wrap.
int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return INT64_MAX;
    return r;
}

int64_t sat_add(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return INT64_MAX;
    return r;
}

int64_t prod(std::initializer_list<int64_t> xs) {
    int64_t r = 1;
    for (int64_t x : xs) r = sat_mul(r, std::max<int64_t>(x, 0));
    return r;
}

constexpr int64_t kAttnChunk = 512;    // ForwardOptions::attn_chunk
constexpr int64_t kLayerChunk = 1024;  // core/model/forward_parts.h: a longer call runs in chunks

// "12G", "512M", "1048576" -> bytes; -1 when it does not parse.
int64_t parse_size(const std::string& s) {
    if (s.empty()) return -1;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || !(v >= 0) || !std::isfinite(v)) return -1;
    std::string unit(end);
    if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
    if (!unit.empty() && (unit.back() == 'i')) unit.pop_back();
    double mult = 1;
    if (unit.empty()) mult = 1;
    else if (unit == "K" || unit == "k") mult = 1024.0;
    else if (unit == "M" || unit == "m") mult = 1024.0 * 1024;
    else if (unit == "G" || unit == "g") mult = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "t") mult = 1024.0 * 1024 * 1024 * 1024;
    else return -1;
    const double bytes = v * mult;
    return bytes >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(bytes);
}

// MemoryEstimate::decode of a grid cell (RunShape::answer_tokens > 0), with A = answer tokens,
// N = A - 1 tokens fed back, L = T prompt tokens, row = bytes of one head's K or V row as stored.
// Session::decode_reference: a copy of the full cache, each sliding layer trimmed to the w - 1
// slots its window still reaches (window_trimmed_cache), with room for A more; while it decodes,
// the attention marks [H, L] bool per layer and fed token, the first kl_steps logits [V], and a
// step's logits and probed probabilities [H, S] per layer (+ a layer's K and V decoded to float32
// for a cache type other than f32); at its end the marks are stacked to [N, H, L] (both alive).
// Then compare_many_to_reference: the marks and logits stay (the reference), next to every
// compressed cache (its kept tokens per head, each layer at most what its window reaches, + fed
// + A slots), its kept masks [H, L] bool per layer, and a logits row per run of the batched step.
// The batches are split at a quarter of the free memory; all runs at once is the bound counted.
int64_t decode_bytes(const ModelConfig& c, const RunShape& run, int64_t L, int64_t row, bool decoded) {
    const int64_t A = run.answer_tokens, n_layer = c.n_layer, H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim;
    const int64_t slot = sat_add(prod({2, row}), 8);  // K, V and the position of one head's slot
    const auto reach = [&](int64_t l) {               // prompt slots layer l still reads
        const int64_t w = static_cast<size_t>(l) < c.layers.size() ? c.layers[static_cast<size_t>(l)].sliding_window
                                                                   : 0;
        return w > 0 ? std::min(L, std::max<int64_t>(w - 1, 0)) : L;
    };
    // A cache of `heads` heads per layer starting from min(kept, reach) slots, with room for `more`.
    const auto cache = [&](int64_t heads, int64_t kept, int64_t more, int64_t* longest) {
        int64_t bytes = 0;
        for (int64_t l = 0; l < n_layer; ++l) {
            const int64_t s = sat_add(std::min(kept, reach(l)), more);
            if (longest) *longest = std::max(*longest, s);
            bytes = sat_add(bytes, prod({heads, s, slot}));
        }
        return bytes;
    };
    const int64_t logits_row = prod({c.n_vocab, 4});
    const int64_t marks = prod({n_layer, H, std::max<int64_t>(A - 1, 0), L});
    const int64_t kept_logits = prod({std::clamp<int64_t>(run.kl_steps, 0, A), logits_row});
    int64_t full_slots = 0;
    const int64_t full = cache(Hkv, L, A, &full_slots);
    int64_t step = sat_add(logits_row, prod({n_layer, H, full_slots, 4}));
    if (decoded) step = sat_add(step, prod({2, Hkv, full_slots, D, 4}));
    const int64_t reference = std::max(sat_add(sat_add(full, marks), sat_add(kept_logits, step)),
                                       sat_add(prod({2, marks}), kept_logits));

    int64_t compressed = sat_add(marks, kept_logits), scratch = 0;
    for (const DecodeCacheShape& r : run.compressed) {
        const int64_t heads = r.query_heads ? H : Hkv;
        int64_t slots = 0;
        compressed = sat_add(compressed, cache(heads, r.kept, sat_add(r.fed, A), &slots));
        if (r.kept < L) compressed = sat_add(compressed, prod({n_layer, H, L}));
        compressed = sat_add(compressed, logits_row);
        if (decoded) scratch = std::max(scratch, prod({2, heads, slots, D, 4}));
    }
    compressed = sat_add(compressed, scratch);
    return run.compressed.empty() ? reference : std::max(reference, compressed);
}

}  // namespace

std::string MemoryEstimate::breakdown() const {
    std::string s = kv_type == KvType::F32 ? std::string("KV cache ")
                                           : std::string("KV cache (") + kv_type_name(kv_type) + ") ";
    s += format_bytes(kv_cache);
    if (capture > 0) s += ", capture " + format_bytes(capture);
    if (scorer > 0) s += ", scorer " + format_bytes(scorer);
    if (key_copies > 0) s += ", float32 key copies " + format_bytes(key_copies);
    s += ", activations " + format_bytes(activations);
    if (decode > 0) s += ", decodes " + format_bytes(decode);
    return s;
}

MemoryEstimate estimate_memory(const ModelConfig& c, int64_t weight_bytes, int64_t elem_bytes, const RunShape& run,
                               const ForwardPath& path) {
    MemoryEstimate m;
    m.weights = weight_bytes;
    m.kv_type = run.kv_type;
    const int64_t T = std::max<int64_t>(run.n_tokens, 1);
    const int64_t S = std::max(run.cache_slots, T);
    const int64_t n_layer = c.n_layer, H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim;

    // KV cache (kv_cache.cpp): K and V [Hkv, S] rows of D values as stored (f32: the model dtype;
    // f16/bf16: 2 bytes a value; q8_0: int8 quants and an f16 scale per 32 values) + positions
    // [Hkv, S] int64; without values kept (an analysis) only one layer's V exists at a time.
    const bool decoded = run.kv_type != KvType::F32;
    const int64_t row = decoded ? kv_row_bytes(run.kv_type, D) : prod({D, elem_bytes});
    const int64_t one_side = prod({Hkv, S, row});  // K or V of one layer
    const int64_t per_layer_kv = sat_add(prod({2, one_side}), prod({Hkv, S, 8}));
    m.kv_cache = prod({std::max<int64_t>(run.caches, 1), n_layer, per_layer_kv});
    if (!run.values_kept) m.kv_cache = sat_add(prod({n_layer, sat_add(one_side, prod({Hkv, S, 8}))}), one_side);
    // A stored type other than f32: the running layer's attention reads its K and V decoded to
    // float32 scratch [Hkv, S, D] each (kv_cache.h read_*_f32), freed when the layer is done.
    const int64_t decode_scratch = decoded ? prod({2, Hkv, S, D, 4}) : 0;

    // Logits: [rows, V] float32, plus one float64 row and its log-sum-exp input.
    const int64_t logits = sat_add(prod({std::max<int64_t>(run.logit_rows, 1), c.n_vocab, 4}), prod({c.n_vocab, 16}));
    if (path.cpu_float32) {
        // llama_model.cpp run_layer / long_prompt_layer.cpp, float32: the residual stream [T, E]
        // is held whole; at a layer's peak (its down projection) live the queries [T, H*D] and
        // keys [T, Hkv*D] (projected and rotated: twice in the chunked path, whose views keep the
        // projections), the attention's output projection, the normed input and the down
        // projection [T, E] each, gate and up [T, F]. Attention is core/quant's blocked online
        // softmax: no [T, S] matrix. A call of more than kLayerChunk tokens runs in equal chunks of
        // at most that many (n), with the layer's matrices dequantized to float32 for the whole
        // layer when native and within a tile, and the pre-RoPE queries [T, H, D] kept whole for
        // the query statistics.
        const int64_t per_token = sat_add(sat_add(prod({H, D}), prod({Hkv, D})),
                                          sat_add(prod({3, c.n_embd}), prod({2, c.n_ff})));
        int64_t layer_act = prod({T, per_token, 4});
        if (T > kLayerChunk) {
            const int64_t n_chunks = (T + kLayerChunk - 1) / kLayerChunk, n = (T + n_chunks - 1) / n_chunks;
            layer_act = prod({n, sat_add(per_token, sat_add(prod({H, D}), prod({Hkv, D}))), 4});
            if (path.native_weights) {
                const int64_t E = c.n_embd, HD = prod({H, D}), HkvD = prod({Hkv, D});
                for (int64_t values : {prod({HD, E}), prod({HkvD, E}), prod({HkvD, E}), prod({E, HD}),
                                       prod({c.n_ff, E}), prod({c.n_ff, E}), prod({E, c.n_ff})})
                    if (values <= path.tile_values) layer_act = sat_add(layer_act, prod({values, 4}));
            }
            if (run.max_window > 0 && (run.captures & kCapturesQueryStats))
                layer_act = sat_add(layer_act, prod({T, H, D, 4}));
        }
        // The query statistics of a layer (llama_model.cpp query_stats, whole call): the centred
        // queries [H, T, D] and the copy the batched product makes of their transpose, float32.
        if (run.max_window > 0 && (run.captures & kCapturesQueryStats))
            layer_act = sat_add(layer_act, prod({2, T, H, D, 4}));
        m.activations = sat_add(sat_add(sat_add(prod({T, c.n_embd, 4}), layer_act), logits), decode_scratch);
    } else {
        // One layer of the forward pass (llama_model.cpp): the residual, the norm, q/k/v and their
        // RoPE temporaries, the attention output, the three [T, F] MLP products, all float32 at
        // worst; attention per chunk of Q queries: scores + probabilities (float32) + mask (bool)
        // over the S slots. Plus the logits.
        const int64_t per_token = sat_add(sat_add(prod({3, c.n_embd}), prod({4, H, D})),
                                          sat_add(prod({4, Hkv, D}), prod({4, c.n_ff})));
        const int64_t layer_act = prod({4, T, per_token});
        const int64_t attn = prod({H, std::min(T, kAttnChunk), S, 9});
        m.activations = sat_add(sat_add(sat_add(layer_act, attn), logits), decode_scratch);
    }

    if (run.max_window > 0) {
        const int64_t W = std::min(run.max_window, T);
        const int64_t parts = run.two_parts ? 2 : 1;
        // Window queries [H, Wmax, D] per layer (and the context's own), H2O scores [H, L]
        // (the whole prompt's and the context's); apart (key_copies), a float32 key copy [Hkv, L, D]
        // per layer for a cache the scorers cannot read in place (a 16-bit model dtype, q8_0, or
        // f16/bf16 off the CPU; the context's capture reads a view of the same copy).
        int64_t cap = prod({parts, n_layer, H, W, D, 4});
        if (run.captures & kCapturesColumnSums) cap = sat_add(cap, prod({parts + 1, n_layer, H, T, 4}));
        // Query statistics: [H, D, D] + [H, D] float64 and [H, 16, D] per layer and part; value
        // norms [Hkv, L] per layer and part; the [D, D] RoPE mean per layer and part.
        if (run.captures & kCapturesQueryStats)
            cap = sat_add(cap, prod({parts, n_layer, sat_add(prod({H, D, D + 1, 8}), prod({H, 16, D, 4}))}));
        if (run.captures & kCapturesValueNorms) cap = sat_add(cap, prod({parts, n_layer, Hkv, T, 4}));
        if (run.captures & kCapturesFutureRope) cap = sat_add(cap, prod({parts, n_layer, D, D, 4}));
        m.capture = cap;
        // On the CPU the scorers read f16 and bf16 rows in place: only q8_0 needs the copy there.
        const bool copies = elem_bytes != 4 || run.kv_type == KvType::Q8_0 || (decoded && !path.cpu_float32);
        if (copies) m.key_copies = prod({n_layer, Hkv, T, D, 4});
        // Scorer (layer_scorer.h): checkpoints [H, Nc, L] + the last window's votes [H, L] per
        // layer; while one layer is built: rows [H, Sc, L], their scores and the running sum.
        const int64_t nc = LayerScorer::checkpoints_for(W, T);
        const int64_t stride = LayerScorer::block_rows_for(W);
        m.scorer = sat_add(prod({n_layer, H, nc + 1, T, 4}), prod({H, 2 * stride + 1, T, 4}));
        // ExpectedAttention's scores for the default settings, made with the scorers ([Hkv, L]
        // per layer, kept per KV head; Session::prefill, prepare_default_scores), and the two
        // cached quadratic forms its n_sink retunes start from ([H, L] each per layer,
        // LayerScorer::cached_derived).
        if (run.captures & kCapturesQueryStats)
            m.scorer = sat_add(m.scorer, sat_add(prod({n_layer, Hkv, T, 4}), prod({n_layer, 2, H, T, 4})));
        if (run.scorer_sets_in_forward > 0)
            m.activations = sat_add(m.activations, prod({run.scorer_sets_in_forward, m.scorer}));
    }
    if (run.answer_tokens > 0) m.decode = decode_bytes(c, run, T, row, decoded);
    return m;
}

AvailableMemory available_memory(const std::string& device) {
    AvailableMemory a;
    if (device.rfind("cuda", 0) == 0) {
#ifdef SNAPKV_HAVE_CUDA
        int index = 0;
        if (device.size() > 5) index = std::atoi(device.c_str() + 5);
        int previous = 0;
        size_t free_b = 0, total_b = 0;
        if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(index) == cudaSuccess &&
            cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
            a.bytes = static_cast<int64_t>(free_b);
            a.source = "free memory on " + device;
        }
        cudaSetDevice(previous);
        cudaGetLastError();  // clear a failed query: the check is skipped, nothing else changes
#endif
    } else {
        std::ifstream in("/proc/meminfo");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("MemAvailable:", 0) != 0) continue;
            std::istringstream ss(line.substr(13));
            long long kb = -1;
            if (ss >> kb && kb >= 0) {
                a.bytes = sat_mul(kb, 1024);
                a.source = "MemAvailable in /proc/meminfo";
            }
            break;
        }
    }
    if (const char* env = std::getenv("SNAPKV_MEMORY_LIMIT")) {
        const int64_t limit = parse_size(env);
        if (limit < 0)
            throw InputError("SNAPKV_MEMORY_LIMIT='" + std::string(env) +
                             "' is not a size; allowed: bytes, or a number with K, M, G or T");
        if (a.bytes < 0 || limit < a.bytes) {
            a.bytes = limit;
            a.source = "SNAPKV_MEMORY_LIMIT=" + std::string(env);
        }
    }
    return a;
}

void require_memory(const MemoryEstimate& e, const AvailableMemory& a, const std::string& what,
                    const std::string& hint) {
    if (a.bytes < 0 || e.extra() <= a.bytes) return;
    throw InputError(what + " needs about " + format_bytes(e.extra()) + " (" + std::to_string(e.extra()) +
                     " bytes) beyond the " + format_bytes(e.weights) + " of weights (" + e.breakdown() + ") but only " +
                     format_bytes(a.bytes) + " is available (" + a.source + ")" + hint);
}

}  // namespace snapkv
