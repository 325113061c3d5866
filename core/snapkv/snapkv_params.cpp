// Names of the selection enums as the CLI, the GUI and the JSON files spell them, their parsers,
// the one parameter check, and the plain-words note for a cache that grows. Parsing is exact and
// case-sensitive apart from a few aliases the reference code uses ("maxpool"/"avgpool" from
// FasterDecoding/SnapKV).
#include "core/snapkv/snapkv_params.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/common/errors.h"
#include "core/common/units.h"

namespace snapkv {

namespace {

std::string fmt_double(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

ParamProblem problem(const char* field, const std::string& value, const std::string& rule) {
    return ParamProblem{field, value, rule};
}

}  // namespace

std::string ParamProblem::sentence(const Namer& name) const {
    // {field} placeholders: the namer's spelling, or "the <field>".
    std::string out = value + " ";
    for (size_t i = 0; i < rule.size();) {
        const size_t close = rule[i] == '{' ? rule.find('}', i) : std::string::npos;
        if (close == std::string::npos) {
            out += rule[i++];
            continue;
        }
        const std::string field = rule.substr(i + 1, close - i - 1);
        const std::string named = name ? name(field) : std::string();
        out += named.empty() ? "the " + field : named;
        i = close + 1;
    }
    return out;
}

int64_t effective_budget(const SelectionParams& p, int64_t n_tokens) {
    if (p.ratio < 0.0) return p.budget;
    if (!(p.ratio >= 0.0 && p.ratio < 1.0))  // NaN lands here too
        throw InputError("ratio: " + fmt_double(p.ratio) +
                         " is out of range; allowed 0 <= ratio < 1 (or negative to use budget)");
    // kvpress: n_kept = int(q_len * (1 - compression_ratio))
    return static_cast<int64_t>(static_cast<double>(n_tokens) * (1.0 - p.ratio));
}

std::optional<ParamProblem> check_params(const SelectionParams& p, const ParamLimits& lim) {
    const PolicyInfo& info = policy_info(p.policy);
    // W: the window the policy keeps (params.window, or its fixed one: TOVA 1, Knorm 0, ...).
    const int64_t L = lim.n_tokens, W = info.window_of(p.window), Wmax = lim.max_window;
    if (L > 0 && L < 2)
        return problem("prompt", std::to_string(L),
                       "tokens is too short to compress; at least 2 (a window and a prefix)");
    // Window: 1..min(Wmax, L - 1), whichever bounds are known.
    int64_t w_hi = 0;
    if (Wmax > 0) w_hi = Wmax;
    if (L > 0) w_hi = w_hi > 0 ? std::min(w_hi, L - 1) : L - 1;
    const std::string range = w_hi > 0 ? "allowed 1.." + std::to_string(w_hi) : "allowed >= 1";
    const bool reads_window = info.reads_param(kReadsWindow);
    if (reads_window && W < 1) return problem("window", std::to_string(W), "is out of range; " + range);
    if (reads_window && Wmax > 0 && W > Wmax)
        return problem("window", std::to_string(W),
                       "is out of range; " + range + " (at most the captured window " + std::to_string(Wmax) +
                           ": prefill kept the queries of the last " + std::to_string(Wmax) + " tokens)");
    if (L > 0 && W >= L && W > 0)
        return problem("window", std::to_string(W),
                       "must be smaller than the prompt length " + std::to_string(L) + "; " + range);
    // Budget, or the ratio form. C is known unless a ratio waits for the prompt.
    int64_t C = -1;
    if (p.ratio >= 0.0 || std::isnan(p.ratio)) {
        if (!(p.ratio >= 0.0 && p.ratio < 1.0))
            return problem("ratio", fmt_double(p.ratio),
                           "is out of range; allowed 0 <= ratio < 1 (or negative to use budget)");
        if (L > 0) {
            C = effective_budget(p, L);
            if (C <= W)
                return problem("ratio", fmt_double(p.ratio),
                               "keeps int(" + std::to_string(L) + " * (1 - " + fmt_double(p.ratio) +
                                   ")) = " + std::to_string(C) + " tokens, not more than {window} " +
                                   std::to_string(W) + "; allowed: a ratio that keeps more than " + std::to_string(W) +
                                   " tokens (the budget counts the window)");
        }
    } else {
        C = p.budget;
        if (C <= W)
            return problem("budget", std::to_string(C),
                           "must be larger than {window} " + std::to_string(W) +
                               " (the budget counts the window); allowed > " + std::to_string(W));
    }
    // The kernel only matters to a policy that pools, and not with pooling none.
    if (info.pools() && p.pooling != Pooling::None) {
        const bool bad = p.kernel < 1 || p.kernel % 2 == 0 || (L > 0 && p.kernel > L - W);
        if (bad)
            return problem("kernel", std::to_string(p.kernel),
                           L > 0 ? "must be odd, at least 1 and at most the prefix length " + std::to_string(L - W) +
                                       " (L - W): the pooling window is centred on each position"
                                 : std::string("must be odd and at least 1: the pooling window is centred on each "
                                               "position"));
    }
    // Policy parameters: never-valid values always, the limits that depend on C when read.
    const int64_t sink_hi = info.reads_param(kReadsSink) && C > 0 ? C - W : -1;
    if (p.n_sink < 0 || (sink_hi >= 0 && p.n_sink > sink_hi))
        return problem("n_sink", std::to_string(p.n_sink),
                       sink_hi >= 0 ? "is out of range; allowed 0.." + std::to_string(sink_hi) + " (the budget " +
                                          std::to_string(C) + " minus {window} " + std::to_string(W) + ")"
                                    : std::string("is out of range; allowed >= 0"));
    if (p.pyramid_beta < 1)
        return problem("pyramid_beta", std::to_string(p.pyramid_beta), "is out of range; allowed >= 1");
    if (!(p.adakv_alpha >= 0.0 && p.adakv_alpha <= 1.0))
        return problem("adakv_alpha", fmt_double(p.adakv_alpha), "is out of range; allowed 0 <= alpha <= 1");
    return std::nullopt;
}

void validate_params(const SelectionParams& p, int64_t n_tokens, int64_t max_window) {
    if (n_tokens < 2)
        throw InputError("prompt: " + std::to_string(n_tokens) +
                         " tokens is too short to compress; at least 2 (a window and a prefix)");
    if (const auto bad = check_params(p, {n_tokens, max_window})) throw InputError(bad->text());
}

std::string pooling_name(Pooling p) {
    switch (p) {
    case Pooling::Max: return "max";
    case Pooling::Avg: return "avg";
    case Pooling::None: return "none";
    }
    return "unknown";
}

Pooling parse_pooling(const std::string& s) {
    if (s == "max" || s == "maxpool") return Pooling::Max;
    if (s == "avg" || s == "avgpool") return Pooling::Avg;
    if (s == "none") return Pooling::None;
    throw InputError("pooling: '" + s + "' is not a pooling; allowed: max, avg, none");
}

std::string gqa_mode_name(GqaMode m) {
    switch (m) {
    case GqaMode::QueryHead: return "query-head";
    case GqaMode::KvHead: return "kv-head";
    }
    return "unknown";
}

GqaMode parse_gqa_mode(const std::string& s) {
    if (s == "query-head") return GqaMode::QueryHead;
    if (s == "kv-head") return GqaMode::KvHead;
    throw InputError("gqa mode: '" + s + "' is not a GQA mode; allowed: query-head, kv-head");
}

std::string tie_break_name(TieBreak t) {
    switch (t) {
    case TieBreak::Earlier: return "earlier";
    case TieBreak::Later: return "later";
    }
    return "unknown";
}

TieBreak parse_tie_break(const std::string& s) {
    if (s == "earlier") return TieBreak::Earlier;
    if (s == "later") return TieBreak::Later;
    throw InputError("tie break: '" + s + "' is not a tie break; allowed: earlier, later");
}

std::string cache_growth_note(const Selection& sel, int64_t n_head, int64_t n_head_kv, int64_t bytes_full,
                              int64_t bytes_kept) {
    if (bytes_full <= 0 || bytes_kept <= bytes_full) return {};
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", static_cast<double>(bytes_kept) / static_cast<double>(bytes_full));
    std::string s = "the compressed cache (" + format_bytes(bytes_kept) + ") is " + ratio + "x the full one (" +
                    format_bytes(bytes_full) + ")";
    if (sel.params.gqa == GqaMode::QueryHead && n_head_kv > 0 && n_head > n_head_kv) {
        // Kept bytes ~ n_head * C, full bytes ~ n_head_kv * L: smaller only while C * H < L * Hkv.
        const int64_t largest = (sel.n_tokens * n_head_kv - 1) / n_head;
        s += ": per query head (official SnapKV) stores the " + std::to_string(sel.budget) +
             " kept tokens of each of the " + std::to_string(n_head) +
             " query heads separately, while the full cache holds only the " + std::to_string(n_head_kv) +
             " KV heads they share. Select per KV head, or use a budget of at most " + std::to_string(largest) +
             " tokens, to make it smaller";
    }
    return s;
}

}  // namespace snapkv
