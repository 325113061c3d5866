// params_to_json / params_from_json / selection_to_json: see params_json.h. Reads are typed and
// strict; the messages quote the value as the file has it (shortened) the way the app's session
// reader always did.
#include "core/snapkv/params_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/common/errors.h"

namespace snapkv {
namespace {

using json = nlohmann::json;

// Largest integer a double (and so Qt's JSON) holds exactly.
constexpr uint64_t kExactInDouble = uint64_t(1) << 53;

class Fields {
public:
    Fields(const json& o, const std::string& prefix) : m_o(o), m_prefix(prefix) {}

    bool has(const char* key) const { return m_o.contains(key); }
    const json& at(const char* key) const { return m_o.at(key); }

    [[noreturn]] void fail(const char* key, const std::string& what) const {
        std::string shown = at(key).dump(-1, ' ', false, json::error_handler_t::replace);
        if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
        throw InputError((m_prefix.empty() ? std::string(key) : m_prefix + "." + key) + ": " + shown + " " + what);
    }
    int64_t integer(const char* key, int64_t fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (v.is_number_integer()) return v.get<int64_t>();
        if (v.is_number_float()) {
            const double d = v.get<double>();
            // Qt writes whole doubles without a fraction, but a reader may see 8.0.
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= 9.0e15) return static_cast<int64_t>(d);
        }
        fail(key, "is not a whole number");
    }
    double number(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (!v.is_number() || !std::isfinite(v.get<double>())) fail(key, "is not a number");
        return v.get<double>();
    }
    bool boolean(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        if (!at(key).is_boolean()) fail(key, "is not true or false");
        return at(key).get<bool>();
    }
    template <typename Parse, typename T>
    T named(const char* key, Parse parse, T fallback) const {
        if (!has(key)) return fallback;
        if (!at(key).is_string()) fail(key, "is not a string");
        try {
            return parse(at(key).get<std::string>());
        } catch (const InputError& e) {
            fail(key, std::string("is not allowed (") + e.what() + ")");
        }
    }
    uint64_t seed(const char* key, uint64_t fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (v.is_number_unsigned()) return v.get<uint64_t>();
        if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
        if (v.is_number_float()) {
            const double d = v.get<double>();
            if (d >= 0 && d == std::floor(d) && d <= double(kExactInDouble)) return static_cast<uint64_t>(d);
        }
        if (v.is_string()) {
            const std::string s = v.get<std::string>();
            char* end = nullptr;
            errno = 0;
            const unsigned long long u = std::strtoull(s.c_str(), &end, 10);
            if (!s.empty() && s[0] != '-' && end && *end == '\0' && errno == 0) return u;
        }
        fail(key, "is not a whole number (or one in a string, for 64-bit seeds)");
    }

private:
    const json& m_o;
    std::string m_prefix;
};

}  // namespace

json params_to_json(const SelectionParams& p, bool query_agnostic) {
    json j = {{"policy", policy_name(p.policy)},
              {"window", p.window},
              {"kernel", p.kernel},
              {"pooling", pooling_name(p.pooling)},
              {"budget", p.budget},
              {"ratio", p.ratio >= 0.0 ? json(p.ratio) : json(nullptr)},
              {"gqa", gqa_mode_name(p.gqa)},
              {"tie_break", tie_break_name(p.tie_break)},
              {"sink", p.n_sink},
              {"pyramid_beta", p.pyramid_beta},
              {"adakv_alpha", p.adakv_alpha},
              {"query_agnostic", query_agnostic}};
    j["seed"] = p.seed <= kExactInDouble ? json(p.seed) : json(std::to_string(p.seed));
    return j;
}

ParamsFromJson params_from_json(const json& o, const std::string& prefix, const SelectionParams& base) {
    if (!o.is_object())
        throw InputError((prefix.empty() ? std::string("parameters") : prefix) + ": " + std::string(o.type_name()) +
                         " is not an object");
    const Fields f(o, prefix);
    ParamsFromJson out;
    SelectionParams& p = out.params;
    p = base;
    p.policy = f.named("policy", parse_policy, p.policy);
    p.pooling = f.named("pooling", parse_pooling, p.pooling);
    p.gqa = f.named("gqa", parse_gqa_mode, p.gqa);
    p.tie_break = f.named("tie_break", parse_tie_break, p.tie_break);
    p.window = f.integer("window", p.window);
    p.kernel = f.integer("kernel", p.kernel);
    p.budget = f.integer("budget", p.budget);
    p.n_sink = f.integer("n_sink", p.n_sink);  // older app files
    p.n_sink = f.integer("sink", p.n_sink);
    p.seed = f.seed("seed", p.seed);
    p.pyramid_beta = f.integer("pyramid_beta", p.pyramid_beta);
    p.adakv_alpha = f.number("adakv_alpha", p.adakv_alpha);
    // The ratio: a number (the ratio form) or null (the budget form). Older app files kept the
    // ratio beside a "use_ratio" switch.
    if (f.has("ratio") && !f.at("ratio").is_null()) {
        const double r = f.number("ratio", -1.0);
        if (r < 0.0) f.fail("ratio", "is out of range; allowed 0 <= ratio < 1, or null for the budget form");
        p.ratio = r;
    } else if (f.has("ratio")) {
        p.ratio = -1.0;
    }
    if (f.has("use_ratio") && !f.boolean("use_ratio", false)) p.ratio = -1.0;
    out.query_agnostic = f.boolean("query_agnostic", false);
    return out;
}

json selection_to_json(const Selection& sel, const SelectionBytes& bytes) {
    json layers = json::array();
    for (const LayerSelection& ls : sel.layers) {
        json heads = json::array();
        for (size_t h = 0; h < ls.heads.size(); ++h) {
            const HeadSelection& hs = ls.heads[h];
            json jh = {{"head", h}, {"kept", hs.kept}, {"kept_mass", hs.kept_mass}};
            if (!hs.votes.empty()) jh["votes"] = hs.votes;
            if (!hs.pooled.empty()) jh["pooled"] = hs.pooled;
            heads.push_back(std::move(jh));
        }
        layers.push_back({{"layer", ls.layer},
                          {"compressed", ls.compressed},
                          {"budget", ls.budget},
                          {"sliding_window", ls.sliding_window},
                          {"first_reachable", ls.first_reachable},
                          {"heads", std::move(heads)}});
    }
    return {{"n_tokens", sel.n_tokens},
            {"window", sel.window},
            {"budget", sel.budget},
            {"compressed", sel.compressed},
            {"note", sel.note},
            {"layers", std::move(layers)},
            {"kv_bytes", {{"full", bytes.full}, {"kept", bytes.kept}}},
            {"cache_note", bytes.cache_note}};
}

}  // namespace snapkv
