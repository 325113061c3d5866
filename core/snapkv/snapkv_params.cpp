// Names of the selection enums as the CLI, the GUI and the JSON files spell them, their parsers,
// and the plain-words note for a cache that grows. Parsing is exact and case-sensitive apart from a
// few aliases the reference code uses ("maxpool"/"avgpool" from FasterDecoding/SnapKV); it does not
// validate numeric parameters (see validate_params in selector.h).
#include "core/snapkv/snapkv_params.h"

#include <cstdio>

#include "core/common/errors.h"

namespace snapkv {

std::string policy_name(Policy p) {
    switch (p) {
    case Policy::SnapKV: return "snapkv";
    case Policy::Streaming: return "streaming";
    case Policy::H2O: return "h2o";
    case Policy::Random: return "random";
    case Policy::Pyramid: return "pyramid";
    case Policy::AdaKV: return "adakv";
    }
    return "unknown";
}

Policy parse_policy(const std::string& s) {
    if (s == "snapkv") return Policy::SnapKV;
    if (s == "streaming" || s == "streamingllm") return Policy::Streaming;
    if (s == "h2o") return Policy::H2O;
    if (s == "random") return Policy::Random;
    if (s == "pyramid" || s == "pyramidkv") return Policy::Pyramid;
    if (s == "adakv") return Policy::AdaKV;
    throw InputError("policy: '" + s +
                     "' is not a policy; allowed: snapkv, streaming, h2o, random, pyramid, adakv");
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

namespace {

std::string mib(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

}  // namespace

std::string cache_growth_note(const Selection& sel, int64_t n_head, int64_t n_head_kv, int64_t bytes_full,
                              int64_t bytes_kept) {
    if (bytes_full <= 0 || bytes_kept <= bytes_full) return {};
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", static_cast<double>(bytes_kept) / static_cast<double>(bytes_full));
    std::string s = "the compressed cache (" + mib(bytes_kept) + ") is " + ratio + "x the full one (" +
                    mib(bytes_full) + ")";
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
