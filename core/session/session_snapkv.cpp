// Session, SnapKV half: prefill with capture (one pass serves query-aware and query-agnostic
// selection), retunes from the captured tensors, heatmap rows, the full-vs-compressed lockstep
// comparison with KL / top-1 / rank / hit rate, and compressed perplexity.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Lc = context tokens, W = window,
// S = cache slots, V = n_vocab, D = head_dim.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "core/common/units.h"
#include "core/compare/lockstep.h"
#include "core/model/generator.h"
#include "core/model/model_ops.h"
#include "core/session/session_impl.h"
#include "core/snapkv/compressed_cache.h"
#include "core/snapkv/retune_bench.h"
#include "core/snapkv/selector.h"

namespace snapkv {
namespace {

// Keys of the first n slots of a fresh cache: [Hkv, n, D], a view into the cache's buffer when it
// is float32 (no copy: the prefill state keeps that cache unchanged for as long as the scorers
// live), a float32 copy otherwise.
at::Tensor cache_keys(const KvCache& cache, int64_t layer, int64_t n) {
    return cache.layer(layer).keys().narrow(1, 0, n).to(at::kFloat);
}

// Bytes the prefill state keeps for retunes beyond the cache: window queries, H2O scores, key
// tensors that are not views of the cache (float32 copies of a 16-bit cache), scorer caches.
int64_t capture_bytes(const PrefillState& st, const std::vector<LayerScorer>& scorers) {
    auto own = [&](const at::Tensor& t, int64_t layer) -> int64_t {
        if (!t.defined()) return 0;
        const at::Tensor cache_keys = st.cache.layer(layer).keys();
        if (t.is_alias_of(cache_keys)) return 0;
        return t.numel() * static_cast<int64_t>(t.element_size());
    };
    int64_t bytes = 0;
    for (const auto* captures : {&st.aware, &st.agnostic})
        for (size_t l = 0; l < captures->size(); ++l) {
            const LayerCapture& c = (*captures)[l];
            const auto li = static_cast<int64_t>(l);
            bytes += own(c.window_queries, li) + own(c.h2o, li) + own(c.keys, li) + own(c.query_head, li) +
                     own(c.query_mean, li) + own(c.query_m2, li) + own(c.future_rope, li) + own(c.value_norms, li);
        }
    for (const LayerScorer& sc : scorers) bytes += sc.cache_bytes();
    return bytes;
}

// Appends one forward call's query statistics (positions after those already in c) to c: the
// queries of the first positions are concatenated, the rest combined with Chan et al.'s formula
// for the centred sums, in double.
void add_query_stats(LayerCapture& c, const QueryStats& s) {
    if (s.head.defined()) c.query_head = c.query_head.defined() ? at::cat({c.query_head, s.head}, 1) : s.head;
    if (s.count == 0) return;
    if (c.query_count == 0) {
        c.query_count = s.count;
        c.query_mean = s.mean.clone();  // [H, D]
        c.query_m2 = s.m2.clone();      // [H, D, D]
        return;
    }
    const double na = double(c.query_count), nb = double(s.count), n = na + nb;
    const at::Tensor delta = s.mean - c.query_mean;  // [H, D]
    c.query_m2 = c.query_m2 + s.m2 + delta.unsqueeze(2) * delta.unsqueeze(1) * (na * nb / n);
    c.query_mean = c.query_mean + delta * (nb / n);
    c.query_count += s.count;
}

// [D, D]: a RoPE table at positions first .. first + count - 1 averaged, as the row map
// x -> x R^T (row j: the rotation of the unit vector e_j), from the model's own RoPE (its pair
// layout, scaling and partial rotary dims). Undefined when a position is beyond the table.
at::Tensor future_rope(const model_ops::RopeTable& table, int64_t D, int64_t first, int64_t count) {
    const at::Tensor eye = at::eye(D, at::TensorOptions().dtype(at::kFloat));  // [D, D]
    at::Tensor sum = at::zeros({D, D}, at::TensorOptions().dtype(at::kDouble));
    try {
        for (int64_t p0 = first; p0 < first + count; p0 += 64) {
            const int64_t n = std::min<int64_t>(64, first + count - p0);
            at::Tensor x = eye.repeat({n, 1}).unsqueeze(0);  // [1, n*D, D]
            at::Tensor pos = at::arange(p0, p0 + n, at::TensorOptions().dtype(at::kLong)).repeat_interleave(D);
            sum += model_ops::apply_rope(x, pos, table).view({n, D, D}).sum(0).to(at::kDouble);
        }
    } catch (const InputError&) {
        return {};
    }
    return (sum / double(count)).to(at::kFloat);
}

// The L2 norm of each of the layer's values: [Hkv, L] float32 (CPU).
at::Tensor value_norms(const KvCache& cache, int64_t layer) {
    at::Tensor v = cache.layer(layer).values().to(at::kFloat);                                 // [Hkv, L, D]
    return at::linalg_vector_norm(v, 2, {-1}, false, c10::nullopt).to(at::kCPU).contiguous();  // [Hkv, L]
}

// ExpectedAttention's averaged RoPE of the 512 positions after the first n (as kvpress averages
// it), once per (RoPE table, n) of a prefill: layers share tables (Gemma 3: two for 18 layers) and
// at D 256 each average is 2 x 64 M sines and cosines. Read-only, so layers share the tensor.
class FutureRopes {
public:
    explicit FutureRopes(const LlamaModel& model) : m_model(model) {}
    const at::Tensor& get(int64_t layer, int64_t n) {
        const std::pair<size_t, int64_t> key{m_model.rope_index(layer), n};
        auto it = m_done.find(key);
        if (it == m_done.end())
            it = m_done.emplace(key, future_rope(m_model.rope(key.first), m_model.config().head_dim, n, 512)).first;
        return it->second;  // [D, D]
    }

private:
    const LlamaModel& m_model;
    std::map<std::pair<size_t, int64_t>, at::Tensor> m_done;
};

// ExpectedAttention's inputs for a capture of the first n prompt tokens (its query statistics
// already added): the future RoPE and the norms of the first n values (norms [Hkv, L]: every
// prompt position's).
void add_expected_attention_inputs(LayerCapture& cap, FutureRopes& rope, const at::Tensor& norms, int64_t layer,
                                   int64_t n) {
    cap.future_rope = rope.get(layer, n);                  // [D, D]
    cap.value_norms = norms.narrow(1, 0, n).contiguous();  // [Hkv, n]
}

}  // namespace

std::vector<LayerScorer> build_scorers(const std::vector<LayerCapture>& captures) {
    std::vector<LayerScorer> out;
    out.reserve(captures.size());
    for (const auto& c : captures) out.emplace_back(c);
    return out;
}

PrefillState Session::Impl::run_prefill(const PromptTokens& prompt, const PrefillSettings& settings,
                                        const ProgressFn& progress, CancelFlag cancel) const {
    require_model();
    const ModelConfig& c = model->config();
    const auto L = static_cast<int64_t>(prompt.ids.size());
    if (L == 0) throw InputError("the prompt is empty (no tokens)");
    if (settings.max_window < 1)
        throw InputError("max window " + std::to_string(settings.max_window) + " must be >= 1");
    if (settings.new_tokens < 0)
        throw InputError("new tokens " + std::to_string(settings.new_tokens) + " must be >= 0");
    const int64_t Lc = std::clamp<int64_t>(prompt.n_context, 1, L);
    const bool two_parts = Lc < L;
    // Lengths and memory first: nothing is allocated for a prompt that cannot run.
    RunShape shape;
    shape.n_tokens = L;
    shape.cache_slots = L;
    shape.max_window = settings.max_window;
    shape.h2o = settings.h2o;
    shape.query_stats = settings.query_stats;
    shape.two_parts = two_parts;
    check_fits(L, settings.new_tokens, estimate(shape), "the prompt", ": shorten the document");

    PrefillState st;
    st.prompt = prompt;
    // Exactly the prompt: generation never appends to this cache (it runs on clones and gathers).
    // Without values kept, a layer's values exist from its first part to its last (below).
    st.cache = model->new_cache(L, settings.keep_values);
    auto t0 = std::chrono::steady_clock::now();
    // The context, then the question, as parts of one pass that finishes each layer for the whole
    // prompt before the next (the same arithmetic as two forward calls).
    PrefillCapture ctx_cap, q_cap;
    std::vector<std::vector<int32_t>> parts = {std::vector<int32_t>(prompt.ids.begin(), prompt.ids.begin() + Lc)};
    if (two_parts) parts.emplace_back(prompt.ids.begin() + Lc, prompt.ids.end());
    std::vector<ForwardOptions> opts(parts.size());
    int64_t before = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        PrefillCapture& cap = i == 0 ? ctx_cap : q_cap;
        cap.max_window = settings.max_window;
        cap.h2o = settings.h2o;
        cap.query_stats = settings.query_stats;
        opts[i].capture = &cap;
        opts[i].cancel = cancel;
        // In prompt tokens, so that a view can show tokens per second and the time left: the
        // share of (layer, token) steps done, counting this part's tokens in its layer.
        const int64_t done_before = before + static_cast<int64_t>(parts[i].size());
        opts[i].on_layer = [&progress, L, n = c.n_layer, done_before](int64_t l, int64_t) {
            if (progress) progress("prefill", ((l - 1) * L + done_before) / n, L);
        };
        before = done_before;
    }
    // ExpectedAttention's value norms are taken as each layer completes; then, when values are not
    // kept, the layer's values go (keys stay: every score reads them).
    std::vector<at::Tensor> norms(static_cast<size_t>(c.n_layer));
    // Loading read every weight; an analysis holds a layer's only while it runs.
    if (!settings.keep_values) model->release_pages();
    std::vector<at::Tensor> logits = model->forward_parts(parts, st.cache, opts, [&](int64_t l) {
        if (settings.query_stats) norms[static_cast<size_t>(l)] = value_norms(st.cache, l);
        if (!settings.keep_values) {
            st.cache.layer(l).drop_values();
            model->release_layer_pages(l);  // nothing more runs through this layer
        }
    });
    if (!settings.keep_values) model->release_pages();
    st.last_logits = logits.back();
    st.prefill_ms = ms_since(t0);

