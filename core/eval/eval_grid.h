// The grid of an evaluation run as plain values: the configurations every document is scored
// with (the full cache first, then policies x budgets x GQA modes x windows x kernels x poolings),
// comma-list parsing with errors that name the parameter (ParamError: the CLI adds its flags), and
// deterministic sharding of the cells (documents) over N processes. Knows nothing about needles or
// question sets, nor about any front end's option names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare/compare_types.h"
#include "core/eval/param_error.h"
#include "core/snapkv/snapkv_params.h"

namespace snapkv::eval {

// One way to answer: the full cache, or a compressed cache selected with `params`.
struct EvalConfig {
    bool full = false;
    SelectionParams params;
    bool query_agnostic = false;
    // Compression while generating (core/compare/decode_compression.h) with params' policy; off
    // by default. compress_prefill false: the run starts from the full cache (decoding alone).
    DecodeCompressionSettings decode;
    bool compress_prefill = true;
};

// What the user asked for; every list must be non-empty but budgets and ratios, of which one may
// be empty. Each axis defaults to the one value of
// default_params() (the CLI's and the app's defaults).
struct GridAxes {
    std::vector<std::string> policies{policy_name(default_params().policy)};
    std::vector<int64_t> budgets{default_params().budget};
    // kvpress's compression ratios (the fraction of the cache removed, 0 <= r < 1): each keeps
    // int(L x (1 - r)) tokens of the L being compressed, so the budget follows each prompt. May be
    // the only size axis (budgets empty).
    std::vector<double> ratios;
    std::vector<std::string> gqa{gqa_mode_name(default_params().gqa)};
    std::vector<int64_t> windows{default_params().window};
    std::vector<int64_t> kernels{default_params().kernel};
    std::vector<std::string> poolings{pooling_name(default_params().pooling)};
    bool query_agnostic = false;
    int64_t n_sink = default_params().n_sink;
    uint64_t seed = default_params().seed;
    std::string tie_break = tie_break_name(default_params().tie_break);  // one for the whole grid
    // Decoding compression: budgets (0 = off) x intervals. A 0 in `budgets` means no prefill
    // compression: with a decoding budget that is decoding compression alone (with none, the full
    // cache, which every grid runs anyway, so that pair is left out).
    std::vector<int64_t> decode_budgets{0};
    std::vector<int64_t> decode_intervals{32};
};

// Full first, then the cross product in the order above (policy outermost; budgets, then ratios).
// Options a policy does not read (policy_table.h: kernel and pooling for streaming, h2o and random)
// collapse, so no duplicate rows. Throws ParamError naming the axis ("budgets", "windows",
// "kernels", "ratios", "tie_break", ...) for an empty list, a ratio outside [0, 1), a bad tie
// break and the first configuration check_params refuses (a budget not larger than a window, a
// window < 1, an even kernel for a policy that pools, ...); InputError for an unknown
// policy/pooling/GQA mode.
std::vector<EvalConfig> expand_configs(const GridAxes& axes);

// The parameters of the configurations that select from a cell's prefill (all but the full cache),
// in order: what the prefill captures for (plan_run) and what the grid's plan decodes.
std::vector<SelectionParams> selection_params(const std::vector<EvalConfig>& configs);

// Row fields of a configuration: policy ("full"), budget (null for full and ratio configurations,
// and with prefill compression off), ratio (ratio configurations only), window, kernel, pooling,
// gqa, tie_break, query_agnostic (nulls where they do not apply); with decoding compression
// decode_budget and decode_interval, with prefill compression off "prefill_compression": false
// (absent otherwise, so that rows of earlier results files still match their configurations).
nlohmann::json config_json(const EvalConfig& c);
std::string config_label(const EvalConfig& c);
// The configuration a row or the settings' "configs" entry describes (inverse of config_json).
EvalConfig config_from_json(
    const nlohmann::json& j);  // "full", "snapkv C256", "snapkv C256 W64 K5 avg kv-head", "snapkv r0.5"

// A shard "i/N": this process runs cells with index % N == i (0 <= i < N). Round robin spreads
// long and short documents evenly over the shards.
struct Shard {
    int64_t index = 0;
    int64_t count = 1;
    bool contains(int64_t cell) const { return cell % count == index; }
};
Shard parse_shard(const std::string& s);  // "" = the whole grid; ParamError("shard", ...)

// Comma lists: "64,128" -> {64, 128}. Errors are ParamError(param, ...): `param` is what the list
// is called ("budgets"; the Evaluate tab passes its field labels).
std::vector<int64_t> parse_int_list(const std::string& s, const std::string& param);
std::vector<double> parse_number_list(const std::string& s, const std::string& param);
std::vector<std::string> parse_name_list(const std::string& s, const std::string& param);

}  // namespace snapkv::eval
