// See eval_grid.h.
#include "core/eval/eval_grid.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/common/errors.h"

namespace snapkv::eval {
namespace {

std::vector<std::string> split(const std::string& s, const std::string& option) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
        if (a == std::string::npos) throw InputError(option + ": empty item in '" + s + "'");
        out.push_back(item.substr(a, b - a + 1));
    }
    if (out.empty()) throw InputError(option + ": the list is empty");
    return out;
}

std::string fmt_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

template <typename T>
void require_non_empty(const std::vector<T>& v, const char* option) {
    if (v.empty()) throw InputError(std::string(option) + ": the list is empty");
}

}  // namespace

bool policy_uses_pooling(Policy p) { return p == Policy::SnapKV || p == Policy::Pyramid || p == Policy::AdaKV; }

std::vector<int64_t> parse_int_list(const std::string& s, const std::string& option) {
    std::vector<int64_t> out;
    for (const auto& item : split(s, option)) {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (end == item.c_str() || *end != '\0' || errno == ERANGE)
            throw InputError(option + ": '" + item + "' is not a whole number");
        out.push_back(v);
    }
    return out;
}

std::vector<double> parse_number_list(const std::string& s, const std::string& option) {
    std::vector<double> out;
    for (const auto& item : split(s, option)) {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || *end != '\0' || !std::isfinite(v))
            throw InputError(option + ": '" + item + "' is not a number");
        out.push_back(v);
    }
    return out;
}

std::vector<std::string> parse_name_list(const std::string& s, const std::string& option) { return split(s, option); }

std::vector<EvalConfig> expand_configs(const GridAxes& a) {
    require_non_empty(a.policies, "--policies");
    if (a.ratios.empty()) require_non_empty(a.budgets, "--budgets");
    require_non_empty(a.gqa, "--gqa");
    require_non_empty(a.windows, "--window");
    require_non_empty(a.kernels, "--kernel");
    require_non_empty(a.poolings, "--pooling");
    for (int64_t w : a.windows)
        if (w < 1) throw InputError("--window: " + std::to_string(w) + " is not allowed; a window is at least 1 token");
    for (int64_t k : a.kernels)
        if (k < 1 || k % 2 == 0)
            throw InputError("--kernel: " + std::to_string(k) + " is not allowed; the pooling kernel must be odd and >= 1");
    for (double r : a.ratios)
        if (!(r >= 0.0 && r < 1.0))
            throw InputError("--ratios: " + fmt_number(r) +
                             " is outside [0, 1) (kvpress's compression ratio: the fraction of the cache removed)");
    for (int64_t b : a.budgets)
        for (int64_t w : a.windows)
            if (b <= w)
                throw InputError("--budgets: budget " + std::to_string(b) + " must be larger than the window " +
                                 std::to_string(w) + " (the budget counts the window)");
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
        throw InputError(std::string("--tie-break: ") + e.what());
    }

    std::vector<EvalConfig> out;
    EvalConfig full;
    full.full = true;
    out.push_back(full);
    std::set<std::string> seen;
    // A size is a budget (ratio < 0) or a ratio.
    std::vector<std::pair<int64_t, double>> sizes;
    for (int64_t b : a.budgets) sizes.push_back({b, -1.0});
    for (double r : a.ratios) sizes.push_back({0, r});
    for (Policy pol : policies)
        for (const auto& [budget, ratio] : sizes)
            for (GqaMode g : gqa)
                for (int64_t w : a.windows)
                    for (int64_t k : a.kernels)
                        for (Pooling pool : poolings) {
                            EvalConfig c;
                            c.params.policy = pol;
                            c.params.budget = budget;
                            c.params.ratio = ratio;
                            c.params.gqa = g;
                            c.params.window = w;
                            c.params.kernel = policy_uses_pooling(pol) ? k : a.kernels.front();
                            c.params.pooling = policy_uses_pooling(pol) ? pool : poolings.front();
                            c.params.n_sink = a.n_sink;
                            c.params.seed = a.seed;
                            c.params.tie_break = tie;
                            c.query_agnostic = a.query_agnostic;
                            if (seen.insert(config_json(c).dump()).second) out.push_back(c);
                        }
    return out;
}