    // The layer's own scoring rules travel with its capture, so votes and heatmap rows are the
    // probabilities the model used (soft-cap, attention scale, sliding window).
    auto scoring = [&](LayerCapture& cap, int64_t l) {
        cap.scale = c.attn_scale;
        cap.softcap = c.attn_softcap;
        cap.sliding_window = c.layers[static_cast<size_t>(l)].sliding_window;
    };
    FutureRopes future(*model);
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const auto li = static_cast<size_t>(l);
        LayerCapture aware;
        scoring(aware, l);
        aware.keys = cache_keys(st.cache, l, L);  // [Hkv, L, D]
        if (two_parts) {
            // The window may reach back into the context when the question is short.
            at::Tensor wq = at::cat({ctx_cap.window_queries[li], q_cap.window_queries[li]}, 1);  // [H, w, D]
            const int64_t w = std::min<int64_t>(settings.max_window, wq.size(1));
            aware.window_queries = wq.narrow(1, wq.size(1) - w, w).contiguous();
            if (settings.h2o) {
                at::Tensor h = q_cap.h2o_scores[li].clone();  // [H, L]
                h.narrow(1, 0, Lc).add_(ctx_cap.h2o_scores[li]);
                aware.h2o = h;
            }
            if (settings.query_stats) {
                add_query_stats(aware, ctx_cap.queries[li]);
                add_query_stats(aware, q_cap.queries[li]);
                add_expected_attention_inputs(aware, future, norms[li], l, L);
            }
            LayerCapture agn;
            scoring(agn, l);
            agn.keys = cache_keys(st.cache, l, Lc);  // [Hkv, Lc, D]
            agn.window_queries = ctx_cap.window_queries[li];
            if (settings.h2o) agn.h2o = ctx_cap.h2o_scores[li];
            if (settings.query_stats) {
                add_query_stats(agn, ctx_cap.queries[li]);
                add_expected_attention_inputs(agn, future, norms[li], l, Lc);
            }
            st.agnostic.push_back(std::move(agn));
        } else {
            aware.window_queries = ctx_cap.window_queries[li];
            if (settings.h2o) aware.h2o = ctx_cap.h2o_scores[li];
            if (settings.query_stats) {
                add_query_stats(aware, ctx_cap.queries[li]);
                add_expected_attention_inputs(aware, future, norms[li], l, L);
            }
        }
        st.aware.push_back(std::move(aware));
    }
    return st;
}

