// The KV-eviction policies, one row each: the name the CLI, the app and the JSON files use, other
// spellings, which selection parameters the policy reads (and so whether it pools and whether the
// tie break matters), what prefill must record for it (its captures, as kvpress's presses declare
// the statistics they hook), and the rule that scores and chooses positions (its own file,
// policy_<name>.cpp). Everything that asks "does this policy pool / rank / need this capture" reads
// this table; core/session/run_plan.h turns the captures of a set of configurations into the
// prefill's settings. Torch-free: the GUI includes it.
//
// Adding a policy: one enum value and one row here, one file with its rule
// (docs/adding_a_policy.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snapkv {

// Row index in kPolicyTable (the order of the GUI's policy list).
enum class Policy { SnapKV, Streaming, H2O, Random, Pyramid, AdaKV, TOVA, Knorm, KeyDiff, ExpectedAttention };

// The parameters of SelectionParams a policy can read, as bits of PolicyInfo::reads. Every policy
// reads the budget (or ratio) and the GQA mode.
enum ParamBit : uint32_t {
    kReadsWindow = 1u << 0,       // W: observation window, always kept (else PolicyInfo::fixed_window)
    kReadsKernel = 1u << 1,       // K and the pooling: the policy pools window votes
    kReadsTieBreak = 1u << 2,     // it ranks with a top-k, so equal scores need a rule
    kReadsSink = 1u << 3,         // n_sink
    kReadsSeed = 1u << 4,         // seed
    kReadsPyramidBeta = 1u << 5,  // pyramid_beta
    kReadsAdakvAlpha = 1u << 6,   // adakv_alpha
};

// What a policy needs prefill to record beyond the keys and the window queries every policy gets
// (LayerCapture, layer_scorer.h), as bits of PolicyInfo::captures. The run plan
// (core/session/run_plan.h) records the union over the policies to be selected, and the selector
// refuses a policy whose capture a prefill did not record.
enum CaptureBit : uint32_t {
    kCapturesColumnSums = 1u << 0,  // each key's attention summed over all prompt queries: H2O's
                                    // accumulated attention (LayerCapture::h2o [H, L])
    kCapturesQueryStats = 1u << 1,  // mean and covariance of the pre-RoPE queries and the first 16
                                    // queries (LayerCapture::query_head, query_mean, query_m2)
    kCapturesValueNorms = 1u << 2,  // ||v|| of every prompt position (LayerCapture::value_norms [Hkv, L])
    kCapturesFutureRope = 1u << 3,  // the RoPE of the next 512 positions averaged
                                    // (LayerCapture::future_rope [D, D])
};
inline constexpr uint32_t kAllCaptures = kCapturesColumnSums | kCapturesQueryStats | kCapturesValueNorms |
                                         kCapturesFutureRope;

class PolicyRule;  // policy_rule.h: how a policy scores and chooses

struct PolicyInfo {
    Policy id;
    const char* name;     // "snapkv"
    const char* aliases;  // other accepted spellings, comma separated ("" for none)
    const char* summary;  // one line for help texts and tooltips
    uint32_t reads;       // ParamBit set
    uint32_t captures;    // CaptureBit set: what prefill must record for this policy (0: keys and
                          // window queries only)
    bool ragged;          // heads keep different counts (one top-k across heads): no [Hs, k] tensor
    const PolicyRule& (*rule)();
    // The window a policy that does not read W keeps: 1 for TOVA (the last token, whose attention
    // scores the rest), 0 for a press that scores every position (Knorm, KeyDiff, ...).
    int64_t fixed_window = 0;

    // W: params.window, or the policy's fixed window.
    int64_t window_of(int64_t window) const { return reads_param(kReadsWindow) ? window : fixed_window; }
    bool pools() const { return (reads & kReadsKernel) != 0; }        // reads kernel and pooling
    bool uses_ties() const { return (reads & kReadsTieBreak) != 0; }  // ranks: has scores to report
    bool reads_param(ParamBit bit) const { return (reads & bit) != 0; }
    bool needs(CaptureBit bit) const { return (captures & bit) != 0; }
};

