// Session, evaluation half: the full-cache answer decoded once per prefill (decode_reference) and
// any number of compressed answers scored against it (compare_to_reference), so that an evaluation
// grid pays one prefill and one full decode per document, not one per configuration.
#include "core/compare/reference_run.h"
#include "core/session/session_impl.h"
#include "core/snapkv/compressed_cache.h"

namespace snapkv {

RunOutput Session::decode_reference(const CompareSettings& settings, int64_t kl_steps, const ProgressFn& progress,
                                    CancelFlag cancel) {
    m->require_prefill();
    const PrefillState& st = *m->state;
    const auto L = static_cast<int64_t>(st.prompt.ids.size());
    m->check_generation_fits(L, settings.generation.max_tokens);
    if (kl_steps < 0) throw InputError("kl steps " + std::to_string(kl_steps) + " must be >= 0");
    // The hit rate looks at the positions a selection can drop: the whole prompt, since the presses
    // that score every position (knorm, keydiff, expected_attention) keep no window. Each compare
    // narrows it to its own selection's prefix (prompt less window) below.
    const int64_t prefix = L;
    // As in compare(): sliding-window layers hold only what their window reaches.
    LockstepRun full{window_trimmed_cache(st.cache, m->model->config(), L, settings.generation.max_tokens),
                     st.last_logits};
    const int64_t full_bytes = full.cache.bytes();
    auto ref = std::make_shared<FullReference>(with_oom_report("generating", [&] {
        return run_full_reference(
            *m->model, *m->tok, std::move(full), settings.generation, prefix, settings.hit_threshold, kl_steps,
            [&](int64_t d, int64_t t) {
                if (progress) progress("full cache", d, t);
            },
            cancel);
    }));
    ref->run.kv_bytes = full_bytes;
    m->reference = ref;
    m->reference_settings = settings;
    return ref->run;
}

CompareResult Session::compare_to_reference(const Selection& sel, const ProgressFn& progress, CancelFlag cancel) {
    m->require_prefill();
    if (!m->reference) throw InputError("compare_to_reference: decode the full-cache reference first");
    const FullReference& ref = *m->reference;
    const CompareSettings& settings = m->reference_settings;
    const PrefillState& st = *m->state;
    CompressedStart comp = m->start_compressed(sel, settings.generation.max_tokens, cancel);
    const int64_t comp_bytes = comp.run.cache.bytes();
    // The reference marked important positions over the whole prompt but its last token; a
    // selection's hit rate counts only its own prefix (its window is always kept).
    const int64_t P = sel.n_tokens - sel.window;
    CompareResult r = with_oom_report("generating", [&] {
        return run_against_reference(
            *m->model, *m->tok, ref, std::move(comp.run), settings.generation, P, comp.kept,
            [&](int64_t d, int64_t t) {
                if (progress) progress("compressed", d, t);
            },
            cancel);
    });
    r.params = sel.params;
    r.query_agnostic = comp.query_agnostic;
    r.prefill_ms = st.prefill_ms;
    r.full.kv_bytes = ref.run.kv_bytes;
    r.compressed.kv_bytes = comp_bytes;
    r.note = sel.note;
    return r;
}

}  // namespace snapkv