const std::vector<LayerScorer>& Session::Impl::scorers(bool query_agnostic) {
    require_prefill();
    if (!query_agnostic || state->agnostic.empty()) return aware_scorers;
    if (agnostic_scorers.empty()) agnostic_scorers = build_scorers(state->agnostic);
    return agnostic_scorers;
}

PrefillSummary Session::prefill(const PromptSpec& prompt, const PrefillSettings& settings, const ProgressFn& progress,
                                CancelFlag cancel) {
    m->require_model();
    PromptTokens pt = build_prompt(prompt);
    PrefillState st = with_oom_report("running prefill",
                                      [&] { return m->run_prefill(pt, settings, progress, cancel); });
    auto t0 = std::chrono::steady_clock::now();
    if (progress) progress("layer scores", 0, 1);
    std::vector<LayerScorer> scorers = with_oom_report("scoring the window", [&] { return build_scorers(st.aware); });
    PrefillSummary s;
    s.scorer_ms = ms_since(t0);
    s.n_tokens = static_cast<int64_t>(pt.ids.size());
    s.n_context = pt.n_context;
    s.max_window = scorers.empty() ? 0 : scorers.front().max_window();
    s.prefill_ms = st.prefill_ms;
    s.kv_bytes_full = st.cache.bytes();
    s.capture_bytes = capture_bytes(st, scorers);
    s.ids = pt.ids;
    for (int32_t id : pt.ids) {
        s.pieces.push_back(m->piece(id));
        s.special.push_back(m->tok->is_control(id) ? 1 : 0);
    }
    s.prompt_text = pt.text;
    s.template_source = pt.template_source;
    // Commit: a cancelled or failed prefill leaves the previous one intact.
    m->state = std::move(st);
    m->aware_scorers = std::move(scorers);
    m->agnostic_scorers.clear();
    m->reference.reset();
    m->summary = s;
    if (progress) progress("layer scores", 1, 1);
    return s;
}

