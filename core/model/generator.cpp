// See generator.h.
#include "core/model/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/errors.h"
#include "core/common/units.h"
#include "core/tokenizer/tokenizer.h"

namespace snapkv {

GenerateResult generate(const LlamaModel& model, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                        KvCache& cache, const GenerateOptions& opts) {
    if (prompt.empty()) throw InputError("generate: the prompt is empty (no tokens)");
    const int64_t n_ctx = model.config().n_ctx_train;
    if (n_ctx > 0 && cache.n_past() + static_cast<int64_t>(prompt.size()) > n_ctx)
        throw InputError("generate: prompt of " + std::to_string(prompt.size()) +
                         " tokens does not fit the model's context of " + std::to_string(n_ctx) + " tokens");
    if (opts.max_tokens < 0) throw InputError("generate: max tokens must be >= 0");
    auto t0 = std::chrono::steady_clock::now();
    // Room for what can be generated: decoding stops at the context (2^62 tokens must not size it).
    const int64_t room = n_ctx > 0 ? n_ctx - cache.n_past() - static_cast<int64_t>(prompt.size()) : opts.max_tokens;
    cache.reserve(static_cast<int64_t>(prompt.size()) + std::min(opts.max_tokens, room));
    ForwardOptions fo;
    fo.cancel = opts.cancel;
    at::Tensor logits = model.forward(prompt, cache, fo);
    const double prefill_ms = ms_since(t0);
    GenerateResult r = generate_from(model, tok, logits, cache, opts);
    r.prefill_ms = prefill_ms;
    return r;
}

GenerateResult generate_from(const LlamaModel& model, const Tokenizer& tok, at::Tensor logits, KvCache& cache,
                             const GenerateOptions& opts) {
    if (opts.max_tokens < 0) throw InputError("generate: max tokens must be >= 0");
    Sampler sampler(opts.sampling);
    GenerateResult r;
    const int64_t n_ctx = model.config().n_ctx_train;
    cache.reserve(n_ctx > 0 ? std::min(opts.max_tokens, std::max<int64_t>(n_ctx - cache.n_past(), 0))
                            : opts.max_tokens);
    auto t0 = std::chrono::steady_clock::now();
    r.stop_reason = "length";
    for (int64_t i = 0; i < opts.max_tokens; ++i) {
        if (opts.cancel && opts.cancel->load()) {
            r.stop_reason = "cancelled";
            break;
        }
        const int32_t id = sampler.sample(logits.select(0, logits.size(0) - 1));
        r.ids.push_back(id);
        if (opts.on_token && !opts.on_token(id)) {
            r.stop_reason = "callback";
            break;
        }
        if (opts.stop_at_eog && tok.is_eog(id)) {
            r.stop_reason = "eog";
            break;
        }
        if (i + 1 == opts.max_tokens) break;
        if (n_ctx > 0 && cache.n_past() >= n_ctx) {
            r.stop_reason = "context";
            break;
        }
        ForwardOptions fo;
        fo.cancel = opts.cancel;
        std::vector<at::Tensor> queries;
        if (opts.want_queries) fo.last_queries = &queries;
        try {
            logits = model.forward({id}, cache, fo);
            if (opts.after_forward) opts.after_forward(cache, queries);
        } catch (const Cancelled&) {
            r.stop_reason = "cancelled";
            break;
        }
    }
    r.decode_ms = ms_since(t0);
    return r;
}

double token_nll(const at::Tensor& logits, int32_t target) {
    at::Tensor l = logits.to(at::kDouble);  // [V]
    return (l.logsumexp(0) - l[target]).item<double>();
}

PerplexityResult perplexity(const LlamaModel& model, const std::vector<int32_t>& tokens, int32_t bos_id, int64_t n_ctx,
                            const std::function<void(int64_t, int64_t)>& progress, const std::atomic<bool>* cancel) {
    if (n_ctx < 4) throw InputError("perplexity: ctx " + std::to_string(n_ctx) + " must be at least 4");
    if (model.config().n_ctx_train > 0 && n_ctx > model.config().n_ctx_train)
        throw InputError("perplexity: ctx " + std::to_string(n_ctx) + " exceeds the model's context " +
                         std::to_string(model.config().n_ctx_train));
    const int64_t n_chunk = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (n_chunk < 1)
        throw InputError("perplexity: the text has " + std::to_string(tokens.size()) +
                         " tokens, fewer than one chunk of " + std::to_string(n_ctx));
    PerplexityResult r;
    r.n_tokens = static_cast<int64_t>(tokens.size());
    const int64_t first = n_ctx / 2;
    r.scored_per_chunk = n_ctx - 1 - first;
    double nll_total = 0;
    int64_t count = 0;
    for (int64_t c = 0; c < n_chunk; ++c) {
        std::vector<int32_t> batch(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (bos_id >= 0) batch[0] = bos_id;
        KvCache cache = model.new_cache(n_ctx);
        ForwardOptions fo;
        fo.all_logits = true;
        fo.logits_from = first;  // only the scored half
        fo.cancel = cancel;
        const at::Tensor logits = model.forward(batch, cache, fo).to(at::kCPU);  // [n_ctx - first, V]
        double chunk_nll = 0;
        for (int64_t j = 0; j < r.scored_per_chunk; ++j) {
            // One row at a time in float64: a whole chunk would be n_ctx / 2 x V doubles.
            const at::Tensor row = logits[j].to(at::kDouble);  // [V]
            const int32_t target = tokens[static_cast<size_t>(c * n_ctx + first + j + 1)];
            chunk_nll += row.logsumexp(0).item<double>() - row[target].item<double>();
        }
        nll_total += chunk_nll;
        count += r.scored_per_chunk;
        r.chunk_ppl.push_back(std::exp(chunk_nll / r.scored_per_chunk));
        r.running_ppl.push_back(std::exp(nll_total / count));
        if (progress) progress(c + 1, n_chunk);
    }
    r.ppl = r.running_ppl.back();
    return r;
}

}  // namespace snapkv
