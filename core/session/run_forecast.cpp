// See run_forecast.h. Dimensions: L = prompt tokens, Lc = context tokens, H = n_head, D = head_dim,
// Wmax = captured window, w = a layer's sliding window.
#include "core/session/run_forecast.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "core/quant/qkernels.h"
#include "core/session/run_plan.h"
#include "core/session/runtime.h"
#include "core/snapkv/policy_table.h"

namespace snapkv {
namespace {

// Query-key pairs a causal pass over L tokens computes when each query sees at most w keys
// (w <= 0: all earlier keys): sum over i = 1..L of min(i, w).
double causal_pairs(int64_t L, int64_t w) {
    const double l = static_cast<double>(L);
    if (w <= 0 || w >= L) return l * (l + 1) / 2;
    const double wd = static_cast<double>(w);
    return wd * (wd + 1) / 2 + (l - wd) * wd;
}

// FLOPs of the work at attention's rate beyond the forward's own attention: H2O's column sums (a
// second pass over the probabilities, about half the attention again: attn_kernels_impl.h), the
// query statistics' [H, D, D] products per token, and the scorers' build (the Wmax window rows of
// every head over all L keys, Q.K, softmax and the sums: layer_scorer.h).
double capture_flops(const ModelConfig& c, int64_t L, const PrefillSettings& settings) {
    const double l = static_cast<double>(L), H = static_cast<double>(c.n_head), D = static_cast<double>(c.head_dim);
    const double layers = static_cast<double>(c.n_layer);
    double f = 0;
    if (settings.captures & kCapturesColumnSums) f += 0.5 * attention_flops(c, L);
    if (settings.captures & kCapturesQueryStats) f += layers * l * H * D * D * 2;
    const double w = static_cast<double>(std::min<int64_t>(std::max<int64_t>(settings.max_window, 1), L));
    f += layers * H * w * l * 4 * D;
    return f;
}

struct SpeedKey {
    std::string path, weights, device, dtype;
    int threads = 0;
    int64_t tokens = 0;
    bool operator<(const SpeedKey& o) const {
        return std::tie(path, weights, device, dtype, threads, tokens) <
               std::tie(o.path, o.weights, o.device, o.dtype, o.threads, o.tokens);
    }
};

std::mutex g_speed_mutex;
std::map<SpeedKey, PrefillSpeed> g_speeds;
std::map<SpeedKey, DecodeSpeed> g_decode_speeds;

SpeedKey speed_key(const ModelInfo& info, int64_t tokens) {
    return {info.path, info.weights, info.device, info.dtype, runtime_info().intra_op_threads, tokens};
}

// sum over layers of f(sliding window of the layer; 0: the whole prefix).
template <class F>
double sum_over_layers(const ModelConfig& c, F&& f) {
    double sum = 0;
    for (int64_t l = 0; l < c.n_layer; ++l)
        sum += f(static_cast<size_t>(l) < c.layers.size() ? c.layers[static_cast<size_t>(l)].sliding_window : 0);
    return sum;
}

// FLOPs of one decode step's attention over a cache of n tokens: 4 * D per key and head, each
// layer's sliding window applied.
double decode_attention_flops(const ModelConfig& c, int64_t n) {
    const double per_key = 4.0 * static_cast<double>(c.n_head) * static_cast<double>(c.head_dim);
    return sum_over_layers(c, [&](int64_t w) { return per_key * static_cast<double>(w > 0 ? std::min(n, w) : n); });
}

std::string percent(double share) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f %%", 100.0 * share);
    return buf;
}

}  // namespace

double attention_flops(const ModelConfig& c, int64_t n_tokens) {
    const double per_pair = 4.0 * static_cast<double>(c.n_head) * static_cast<double>(c.head_dim);
    return sum_over_layers(c, [&](int64_t w) { return per_pair * causal_pairs(n_tokens, w); });
}

