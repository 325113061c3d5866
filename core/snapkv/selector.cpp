// Selection over LayerScorers: validates the parameters once, then per layer takes the cached
// votes for the window as CPU rows (a few hundred KB per layer), lets the policy's rule
// (policy_rule.h) score and choose positions, and measures the kept attention mass. Holds no state, so
// a retune is one call; it never recomputes attention. CUDA path: for SnapKV and PyramidKV on CUDA
// votes, pooling + top-k run in kernels/pool_topk (gpu_ops.h) before the CPU loops, which then
// take those positions (and pooled rows); AdaKV's shared top-k stays on the CPU.
//
// Dimensions: H = n_head, Hkv = n_head_kv, G = H / Hkv, Hs = heads selected (H or Hkv), L = prompt
// tokens, Wmax = captured window, W = window, P = prefix length L - W, C = budget, k = prefix
// positions kept per head in a layer.
#include "core/snapkv/selector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "core/common/errors.h"
#include "core/snapkv/gpu_ops.h"
#include "core/snapkv/policy_rule.h"

namespace snapkv {
namespace {

// The first capture of `captures` (CaptureBit set, policy_table.h) that c lacks, in words with its
// LayerCapture field; null when c has them all.
const char* missing_capture(const LayerCapture& c, uint32_t captures) {
    if ((captures & kCapturesColumnSums) && !c.h2o.defined()) return "the accumulated attention (LayerCapture.h2o)";
    if ((captures & kCapturesQueryStats) && !c.query_head.defined())
        return "the pre-RoPE query statistics (LayerCapture.query_head, query_mean, query_m2)";
    if ((captures & kCapturesValueNorms) && !c.value_norms.defined())
        return "the value norms (LayerCapture.value_norms)";
    if ((captures & kCapturesFutureRope) && !c.future_rope.defined())
        return "the averaged future RoPE (LayerCapture.future_rope)";
    return nullptr;
}

void check_kernel(int64_t kernel, int64_t n_prefix) {
    if (kernel < 1 || kernel % 2 == 0 || kernel > n_prefix)
        throw InputError("kernel: " + std::to_string(kernel) +
                         " is not allowed; the pooling kernel must be odd, at least 1 and at most "
                         "the prefix length " +
                         std::to_string(n_prefix) + " (L - W)");
}

at::Tensor cpu_float(const at::Tensor& x) { return x.to(at::kCPU, at::kFloat).contiguous(); }

// Everything select() decided before looking at a layer.
struct Plan {
    SelectionParams params;
    const PolicyInfo* info = nullptr;
    const PolicyRule* rule = nullptr;
    int64_t n_tokens = 0;               // L
    int64_t window = 0;                 // W: the policy's (params.window, or its fixed one)
    int64_t vote_window = 0;            // Wv: W, or for a policy without a window the user's
                                        // window (its votes only measure the kept mass)
    int64_t budget = 0;                 // C
    int64_t n_prefix = 0;               // P
    int64_t n_head = 0;                 // H
    int64_t n_head_kv = 0;              // Hkv
    int64_t n_sel = 0;                  // Hs
    std::vector<int64_t> layer_budget;  // per layer C_l (window included)
    std::vector<bool> layer_compressed;
    // Per layer the first prefix position the next token can still see: 0, or for a sliding-window
    // layer max(0, L - sliding_window + 1) (at most P). Policies choose among [reach, P) only.
    std::vector<int64_t> reach;
    std::vector<int64_t> sliding_window;  // per layer, 0: none

