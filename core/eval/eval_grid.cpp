// See eval_grid.h.
#include "core/eval/eval_grid.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/common/errors.h"
#include "core/eval/param_error.h"
#include "core/snapkv/params_json.h"

namespace snapkv::eval {
namespace {

std::vector<std::string> split(const std::string& s, const std::string& param) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a == std::string::npos) throw ParamError(param, "empty item in '" + s + "'");
        out.push_back(item.substr(a, b - a + 1));
    }
    if (out.empty()) throw ParamError(param, "the list is empty");
    return out;
}

std::string fmt_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

template <typename T>
void require_non_empty(const std::vector<T>& v, const char* param) {
    if (v.empty()) throw ParamError(param, "the list is empty");
}

// The grid's axis (GridAxes) for a field check_params names.
std::string grid_param(const std::string& field) {
    if (field == "budget" || field == "ratio") return "budgets";
    if (field == "window" || field == "kernel" || field == "pooling") return field + "s";
    return field;
}

// "budgets: budget 32 must be larger than the window 32 (...)", "kernels: 4 must be odd ...".
void check_config(const EvalConfig& c) {
    if (const auto bad = check_params(c.params)) {
        const std::string param = grid_param(bad->field);
        const bool list_of_many = param == "budgets" || param == "n_sink";
        throw ParamError(param, (list_of_many ? bad->field + " " : std::string()) + bad->sentence());
    }
    const std::string problem = check_decode_settings(c.params, c.decode);
    if (!problem.empty())
        throw ParamError(problem.find("interval") != std::string::npos && problem.find("budget") == std::string::npos
                             ? "decode_intervals"
                             : "decode_budgets",
                         problem);
}

}  // namespace

std::vector<int64_t> parse_int_list(const std::string& s, const std::string& param) {
    std::vector<int64_t> out;
    for (const auto& item : split(s, param)) {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (end == item.c_str() || *end != '\0' || errno == ERANGE)
            throw ParamError(param, "'" + item + "' is not a whole number");
        out.push_back(v);
    }
    return out;
}

std::vector<double> parse_number_list(const std::string& s, const std::string& param) {
    std::vector<double> out;
    for (const auto& item : split(s, param)) {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || *end != '\0' || !std::isfinite(v))
            throw ParamError(param, "'" + item + "' is not a number");
        out.push_back(v);
    }
    return out;
}

std::vector<std::string> parse_name_list(const std::string& s, const std::string& param) { return split(s, param); }

