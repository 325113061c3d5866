// Session, prefill with capture: one pass over the prompt's context and question serves
// query-aware and query-agnostic selection; it records the window queries, the keys and what the
// settings ask for (the run plan's captures), then builds the per-layer scorers: after the forward
// pass, or with a preview (PrefillSettings::preview) layer by layer as each finishes, handing out
// that layer's selections at once. It does not retune, generate or decide what to capture
// (run_plan.h does).
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Lc = context tokens, W = window,
// S = cache slots, V = n_vocab, D = head_dim.
#include <algorithm>
#include <chrono>

#include "core/common/units.h"
#include "core/session/prefill_statistics_impl.h"
#include "core/session/run_plan.h"
#include "core/session/session_impl.h"
#include "core/snapkv/selector.h"

namespace snapkv {
namespace {

// Keys of the first n slots of a fresh cache: [Hkv, n, D], a view into the cache's buffer when it
// stores float32, f16 or bf16 rows on the CPU (no copy: the prefill state keeps that cache
// unchanged for as long as the scorers live; the scorer's kernel widens 16-bit rows as it reads
// them), a float32 copy otherwise (q8_0, or a 16-bit model dtype on CUDA).
at::Tensor cache_keys(const KvCache& cache, int64_t layer, int64_t n) {
    const LayerKv& kv = cache.layer(layer);
    if (kv.cpu_readable()) {
        const at::Tensor stored = kv.stored_keys();
        const at::ScalarType t = stored.scalar_type();
        if (t == at::kFloat || t == at::kHalf || t == at::kBFloat16) return stored.narrow(1, 0, n);
    }
    return kv.keys().narrow(1, 0, n).to(at::kFloat);
}

}  // namespace

// Bytes the prefill state keeps for retunes beyond the cache (session_impl.h): window queries, H2O scores, key
// tensors that are not views of the cache (float32 copies of a 16-bit cache), scorer caches.
int64_t capture_bytes(const PrefillState& st, const std::vector<LayerScorer>& scorers) {
    auto own = [&](const at::Tensor& t, int64_t layer) -> int64_t {
        if (!t.defined()) return 0;
        if (t.is_alias_of(st.cache.layer(layer).stored_keys())) return 0;
        // The query-agnostic capture's keys are a view of the aware capture's float32 copy.
        if (&t != &st.aware[size_t(layer)].keys && t.is_alias_of(st.aware[size_t(layer)].keys)) return 0;
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
    // What the policies to be selected declared (policy_table.h; run_plan.h unites them).
    const bool column_sums = (settings.captures & kCapturesColumnSums) != 0;
    const bool query_stats = (settings.captures & kCapturesQueryStats) != 0;
    const bool with_norms = (settings.captures & kCapturesValueNorms) != 0;
    const bool with_rope = (settings.captures & kCapturesFutureRope) != 0;
    const PrefillPreview& preview = settings.preview;
    const bool previewing = static_cast<bool>(preview.on_layer);
    // Without a question the query-agnostic selection reads the whole prompt's scorers.
    const bool agnostic_preview = previewing && preview.query_agnostic && two_parts;
    // Lengths and memory first: nothing is allocated for a prompt that cannot run (a preview's
    // scorers, built beside the forward pass's temporaries, are in the shape).
    check_fits(L, settings.new_tokens, estimate(prefill_run_shape(settings, L, two_parts)), "the prompt",
               ": shorten the document");

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
        cap.h2o = column_sums;
        cap.query_stats = query_stats;
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

    // The layer's own scoring rules travel with its capture, so votes and heatmap rows are the
    // probabilities the model used (soft-cap, attention scale, sliding window).
    auto scoring = [&](LayerCapture& cap, int64_t l) {
        cap.scale = c.attn_scale;
        cap.softcap = c.attn_softcap;
        cap.sliding_window = c.layers[static_cast<size_t>(l)].sliding_window;
    };
    FutureRopes future(*model);
    // Layer l's captures, once l has run for every part: nothing a later layer does changes them
    // (its keys sit in its own cache layer, its queries and sums were taken while it ran).
    // norms: [Hkv, L] every prompt position's value norms (with_norms).
    auto capture_layer = [&](int64_t l, const at::Tensor& norms) {
        const auto li = static_cast<size_t>(l);
        // The averaged future RoPE and the value norms of a capture of the first n prompt tokens.
        auto add_statistics_inputs = [&](LayerCapture& cap) {
            const int64_t n = cap.keys.size(1);
            if (with_rope) cap.future_rope = future.get(l, n);                     // [D, D]
            if (with_norms) cap.value_norms = norms.narrow(1, 0, n).contiguous();  // [Hkv, n]
        };
        LayerCapture aware;
        scoring(aware, l);
        aware.keys = cache_keys(st.cache, l, L);  // [Hkv, L, D]
        if (two_parts) {
            // The window may reach back into the context when the question is short.
            at::Tensor wq = at::cat({ctx_cap.window_queries[li], q_cap.window_queries[li]}, 1);  // [H, w, D]
            const int64_t w = std::min<int64_t>(settings.max_window, wq.size(1));
            aware.window_queries = wq.narrow(1, wq.size(1) - w, w).contiguous();
            if (column_sums) {
                at::Tensor h = q_cap.h2o_scores[li].clone();  // [H, L]
                h.narrow(1, 0, Lc).add_(ctx_cap.h2o_scores[li]);
                aware.h2o = h;
            }
            if (query_stats) {
                add_query_stats(aware, ctx_cap.queries[li]);
                add_query_stats(aware, q_cap.queries[li]);
            }
            add_statistics_inputs(aware);
            LayerCapture agn;
            scoring(agn, l);
            // The context's rows of the same keys: a view (a 16-bit or q8_0 cache's float32 copy
            // is made once per layer, not once per part).
            agn.keys = aware.keys.narrow(1, 0, Lc);  // [Hkv, Lc, D]
            agn.window_queries = ctx_cap.window_queries[li];
            if (column_sums) agn.h2o = ctx_cap.h2o_scores[li];
            if (query_stats) add_query_stats(agn, ctx_cap.queries[li]);
            add_statistics_inputs(agn);
            st.agnostic.push_back(std::move(agn));
        } else {
            aware.window_queries = ctx_cap.window_queries[li];
            if (column_sums) aware.h2o = ctx_cap.h2o_scores[li];
            if (query_stats) add_query_stats(aware, ctx_cap.queries[li]);
            add_statistics_inputs(aware);
        }
        st.aware.push_back(std::move(aware));
    };
    // With a preview: layer l's scorers (built from the same captures as after the pass, so every
    // later select() is unchanged) and its selections, handed out as values.
    double scorer_ms = 0;
    auto preview_layer = [&](int64_t l) {
        const auto li = static_cast<size_t>(l);
        const auto ts = std::chrono::steady_clock::now();
        st.aware_scorers.emplace_back(st.aware[li]);
        if (agnostic_preview) st.agnostic_scorers.emplace_back(st.agnostic[li]);
        scorer_ms += ms_since(ts);
        const std::vector<LayerScorer>& from = agnostic_preview ? st.agnostic_scorers : st.aware_scorers;
        PrefillLayerPreview pv;
        pv.layer = l;
        pv.n_layer = c.n_layer;
        pv.n_tokens = L;
        for (const SelectionParams& p : preview.params) {
            // A preview never stops the prefill: parameters that cannot be selected (a budget
            // over the prompt, a window over the capture) are reported by the select() after it.
            try {
                pv.selections.emplace_back(select_layer(from, c.n_layer, p, preview.with_scores));
            } catch (const InputError&) {
                pv.selections.emplace_back(std::nullopt);
            }
        }
        pv.elapsed_ms = ms_since(t0);
        preview.on_layer(pv);
    };
    // Loading read every weight; an analysis holds a layer's only while it runs.
    if (!settings.keep_values) model->release_pages();
    std::vector<at::Tensor> logits = model->forward_parts(parts, st.cache, opts, [&](int64_t l) {
        // Value norms are taken as each layer completes; then, when values are not kept, the
        // layer's values go (keys stay: every score reads them).
        capture_layer(l, with_norms ? value_norms(st.cache, l) : at::Tensor());
        if (!settings.keep_values) {
            st.cache.layer(l).drop_values();
            model->release_layer_pages(l);  // nothing more runs through this layer
        }
        if (previewing) preview_layer(l);
    });
    if (!settings.keep_values) model->release_pages();
    st.last_logits = logits.back();
    st.scorer_ms = scorer_ms;
    st.prefill_ms = ms_since(t0) - scorer_ms;
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
    if (progress) progress("layer scores", 0, 1);
    // Built during the forward pass when a preview asked for them, else now.
    std::vector<LayerScorer> scorers = std::move(st.aware_scorers);
    std::vector<LayerScorer> agnostic = std::move(st.agnostic_scorers);
    double scorer_ms = st.scorer_ms;
    if (scorers.empty()) {
        auto t0 = std::chrono::steady_clock::now();
        scorers = with_oom_report("scoring the window", [&] { return build_scorers(st.aware); });
        scorer_ms = ms_since(t0);
    }
    if (!scorers.empty()) {
        // Scores that are products over every key, of policies whose captures this prefill
        // recorded for them (ExpectedAttention: about 0.7 s a layer of an 8B model at 32K tokens),
        // made now for the default settings: the first retune to the policy reads them.
        auto t0 = std::chrono::steady_clock::now();
        prepare_default_scores(scorers, settings.captures);
        scorer_ms += ms_since(t0);
    }
    PrefillSummary s;
    s.scorer_ms = scorer_ms;
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
    m->agnostic_scorers = std::move(agnostic);
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
}  // namespace snapkv
