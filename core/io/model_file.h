// A model on disk, whatever its format: hyperparameters, tokenizer data and named tensors that can
// be read as float32. GGUF files and Hugging Face folders implement it. Tensor names are always the
// GGUF ones ("blk.3.attn_q.weight"); HF readers map names and undo the Q/K row permutation so that
// every tensor arrives in the GGUF (llama.cpp) layout. Tensors can be read as float32 or viewed in
// their stored format (tensor_bytes) for the weight kernels. No LibTorch here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/io/model_config.h"

namespace snapkv {

struct GgmlType;

struct TensorDesc {
    std::string name;            // GGUF name
    std::string type;            // ggml type name: "F32", "BF16", "Q8_0", "Q4_K", "IQ4_XS", ...
    std::vector<int64_t> shape;  // torch order (outermost first): a [out, in] matrix is {out, in}
    uint64_t nbytes = 0;         // bytes in the file
};

// One tensor's bytes in its stored type, rows in the order read_f32 returns them: n_rows rows of
// row_len values (row_len = the innermost dimension), row r at data + r * row_bytes. owner keeps
// the bytes alive (the file mapping, or a reordered copy) independently of the ModelFile.
struct TensorBytes {
    const GgmlType* type = nullptr;
    const uint8_t* data = nullptr;
    int64_t n_rows = 0;
    int64_t row_len = 0;
    size_t row_bytes = 0;
    std::shared_ptr<const void> owner;
};

class ModelFile {
public:
    virtual ~ModelFile() = default;

    // A regular file is read as GGUF; a directory as a Hugging Face folder. Throws FileError.
    // The returned object has validated every tensor the architecture needs against config().
    static std::unique_ptr<ModelFile> open(const std::string& path);

    virtual const std::string& path() const = 0;
    virtual std::string format() const = 0;  // "GGUF v3", "safetensors (2 shards)", ...
    virtual const ModelConfig& config() const = 0;
    virtual const VocabData& vocab() const = 0;
    virtual const std::vector<TensorDesc>& tensors() const = 0;
    virtual bool has_tensor(const std::string& name) const = 0;
    virtual const TensorDesc& tensor(const std::string& name) const = 0;  // throws MissingTensor
    // Dequantize or convert one tensor to float32, numel() values written to dst, row-major in
    // torch order. Throws FileError if the data cannot be read.
    virtual void read_f32(const std::string& name, float* dst) const = 0;
    // The tensor's stored bytes without conversion (a view into the mapped file where the layout
    // allows). Throws FileError like read_f32 for a missing tensor or a type that cannot be read.
    virtual TensorBytes tensor_bytes(const std::string& name) const = 0;
    // Every metadata key/value rendered as short text (arrays summarised), for `snapkv info`.
    virtual std::vector<std::pair<std::string, std::string>> metadata_summary() const = 0;
};

}  // namespace snapkv
