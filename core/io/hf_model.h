// ModelFile over a Hugging Face model folder: config.json, tokenizer.json (+ tokenizer_config.json,
// generation_config.json) and model.safetensors or a sharded model.safetensors.index.json.
// Tensor names are mapped to GGUF names, for llama the Q/K rows are permuted from HF's rotate-half
// order to llama.cpp's interleaved order and gemma norms read as w + 1, so callers see exactly what
// a GGUF conversion would hold. Reads F32/F16/BF16 only; no pytorch_model.bin, no quantized checkpoints.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/io/model_file.h"
#include "core/io/safetensors_reader.h"

namespace snapkv {

class HfModel final : public ModelFile {
public:
    explicit HfModel(const std::string& dir);  // throws FileError

    const std::string& path() const override { return m_dir; }
    std::string format() const override;  // "safetensors (1 file)", "safetensors (3 shards)"
    const ModelConfig& config() const override { return m_config; }
    const VocabData& vocab() const override { return m_vocab; }
    const std::vector<TensorDesc>& tensors() const override { return m_tensors; }
    bool has_tensor(const std::string& name) const override;
    const TensorDesc& tensor(const std::string& name) const override;
    void read_f32(const std::string& name, float* dst) const override;
    TensorBytes tensor_bytes(const std::string& name) const override;
    std::vector<std::pair<std::string, std::string>> metadata_summary() const override;

private:
    struct Source {
        const SafetensorsFile* file = nullptr;
        const SafetensorsTensor* tensor = nullptr;
        int64_t permute_groups = 0;  // > 0: undo HF's rotate-half row order with this many heads
        bool add_one = false;        // gemma norms: stored as w, read as w + 1 (llama.cpp's layout)
    };

    // Index of a tensor we can read, and its type; FileError for a missing tensor or a dtype
    // other than F32/F16/BF16.
    size_t readable_index(const std::string& name, const GgmlType** type) const;
    void read_config();
    void open_weights();
    void read_tokenizer();
    void read_chat_template_files();

    std::string m_dir;
    ModelConfig m_config;
    VocabData m_vocab;
    std::vector<std::unique_ptr<SafetensorsFile>> m_shards;
    bool m_sharded = false;
    bool m_tie_word_embeddings = false;
    std::vector<TensorDesc> m_tensors;  // GGUF names, sorted
    std::vector<Source> m_sources;      // parallel to m_tensors
    std::unordered_map<std::string, size_t> m_index;
    std::vector<std::pair<std::string, std::string>> m_summary;
};

}  // namespace snapkv
