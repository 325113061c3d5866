// A weight matrix [out, in] as the model multiplies it, in one of two storages: a dense LibTorch
// tensor (float32 on the CPU, or any device and dtype: the dequantize-at-load path), or "native":
// the file's own blocks (any type core/quant has kernels for: F32, F16, BF16, the legacy, K- and
// IQ4 quants), usually a view into
// the mapped file, on the CPU. Native single-token products run the core/quant kernels (blocks
// dequantized in registers, float32 accumulation); multi-token products dequantize a tile at a
// time into a per-thread float32 scratch buffer and call BLAS, so no full float32 copy is kept.
// Inputs and outputs are float32 on the CPU for native storage.
//
// Dimensions: T = tokens (rows of the input), I = in, O = out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/io/model_file.h"

namespace snapkv {

class WeightMatrix {
public:
    WeightMatrix() = default;
    // Dense storage: w [O, I] on any device and dtype.
    explicit WeightMatrix(at::Tensor w);
    // Native storage over the stored bytes (kept alive by bytes.owner). The type must have a
    // kernel (InputError otherwise, naming the type).
    explicit WeightMatrix(TensorBytes bytes);

    // Native storage: whether single-token products quantize their input to 8 bits first
    // (core/quant/qkernels.h, Activations::Q8: llama.cpp's CPU arithmetic, faster, results
    // differ slightly), for the formats that have such products; the others keep float32.
    void set_q8_activations(bool on) { m_q8 = on; }
    bool q8_activations() const { return m_q8; }

    bool defined() const { return m_dense.defined() || m_bytes.data != nullptr; }
    bool native() const { return !m_dense.defined() && m_bytes.data != nullptr; }
    int64_t rows() const { return m_rows; }              // O
    int64_t cols() const { return m_cols; }              // I
    std::string type_name() const;                       // "Q4_1", "F16", ...; the dtype for dense storage
    int64_t bytes() const;                               // bytes of the storage
    const at::Tensor& dense() const { return m_dense; }  // undefined for native storage

    // x [T, I] -> x @ w^T [T, O]; native storage needs x float32 on the CPU.
    at::Tensor apply(const at::Tensor& x) const;
    // Products of one input with several matrices of the same I (q/k/v, gate/up): for a single
    // token on native storage they share one pass over the kernel threads. -> [T, O_i] each.
    static std::vector<at::Tensor> apply_many(const std::vector<const WeightMatrix*>& ws, const at::Tensor& x);
    // Single-token products on float32 buffers, for native matrices or dense float32 CPU ones
    // (raw_ready()): ys[i] [O_i] = ws[i] x, x [I]; at most 8 matrices of the same I, the native
    // ones in one pass over the kernel threads. Results equal apply_many's.
    bool raw_ready() const;
    static void apply_raw(const WeightMatrix* const* ws, int count, const float* x, float* const* ys);
    // The same for n inputs: x [n, I], ys[i] [n, O_i]; input j's outputs equal apply_raw's with
    // that input alone, bit for bit (native matrices: one pass over the weights for all n).
    static void apply_raw_batch(const WeightMatrix* const* ws, int count, const float* x, int64_t n, float* const* ys);
    // Rows ids [n] (int64, CPU or the dense tensor's device) -> [n, I] (embedding lookups).
    at::Tensor gather_rows(const at::Tensor& ids) const;
    // Rows [begin, begin + n) as a matrix of the same storage (a view, no copy).
    WeightMatrix slice_rows(int64_t begin, int64_t n) const;
    // The whole matrix as float32 [O, I] on the CPU (tests, conversions).
    at::Tensor to_float() const;

    // Native storage: hands the resident pages of its bytes back to the kernel (release_pages in
    // core/io/mapped_file.h); they are read again when next used. Dense storage: nothing.
    void release_pages() const;

    // Values per dequantized tile of the multi-token path (default 4M: 16 MB of scratch per
    // thread). Tests lower it to exercise tiling; returns the previous value.
    static int64_t set_tile_values(int64_t values);
    static int64_t tile_values();
    // Nanoseconds spent dequantizing tiles for multi-token products since start-up, all threads
    // (ForwardProfile reads the difference).
    static int64_t dequant_ns();

private:
    at::Tensor m_dense;   // [O, I] or undefined
    TensorBytes m_bytes;  // native storage: n_rows = O, row_len = I
    int64_t m_rows = 0;
    int64_t m_cols = 0;
    bool m_q8 = false;
};

}  // namespace snapkv
