// See lockstep.h.
#include "core/compare/lockstep.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/errors.h"
#include "core/model/sampler.h"
#include "core/tokenizer/tokenizer.h"

namespace snapkv {

double kl_divergence(const at::Tensor& full_logits, const at::Tensor& comp_logits) {
    at::Tensor lp = at::log_softmax(full_logits.to(at::kDouble).view({-1}), 0);  // [V]
    at::Tensor lq = at::log_softmax(comp_logits.to(at::kDouble).view({-1}), 0);  // [V]
    return std::max(0.0, (lp.exp() * (lp - lq)).sum().item<double>());
}

int64_t token_rank(const at::Tensor& logits, int32_t token) {
    at::Tensor l = logits.to(at::kFloat).view({-1});  // [V]
    return l.gt(l[token]).sum().item<int64_t>();
}

at::Tensor prefix_important(const at::Tensor& probs, const LayerKv& kv, int64_t prefix, double threshold) {
    const int64_t S = probs.size(1);
    at::Tensor pos = kv.positions().select(0, 0).narrow(0, 0, S);  // [S] (full cache: same on every head)
    if (S >= prefix && pos[prefix - 1].item<int64_t>() == prefix - 1)
        return probs.narrow(1, 0, prefix).gt(threshold);                      // slot == position
    at::Tensor slots = pos.lt(prefix).nonzero().view(-1);                     // [n] slots in the prefix
    at::Tensor by_pos = at::zeros({probs.size(0), prefix}, probs.options());  // [H, P]
    by_pos.index_copy_(1, pos.index_select(0, slots), probs.index_select(1, slots));
    return by_pos.gt(threshold);
}

std::vector<uint8_t> attention_by_position(const AttentionProbe& probe, const KvCache& full, int64_t n_head_kv) {
    const int64_t n_pos = full.n_past();  // the fed token's position + 1
    const auto n_layer = static_cast<int64_t>(probe.probs.size());
    std::vector<uint8_t> out(static_cast<size_t>(n_layer * n_head_kv * n_pos), 0);
    for (int64_t l = 0; l < n_layer; ++l) {
        const at::Tensor pr = probe.probs[static_cast<size_t>(l)].to(at::kFloat).cpu();  // [H, S]
        const int64_t H = pr.size(0), S = pr.size(1), G = std::max<int64_t>(1, H / n_head_kv);
        const at::Tensor byk = pr.view({n_head_kv, G, S}).amax(1).contiguous();                            // [Hkv, S]
        const at::Tensor pos = full.layer(l).positions().select(0, 0).narrow(0, 0, S).cpu().contiguous();  // [S]
        const auto* a = byk.data_ptr<float>();
        const auto* p = pos.data_ptr<int64_t>();
        for (int64_t g = 0; g < n_head_kv; ++g)
            for (int64_t s = 0; s < S; ++s) {
                if (p[s] < 0 || p[s] >= n_pos) continue;
                const float v = std::sqrt(std::max(0.0f, a[g * S + s]));
                out[static_cast<size_t>((l * n_head_kv + g) * n_pos + p[s])] = static_cast<uint8_t>(
                    std::lround(std::min(1.0f, v) * 255.0f));
            }
    }
    return out;
}

CompareResult run_lockstep(const LlamaModel& model, const Tokenizer& tok, LockstepRun full, LockstepRun comp,
                           const GenerationSettings& gen, const HitRateSpec& hits,
                           const std::function<void(int64_t, int64_t)>& progress, const std::atomic<bool>* cancel,
                           DecodeCompressor* decode, bool record_timeline) {
    using clock = std::chrono::steady_clock;
    const SamplingParams sp{gen.is_greedy(), gen.temperature, gen.top_k, gen.top_p, gen.seed};
    Sampler s_full(sp), s_comp(sp);
    const int64_t n_layer = model.config().n_layer, H = model.config().n_head;
    const int64_t n_ctx = model.config().n_ctx_train;
    CompareResult r;
    std::vector<std::vector<double>> hit_sum(static_cast<size_t>(n_layer),
                                             std::vector<double>(static_cast<size_t>(H), 0.0));
    std::vector<std::vector<int64_t>> hit_n(static_cast<size_t>(n_layer),
                                            std::vector<int64_t>(static_cast<size_t>(H), 0));
    full.cache.reserve(gen.max_tokens);
    comp.cache.reserve(gen.max_tokens);
    const int64_t Hkv = model.config().n_head_kv;
    if (record_timeline) {
        r.prompt_tokens = full.cache.n_past();
        r.start_kept = kept_positions_of(comp.cache);
    }
    double full_ms = 0, comp_ms = 0;
    for (int64_t step = 0; step < gen.max_tokens; ++step) {
        if (cancel && cancel->load()) throw Cancelled();
        at::Tensor lf = full.logits.select(0, full.logits.size(0) - 1);  // [V]
        at::Tensor lc = comp.logits.select(0, comp.logits.size(0) - 1);  // [V]
        const int32_t tf = s_full.sample(lf);
        const int32_t tc = s_comp.sample(lc);
        CompareStep cs;
        cs.kl = kl_divergence(lf, lc);
        cs.top1_agree = at::argmax(lf).item<int64_t>() == at::argmax(lc).item<int64_t>();
        cs.rank = token_rank(lc, tf);
        r.steps.push_back(cs);
        if (tf != tc && r.first_divergence < 0) r.first_divergence = step;
        r.full.ids.push_back(tf);
        r.compressed.ids.push_back(tc);
        if (progress) progress(step + 1, gen.max_tokens);
        const bool stop = (gen.stop_at_eog && (tok.is_eog(tf) || tok.is_eog(tc))) || step + 1 == gen.max_tokens ||
                          (n_ctx > 0 && full.cache.n_past() >= n_ctx);
        if (stop) {
            r.cache_tokens.push_back(cache_tokens(comp.cache));
            break;
        }
        AttentionProbe probe;
        ForwardOptions fo;
        fo.cancel = cancel;
        fo.probe = &probe;
        auto t0 = clock::now();
        full.logits = model.forward({tf}, full.cache, fo);
        full_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        fo.probe = nullptr;
        std::vector<at::Tensor> queries;
        if (decode) fo.last_queries = &queries;
        t0 = clock::now();
        comp.logits = model.forward({tc}, comp.cache, fo);
        if (decode) decode->after_step(comp.cache, queries);
        comp_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
        r.cache_tokens.push_back(cache_tokens(comp.cache));
        if (record_timeline) r.step_attention.push_back(attention_by_position(probe, full.cache, Hkv));
        // Hit rate of this generated token's attention over the prefix (full run).
        if (hits.prefix > 0) {
            for (int64_t l = 0; l < n_layer; ++l) {
                at::Tensor important = prefix_important(probe.probs[static_cast<size_t>(l)], full.cache.layer(l),
                                                        hits.prefix, hits.threshold);  // [H, P]
                at::Tensor total = important.sum(1);                                   // [H]
                const at::Tensor& kept = hits.kept[static_cast<size_t>(l)];
                at::Tensor hit = kept.defined() ? important.logical_and(kept).sum(1) : total;  // [H]
                total = total.cpu();
                hit = hit.cpu();
                auto tt = total.accessor<int64_t, 1>();
                auto hh = hit.accessor<int64_t, 1>();
                for (int64_t h = 0; h < H; ++h) {
                    if (tt[h] == 0) continue;
                    hit_sum[static_cast<size_t>(l)][static_cast<size_t>(h)] += static_cast<double>(hh[h]) / tt[h];
                    hit_n[static_cast<size_t>(l)][static_cast<size_t>(h)] += 1;
                }
            }
        }
    }
    const auto decoded = static_cast<double>(std::max<size_t>(r.full.ids.size(), 1) - 1);
    auto finish = [&](RunOutput& o, double ms) {
        o.text = tok.decode(o.ids);
        for (int32_t id : o.ids) o.pieces.push_back(tok.token_to_piece(id, true));
        o.decode_ms = ms;
        o.decode_tok_s = ms > 0 ? 1000.0 * decoded / ms : 0.0;
    };
    if (decode) {
        r.decode = decode->settings();
        r.decode_events = decode->events();
    }
    finish(r.full, full_ms);
    finish(r.compressed, comp_ms);
    r.hit_rate.assign(static_cast<size_t>(n_layer), std::vector<double>(static_cast<size_t>(H), -1.0));
    for (size_t l = 0; l < hit_sum.size(); ++l)
        for (size_t h = 0; h < hit_sum[l].size(); ++h)
            if (hit_n[l][h] > 0) r.hit_rate[l][h] = hit_sum[l][h] / static_cast<double>(hit_n[l][h]);
    return r;
}

}  // namespace snapkv
