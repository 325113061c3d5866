// Building blocks of the decoder's forward pass (llama_model.cpp), private to core/model: the one
// weight product every projection goes through, RMSNorm, the per-layer RoPE tables and their
// application. No model state here; the architecture's choices arrive as arguments.
//
// Dimensions: T = tokens, h = heads of the tensor at hand, D = head_dim, n_rot = rotated dims.
#pragma once

#include <cstdint>
#include <string>

#include <ATen/ATen.h>

#include "core/io/model_config.h"
#include "core/model/weight_matrix.h"

namespace snapkv::model_ops {

// x @ w^T (+ b): x [T, in], w [out, in], b [out] or undefined -> [T, out]. Every product with a
// weight matrix goes through here (projections, FFN, output); the storage (dense tensor or the
// file's blocks) is WeightMatrix's business.
at::Tensor dense(const at::Tensor& x, const WeightMatrix& w, const at::Tensor& b = {});

// RMSNorm over the last dimension, computed in float32 like ggml_rms_norm and transformers:
// x [..., n] in the compute dtype, w [n] float32 (gemma's 1 + w already folded in) -> [..., n].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, float eps);

// One layer's rotary embedding: inverse frequencies with the model's scaling (when the layer
// takes it) and the cos/sin multiplier (longrope's attention factor).
struct RopeTable {
    at::Tensor inv_freq;       // [n_rot/2] float32
    double attn_factor = 1.0;  // cos and sin are multiplied by this
    int64_t n_rot = 0;
    bool neox = false;     // rotate-half pairs (i, i + n_rot/2) instead of adjacent (2i, 2i+1)
    int64_t max_pos = -1;  // > 0: positions must stay below it (longrope short factors)
    std::string scaling;   // for messages
};

// The table of a layer: base and scaling from config.layers[layer]. Throws FileError
// (Unsupported) for a scaling type it does not implement.
RopeTable rope_table(const ModelConfig& config, int64_t layer);

// x [h, T, D] rotated at positions pos [T] int64 (CPU); the dims past n_rot pass through. Throws
// InputError when a position is beyond table.max_pos.
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& pos, const RopeTable& table);
// Throws apply_rope's InputError when position is beyond table.max_pos.
void check_rope_position(const RopeTable& table, int64_t position);

}  // namespace snapkv::model_ops