    int64_t kept_count(size_t layer) const {  // k: prefix positions per head (uniform policies)
        return layer_compressed[layer] ? layer_budget[layer] - window : n_prefix - reach[layer];
    }
};

// A layer's inputs as CPU float rows, gathered with ATen before the parallel region: row h of the
// votes at votes + h * votes_stride (P floats), likewise h2o.
struct LayerInput {
    at::Tensor votes_owner;  // [H, Pv] the scorer's votes (CPU), or a CPU copy of them
    const float* votes = nullptr;
    int64_t votes_stride = 0;
    at::Tensor scores_owner;  // [Hs, P] CPU float: the rule's score_tensor, when it has one
    const float* scores = nullptr;
    at::Tensor h2o_owner;  // [H, L] CPU float
    const float* h2o = nullptr;
    int64_t h2o_stride = 0;
    // CUDA path (gpu_pool_topk), else undefined / null: the policy's ranking done on the device.
    at::Tensor gpu_kept;    // [Hs, k] int64 on the votes' device (compressed layers)
    at::Tensor kept_owner;  // [Hs, k] int64 CPU copy of gpu_kept (select() only)
    const int64_t* kept = nullptr;
    at::Tensor pooled_owner;  // [Hs, P] CPU float: pooled, group-meaned votes (with_scores)
    const float* pooled = nullptr;
};

// n_layer: the model's layers, of which `layers` are the first (all of them but for select_layer).
Plan make_plan(const std::vector<LayerScorer>& layers, const SelectionParams& p, int64_t n_layer) {
    if (layers.empty())
        throw InputError(
            "layers: no layer scorers given; select needs the captures of at least "
            "one layer");
    const LayerScorer& first = layers.front();
    int64_t max_window = first.max_window();
    for (size_t l = 1; l < layers.size(); ++l) {
        const LayerScorer& s = layers[l];
        if (s.n_tokens() != first.n_tokens() || s.n_head() != first.n_head() || s.n_head_kv() != first.n_head_kv())
            throw InputError("layers: layer " + std::to_string(l) + " has L=" + std::to_string(s.n_tokens()) +
                             ", H=" + std::to_string(s.n_head()) + ", Hkv=" + std::to_string(s.n_head_kv()) +
                             " but layer 0 has L=" + std::to_string(first.n_tokens()) +
                             ", H=" + std::to_string(first.n_head()) + ", Hkv=" + std::to_string(first.n_head_kv()) +
                             "; all layers must match");
        max_window = std::min(max_window, s.max_window());
    }
    const PolicyInfo& info = policy_info(p.policy);
    for (size_t l = 0; l < layers.size(); ++l)
        if (const char* missing = missing_capture(layers[l].capture(), info.captures))
            throw InputError("policy: " + std::string(info.name) + " needs " + missing + ", which layer " +
                             std::to_string(l) + " did not record; allowed: another policy, or a prefill that " +
                             "records it (the run plan of this policy, core/session/run_plan.h)");
    const int64_t n_tokens = first.n_tokens();
    validate_params(p, n_tokens, max_window);

    Plan plan;
    plan.params = p;
    plan.info = &info;
    plan.rule = &info.rule();
    plan.n_tokens = n_tokens;
    plan.window = info.window_of(p.window);
    plan.vote_window = plan.window > 0 ? plan.window
                                       : std::clamp<int64_t>(p.window, 1, std::min(max_window, n_tokens - 1));
    plan.budget = effective_budget(p, n_tokens);
    plan.n_prefix = n_tokens - plan.window;
    plan.n_head = first.n_head();
    plan.n_head_kv = first.n_head_kv();
    plan.n_sel = p.gqa == GqaMode::KvHead ? plan.n_head_kv : plan.n_head;
    plan.layer_budget = plan.rule->layer_budgets(p, plan.budget, n_tokens, n_layer);
    // FasterDecoding/SnapKV returns early when `q_len < self.max_capacity_prompt`; at q_len == C
    // it "compresses" by keeping all L - W prefix tokens, and in query-head mode that copies each
    // KV head to every query head of its group: a cache G times the full one with nothing evicted.
    // So here a prompt that fits the budget (L <= C) is simply not compressed, like kvpress at
    // compression_ratio 0. PyramidKV tests the global budget the same way. A sliding-window layer
    // holds only what its window reaches: compressing it means choosing among those positions, and
    // a layer whose reachable prefix already fits the budget is left as it is (it never used more).
    plan.layer_compressed.assign(layers.size(), n_tokens > plan.budget);
    plan.reach.assign(layers.size(), 0);
    plan.sliding_window.assign(layers.size(), 0);
    for (size_t l = 0; l < layers.size(); ++l) {
        const int64_t sw = layers[l].sliding_window();
        if (sw <= 0) continue;
        plan.sliding_window[l] = sw;
        plan.reach[l] = std::min(plan.n_prefix, std::max<int64_t>(0, n_tokens - sw + 1));
        if (plan.n_prefix - plan.reach[l] <= plan.layer_budget[l] - plan.window) plan.layer_compressed[l] = false;
    }
    return plan;
}

// What a policy's score_tensor may depend on, for LayerScorer::cached_scores: its window and the
// parameters its table row says it reads, but not the budget, the tie rule (ranking applies both
// afterwards) or the GQA mode (the rows are per KV head). So a retune of a setting the policy
// ignores (the kernel under ExpectedAttention, whose scores cost seconds a layer at 32K) reuses
// its scores.
std::string score_key(const Plan& plan) {
    const SelectionParams& p = plan.params;
    const PolicyInfo& info = *plan.info;
    std::string key = std::string(info.name) + " w" + std::to_string(plan.window);
    if (info.reads_param(kReadsKernel)) key += " k" + std::to_string(p.kernel) + " " + pooling_name(p.pooling);
    if (info.reads_param(kReadsSink)) key += " sink" + std::to_string(p.n_sink);
    if (info.reads_param(kReadsSeed)) key += " seed" + std::to_string(p.seed);
    if (info.reads_param(kReadsPyramidBeta)) key += " beta" + std::to_string(p.pyramid_beta);
    if (info.reads_param(kReadsAdakvAlpha)) {
        char alpha[40];
        std::snprintf(alpha, sizeof alpha, " alpha%.17g", p.adakv_alpha);
        key += alpha;
    }
    return key;
}

// The rule's score_tensor of one layer, [Hkv, P] as a CPU float tensor (undefined: it has none),
// kept with the scorer: KeyDiff's and ExpectedAttention's scores are products over all L keys
// (seconds per layer of an 8B model at 32K), and a retune back to the policy, or of its budget or
// GQA mode, needs the same ones (score_key).
at::Tensor policy_scores(const LayerScorer& s, const Plan& plan) {
    const at::Tensor t = s.cached_scores(score_key(plan), [&] {
        const at::Tensor made = plan.rule->score_tensor(s, plan.params, plan.window);
        return made.defined() ? cpu_float(made) : made;
    });
    if (t.defined())
        TORCH_CHECK(t.dim() == 2 && t.size(0) == plan.n_head_kv && t.size(1) == plan.n_prefix, "policy ",
                    plan.info->name, ": score_tensor must be [Hkv, P]");
    return t;
}

// with_scores: the caller reports pooled rows; for_select: select() (CPU votes always needed for
// the kept mass), else select_positions (device positions suffice where the kernel ran).
LayerInput gather_input(const LayerScorer& s, size_t layer, const Plan& plan, bool with_scores, bool for_select) {
    LayerInput in;
    {
        at::Tensor votes = s.votes(plan.vote_window);  // [H, Pv] on the device
        bool cpu_votes = true;
#ifdef SNAPKV_HAVE_CUDA
        // CUDA path: pooling (per query head, then the KV-group mean) and top-k in one kernel,
        // the same values and positions as pool_row + group_rows + top_k_positions below.
        const SelectionParams& p = plan.params;
        const bool compressed = plan.layer_compressed[layer];
        if (votes.is_cuda() && gpu_kernels_available() && plan.reach[layer] == 0 && plan.rule->pooled_votes_top_k() &&
            (compressed || with_scores)) {
            auto pooled_pos = gpu_pool_topk(votes, plan.n_head / plan.n_sel, p.kernel, p.pooling,
                                            compressed ? plan.kept_count(layer) : 0, p.tie_break);
            if (with_scores) {
                in.pooled_owner = cpu_float(pooled_pos.first);  // [Hs, P]
                in.pooled = in.pooled_owner.data_ptr<float>();
            }
            if (compressed) {
                in.gpu_kept = pooled_pos.second;  // [Hs, k]
                if (for_select) {
                    in.kept_owner = in.gpu_kept.to(at::kCPU).contiguous();
                    in.kept = in.kept_owner.data_ptr<int64_t>();
                }
                cpu_votes = for_select;
            }
        }
#else
        (void)layer, (void)with_scores, (void)for_select;  // CPU-only build: no kernels
#endif
        if (cpu_votes) {
            in.votes_owner = cpu_float(votes);
            in.votes = in.votes_owner.data_ptr<float>();  // [H, P]
            in.votes_stride = plan.n_tokens - plan.vote_window;
        }
    }
    if (plan.info->uses_ties() && (plan.layer_compressed[layer] || with_scores)) {
        const at::Tensor t = policy_scores(s, plan);
        if (t.defined()) {
            in.scores_owner = rows_per_selected_head(t, plan.n_sel).contiguous();  // [Hs, P] CPU float, read only
            in.scores = in.scores_owner.data_ptr<float>();
        }
    }
    if (plan.info->needs(kCapturesColumnSums)) {
        in.h2o_owner = cpu_float(s.capture().h2o);  // [H, L]
        in.h2o = in.h2o_owner.data_ptr<float>();
        in.h2o_stride = s.n_tokens();
    }
    return in;
}

// Share of a head's votes on the reachable voted prefix [reach, Pv) that falls on its kept
// positions; 1 when that prefix received no attention at all (nothing was lost). Kept positions
// at or after Pv (a policy without a window keeps some of the voting window itself) are not
// counted. Summed in position order in double, so keeping everything gives exactly 1.
double kept_mass(const float* votes, int64_t reach, int64_t n_votes, const int64_t* kept, int64_t n_kept) {
    double total = 0.0;
    for (int64_t t = reach; t < n_votes; ++t) total += votes[t];
    double on_kept = 0.0;
    for (int64_t i = 0; i < n_kept; ++i)
        if (kept[i] < n_votes) on_kept += votes[kept[i]];
    if (!(total > 0.0)) return 1.0;
    return std::min(1.0, std::max(0.0, on_kept / total));
}

// One layer, plain loops only (runs inside at::parallel_for). Writes the kept positions to
// kept_out ([Hs, k], when given) and/or fills *sel (when given) with kept lists, kept mass and,
// when with_scores, the reported votes / pooled rows.
void run_layer(const LayerInput& in, size_t layer, const Plan& plan, bool with_scores, int64_t* kept_out,
               LayerSelection* sel) {
    const SelectionParams& p = plan.params;
    const PolicyRule& rule = *plan.rule;
    const int64_t P = plan.n_prefix;
    const int64_t H = plan.n_head;
    const int64_t Hs = plan.n_sel;
    const bool compressed = plan.layer_compressed[layer];
    const int64_t k = plan.kept_count(layer);

    // Votes per selected head [Hs, Pv] (group mean in KvHead mode).
    const int64_t Pv = plan.n_tokens - plan.vote_window;
    std::vector<float> votes(static_cast<size_t>(Hs * Pv));
    group_rows(in.votes, in.votes_stride, H, Hs, Pv, votes.data());

    // What the policy ranks [Hs, P] (its rule's score(): pooled votes, H2O's accumulated
    // attention, ...); policies that rank nothing choose by position.
    std::vector<float> scores;
    const bool ranks = plan.info->uses_ties();
    const bool report_votes = with_scores && ranks;
    // (CUDA path: the kernel gave the pooled rows when they are reported, and the positions of a
    // compressed layer; with positions and nothing to report, no scores are needed.)
    if (ranks && (compressed || report_votes) && (in.pooled || !in.kept)) {
        scores.resize(static_cast<size_t>(Hs * P));
        if (in.pooled) {  // CUDA path
            std::copy(in.pooled, in.pooled + Hs * P, scores.data());
        } else if (in.scores) {  // the rule's score_tensor
            std::copy(in.scores, in.scores + Hs * P, scores.data());
        } else {
            LayerRows rows;
            rows.layer = static_cast<int64_t>(layer);
            rows.n_head = H;
            rows.n_head_kv = plan.n_head_kv;
            rows.n_sel = Hs;
            rows.n_prefix = P;
            rows.n_tokens = plan.n_tokens;
            rows.votes = in.votes;
            rows.votes_stride = in.votes_stride;
            rows.n_votes = Pv;
            rows.h2o = in.h2o;
            rows.h2o_stride = in.h2o_stride;
            if (!rule.score(rows, p, scores.data())) scores.clear();
        }
    }

    // Policies choose among the reachable prefix [r, P) (all of it but for sliding-window
    // layers), R positions.
    const int64_t r = plan.reach[layer];
    Choice choice;
    choice.scores = scores.empty() ? nullptr : scores.data();
    choice.layer = static_cast<int64_t>(layer);
    choice.n_sel = Hs;
    choice.n_prefix = P;
    choice.reach = r;
    choice.k = k;
    std::vector<std::vector<int64_t>> lists;
    std::vector<int64_t> local;
    int64_t* kept = kept_out;
    const bool ragged = compressed && plan.info->ragged;
    if (ragged) {
        lists = rule.choose_lists(choice, p);
    } else {
        if (!kept) {
            local.resize(static_cast<size_t>(Hs * k));
            kept = local.data();
        }
        if (!compressed) {
            for (int64_t h = 0; h < Hs; ++h) std::iota(kept + h * k, kept + (h + 1) * k, r);
        } else if (in.kept) {  // CUDA path (r == 0)
            std::copy(in.kept, in.kept + Hs * k, kept);
        } else {
            rule.choose(choice, p, kept);
        }
    }
    if (!sel) return;

    sel->layer = static_cast<int64_t>(layer);
    sel->compressed = compressed;
    sel->budget = plan.layer_budget[layer];
    sel->sliding_window = plan.sliding_window[layer];
    sel->first_reachable = r;
    sel->heads.resize(static_cast<size_t>(Hs));
    const bool own_votes = rule.score_is_votes();
    for (int64_t h = 0; h < Hs; ++h) {
        HeadSelection& hs = sel->heads[size_t(h)];
        if (ragged) hs.kept = std::move(lists[size_t(h)]);
        else hs.kept.assign(kept + h * k, kept + (h + 1) * k);
        hs.kept_mass = kept_mass(votes.data() + h * Pv, r, Pv, hs.kept.data(), int64_t(hs.kept.size()));
        if (report_votes && !scores.empty()) {
            // A policy whose score is its own vote (H2O) reports it as the votes.
            if (own_votes) {
                hs.votes.assign(scores.data() + h * P, scores.data() + (h + 1) * P);
            } else {
                hs.votes.assign(votes.data() + h * Pv, votes.data() + (h + 1) * Pv);  // Pv = P: the policy has a window
            }
            if (!own_votes) hs.pooled.assign(scores.data() + h * P, scores.data() + (h + 1) * P);
        }
    }
}

std::vector<LayerInput> gather_inputs(const std::vector<LayerScorer>& layers, const Plan& plan, bool with_scores,
                                      bool for_select) {
    std::vector<LayerInput> in;
    in.reserve(layers.size());
    for (size_t l = 0; l < layers.size(); ++l) in.push_back(gather_input(layers[l], l, plan, with_scores, for_select));
    return in;
}

}  // namespace

at::Tensor pool_scores(const at::Tensor& scores, int64_t kernel, Pooling pooling) {
    if (!scores.defined() || scores.dim() != 2)
        throw InputError("pool_scores: scores must be a 2-D [N, P] tensor, got " +
                         std::string(scores.defined() ? std::to_string(scores.dim()) + "-D" : "none"));
    if (pooling != Pooling::None) check_kernel(kernel, scores.size(1));
    c10::InferenceMode guard;
    // One implementation for select() and for callers: the row loops of ranking.h, on the CPU.
    at::Tensor x = cpu_float(scores);    // [N, P]
    at::Tensor out = at::empty_like(x);  // [N, P]
    const int64_t n = x.size(0), n_prefix = x.size(1);
    for (int64_t r = 0; r < n; ++r)
        pool_row(x.data_ptr<float>() + r * n_prefix, n_prefix, kernel, pooling, out.data_ptr<float>() + r * n_prefix);
    return out.to(scores.device());
}

at::Tensor top_k_positions(const at::Tensor& scores, int64_t k, TieBreak tie) {
    if (!scores.defined() || scores.dim() != 2) throw InputError("top_k_positions: scores must be a 2-D [N, P] tensor");
    if (k < 0) throw InputError("top_k_positions: k " + std::to_string(k) + " is negative; allowed >= 0");
    c10::InferenceMode guard;
    at::Tensor s = cpu_float(scores);  // [N, P]
    const int64_t n = s.size(0);
    const int64_t n_prefix = s.size(1);
    const int64_t kk = std::min(k, n_prefix);
    at::Tensor out = at::empty({n, kk}, at::TensorOptions().dtype(at::kLong));  // [N, k]
    for (int64_t r = 0; r < n; ++r)
        snapkv::top_k_positions(s.data_ptr<float>() + r * n_prefix, n_prefix, kk, tie,
                                out.data_ptr<int64_t>() + r * kk);
    return out;
}

Selection select(const std::vector<LayerScorer>& layers, const SelectionParams& p, bool with_scores) {
    c10::InferenceMode guard;
    const Plan plan = make_plan(layers, p, static_cast<int64_t>(layers.size()));

    Selection sel;
    sel.params = p;
    sel.n_tokens = plan.n_tokens;
    sel.window = plan.window;
    sel.budget = plan.budget;
    sel.compressed = plan.n_tokens > plan.budget;
    if (!sel.compressed)
        sel.note = "prompt of " + std::to_string(plan.n_tokens) + " tokens fits in the budget " +
                   std::to_string(plan.budget) + ": nothing to evict, not compressed";
    else sel.note = plan.rule->note(p, plan.budget, plan.n_tokens);

    std::string sliding;
    int64_t n_sliding = 0, window_sw = 0;
    for (size_t l = 0; l < layers.size(); ++l) {
        if (plan.sliding_window[l] <= 0) continue;
        sliding += (n_sliding++ ? ", " : "") + std::to_string(l);
        window_sw = plan.sliding_window[l];
    }
    if (n_sliding > 0)
        sel.note += std::string(sel.note.empty() ? "" : "; ") + "sliding-window layer" + (n_sliding > 1 ? "s " : " ") +
                    sliding + " (window " + std::to_string(window_sw) + ") keep only what the next token can see";

    const std::vector<LayerInput> inputs = gather_inputs(layers, plan, with_scores, true);
    sel.layers.resize(layers.size());
    // One parallel region over the layers; the body is plain loops (no ATen ops).
    at::parallel_for(0, int64_t(layers.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t l = begin; l < end; ++l)
            run_layer(inputs[size_t(l)], size_t(l), plan, with_scores, nullptr, &sel.layers[size_t(l)]);
    });
    return sel;
}