bool Session::has_prefill() const { return m->state.has_value(); }

const PrefillSummary& Session::prefill_summary() const {
    m->require_prefill();
    return m->summary;
}

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
    const int64_t elem = static_cast<int64_t>(c10::elementSize(m->model->options().dtype));
    const int64_t per_token_head = c.head_dim * 2 * elem;  // K and V
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

CompressedStart Session::Impl::start_compressed(const Selection& sel, int64_t max_tokens, CancelFlag cancel) const {
    require_values();
    const PrefillState& st = *state;
    const auto L = static_cast<int64_t>(st.prompt.ids.size());
    const bool agnostic = sel.n_tokens < L;
    if (sel.n_tokens != L && (st.agnostic.empty() || sel.n_tokens != st.prompt.n_context))
        throw InputError("selection: it covers " + std::to_string(sel.n_tokens) + " tokens but the prefill has " +
                         std::to_string(L) + ": select again after prefill");
    const ModelConfig& c = model->config();
    CompressedStart out;
    out.query_agnostic = agnostic;
    if (agnostic) {
        // kvpress's default: compress the context alone, then feed the question to the compressed cache.
        const int64_t Lc = sel.n_tokens;
        out.run.cache = compressed_cache(st.cache, sel, c.n_head_kv, (L - Lc) + max_tokens);
        std::vector<int32_t> q(st.prompt.ids.begin() + Lc, st.prompt.ids.end());
        ForwardOptions fo;
        fo.cancel = cancel;
        out.run.logits = model->forward(q, out.run.cache, fo);
    } else {
        // Prefill attention used the full K/V, so the first token is the full run's.
        out.run.cache = compressed_cache(st.cache, sel, c.n_head_kv, max_tokens);
        out.run.logits = st.last_logits;
    }
    out.kept = kept_masks(sel, c.n_head, model->options().device);  // next to the probed attention
    return out;
}