nlohmann::json config_json(const EvalConfig& c) {
    using json = nlohmann::json;
    if (c.full)
        return {{"policy", "full"}, {"budget", nullptr}, {"window", nullptr}, {"kernel", nullptr},
                {"pooling", nullptr}, {"gqa", nullptr}, {"tie_break", nullptr}, {"query_agnostic", nullptr}};
    const SelectionParams& p = c.params;
    const bool pools = policy_uses_pooling(p.policy);
    json j = {{"policy", policy_name(p.policy)}, {"budget", p.ratio >= 0 ? json(nullptr) : json(p.budget)},
              {"window", p.window},
              {"kernel", pools ? json(p.kernel) : json(nullptr)},
              {"pooling", pools ? json(pooling_name(p.pooling)) : json(nullptr)},
              {"gqa", gqa_mode_name(p.gqa)},
              {"tie_break", pools || p.policy == Policy::H2O ? json(tie_break_name(p.tie_break)) : json(nullptr)},
              {"query_agnostic", c.query_agnostic}};
    if (p.ratio >= 0) j["ratio"] = p.ratio;
    if (p.policy == Policy::Streaming) j["sink"] = p.n_sink;
    if (p.policy == Policy::Random) j["seed"] = p.seed;
    return j;
}

EvalConfig config_from_json(const nlohmann::json& j) {
    EvalConfig c;
    try {
        const std::string policy = j.at("policy").get<std::string>();
        if (policy == "full") {
            c.full = true;
            return c;
        }
        SelectionParams& p = c.params;
        p.policy = parse_policy(policy);
        if (j.contains("ratio") && !j["ratio"].is_null()) p.ratio = j["ratio"].get<double>();
        else p.budget = j.at("budget").get<int64_t>();
        p.window = j.at("window").get<int64_t>();
        if (j.contains("kernel") && !j["kernel"].is_null()) p.kernel = j["kernel"].get<int64_t>();
        if (j.contains("pooling") && !j["pooling"].is_null()) p.pooling = parse_pooling(j["pooling"].get<std::string>());
        p.gqa = parse_gqa_mode(j.at("gqa").get<std::string>());
        if (j.contains("tie_break") && !j["tie_break"].is_null())
            p.tie_break = parse_tie_break(j["tie_break"].get<std::string>());
        if (j.contains("sink")) p.n_sink = j["sink"].get<int64_t>();
        if (j.contains("seed")) p.seed = j["seed"].get<uint64_t>();
        c.query_agnostic = j.value("query_agnostic", false);
    } catch (const nlohmann::json::exception& e) {
        throw InputError("configuration " + j.dump() + " is incomplete: " + e.what());
    }
    return c;
}

std::string config_label(const EvalConfig& c) {
    if (c.full) return "full";
    const SelectionParams& p = c.params;
    std::string s = policy_name(p.policy) + (p.ratio >= 0 ? " r" + fmt_number(p.ratio) : " C" + std::to_string(p.budget));
    if (p.window != 32) s += " W" + std::to_string(p.window);
    if (policy_uses_pooling(p.policy)) {
        if (p.kernel != 7) s += " K" + std::to_string(p.kernel);
        if (p.pooling != Pooling::Max) s += " " + pooling_name(p.pooling);
    }
    if (p.gqa != GqaMode::KvHead) s += " " + gqa_mode_name(p.gqa);   // labels name what is not the default
    if (p.tie_break == TieBreak::Earlier && (policy_uses_pooling(p.policy) || p.policy == Policy::H2O))
        s += " ties-earlier";
    if (c.query_agnostic) s += " q-agnostic";
    return s;
}

Shard parse_shard(const std::string& s) {
    if (s.empty()) return {};
    const size_t slash = s.find('/');
    const std::string what = "--shard: '" + s + "' ";
    if (slash == std::string::npos) throw InputError(what + "is not of the form i/N (e.g. 0/4)");
    std::vector<int64_t> v;
    try {
        v = {parse_int_list(s.substr(0, slash), "--shard").at(0), parse_int_list(s.substr(slash + 1), "--shard").at(0)};
    } catch (const InputError&) {
        throw InputError(what + "is not of the form i/N with whole numbers (e.g. 0/4)");
    }
    if (v[1] < 1) throw InputError(what + "has N = " + std::to_string(v[1]) + "; N must be at least 1");
    if (v[0] < 0 || v[0] >= v[1])
        throw InputError(what + "has i = " + std::to_string(v[0]) + "; allowed 0.." + std::to_string(v[1] - 1) +
                         " (shards count from 0)");
    return {v[0], v[1]};
}

}  // namespace snapkv::eval