LayerSelection select_layer(const std::vector<LayerScorer>& layers, int64_t n_layer, const SelectionParams& p,
                            bool with_scores) {
    if (layers.empty() || static_cast<int64_t>(layers.size()) > n_layer)
        throw InputError("layers: " + std::to_string(layers.size()) + " layer scorers given for a model of " +
                         std::to_string(n_layer) + " layers; select_layer needs between 1 and n_layer");
    c10::InferenceMode guard;
    const Plan plan = make_plan(layers, p, n_layer);
    const size_t l = layers.size() - 1;
    LayerSelection out;
    run_layer(gather_input(layers[l], l, plan, with_scores, true), l, plan, with_scores, nullptr, &out);
    return out;
}

void prepare_scores(const std::vector<LayerScorer>& layers, const SelectionParams& p) {
    c10::InferenceMode guard;
    const Plan plan = make_plan(layers, p, static_cast<int64_t>(layers.size()));
    if (!plan.info->uses_ties()) return;
    // A rule without a score tensor (it scores in score()) has nothing to keep: its first layer
    // says so (an undefined tensor is not kept) and the rest are not asked.
    for (const LayerScorer& s : layers)
        if (!policy_scores(s, plan).defined()) return;
}

void prepare_default_scores(const std::vector<LayerScorer>& layers, uint32_t captures) {
    if (layers.empty()) return;
    for (const PolicyInfo& info : kPolicyTable) {
        if (info.captures == 0 || (captures & info.captures) != info.captures) continue;
        SelectionParams p;
        p.policy = info.id;
        try {
            prepare_scores(layers, p);
        } catch (const InputError&) {
            // The first retune computes what it asks for, or says why it cannot.
        }
    }
}

