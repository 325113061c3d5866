// Session, evaluation half: the full-cache answer decoded once per prefill (decode_reference) and
// any number of compressed answers scored against it (compare_to_reference), so that an evaluation
// grid pays one prefill and one full decode per document, not one per configuration.
#include "core/compare/reference_run.h"
#include "core/session/session_impl.h"
#include "core/snapkv/compressed_cache.h"

namespace snapkv {

RunOutput Session::decode_reference(const CompareSettings& settings, int64_t kl_steps, const ProgressFn& progress,
                                    CancelFlag cancel) {
    m->require_values();
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
    return std::move(compare_many_to_reference({sel}, progress, cancel).front());
}

std::vector<CompareResult> Session::compare_many_to_reference(const std::vector<Selection>& sels,
                                                              const ProgressFn& progress, CancelFlag cancel,
                                                              const std::vector<DecodeRun>& decode) {
    if (!decode.empty() && decode.size() != sels.size())
        throw InputError("compare_to_reference: " + std::to_string(decode.size()) + " decoding settings for " +
                         std::to_string(sels.size()) + " selections");
    for (size_t i = 0; i < decode.size(); ++i) {
        const std::string problem = check_decode_settings(sels[i].params, decode[i].settings);
        if (!problem.empty()) throw InputError("decoding compression: " + problem);
    }
    m->require_prefill();
    if (!m->reference) throw InputError("compare_to_reference: decode the full-cache reference first");
    const FullReference& ref = *m->reference;
    const CompareSettings& settings = m->reference_settings;
    const PrefillState& st = *m->state;
    // Runs decode together in batches whose compressed caches (grown by the answer) fit a quarter
    // of the free memory (2 GiB when it is unknown); at least one run per batch.
    const AvailableMemory avail = available_memory();
    const int64_t budget = avail.bytes > 0 ? avail.bytes / 4 : (int64_t(2) << 30);
    std::vector<CompareResult> out;
    out.reserve(sels.size());
    // What a run's result takes from its start, beside what runs_against_reference decodes.
    struct Pending {
        const Selection* sel;
        int64_t kv_bytes;
        bool query_agnostic;
        bool compress_prefill;
    };
    std::vector<AgainstReference> batch;
    std::vector<Pending> pending;
    int64_t held = 0;
    const ModelConfig& c = m->model->config();
    const int64_t token_bytes = c.n_layer * c.n_head_kv * c.head_dim * 2 *
                                static_cast<int64_t>(c10::elementSize(m->model->options().dtype));
    auto flush = [&] {
        if (batch.empty()) return;
        std::vector<CompareResult> rs = with_oom_report("generating", [&] {
            return runs_against_reference(
                *m->model, *m->tok, ref, std::move(batch), settings.generation,
                [&](int64_t d, int64_t t) {
                    if (progress) progress("compressed", d, t);
                },
                cancel);
        });
        for (size_t i = 0; i < rs.size(); ++i) {
            CompareResult& r = rs[i];
            r.params = pending[i].sel->params;
            r.query_agnostic = pending[i].query_agnostic;
            r.prefill_ms = st.prefill_ms;
            r.full.kv_bytes = ref.run.kv_bytes;
            r.compressed.kv_bytes = pending[i].kv_bytes;
            r.note = pending[i].compress_prefill ? pending[i].sel->note : "prefill compression off";
            r.compress_prefill = pending[i].compress_prefill;
            out.push_back(std::move(r));
        }
        batch.clear();
        pending.clear();
        held = 0;
    };
    for (size_t i = 0; i < sels.size(); ++i) {
        const Selection& sel = sels[i];
        if (cancel && cancel->load()) throw Cancelled();
        const DecodeRun run = decode.empty() ? DecodeRun{} : decode[i];
        CompressedStart comp;
        if (run.compress_prefill) {
            comp = m->start_compressed(sel, settings.generation.max_tokens, cancel);
        } else {
            // Decoding compression alone: the full cache, every prompt position kept.
            const auto L = static_cast<int64_t>(st.prompt.ids.size());
            comp.run = LockstepRun{window_trimmed_cache(st.cache, c, L, settings.generation.max_tokens),
                                   st.last_logits};
            comp.kept.assign(static_cast<size_t>(c.n_layer), at::Tensor());
        }
        const int64_t bytes = comp.run.cache.bytes();
        const int64_t grown = bytes + token_bytes * settings.generation.max_tokens;
        if (!batch.empty() && held + grown > budget) flush();
        AgainstReference a;
        a.run = std::move(comp.run);
        // The reference marked important positions over the whole prompt but its last token; a
        // selection's hit rate counts only its own prefix (its window is always kept).
        a.prefix = sel.n_tokens - sel.window;
        a.kept = std::move(comp.kept);
        if (run.settings.enabled()) a.decode = std::make_shared<DecodeCompressor>(*m->model, sel.params, run.settings);
        batch.push_back(std::move(a));
        pending.push_back({&sel, bytes, comp.query_agnostic, run.compress_prefill});
        held += grown;
    }
    flush();
    return out;
}

}  // namespace snapkv
