// Session, full against compressed generation: a selection applied to the prefill's cache (the
// compressed start, shared with evaluation's compare_to_reference) and the lockstep comparison
// with KL / top-1 / rank / hit rate. Does not prefill or select beyond the one select() it needs.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Lc = context tokens, W = window,
// S = cache slots, V = n_vocab, D = head_dim.
#include <algorithm>
#include <memory>

#include "core/compare/lockstep.h"
#include "core/session/session_impl.h"
#include "core/snapkv/compressed_cache.h"
#include "core/snapkv/selector.h"

namespace snapkv {

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
    const std::string decode_problem = check_decode_settings(params, settings.decode);
    if (!decode_problem.empty()) throw InputError("decoding compression: " + decode_problem);
    if (!settings.compress_prefill && !settings.decode.enabled())
        throw InputError(
            "compare: with prefill compression off, a decoding budget is needed (else both runs are "
            "the full cache)");
    Selection sel = select(params, agnostic, false);
    const auto L = static_cast<int64_t>(st.prompt.ids.size());
    const int64_t max_tokens = settings.generation.max_tokens;
    m->check_generation_fits(L, max_tokens);
    // The full run holds what a sliding-window runtime would (sliding layers trimmed to their
    // window), so that its KV bytes are the honest baseline of the compressed run's.
    LockstepRun full{window_trimmed_cache(st.cache, m->model->config(), L, max_tokens), st.last_logits};
    CompressedStart comp;
    if (settings.compress_prefill) {
        comp = m->start_compressed(sel, max_tokens, cancel);
    } else {
        // Decoding compression alone: the full cache, every prompt position kept.
        comp.run = LockstepRun{window_trimmed_cache(st.cache, m->model->config(), L, max_tokens), st.last_logits};
        comp.kept.assign(static_cast<size_t>(m->model->config().n_layer), at::Tensor());
        sel.note = "prefill compression off";
    }
    std::unique_ptr<DecodeCompressor> decoder;
    if (settings.decode.enabled()) decoder = std::make_unique<DecodeCompressor>(*m->model, params, settings.decode);
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
            cancel, decoder.get(), settings.record_timeline);
    });
    r.params = params;
    r.query_agnostic = agnostic;
    r.compress_prefill = settings.compress_prefill;
    r.prefill_ms = st.prefill_ms;
    r.full.kv_bytes = full_bytes;
    r.compressed.kv_bytes = comp_bytes;
    r.note = sel.note;
    return r;
}
}  // namespace snapkv