double modelled_prefill_ms(const ModelConfig& c, const PrefillSpeed& speed, int64_t n_tokens,
                           const PrefillSettings& settings) {
    if (!speed.measured()) return -1;
    // Two parts (context, then question) run the same layers over the same tokens: the same work.
    const double attn = attention_flops(c, n_tokens) + capture_flops(c, n_tokens, settings);
    const double rate = speed.kernel_attention_flops_per_ms > 0 ? speed.kernel_attention_flops_per_ms
                                                                : speed.attention_flops_per_ms;
    return speed.token_ms * static_cast<double>(n_tokens) + attn / rate;
}

double cpu_attention_flops_per_ms(const ModelConfig& c, int64_t tokens) {
    const int64_t Hc = c.n_head_kv, D = c.head_dim, T = tokens;
    if (Hc <= 0 || D <= 0 || T <= 0 || c.n_head % Hc != 0) return 0;
    const int64_t g = c.n_head / Hc, H = c.n_head;
    // Values in [-1, 1) from a fixed sequence: the kernel's speed does not depend on them.
    std::vector<float> q(static_cast<size_t>(H * T * D)), k(static_cast<size_t>(Hc * T * D)), v(k.size()),
        out(q.size());
    uint32_t state = 12345;
    for (auto* x : {&q, &k, &v})
        for (float& f : *x) {
            state = state * 1664525u + 1013904223u;
            f = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
        }
    std::vector<int64_t> qpos(static_cast<size_t>(T)), kpos(static_cast<size_t>(Hc * T));
    for (int64_t t = 0; t < T; ++t) {
        qpos[static_cast<size_t>(t)] = t;
        for (int64_t h = 0; h < Hc; ++h) kpos[static_cast<size_t>(h * T + t)] = t;
    }
    PrefillAttention a;
    a.q = q.data();
    a.q_head_stride = T * D;
    a.q_tok_stride = D;
    a.k = k.data();
    a.v = v.data();
    a.kv_head_stride = T * D;
    a.kpos = kpos.data();
    a.kpos_head_stride = T;
    a.kpos_ascending = true;
    a.qpos = qpos.data();
    a.Hc = Hc;
    a.g = g;
    a.T = T;
    a.S = T;
    a.D = D;
    a.scale = 1.0f / std::sqrt(static_cast<float>(D));
    a.out = out.data();
    a.out_head_stride = T * D;
    a.out_tok_stride = D;
    attention_prefill(a);  // warms the kernel threads and the buffers
    const auto t0 = std::chrono::steady_clock::now();
    attention_prefill(a);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 4.0 * static_cast<double>(H * D) * static_cast<double>(T) * static_cast<double>(T + 1) / 2.0;
    return ms > 0 ? flops / ms : 0;
}

PrefillSpeed measure_prefill_speed(Session& session, int64_t tokens, CancelFlag cancel) {
    const ModelInfo info = session.model_info();
    const int64_t n_ctx = info.config.n_ctx_train;
    tokens = std::max<int64_t>(8, n_ctx > 0 ? std::min(tokens, n_ctx) : tokens);
    const SpeedKey key = speed_key(info, tokens);
    {
        std::lock_guard<std::mutex> lock(g_speed_mutex);
        if (auto it = g_speeds.find(key); it != g_speeds.end()) return it->second;
    }
    // A first forward warms the threads, the kernel pool and the weights' pages (a cold first call
    // is slower than any prefill after it); the second is the measurement.
    PrefillSpeed speed;
    speed.tokens = tokens;
    speed.threads = key.threads;
    session.bench({std::min<int64_t>(tokens, 16)}, 0, {}, cancel, false);
    const std::vector<BenchRow> rows = session.bench({tokens}, 0, {}, cancel, true);
    double total = 0, attention = 0, logits = 0;
    for (const BenchRow& r : rows) {
        if (r.what != "prefill") continue;
        total = r.ms;
        for (const auto& [stage, ms] : r.stages) {
            if (stage == "attention") attention = ms;
            if (stage == "logits") logits = ms;  // one row per prefill, whatever its length
        }
    }
    speed.calibration_ms = total;
    speed.token_ms = std::max(total - attention - logits, 0.0) / static_cast<double>(tokens);
    // A few dozen tokens' attention can take well under a millisecond: floor it at 1 us so that the
    // rate stays finite (it then errs slow, never infinitely fast).
    speed.attention_flops_per_ms = attention_flops(info.config, tokens) / std::max(attention, 1e-3);
    // A 128-token forward's attention stage is mostly costs that do not grow with the keys (its
    // GFLOP/s was a third to a half of the kernel's at thousands of tokens), which made forecasts of
    // 4K-16K prompts 1.2-1.6x too long: on the CPU the kernel's own rate serves, and the rest of
    // that stage counts per token.
    if (info.device.rfind("cpu", 0) == 0) {
        speed.kernel_attention_flops_per_ms = cpu_attention_flops_per_ms(info.config);
        if (speed.kernel_attention_flops_per_ms > 0) {
            const double kernel_ms = attention_flops(info.config, tokens) / speed.kernel_attention_flops_per_ms;
            speed.token_ms = std::max(total - logits - kernel_ms, 0.0) / static_cast<double>(tokens);
        }
    }
    std::lock_guard<std::mutex> lock(g_speed_mutex);
    g_speeds[key] = speed;
    return speed;
}