std::vector<EvalConfig> expand_configs(const GridAxes& a) {
    require_non_empty(a.policies, "policies");
    if (a.budgets.empty() && a.ratios.empty())
        throw ParamError(std::vector<std::string>{"ratios", "budgets"},
                         "give at least one ratio or budget (the full cache is always run too)");
    require_non_empty(a.gqa, "gqa");
    require_non_empty(a.windows, "windows");
    require_non_empty(a.kernels, "kernels");
    require_non_empty(a.poolings, "poolings");
    require_non_empty(a.decode_budgets, "decode_budgets");
    require_non_empty(a.decode_intervals, "decode_intervals");
    for (int64_t b : a.decode_budgets)
        if (b < 0)
            throw ParamError("decode_budgets", std::to_string(b) + " is negative (0 turns decoding compression off)");
    for (int64_t n : a.decode_intervals)
        if (n < 1) throw ParamError("decode_intervals", std::to_string(n) + " must be at least 1");
    for (double r : a.ratios)
        if (!(r >= 0.0 && r < 1.0))
            throw ParamError("ratios", fmt_number(r) +
                                           " is outside [0, 1) (kvpress's compression ratio: the fraction of the "
                                           "cache removed)");
    std::vector<Policy> policies;
    for (const auto& p : a.policies) policies.push_back(parse_policy(p));
    std::vector<GqaMode> gqa;
    for (const auto& g : a.gqa) gqa.push_back(parse_gqa_mode(g));
    std::vector<Pooling> poolings;
    for (const auto& p : a.poolings) poolings.push_back(parse_pooling(p));
    TieBreak tie = TieBreak::Later;
    try {
        tie = parse_tie_break(a.tie_break);
    } catch (const InputError& e) {
        throw ParamError("tie_break", e.what());
    }

    std::vector<EvalConfig> out;
    EvalConfig full;
    full.full = true;
    out.push_back(full);
    std::set<std::string> seen;
    // A size is a budget (ratio < 0) or a ratio.
    std::vector<std::pair<int64_t, double>> sizes;
    for (int64_t b : a.budgets) sizes.push_back({b, -1.0});
    for (double r : a.ratios) sizes.push_back({default_params().budget, r});
    for (Policy pol : policies)
        for (const auto& [budget, ratio] : sizes)
            for (GqaMode g : gqa)
                for (int64_t w : a.windows)
                    for (int64_t k : a.kernels)
                        for (Pooling pool : poolings)
                            for (int64_t db : a.decode_budgets)
                                for (int64_t di : a.decode_intervals) {
                                    const bool prefill = budget != 0 || ratio >= 0;
                                    if (!prefill && db == 0) continue;  // the full cache, run already
                                    EvalConfig c;
                                    c.compress_prefill = prefill;
                                    c.decode = db > 0 ? DecodeCompressionSettings{db, di} : DecodeCompressionSettings{};
                                    c.params.policy = pol;
                                    c.params.budget = prefill ? budget : default_params().budget;
                                    c.params.ratio = ratio;
                                    c.params.gqa = g;
                                    c.params.window = policy_info(pol).reads_param(kReadsWindow) ? w
                                                                                                 : a.windows.front();
                                    const bool pools = policy_info(pol).pools();
                                    c.params.kernel = pools ? k : a.kernels.front();
                                    c.params.pooling = pools ? pool : poolings.front();
                                    c.params.n_sink = a.n_sink;
                                    c.params.seed = a.seed;
                                    c.params.tie_break = tie;
                                    c.query_agnostic = a.query_agnostic;
                                    check_config(c);
                                    if (seen.insert(config_json(c).dump()).second) out.push_back(c);
                                }
    return out;
}

nlohmann::json config_json(const EvalConfig& c) {
    using json = nlohmann::json;
    if (c.full)
        return {{"policy", "full"},   {"budget", nullptr}, {"window", nullptr},    {"kernel", nullptr},
                {"pooling", nullptr}, {"gqa", nullptr},    {"tie_break", nullptr}, {"query_agnostic", nullptr}};
    // The parameters' one JSON form, cut to the grid's axes: null for what the policy does not
    // read (so rows of different policies line up), its own parameters only where it reads them.
    // A ratio configuration has a null budget and its "ratio".
    const SelectionParams& p = c.params;
    const PolicyInfo& info = policy_info(p.policy);
    json all = params_to_json(p, c.query_agnostic);
    json j = {{"policy", all["policy"]},
              {"budget", p.ratio >= 0 || !c.compress_prefill ? json(nullptr) : all["budget"]},
              {"window", info.reads_param(kReadsWindow) ? all["window"] : json(nullptr)},
              {"kernel", info.pools() ? all["kernel"] : json(nullptr)},
              {"pooling", info.pools() ? all["pooling"] : json(nullptr)},
              {"gqa", all["gqa"]},
              {"tie_break", info.uses_ties() ? all["tie_break"] : json(nullptr)},
              {"query_agnostic", all["query_agnostic"]}};
    if (p.ratio >= 0) j["ratio"] = p.ratio;
    if (info.reads_param(kReadsSink)) j["sink"] = all["sink"];
    if (info.reads_param(kReadsSeed)) j["seed"] = all["seed"];
    if (c.decode.enabled()) {
        j["decode_budget"] = c.decode.budget;
        j["decode_interval"] = c.decode.interval;
    }
    if (!c.compress_prefill) j["prefill_compression"] = false;
    return j;
}

