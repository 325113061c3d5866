// Session, perplexity of a continuation with the full cache and with the context's cache
// compressed by one selection: its own prefill (the run plan of that selection), one select, two
// scored forward passes. Does not touch the session's current prefill.
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, Lc = context tokens, W = window,
// S = cache slots, V = n_vocab, D = head_dim.
#include <cmath>

#include "core/model/generator.h"
#include "core/session/run_plan.h"
#include "core/session/session_impl.h"
#include "core/snapkv/compressed_cache.h"
#include "core/snapkv/selector.h"

namespace snapkv {

std::pair<double, double> Session::continuation_perplexity(const std::string& context, const std::string& continuation,
                                                           const SelectionParams& params, const ProgressFn& progress,
                                                           CancelFlag cancel) {
    m->require_model();
    PromptTokens pt;
    pt.ids = m->tok->encode(context, true, true);
    pt.n_context = static_cast<int64_t>(pt.ids.size());
    const std::vector<int32_t> cont = m->tok->encode(continuation, false, true);
    if (cont.empty()) throw InputError("perplexity: the continuation is empty");
    RunFlags flags;
    flags.new_tokens = static_cast<int64_t>(cont.size());  // the continuation is fed after the context
    const PrefillSettings ps = plan_run({params}, flags);
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