DecodeSpeed measure_decode_speed(Session& session, int64_t tokens, int64_t steps, CancelFlag cancel) {
    const ModelInfo info = session.model_info();
    const int64_t n_ctx = info.config.n_ctx_train;
    steps = std::max<int64_t>(1, steps);
    tokens = std::max<int64_t>(8, n_ctx > 0 ? std::min(tokens, n_ctx - steps) : tokens);
    const SpeedKey key = speed_key(info, tokens);
    {
        std::lock_guard<std::mutex> lock(g_speed_mutex);
        if (auto it = g_decode_speeds.find(key); it != g_decode_speeds.end()) return it->second;
    }
    DecodeSpeed speed;
    speed.tokens = tokens;
    for (const BenchRow& r : session.bench({tokens}, steps, {}, cancel, false))
        if (r.what.rfind("decode", 0) == 0 && r.tokens > 0) speed.step_ms = r.ms / static_cast<double>(r.tokens);
    std::lock_guard<std::mutex> lock(g_speed_mutex);
    g_decode_speeds[key] = speed;
    return speed;
}

double modelled_decode_ms(const ModelConfig& c, const PrefillSpeed& prefill, const DecodeSpeed& decode,
                          const std::vector<int64_t>& kept, int64_t steps) {
    if (!prefill.measured() || !decode.measured()) return -1;
    // The calibration step already attended over decode.tokens keys: only the keys beyond them add.
    double attn = 0;
    for (int64_t n : kept)
        attn += std::max(decode_attention_flops(c, n) - decode_attention_flops(c, decode.tokens), 0.0);
    return static_cast<double>(steps) * (decode.step_ms + attn / prefill.attention_flops_per_ms);
}

PrefillSpeed with_last_prefill(PrefillSpeed speed, const ModelConfig& config, const PrefillSummary& last,
                               const PrefillSettings& settings) {
    const double modelled = modelled_prefill_ms(config, speed, last.n_tokens, settings);
    const double measured = last.prefill_ms + last.scorer_ms;
    if (modelled > 0 && measured > 0) speed.last_prefill_scale = measured / modelled;
    return speed;
}