EvalConfig config_from_json(const nlohmann::json& j) {
    EvalConfig c;
    if (!j.is_object() || !j.contains("policy"))
        throw InputError("configuration " + j.dump() + " is incomplete: it names no policy");
    if (j["policy"] == "full") {
        c.full = true;
        return c;
    }
    const bool has_ratio = j.contains("ratio") && !j["ratio"].is_null();
    c.compress_prefill = !(j.contains("prefill_compression") && j["prefill_compression"] == false);
    for (const char* key : {"budget", "window", "gqa"}) {
        const std::string k = key;
        if (k == "budget" && (has_ratio || !c.compress_prefill)) continue;  // null there
        if (!j.contains(key) || (j[key].is_null() && k != "window"))
            throw InputError("configuration " + j.dump() + " is incomplete: '" + key + "' is missing");
    }
    // Null marks a parameter the policy does not read: the default stands.
    nlohmann::json given = nlohmann::json::object();
    for (const auto& [key, value] : j.items())
        if (!value.is_null() && key != "decode_budget" && key != "decode_interval" && key != "prefill_compression")
            given[key] = value;
    auto whole = [&](const char* key) -> int64_t {
        if (!j.contains(key) || j[key].is_null()) return 0;
        if (!j[key].is_number_integer() || j[key].get<int64_t>() < 1)
            throw InputError("configuration " + j.dump() + ": '" + key + "' must be a whole number of at least 1");
        return j[key].get<int64_t>();
    };
    c.decode.budget = whole("decode_budget");
    c.decode.interval = c.decode.budget > 0 ? whole("decode_interval") : 0;
    if (c.decode.budget > 0 && c.decode.interval < 1)
        throw InputError("configuration " + j.dump() + " is incomplete: 'decode_interval' is missing");
    const ParamsFromJson r = params_from_json(given, "configuration");
    c.params = r.params;
    c.query_agnostic = r.query_agnostic;
    return c;
}

std::vector<SelectionParams> selection_params(const std::vector<EvalConfig>& configs) {
    std::vector<SelectionParams> out;
    for (const EvalConfig& c : configs)
        if (!c.full) out.push_back(c.params);
    return out;
}

std::string config_label(const EvalConfig& c) {
    if (c.full) return "full";
    // Labels name what is not the default.
    const SelectionParams& p = c.params;
    const SelectionParams d = default_params();
    const PolicyInfo& info = policy_info(p.policy);
    std::string s = policy_name(p.policy) + (!c.compress_prefill ? " no-prefill"
                                             : p.ratio >= 0      ? " r" + fmt_number(p.ratio)
                                                                 : " C" + std::to_string(p.budget));
    if (c.decode.enabled()) s += " D" + std::to_string(c.decode.budget) + "/" + std::to_string(c.decode.interval);
    if (p.window != d.window && info.reads_param(kReadsWindow)) s += " W" + std::to_string(p.window);
    if (info.pools()) {
        if (p.kernel != d.kernel) s += " K" + std::to_string(p.kernel);
        if (p.pooling != d.pooling) s += " " + pooling_name(p.pooling);
    }
    if (p.gqa != d.gqa) s += " " + gqa_mode_name(p.gqa);
    if (p.tie_break != d.tie_break && info.uses_ties()) s += " " + std::string("ties-") + tie_break_name(p.tie_break);
    if (c.query_agnostic) s += " q-agnostic";
    return s;
}

Shard parse_shard(const std::string& s) {
    if (s.empty()) return {};
    const size_t slash = s.find('/');
    const std::string what = "'" + s + "' ";
    if (slash == std::string::npos) throw ParamError("shard", what + "is not of the form i/N (e.g. 0/4)");
    std::vector<int64_t> v;
    try {
        v = {parse_int_list(s.substr(0, slash), "shard").at(0), parse_int_list(s.substr(slash + 1), "shard").at(0)};
    } catch (const InputError&) {
        throw ParamError("shard", what + "is not of the form i/N with whole numbers (e.g. 0/4)");
    }
    if (v[1] < 1) throw ParamError("shard", what + "has N = " + std::to_string(v[1]) + "; N must be at least 1");
    if (v[0] < 0 || v[0] >= v[1])
        throw ParamError("shard", what + "has i = " + std::to_string(v[0]) + "; allowed 0.." +
                                      std::to_string(v[1] - 1) + " (shards count from 0)");
    return {v[0], v[1]};
}

}  // namespace snapkv::eval