// Each policy's rule, defined in its own file.
const PolicyRule& snapkv_rule();              // policy_snapkv.cpp
const PolicyRule& streaming_rule();           // policy_streaming.cpp
const PolicyRule& h2o_rule();                 // policy_h2o.cpp
const PolicyRule& random_rule();              // policy_random.cpp
const PolicyRule& pyramid_rule();             // policy_pyramid.cpp
const PolicyRule& adakv_rule();               // policy_adakv.cpp
const PolicyRule& tova_rule();                // policy_tova.cpp
const PolicyRule& knorm_rule();               // policy_knorm.cpp
const PolicyRule& keydiff_rule();             // policy_keydiff.cpp
const PolicyRule& expected_attention_rule();  // policy_expected_attention.cpp

inline constexpr uint32_t kPoolingReads = kReadsWindow | kReadsKernel | kReadsTieBreak;

// In enum order (a static_assert in policy_table.cpp checks it).
inline const PolicyInfo kPolicyTable[] = {
    {Policy::SnapKV, "snapkv", "", "window votes + pooling (SnapKV paper)", kPoolingReads, 0, false, snapkv_rule},
    {Policy::Streaming, "streaming", "streamingllm", "sink tokens + the most recent ones (StreamingLLM)",
     kReadsWindow | kReadsSink, 0, false, streaming_rule},
    {Policy::H2O, "h2o", "", "attention received over all prompt queries (H2O)", kReadsWindow | kReadsTieBreak,
     kCapturesColumnSums, false, h2o_rule},
    {Policy::Random, "random", "", "uniformly random positions (baseline)", kReadsWindow | kReadsSeed, 0, false,
     random_rule},
    {Policy::Pyramid, "pyramid", "pyramidkv", "SnapKV with budgets shrinking with depth (PyramidKV)",
     kPoolingReads | kReadsPyramidBeta, 0, false, pyramid_rule},
    {Policy::AdaKV, "adakv", "", "SnapKV with the budget shared across heads (AdaKV)", kPoolingReads | kReadsAdakvAlpha,
     0, true, adakv_rule},
    // kvpress's score-based presses, with kvpress's defaults (ScorerPress: keep the top
    // int(L * (1 - ratio)) of the press's scores per KV head).
    {Policy::TOVA, "tova", "tovapress", "the last token's attention, averaged over all heads (TOVA; kvpress TOVAPress)",
     kReadsTieBreak, 0, false, tova_rule, 1},
    {Policy::Knorm, "knorm", "knormpress", "keys of the smallest L2 norm (kvpress KnormPress)", kReadsTieBreak, 0,
     false, knorm_rule, 0},
    {Policy::KeyDiff, "keydiff", "keydiffpress",
     "keys least like the layer's mean key direction (KeyDiff; kvpress "
     "KeyDiffPress)",
     kReadsTieBreak, 0, false, keydiff_rule, 0},
    {Policy::ExpectedAttention, "expected_attention", "expected-attention,expectedattentionpress",
     "attention expected from future queries, times the value norm (kvpress ExpectedAttentionPress)",
     kReadsTieBreak | kReadsSink, kCapturesQueryStats | kCapturesValueNorms | kCapturesFutureRope, false,
     expected_attention_rule, 0},
};

inline constexpr size_t kPolicyCount = sizeof(kPolicyTable) / sizeof(kPolicyTable[0]);

const PolicyInfo& policy_info(Policy p);
std::vector<Policy> all_policies();           // in table order
std::string policy_name(Policy p);            // "snapkv", "streaming", ...
Policy parse_policy(const std::string& s);    // a name or an alias; throws InputError naming the allowed values
std::vector<std::string> policy_names();      // in table order
std::vector<std::string> policy_spellings();  // names and aliases (what parse_policy accepts)
std::string policy_list_text();               // "snapkv, streaming, h2o, random, pyramid, adakv"

}  // namespace snapkv
