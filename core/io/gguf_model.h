// ModelFile over a GGUF file: reads the hyperparameters of a supported architecture ({arch}.*
// keys), the tokenizer.ggml.* vocabulary and the tensor list, validates them against each other,
// and dequantizes tensors on request. It does not run or own any LibTorch state, and it does not
// support other architectures (FileError(Unsupported) names the architecture and the supported).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/io/gguf_reader.h"
#include "core/io/model_file.h"

namespace snapkv {

class GgufModel final : public ModelFile {
public:
    explicit GgufModel(const std::string& path);  // throws FileError

    const std::string& path() const override { return m_reader.path(); }
    std::string format() const override;  // "GGUF v3"
    const ModelConfig& config() const override { return m_config; }
    const VocabData& vocab() const override { return m_vocab; }
    const std::vector<TensorDesc>& tensors() const override { return m_tensors; }
    bool has_tensor(const std::string& name) const override;
    const TensorDesc& tensor(const std::string& name) const override;
    void read_f32(const std::string& name, float* dst) const override;
    TensorBytes tensor_bytes(const std::string& name) const override;
    std::vector<std::pair<std::string, std::string>> metadata_summary() const override;

    const GgufReader& reader() const { return m_reader; }

private:
    // The tensor's info; FileError when it is absent or of a type we cannot read.
    const GgufTensorInfo& readable_tensor(const std::string& name) const;
    void read_config();
    void read_arch_settings();
    void read_vocab();

    GgufReader m_reader;
    ModelConfig m_config;
    VocabData m_vocab;
    std::vector<TensorDesc> m_tensors;  // file order
    std::unordered_map<std::string, size_t> m_index;
};

}  // namespace snapkv