std::vector<at::Tensor> select_positions(const std::vector<LayerScorer>& layers, const SelectionParams& p) {
    if (policy_info(p.policy).ragged)
        throw InputError("policy: " + policy_name(p.policy) +
                         " keeps a different number of positions per head, "
                         "which select_positions cannot return as one tensor; use select() and the "
                         "per-head lists instead");
    c10::InferenceMode guard;
    const Plan plan = make_plan(layers, p, static_cast<int64_t>(layers.size()));
    const std::vector<LayerInput> inputs = gather_inputs(layers, plan, false, false);
    std::vector<at::Tensor> kept;
    kept.reserve(layers.size());
    for (size_t l = 0; l < layers.size(); ++l)
        kept.push_back(inputs[l].gpu_kept.defined()
                           ? inputs[l].gpu_kept  // CUDA path, on the device
                           : at::empty({plan.n_sel, plan.kept_count(l)}, at::TensorOptions().dtype(at::kLong)));
    at::parallel_for(0, int64_t(layers.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t l = begin; l < end; ++l)
            if (!inputs[size_t(l)].gpu_kept.defined())
                run_layer(inputs[size_t(l)], size_t(l), plan, false, kept[size_t(l)].data_ptr<int64_t>(), nullptr);
    });
    for (size_t l = 0; l < layers.size(); ++l) kept[l] = kept[l].to(layers[l].capture().keys.device());  // [Hs, k]
    return kept;
}

at::Tensor kept_positions(const LayerSelection& layer) {
    const auto Hs = static_cast<int64_t>(layer.heads.size());
    const auto k = Hs ? static_cast<int64_t>(layer.heads.front().kept.size()) : 0;
    for (int64_t h = 0; h < Hs; ++h)
        if (static_cast<int64_t>(layer.heads[static_cast<size_t>(h)].kept.size()) != k)
            throw InputError("kept_positions: layer " + std::to_string(layer.layer) + " head " + std::to_string(h) +
                             " keeps " + std::to_string(layer.heads[static_cast<size_t>(h)].kept.size()) +
                             " positions but head 0 keeps " + std::to_string(k) +
                             "; only equal counts fit one tensor (AdaKV: use the lists)");
    c10::InferenceMode guard;
    at::Tensor out = at::empty({Hs, k}, at::TensorOptions().dtype(at::kLong));  // [Hs, k]
    int64_t* dst = out.data_ptr<int64_t>();
    for (int64_t h = 0; h < Hs; ++h)
        std::copy(layer.heads[static_cast<size_t>(h)].kept.begin(), layer.heads[static_cast<size_t>(h)].kept.end(),
                  dst + h * k);
    return out;
}

}  // namespace snapkv