RunForecast forecast_prefill(const Session& session, const PromptTokens& prompt, const PrefillSettings& settings,
                             const PrefillSpeed& speed, const GridDecodes* decodes) {
    const ModelInfo info = session.model_info();
    const ModelConfig& c = info.config;
    RunForecast f;
    f.n_tokens = static_cast<int64_t>(prompt.ids.size());
    f.n_context = std::clamp<int64_t>(prompt.n_context, 1, std::max<int64_t>(f.n_tokens, 1));
    const int64_t question = f.n_tokens - f.n_context;
    // The run's memory with `context` tokens of context (the question stays whole) in type t.
    const auto estimate = [&](int64_t context, KvType t) {
        const int64_t n = context + question;
        if (decodes) return session.estimate_memory(grid_cell_run_shape(settings, n, question, *decodes), t);
        return session.estimate_prefill_memory(n, settings, context < n, t);
    };
    f.cache_type = kv_type_from_name(info.cache_type);
    f.memory = estimate(f.n_context, f.cache_type);
    f.available = session.available_memory();
    const auto seconds = [&](int64_t n) {
        const double ms = modelled_prefill_ms(c, speed, n, settings);
        return ms < 0 ? -1.0 : ms * speed.last_prefill_scale / 1000.0;
    };
    f.seconds = seconds(f.n_tokens);
    if (f.fits() || f.n_tokens < 1) return f;

    const int64_t free_bytes = f.available.bytes;
    for (KvType t : all_kv_types()) {
        if (t == f.cache_type || !kv_type_fits(t, c.head_dim)) continue;
        const MemoryEstimate e = estimate(f.n_context, t);
        if (e.extra() > free_bytes) continue;
        CheaperChoice ch;
        ch.kind = CheaperChoice::Kind::CacheType;
        ch.cache_type = t;
        ch.n_tokens = f.n_tokens;
        ch.peak_bytes = e.total();
        ch.seconds = f.seconds;  // the cache type changes the memory, not the arithmetic counted
        f.choices.push_back(ch);
    }
    std::sort(f.choices.begin(), f.choices.end(),
              [](const CheaperChoice& a, const CheaperChoice& b) { return a.peak_bytes < b.peak_bytes; });

    // The longest prompt that fits, cutting the document only (the question stays whole): the
    // estimate grows with the tokens, so a bisection over the context's length finds it.
    const auto fits_with = [&](int64_t context) { return estimate(context, f.cache_type).extra() <= free_bytes; };
    if (f.n_context > 1 && fits_with(1)) {
        int64_t lo = 1, hi = f.n_context;  // fits_with(lo), !fits_with(hi)
        while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            (fits_with(mid) ? lo : hi) = mid;
        }
        CheaperChoice ch;
        ch.kind = CheaperChoice::Kind::ShorterDocument;
        ch.cache_type = f.cache_type;
        ch.n_tokens = lo + question;
        ch.document_tokens = lo;
        ch.document_share = static_cast<double>(lo) / static_cast<double>(f.n_context);
        ch.peak_bytes = estimate(lo, f.cache_type).total();
        ch.seconds = seconds(ch.n_tokens);
        f.choices.push_back(ch);
    }
    return f;
}

GridForecast forecast_grid(Session& session, const std::vector<int64_t>& candidates,
                           const std::function<GridCell(int64_t cell)>& cell_of, int64_t cells,
                           const GridDecodes& decodes, CancelFlag cancel) {
    GridForecast g;
    g.cells = cells;
    const int64_t answer_tokens = decodes.answer_tokens;
    g.answer_tokens = answer_tokens;
    g.configs = static_cast<int64_t>(decodes.configs.size());
    std::vector<SelectionParams> selections;
    for (const GridConfig& gc : decodes.configs) selections.push_back(gc.params);
    const PrefillSettings ps = plan_run(selections);
    PromptTokens largest;
    for (int64_t cell : candidates) {
        if (cancel && cancel->load()) throw Cancelled();
        GridCell gc = cell_of(cell);
        PromptTokens p = session.build_prompt(gc.prompt);
        if (g.largest_cell < 0 || p.ids.size() > largest.ids.size()) {
            largest = std::move(p);
            g.largest_cell = cell;
            g.largest_label = std::move(gc.label);
        }
    }
    if (g.largest_cell < 0 || largest.ids.empty()) return g;
    // Memory first: a cell that does not fit needs no calibration to be refused.
    g.largest = forecast_prefill(session, largest, ps, PrefillSpeed{}, &decodes);
    if (!g.fits()) return g;
    PrefillSpeed prefill;  // unmeasured: the forecast gives memory alone
    DecodeSpeed decode;
    try {
        prefill = measure_prefill_speed(session, 128, cancel);
        if (answer_tokens > 0) decode = measure_decode_speed(session, 128, 8, cancel);
    } catch (const InputError&) {
        // Not even the calibration forward fits: the memory forecast names what the run needs.
    }
    if (!prefill.measured()) return g;
    g.largest = forecast_prefill(session, largest, ps, prefill, &decodes);
    // The full cache's answer, then the configurations' answers together over what each keeps.
    const int64_t n = g.largest.n_tokens;
    std::vector<int64_t> kept;
    for (const GridConfig& gc : decodes.configs)
        kept.push_back(gc.decode.compress_prefill ? std::clamp<int64_t>(effective_budget(gc.params, n), 1, n) : n);
    const double full_ms = modelled_decode_ms(session.model_info().config, prefill, decode, {n}, answer_tokens);
    const double compressed_ms = kept.empty() ? 0.0
                                              : modelled_decode_ms(session.model_info().config, prefill, decode, kept,
                                                                   answer_tokens);
    if (full_ms >= 0 && compressed_ms >= 0)
        g.decode_seconds = (full_ms + compressed_ms) * prefill.last_prefill_scale / 1000.0;
    return g;
}

