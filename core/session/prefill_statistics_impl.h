// The statistics a prefill records beyond keys and window queries, for the policies that declare
// them (policy_table.h's captures): pre-RoPE query statistics merged across the prompt's parts, the
// value norms, the RoPE of the positions to come averaged. Private to core/session (run_prefill);
// the column sums (H2O) come straight from the model's attention and need nothing here. Does not
// decide what is recorded (run_plan.h does) nor score anything (the policies do).
//
// Dimensions: H = n_head, Hkv = n_head_kv, L = prompt tokens, D = head_dim.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include <ATen/ATen.h>

#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"
#include "core/snapkv/layer_scorer.h"

namespace snapkv {

// Appends one forward call's query statistics (positions after those already in c) to c: the
// queries of the first positions are concatenated, the rest combined with Chan et al.'s formula
// for the centred sums, in double.
void add_query_stats(LayerCapture& c, const QueryStats& s);

// The L2 norm of each of the layer's values: [Hkv, L] float32 (CPU).
at::Tensor value_norms(const KvCache& cache, int64_t layer);

// The averaged RoPE (LayerCapture::future_rope) of the 512 positions after the first n (as kvpress averages
// it), once per (RoPE table, n) of a prefill: layers share tables (Gemma 3: two for 18 layers) and
// at D 256 each average is 2 x 64 M sines and cosines. Read-only, so layers share the tensor.
class FutureRopes {
public:
    explicit FutureRopes(const LlamaModel& model) : m_model(model) {}
    // [D, D]: layer's RoPE averaged over positions n .. n + 511.
    const at::Tensor& get(int64_t layer, int64_t n);

private:
    const LlamaModel& m_model;
    std::map<std::pair<size_t, int64_t>, at::Tensor> m_done;
};

}  // namespace snapkv