CompareResult Session::compare(const SelectionParams& params, const CompareSettings& settings,
                               const ProgressFn& progress, CancelFlag cancel) {
    m->require_values();
    const PrefillState& st = *m->state;
    const bool agnostic = settings.query_agnostic && !st.agnostic.empty();
    Selection sel = select(params, agnostic, false);
    const auto L = static_cast<int64_t>(st.prompt.ids.size());
    const int64_t max_tokens = settings.generation.max_tokens;
    m->check_generation_fits(L, max_tokens);
    // The full run holds what a sliding-window runtime would (sliding layers trimmed to their
    // window), so that its KV bytes are the honest baseline of the compressed run's.
    LockstepRun full{window_trimmed_cache(st.cache, m->model->config(), L, max_tokens), st.last_logits};
    CompressedStart comp = m->start_compressed(sel, max_tokens, cancel);
    const int64_t full_bytes = full.cache.bytes();
    const int64_t comp_bytes = comp.run.cache.bytes();
    HitRateSpec hits;
    hits.prefix = sel.n_tokens - sel.window;
    hits.threshold = settings.hit_threshold;
    hits.kept = std::move(comp.kept);
    CompareResult r = with_oom_report("generating", [&] {
        return run_lockstep(
            *m->model, *m->tok, std::move(full), std::move(comp.run), settings.generation, hits,
            [&](int64_t d, int64_t t) {
                if (progress) progress("generate", d, t);
            },
            cancel);
    });
    r.params = params;
    r.query_agnostic = agnostic;
    r.prefill_ms = st.prefill_ms;
    r.full.kv_bytes = full_bytes;
    r.compressed.kv_bytes = comp_bytes;
    r.note = sel.note;
    return r;
}

std::pair<double, double> Session::continuation_perplexity(const std::string& context, const std::string& continuation,
                                                           const SelectionParams& params, const ProgressFn& progress,
                                                           CancelFlag cancel) {
    m->require_model();
    PromptTokens pt;
    pt.ids = m->tok->encode(context, true, true);
    pt.n_context = static_cast<int64_t>(pt.ids.size());
    const std::vector<int32_t> cont = m->tok->encode(continuation, false, true);
    if (cont.empty()) throw InputError("perplexity: the continuation is empty");
    PrefillSettings ps;
    ps.max_window = params.window;
    ps.h2o = policy_info(params.policy).needs_h2o;
    ps.new_tokens = static_cast<int64_t>(cont.size());  // the continuation is fed after the context
    PrefillState st = with_oom_report("running prefill", [&] { return m->run_prefill(pt, ps, progress, cancel); });
    std::vector<LayerScorer> scorers = build_scorers(st.aware);
    Selection sel = snapkv::select(scorers, params, false);
    const auto extra = static_cast<int64_t>(cont.size());
    KvCache comp = compressed_cache(st.cache, sel, m->model->config().n_head_kv, extra);
    auto nll_of = [&](KvCache& cache) {
        double nll = token_nll(st.last_logits.select(0, 0), cont[0]);
        if (cont.size() > 1) {
            ForwardOptions fo;
            fo.all_logits = true;
            fo.cancel = cancel;
            std::vector<int32_t> in(cont.begin(), cont.end() - 1);
            at::Tensor logits = m->model->forward(in, cache, fo);  // [n-1, V]
            at::Tensor lse = logits.to(at::kDouble).logsumexp(1);  // [n-1]
            for (size_t i = 0; i + 1 < cont.size(); ++i)
                nll += lse[static_cast<int64_t>(i)].item<double>() -
                       logits[static_cast<int64_t>(i)][cont[i + 1]].item<double>();
        }
        return std::exp(nll / static_cast<double>(cont.size()));
    };
    KvCache full = st.cache.clone();
    return {nll_of(full), nll_of(comp)};
}

}  // namespace snapkv