double GridForecast::cell_seconds() const {
    if (largest.seconds < 0) return -1;
    return largest.seconds + std::max(decode_seconds, 0.0);
}

std::string GridForecast::summary() const {
    if (largest_cell < 0) return "nothing to run: every cell of the grid is done";
    RunForecast memory = largest;
    memory.seconds = -1;  // the times follow, per prefill and per cell
    std::string s = "largest cell " + largest_label + ": " + memory.summary();
    const std::string n_cells = std::to_string(cells) + (cells == 1 ? " cell" : " cells") + " to run";
    if (largest.seconds < 0) return s + "; " + n_cells + " (time not forecast)";
    s += "; about " + format_seconds(largest.seconds) + " a prefill";
    if (decode_seconds >= 0) {
        s += " + " + format_seconds(decode_seconds) + " of decodes (" + std::to_string(answer_tokens) +
             " tokens: full cache, then " + std::to_string(configs) +
             (configs == 1 ? " configuration)" : " configurations together)");
    }
    s += "; " + n_cells + ", about " + format_seconds(total_seconds()) + " in all";
    if (decode_seconds < 0) s += " (prefill only)";
    return s;
}

std::string RunForecast::summary() const {
    std::string s = group_thousands(n_tokens) + " tokens, KV " + kv_type_name(cache_type) + " " +
                    format_bytes(memory.kv_cache);
    if (memory.capture > 0) s += ", capture " + format_bytes(memory.capture);
    if (memory.scorer > 0) s += ", scorers " + format_bytes(memory.scorer);
    if (memory.key_copies > 0) s += ", float32 key copies " + format_bytes(memory.key_copies);
    s += ", activations " + format_bytes(memory.activations);
    if (memory.decode > 0) s += ", decodes " + format_bytes(memory.decode);
    s += ", peak " + format_bytes(peak()) + " (weights " + format_bytes(memory.weights) + " + run " +
         format_bytes(memory.extra()) + ")";
    if (available.bytes >= 0) s += ", " + format_bytes(available.bytes) + " free";
    if (seconds >= 0) s += "; about " + format_seconds(seconds) + " on this machine";
    return s;
}

std::string RunForecast::choices_text(bool flag_names) const {
    std::string s;
    for (size_t i = 0; i < choices.size(); ++i) {
        const CheaperChoice& c = choices[i];
        if (i > 0) s += i + 1 == choices.size() ? " or " : ", ";
        if (c.kind == CheaperChoice::Kind::CacheType) {
            s += (flag_names ? "--cache-type " : "cache type ") + std::string(kv_type_name(c.cache_type)) + " (peak " +
                 format_bytes(c.peak_bytes) + ")";
        } else {
            s += "a document of at most " + group_thousands(c.document_tokens) + " tokens (" +
                 percent(c.document_share) + " of it; peak " + format_bytes(c.peak_bytes) + ")";
        }
    }
    return s;
}

}  // namespace snapkv
