// Names of the selection enums as the CLI, the GUI and the JSON files spell them, and their parsers.
// Parsing is exact and case-sensitive apart from a few aliases the reference code uses
// ("maxpool"/"avgpool" from FasterDecoding/SnapKV); it does not validate numeric parameters
// (see validate_params in selector.h).
#include "core/snapkv/snapkv_params.h"

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

}  // namespace snapkv
