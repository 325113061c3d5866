// Selection parameters and per-layer results of SnapKV and the other KV-eviction policies, as plain
// values (no LibTorch) so that the GUI, the CLI and the JSON writers share them; their one set of
// defaults and their one check. Semantics follow FasterDecoding/SnapKV snapkv_utils.py and NVIDIA
// kvpress snapkv_press.py. The policies themselves are rows of policy_table.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/snapkv/policy_table.h"

namespace snapkv {

enum class Pooling { Max, Avg, None };
// QueryHead: official SnapKV, keys repeated to every query head, one selection per query head,
//            the compressed cache holds n_head heads.
// KvHead:    kvpress, pooled scores averaged over the query heads of a KV group, one selection
//            per KV head, the cache keeps n_head_kv heads.
enum class GqaMode { QueryHead, KvHead };
// Which of equal scores a top-k keeps. With max pooling a run of up to K positions shares exactly one
// score, so ties at the budget boundary are common. Later: the later positions of a tied run (what
// torch.topk returned in every tied case of FasterDecoding/SnapKV and kvpress compared so far);
// Earlier: the earlier ones. For AdaKV's top-k across heads the order is the flat [head, position]
// index: Later prefers the higher head, then the later position.
enum class TieBreak { Earlier, Later };

// The member initialisers are the user-visible defaults of the CLI, the app and the evaluation grid
// (default_params()): SnapKV's official W 32, K 7, max pooling and C 1024, but one selection per KV
// head (kvpress's GQA handling), so that on a GQA model the cache really shrinks; per query head it
// would keep n_head / n_head_kv times more than the full cache holds. Code that wants the official
// code's per-query-head selection sets gqa = GqaMode::QueryHead.
struct SelectionParams {
    Policy policy = Policy::SnapKV;
    int64_t window = 32;  // W: observation window, always kept
    int64_t kernel = 7;   // K: pooling kernel, odd
    Pooling pooling = Pooling::Max;
    int64_t budget = 1024;  // C: tokens kept per head, window included
    double ratio = -1.0;    // kvpress form: if >= 0, keep int(L * (1 - ratio)) tokens instead of budget
    GqaMode gqa = GqaMode::KvHead;
    int64_t n_sink = 4;                    // StreamingLLM sink tokens
    uint64_t seed = 42;                    // Random policy
    int64_t pyramid_beta = 20;             // PyramidKV (KVCache-Factory) beta
    double adakv_alpha = 0.2;              // AdaKV floor: each head keeps at least alpha * (C - W) prefix tokens
    TieBreak tie_break = TieBreak::Later;  // top-k among equal scores (snapkv, pyramid, adakv, h2o)
};

// The defaults every front end starts from (SelectionParams{}).
inline SelectionParams default_params() { return SelectionParams{}; }

// policy_name / parse_policy: policy_table.h.
std::string pooling_name(Pooling p);  // "max", "avg", "none"
Pooling parse_pooling(const std::string& s);
std::string gqa_mode_name(GqaMode m);  // "query-head", "kv-head"
GqaMode parse_gqa_mode(const std::string& s);
std::string tie_break_name(TieBreak t);  // "earlier", "later"
TieBreak parse_tie_break(const std::string& s);

// C: params.budget, or in the ratio form (params.ratio >= 0, kvpress) int(L * (1 - ratio)), the
// truncation of Python's int(). Throws InputError for a ratio outside [0, 1).
int64_t effective_budget(const SelectionParams& p, int64_t n_tokens);

// What the parameters are checked against; 0 = not known yet (those checks are skipped).
struct ParamLimits {
    int64_t n_tokens = 0;    // L: the prompt's length
    int64_t max_window = 0;  // Wmax: the queries prefill captured
};

// The first bad parameter: which field ("window", "kernel", "budget", "ratio", "n_sink",
// "pyramid_beta", "adakv_alpha", "prompt"), its value as written, and the rule it breaks. The rule
// may refer to another field as {field}, so that each front end names it its own way.
struct ParamProblem {
    std::string field;
    std::string value;
    std::string rule;
    // field name -> how this front end calls it ("--window"); empty names the field plainly.
    using Namer = std::function<std::string(const std::string& field)>;
    // "8 must be larger than the window 8 (...)", or with a namer "... than --window 8 (...)".
    std::string sentence(const Namer& name = {}) const;
    // "budget: 8 must be larger than the window 8 (...)".
    std::string text() const { return field + ": " + sentence(); }
};

// The one parameter check of core, the CLI, the app and the evaluation grid. Always: 1 <= W (<=
// Wmax), C > W (C counts the window) or 0 <= ratio < 1, n_sink >= 0, pyramid_beta >= 1,
// 0 <= adakv_alpha <= 1; for a policy that pools (policy_table.h) with max or avg pooling, K odd
// and >= 1. With the prompt known: L >= 2, W < L, the ratio's int(L * (1 - ratio)) > W, K <= L - W,
// and for a policy that reads n_sink, n_sink <= C - W. Parameters a policy does not read are not
// checked beyond the never-valid values.
std::optional<ParamProblem> check_params(const SelectionParams& p, const ParamLimits& limits = {});
// check_params as an InputError with ParamProblem::text().
void validate_params(const SelectionParams& p, int64_t n_tokens, int64_t max_window);

// One head's selection (a query head in QueryHead mode, a KV head in KvHead mode).
struct HeadSelection {
    std::vector<float> votes;   // [L - W] raw votes (summed window attention); empty if the policy has none
    std::vector<float> pooled;  // [L - W] pooled scores the top-k ran on; empty if none
    std::vector<int64_t> kept;  // sorted, unique prefix positions kept (< L - W); window not listed
    double kept_mass = 0.0;  // share of the window's attention on the (reachable) prefix that falls on kept positions
};

struct LayerSelection {
    int64_t layer = 0;
    bool compressed = false;  // false when L < budget (official: short prompts are not compressed),
                              // or when a sliding-window layer's reachable prefix fits the budget
    int64_t budget = 0;       // this layer's budget (PyramidKV varies it per layer)
    // Sliding-window layers (sliding_window > 0) only ever see their window: the next token (at
    // position L) sees positions >= L - sliding_window + 1, so nothing older is kept or counted;
    // first_reachable is that first prefix position (0 for layers that see everything). Votes and
    // pooled rows still cover the whole prefix (the window queries' real attention).
    int64_t sliding_window = 0;
    int64_t first_reachable = 0;
    std::vector<HeadSelection> heads;
};

struct Selection {
    SelectionParams params;
    int64_t n_tokens = 0;     // L
    int64_t window = 0;       // effective W
    int64_t budget = 0;       // effective C (after the ratio form)
    bool compressed = false;  // any layer compressed
    std::string note;         // e.g. "prompt of 812 tokens is shorter than the budget 1024: not compressed"
    std::vector<LayerSelection> layers;
};

// Plain words for a selection whose cache is larger than the full one, empty otherwise. On a GQA
// model (n_head > n_head_kv) per-query-head selection (official SnapKV) stores the kept tokens of
// every query head separately while the full cache holds only the n_head_kv heads they share, so
// the "compressed" cache grows whenever C * n_head > L * n_head_kv. The note gives both sizes, the
// reason and the two ways out (per KV head, or the largest budget that shrinks the cache).
std::string cache_growth_note(const Selection& sel, int64_t n_head, int64_t n_head_kv, int64_t bytes_full,
                              int64_t bytes_kept);

}  // namespace snapkv
