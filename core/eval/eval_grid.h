// The grid of an evaluation run as plain values: the configurations every document is scored
// with (the full cache first, then policies x budgets x GQA modes x windows x kernels x poolings),
// comma-list parsing with errors that name the option, and deterministic sharding of the cells
// (documents) over N processes. Knows nothing about needles or question sets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/snapkv/snapkv_params.h"

namespace snapkv::eval {

// One way to answer: the full cache, or a compressed cache selected with `params`.
struct EvalConfig {
    bool full = false;
    SelectionParams params;
    bool query_agnostic = false;
};

// What the user asked for; every list must be non-empty.
struct GridAxes {
    std::vector<std::string> policies{"snapkv"};
    std::vector<int64_t> budgets{1024};
    // kvpress's compression ratios (the fraction of the cache removed, 0 <= r < 1): each keeps
    // int(L x (1 - r)) tokens of the L being compressed, so the budget follows each prompt. May be
    // the only size axis (budgets empty).
    std::vector<double> ratios;
    std::vector<std::string> gqa{"kv-head"};   // the app's default: the cache shrinks
    std::vector<int64_t> windows{32};
    std::vector<int64_t> kernels{7};
    std::vector<std::string> poolings{"max"};
    bool query_agnostic = false;
    int64_t n_sink = 4;
    uint64_t seed = 42;
    std::string tie_break = "later";   // one for the whole grid: earlier | later
};

// Full first, then the cross product in the order above (policy outermost; budgets, then ratios).
// Options a policy does not use (kernel and pooling for streaming, h2o and random) collapse, so no
// duplicate rows. Throws InputError naming the option for an unknown policy/pooling/GQA mode, a
// budget not larger than a window, a ratio outside [0, 1), a window < 1 or an even kernel.
std::vector<EvalConfig> expand_configs(const GridAxes& axes);
bool policy_uses_pooling(Policy p);

// Row fields of a configuration: policy ("full"), budget (null for full and ratio configurations),
// ratio (ratio configurations only), window, kernel, pooling, gqa, tie_break, query_agnostic (nulls
// where they do not apply).
nlohmann::json config_json(const EvalConfig& c);
std::string config_label(const EvalConfig& c);
// The configuration a row or the settings' "configs" entry describes (inverse of config_json).
EvalConfig config_from_json(const nlohmann::json& j);      // "full", "snapkv C256", "snapkv C256 W64 K5 avg kv-head", "snapkv r0.5"

// "--shard i/N": this process runs cells with index % N == i (0 <= i < N). Round robin spreads
// long and short documents evenly over the shards.
struct Shard {
    int64_t index = 0;
    int64_t count = 1;
    bool contains(int64_t cell) const { return cell % count == index; }
};
Shard parse_shard(const std::string& s);            // "" = the whole grid

// Comma lists: "64,128" -> {64, 128}. `option` names the flag in errors ("--budgets").
std::vector<int64_t> parse_int_list(const std::string& s, const std::string& option);
std::vector<double> parse_number_list(const std::string& s, const std::string& option);
std::vector<std::string> parse_name_list(const std::string& s, const std::string& option);

}  // namespace snapkv::eval
