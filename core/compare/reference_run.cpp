// See reference_run.h.
#include "core/compare/reference_run.h"

#include <chrono>

#include "core/common/errors.h"
#include "core/common/units.h"
#include "core/model/sampler.h"
#include "core/tokenizer/tokenizer.h"

namespace snapkv {
namespace {

using Clock = std::chrono::steady_clock;

// Text, pieces and speed of a finished run that spent ms feeding its tokens back.
void finish_output(const Tokenizer& tok, RunOutput& out, double ms) {
    out.text = tok.decode(out.ids);
    for (int32_t id : out.ids) out.pieces.push_back(tok.token_to_piece(id, true));
    out.decode_ms = ms;
    const auto fed = static_cast<double>(out.ids.size()) - 1.0;
    out.decode_tok_s = ms > 0 && fed > 0 ? 1000.0 * fed / ms : 0.0;
}

// The step loop both runs share: sample, record, stop at end-of-generation / length / context,
// otherwise feed the token back. on_step(step, logits [V], token) sees every sampled token;
// on_forward(probe, cache) runs after each fed-back token when a probe is requested.
template <typename OnStep, typename OnForward>
RunOutput decode(const LlamaModel& model, const Tokenizer& tok, LockstepRun run, const GenerationSettings& gen,
                 bool with_probe, OnStep&& on_step, OnForward&& on_forward,
                 const std::function<void(int64_t, int64_t)>& progress, const std::atomic<bool>* cancel) {
    Sampler sampler(SamplingParams{gen.is_greedy(), gen.temperature, gen.top_k, gen.top_p, gen.seed});
    const int64_t n_ctx = model.config().n_ctx_train;
    run.cache.reserve(gen.max_tokens);
    RunOutput out;
    double ms = 0;
    for (int64_t step = 0; step < gen.max_tokens; ++step) {
        if (cancel && cancel->load()) throw Cancelled();
        at::Tensor logits = run.logits.select(0, run.logits.size(0) - 1);  // [V]
        const int32_t id = sampler.sample(logits);
        on_step(step, logits, id);
        out.ids.push_back(id);
        if (progress) progress(step + 1, gen.max_tokens);
        if ((gen.stop_at_eog && tok.is_eog(id)) || step + 1 == gen.max_tokens ||
            (n_ctx > 0 && run.cache.n_past() >= n_ctx))
            break;
        AttentionProbe probe;
        ForwardOptions fo;
        fo.cancel = cancel;
        if (with_probe) fo.probe = &probe;
        const auto t0 = Clock::now();
        run.logits = model.forward({id}, run.cache, fo);
        ms += ms_since(t0);
        if (with_probe) on_forward(probe, run.cache);
    }
    finish_output(tok, out, ms);
    return out;
}

}  // namespace

FullReference run_full_reference(const LlamaModel& model, const Tokenizer& tok, LockstepRun full,
                                 const GenerationSettings& gen, int64_t prefix, double threshold, int64_t kl_steps,
                                 const std::function<void(int64_t, int64_t)>& progress,
                                 const std::atomic<bool>* cancel) {
    FullReference ref;
    ref.prefix = prefix;
    ref.threshold = threshold;
    const auto n_layer = static_cast<size_t>(model.config().n_layer);
    std::vector<std::vector<at::Tensor>> important(n_layer);  // per layer N x [H, P]
    ref.run = decode(
        model, tok, std::move(full), gen, prefix > 0,
        [&](int64_t step, const at::Tensor& logits, int32_t) {
            if (step < kl_steps) ref.step_logits.push_back(logits.to(at::kFloat).clone());  // [V]
        },
        [&](const AttentionProbe& probe, const KvCache& cache) {
            for (size_t l = 0; l < n_layer; ++l)
                important[l].push_back(prefix_important(probe.probs[l], cache.layer(static_cast<int64_t>(l)), prefix,
                                                        threshold));  // [H, P]
        },
        progress, cancel);
    if (prefix > 0 && !important.front().empty())
        for (auto& steps : important) ref.important.push_back(at::stack(steps));  // [N, H, P]
    return ref;
}

namespace {

// Scores step `step` of a compressed run (logits lc [V]) against the reference, while the reference
// has a distribution for it.
void score_step(const FullReference& ref, int64_t step, const at::Tensor& lc, CompareResult& r) {
    const auto& full_ids = ref.run.ids;
    if (step >= static_cast<int64_t>(ref.step_logits.size()) || step >= static_cast<int64_t>(full_ids.size())) return;
    const at::Tensor& lf = ref.step_logits[static_cast<size_t>(step)];  // [V]
    CompareStep cs;
    cs.kl = kl_divergence(lf, lc);
    cs.top1_agree = at::argmax(lf).item<int64_t>() == at::argmax(lc).item<int64_t>();
    cs.rank = token_rank(lc, full_ids[static_cast<size_t>(step)]);
    r.steps.push_back(cs);
}

// First divergence and hit rates of a finished compressed run (see the header).
void finish_against_reference(const LlamaModel& model, const FullReference& ref, int64_t prefix,
                              const std::vector<at::Tensor>& kept, CompareResult& r) {
    const auto& full_ids = ref.run.ids;
    const auto& comp_ids = r.compressed.ids;
    const size_t common = std::min(full_ids.size(), comp_ids.size());
    for (size_t i = 0; i < common && r.first_divergence < 0; ++i)
        if (full_ids[i] != comp_ids[i]) r.first_divergence = static_cast<int64_t>(i);
    if (r.first_divergence < 0 && full_ids.size() != comp_ids.size()) r.first_divergence = static_cast<int64_t>(common);

    // Hit rate per (layer, query head): the mean over the full run's fed-back tokens of the share of
    // their important prefix positions that the selection kept (run_lockstep's definition).
    const int64_t n_layer = model.config().n_layer, H = model.config().n_head;
    r.hit_rate.assign(static_cast<size_t>(n_layer), std::vector<double>(static_cast<size_t>(H), -1.0));
    for (size_t l = 0; l < ref.important.size() && prefix > 0; ++l) {
        const at::Tensor imp = ref.important[l].narrow(2, 0, prefix);  // [N, H, P]
        at::Tensor total = imp.sum(2);                                 // [N, H]
        at::Tensor hit = l < kept.size() && kept[l].defined()
                             ? imp.logical_and(kept[l].to(imp.device()).unsqueeze(0)).sum(2)  // [N, H]
                             : total;
        at::Tensor valid = total.gt(0);                                               // [N, H]
        at::Tensor ratio = hit.to(at::kDouble) / total.clamp_min(1).to(at::kDouble);  // [N, H]
        at::Tensor n = valid.sum(0).cpu();                                            // [H]
        at::Tensor sum = (ratio * valid.to(at::kDouble)).sum(0).cpu();                // [H]
        auto nn = n.accessor<int64_t, 1>();
        auto ss = sum.accessor<double, 1>();
        for (int64_t h = 0; h < H; ++h)
            if (nn[h] > 0) r.hit_rate[l][static_cast<size_t>(h)] = ss[h] / static_cast<double>(nn[h]);
    }
}

}  // namespace

CompareResult run_against_reference(const LlamaModel& model, const Tokenizer& tok, const FullReference& ref,
                                    LockstepRun comp, const GenerationSettings& gen, int64_t prefix,
                                    const std::vector<at::Tensor>& kept,
                                    const std::function<void(int64_t, int64_t)>& progress,
                                    const std::atomic<bool>* cancel) {
    std::vector<AgainstReference> runs(1);
    runs[0].run = std::move(comp);
    runs[0].prefix = prefix;
    runs[0].kept = kept;
    return std::move(runs_against_reference(model, tok, ref, std::move(runs), gen, progress, cancel).front());
}

std::vector<CompareResult> runs_against_reference(const LlamaModel& model, const Tokenizer& tok,
                                                  const FullReference& ref, std::vector<AgainstReference> runs,
                                                  const GenerationSettings& gen,
                                                  const std::function<void(int64_t, int64_t)>& progress,
                                                  const std::atomic<bool>* cancel) {
    const auto n = runs.size();
    for (const AgainstReference& a : runs)
        if (a.prefix > ref.prefix)
            throw InputError("hit rate: the selection's prefix " + std::to_string(a.prefix) +
                             " is longer than the reference's " + std::to_string(ref.prefix));
    const SamplingParams sp{gen.is_greedy(), gen.temperature, gen.top_k, gen.top_p, gen.seed};
    std::vector<Sampler> samplers(n, Sampler(sp));
    std::vector<CompareResult> out(n);
    std::vector<double> ms(n, 0.0);
    std::vector<size_t> active(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].full = ref.run;
        runs[i].run.cache.reserve(gen.max_tokens);
        active[i] = i;
    }
    const int64_t n_ctx = model.config().n_ctx_train;
    // Every run still going takes one step together; a run leaves at its own end of generation.
    for (int64_t step = 0; step < gen.max_tokens && !active.empty(); ++step) {
        if (cancel && cancel->load()) throw Cancelled();
        std::vector<size_t> next;
        std::vector<int32_t> tokens;
        std::vector<KvCache*> caches;
        for (size_t i : active) {
            LockstepRun& run = runs[i].run;
            const at::Tensor logits = run.logits.select(0, run.logits.size(0) - 1);  // [V]
            const int32_t id = samplers[i].sample(logits);
            score_step(ref, step, logits, out[i]);
            out[i].compressed.ids.push_back(id);
            if ((gen.stop_at_eog && tok.is_eog(id)) || step + 1 == gen.max_tokens ||
                (n_ctx > 0 && run.cache.n_past() >= n_ctx)) {
                if (runs[i].decode) out[i].cache_tokens.push_back(cache_tokens(run.cache));
                continue;
            }
            next.push_back(i);
            tokens.push_back(id);
            caches.push_back(&run.cache);
        }
        if (progress) progress(step + 1, gen.max_tokens);
        active = std::move(next);
        if (active.empty()) break;
        ForwardOptions fo;
        fo.cancel = cancel;
        std::vector<at::Tensor> queries;  // per layer [active, H, D]
        bool any_decode = false;
        for (size_t i : active) any_decode = any_decode || runs[i].decode != nullptr;
        if (any_decode) fo.last_queries = &queries;
        const auto t0 = Clock::now();
        const at::Tensor logits = model.forward_batch(tokens, caches, fo);  // [active, V]
        // Each run is charged an equal share of the batched step, its own events on top.
        const double share = ms_since(t0) / static_cast<double>(active.size());
        for (size_t a = 0; a < active.size(); ++a) {
            AgainstReference& ar = runs[active[a]];
            ar.run.logits = logits.narrow(0, static_cast<int64_t>(a), 1);
            ms[active[a]] += share;
            if (!ar.decode) continue;
            const auto t1 = Clock::now();
            std::vector<at::Tensor> mine;
            for (const at::Tensor& q : queries) mine.push_back(q.narrow(0, static_cast<int64_t>(a), 1));
            ar.decode->after_step(ar.run.cache, mine);
            ms[active[a]] += ms_since(t1);
            out[active[a]].cache_tokens.push_back(cache_tokens(ar.run.cache));
        }
    }
    for (size_t i = 0; i < n; ++i) {
        finish_output(tok, out[i].compressed, ms[i]);
        out[i].compressed.batch = static_cast<int64_t>(n);
        finish_against_reference(model, ref, runs[i].prefix, runs[i].kept, out[i]);
        if (runs[i].decode) {
            out[i].decode = runs[i].decode->settings();
            out[i].decode_events = runs[i].decode->events();
        }
    }
    return out;
}

}  // namespace snapkv
