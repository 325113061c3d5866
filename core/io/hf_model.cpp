// Hugging Face folder -> ModelFile. config.json is read by read_hf_config (hf_config.h); the Q/K
// permutation and gemma's norm + 1 follow llama.cpp's convert_hf_to_gguf.py (LlamaModel.permute,
// Gemma2Model/Gemma3Model.modify_tensors). The tokenizer files are read by read_tokenizer_json
// (tokenizer_json.h).
#include "core/io/hf_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/io/arch_tensors.h"
#include "core/io/dequant.h"
#include "core/io/hf_config.h"
#include "core/io/json_text.h"
#include "core/io/tensor_checks.h"
#include "core/io/tokenizer_json.h"

namespace snapkv {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Kind = FileError::Kind;

// config.json and the shard index: a few KB, and a few MB for the largest sharded index.
constexpr uint64_t kMaxConfigBytes = uint64_t(64) << 20;

json read_json_file(const std::string& path) {
    // Nesting and size limited (json_text.h).
    return snapkv::read_json_file(path, "hf: " + path + ": ", kMaxJsonDepth, kMaxConfigBytes);
}

}  // namespace

HfModel::HfModel(const std::string& dir) : m_dir(dir) {
    const std::string cfg_path = (fs::path(dir) / "config.json").string();
    if (!fs::is_regular_file(cfg_path))
        throw FileError(Kind::Io, "hf: " + dir +
                                      ": config.json not found (a model folder needs config.json, "
                                      "tokenizer.json and model.safetensors or "
                                      "model.safetensors.index.json)");
    read_config();
    open_weights();
    read_tokenizer();

    const ConfigKeyNames keys = hf_key_names();
    validate_config(m_config, "hf: " + cfg_path + ": ", keys);
    validate_tensors(
        m_config, "hf: " + m_dir + ": ",
        [this](const std::string& name) -> const TensorDesc* {
            const auto it = m_index.find(name);
            return it == m_index.end() ? nullptr : &m_tensors[it->second];
        },
        [this](const std::string& name) {
            const std::optional<std::string> hf = gguf_to_hf_name(name, m_config.arch);
            return "'" + name + "'" + (hf ? " ('" + *hf + "')" : std::string());
        });
    std::vector<std::string> hf_names;
    for (const auto& shard : m_shards)
        for (const SafetensorsTensor& t : shard->tensors()) hf_names.push_back(t.name);
    check_layer_blocks(m_config.n_layer, keys.n_layer, "hf: " + cfg_path + ": ", hf_names,
                       [this](const std::string& name) -> std::optional<int64_t> {
                           const std::optional<std::string> g = hf_to_gguf_name(name, m_config.arch);
                           return g ? gguf_block_index(*g) : std::nullopt;
                       });

    auto ends_with = [](const std::string& n, const char* tail) {
        const size_t k = std::char_traits<char>::length(tail);
        return n.size() > k && n.compare(n.size() - k, k, tail) == 0;
    };
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        const std::string& n = m_tensors[i].name;
        // Undo HF's rotate-half row order for llama Q and K (the NeoX architectures keep it).
        if (!m_config.rope_neox && ends_with(n, ".attn_q.weight")) m_sources[i].permute_groups = m_config.n_head;
        if (!m_config.rope_neox && ends_with(n, ".attn_k.weight")) m_sources[i].permute_groups = m_config.n_head_kv;
        // Gemma's RMSNorm multiplies by (1 + w); llama.cpp's converter stores w + 1 (every tensor
        // named *norm.weight, the q/k norms included), and so do we.
        if ((m_config.arch == "gemma2" || m_config.arch == "gemma3") && ends_with(n, "norm.weight"))
            m_sources[i].add_one = true;
    }
}

void HfModel::read_config() {
    const std::string cfg_path = (fs::path(m_dir) / "config.json").string();
    const std::string w = "hf: " + cfg_path + ": ";
    const json j = read_json_file(cfg_path);
    if (!j.is_object()) throw FileError(Kind::BadJson, w + "expected a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
        std::string text = it->is_string() ? it->get<std::string>() : it->dump();
        if (text.size() > 80) text = text.substr(0, 77) + "...";
        m_summary.emplace_back(it.key(), text);
    }
    HfConfig hc = read_hf_config(j, w);
    m_config = std::move(hc.config);
    std::string name = fs::path(m_dir).filename().string();
    if (name.empty()) name = fs::path(m_dir).parent_path().filename().string();
    m_config.name = name;
    m_tie_word_embeddings = hc.tie_word_embeddings;
}

void HfModel::open_weights() {
    const fs::path dir(m_dir);
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    // (HF name, shard) pairs to expose.
    std::vector<std::pair<std::string, const SafetensorsFile*>> entries;
    if (fs::is_regular_file(single)) {
        m_shards.push_back(std::make_unique<SafetensorsFile>(single.string()));
        for (const SafetensorsTensor& t : m_shards[0]->tensors()) entries.emplace_back(t.name, m_shards[0].get());
    } else if (fs::is_regular_file(index)) {
        m_sharded = true;
        const std::string w = "hf: " + index.string() + ": ";
        const json j = read_json_file(index.string());
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw FileError(Kind::BadJson, w + "expected an object with a 'weight_map' object");
        std::map<std::string, const SafetensorsFile*> opened;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it->is_string())
                throw FileError(Kind::BadJson, w + "weight_map['" + clip_text(it.key()) +
                                                   "'] = " + it->dump().substr(0, 80) + ": expected a file name");
            const std::string shard = it->get<std::string>();
            // Shards live in the folder itself: refuse paths that could point elsewhere.
            if (shard.empty() || shard == "." || shard == ".." || shard.find('/') != std::string::npos ||
                shard.find('\\') != std::string::npos)
                throw FileError(Kind::BadValue, w + "weight_map['" + clip_text(it.key()) + "'] = '" + clip_text(shard) +
                                                    "': expected a file name inside the folder");
            auto found = opened.find(shard);
            if (found == opened.end()) {
                const fs::path p = dir / shard;
                if (!fs::is_regular_file(p))
                    throw FileError(Kind::Io, w + "shard '" + clip_text(shard) + "' (holding '" + clip_text(it.key()) +
                                                  "') not found: " + p.string());
                m_shards.push_back(std::make_unique<SafetensorsFile>(p.string()));
                found = opened.emplace(shard, m_shards.back().get()).first;
            }
            if (found->second->find(it.key()) == nullptr)
                throw FileError(Kind::MissingTensor, w + "tensor '" + clip_text(it.key()) + "' is listed in shard '" +
                                                         clip_text(shard) + "' but that file does not hold it");
            entries.emplace_back(it.key(), found->second);
        }
    } else if (fs::exists(dir / "pytorch_model.bin") || fs::exists(dir / "pytorch_model.bin.index.json")) {
        throw FileError(Kind::Unsupported, "hf: " + m_dir +
                                               ": only pytorch_model.bin weights found; convert them to "
                                               "safetensors (or GGUF) first");
    } else {
        throw FileError(Kind::Io, "hf: " + m_dir +
                                      ": neither model.safetensors nor "
                                      "model.safetensors.index.json found");
    }

    std::sort(entries.begin(), entries.end());
    for (const auto& [hf_name, file] : entries) {
        const std::optional<std::string> name = hf_to_gguf_name(hf_name, m_config.arch);
        if (!name) continue;  // buffers such as rotary_emb.inv_freq are recomputed, not read
        const SafetensorsTensor* st = file->find(hf_name);
        m_index.emplace(*name, m_tensors.size());
        const uint64_t nbytes = st->end - st->begin;
        m_tensors.push_back(TensorDesc{*name, st->dtype, st->shape, nbytes});
        m_sources.push_back(Source{file, st, 0});
    }

    const bool has_output = m_index.count("output.weight") != 0;
    if (!m_tie_word_embeddings && !has_output)
        throw FileError(Kind::MissingTensor, "hf: " + m_dir +
                                                 ": tensor 'lm_head.weight' is missing and config.json "
                                                 "says tie_word_embeddings is false");
    m_config.tied_embeddings = !has_output;
}

// transformers (4.47 and later) saves the chat template as chat_template.jinja, which takes the
// place of tokenizer_config.json's default template, and named ones as chat_templates/NAME.jinja.
void HfModel::read_chat_template_files() {
    const fs::path dir(m_dir);
    auto read_text = [&](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        if (!in.good() && !in.eof())
            throw FileError(Kind::Io, "hf: " + m_dir + ": cannot read '" + p.filename().string() + "'");
        return text.str();
    };
    const fs::path main_file = dir / "chat_template.jinja";
    if (fs::is_regular_file(main_file)) m_vocab.chat_template = read_text(main_file);
    const fs::path named_dir = dir / "chat_templates";
    if (!fs::is_directory(named_dir)) return;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(named_dir))
        if (e.is_regular_file() && e.path().extension() == ".jinja") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
        const std::string name = f.stem().string();
        auto& named = m_vocab.chat_templates;
        const auto same = std::find_if(named.begin(), named.end(), [&](const auto& t) { return t.first == name; });
        if (same != named.end()) same->second = read_text(f);
        else named.emplace_back(name, read_text(f));
    }
}

void HfModel::read_tokenizer() {
    const fs::path dir(m_dir);
    const fs::path tok = dir / "tokenizer.json";
    if (!fs::is_regular_file(tok))
        throw FileError(Kind::Io, "hf: " + m_dir +
                                      ": tokenizer.json not found (only fast-tokenizer folders are "
                                      "supported)");
    const fs::path tok_cfg = dir / "tokenizer_config.json";
    m_vocab = read_tokenizer_json(tok.string(), fs::is_regular_file(tok_cfg) ? tok_cfg.string() : std::string());
    read_chat_template_files();
    const int64_t n_tokens = static_cast<int64_t>(m_vocab.tokens.size());
    if (n_tokens > m_config.n_vocab)
        throw FileError(Kind::BadValue, "hf: " + m_dir + ": tokenizer.json has " + std::to_string(n_tokens) +
                                            " tokens, more than config.json vocab_size " +
                                            std::to_string(m_config.n_vocab));

    auto add_eog = [&](int64_t id) {
        if (id >= 0 && id < n_tokens &&
            std::find(m_vocab.eog_ids.begin(), m_vocab.eog_ids.end(), id) == m_vocab.eog_ids.end())
            m_vocab.eog_ids.push_back(static_cast<int32_t>(id));
    };
    add_eog(m_vocab.eos_id);
    // generation_config.json's eos_token_id (an id or a list) lists every id that ends a reply,
    // e.g. Llama 3 Instruct's <|eot_id|> and <|eom_id|>.
    const fs::path gen = dir / "generation_config.json";
    if (fs::is_regular_file(gen)) {
        const json j = read_json_file(gen.string());
        const auto it = j.is_object() ? j.find("eos_token_id") : j.end();
        if (j.is_object() && it != j.end()) {
            if (it->is_number_integer()) add_eog(it->get<int64_t>());
            if (it->is_array())
                for (const json& id : *it)
                    if (id.is_number_integer()) add_eog(id.get<int64_t>());
        }
    }
}

std::string HfModel::format() const {
    if (!m_sharded) return "safetensors (1 file)";
    return "safetensors (" + std::to_string(m_shards.size()) + " shards)";
}

bool HfModel::has_tensor(const std::string& name) const { return m_index.count(name) != 0; }

const TensorDesc& HfModel::tensor(const std::string& name) const {
    const auto it = m_index.find(name);
    if (it == m_index.end()) throw FileError(Kind::MissingTensor, "hf: " + m_dir + ": no tensor named '" + name + "'");
    return m_tensors[it->second];
}

namespace {

// The HF row that holds GGUF row r of a Q/K matrix of `rows` rows in `groups` heads.
// convert_hf_to_gguf.py permute(): w.reshape(n_head, 2, rows/n_head/2, in).swapaxes(1, 2).
// Within a head of hd rows, GGUF row 2*j + i is HF row i*hd/2 + j (i in {0, 1}): HF keeps the
// two halves of each rotated pair hd/2 rows apart, GGUF puts them next to each other.
int64_t source_row(int64_t r, int64_t rows, int64_t groups) {
    if (groups == 0) return r;
    const int64_t hd = rows / groups;
    const int64_t head = r / hd, within = r % hd;
    const int64_t j = within / 2, i = within % 2;
    return head * hd + i * (hd / 2) + j;
}

}  // namespace

size_t HfModel::readable_index(const std::string& name, const GgmlType** type) const {
    const auto it = m_index.find(name);
    if (it == m_index.end()) throw FileError(Kind::MissingTensor, "hf: " + m_dir + ": no tensor named '" + name + "'");
    const TensorDesc& desc = m_tensors[it->second];
    const Source& src = m_sources[it->second];
    *type = ggml_type_by_name(desc.type);
    if (*type == nullptr || (*type)->dequant_row == nullptr ||
        (desc.type != "F32" && desc.type != "F16" && desc.type != "BF16"))
        throw FileError(Kind::Unsupported, "safetensors: " + src.file->path() + ": tensor '" + src.tensor->name +
                                               "' has dtype " + desc.type +
                                               ", which cannot be read (supported: F32, F16, BF16)");
    return it->second;
}

void HfModel::read_f32(const std::string& name, float* dst) const {
    const GgmlType* type = nullptr;
    const size_t index = readable_index(name, &type);
    const TensorDesc& desc = m_tensors[index];
    const Source& src = m_sources[index];
    const uint8_t* bytes = src.file->data(*src.tensor);
    const int64_t numel = src.tensor->numel;
    if (numel == 0) return;
    check_finite("safetensors: " + src.file->path() + ": ", "'" + src.tensor->name + "'", *type, bytes, numel);
    const int64_t rows = desc.shape.size() >= 2 ? desc.shape[0] : 1;
    const int64_t row_len = numel / rows;
    const size_t row_bytes = static_cast<size_t>(row_len) * type->block_bytes;
    const int64_t groups = src.permute_groups;
    if (groups == 0) {
        dequantize_rows(*type, bytes, dst, rows, row_len);
        if (src.add_one)
            for (int64_t i = 0; i < numel; ++i) dst[i] += 1.0f;
        return;
    }
    parallel_rows(rows, row_len, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            type->dequant_row(bytes + static_cast<size_t>(source_row(r, rows, groups)) * row_bytes, dst + r * row_len,
                              row_len);
    });
}

TensorBytes HfModel::tensor_bytes(const std::string& name) const {
    const GgmlType* type = nullptr;
    const size_t index = readable_index(name, &type);
    const TensorDesc& desc = m_tensors[index];
    const Source& src = m_sources[index];
    TensorBytes b;
    b.type = type;
    b.n_rows = desc.shape.size() >= 2 ? desc.shape[0] : 1;
    b.row_len = b.n_rows > 0 ? src.tensor->numel / b.n_rows : 0;
    b.row_bytes = static_cast<size_t>(b.row_len) * type->block_bytes;
    const uint8_t* bytes = src.file->data(*src.tensor);
    check_finite("safetensors: " + src.file->path() + ": ", "'" + src.tensor->name + "'", *type, bytes,
                 src.tensor->numel);
    if (src.permute_groups == 0) {
        b.data = bytes;
        b.owner = src.file->mapping();
        return b;
    }
    // Q/K rows are reordered: a copy in the GGUF order, still in the stored dtype.
    auto copy = std::make_shared<std::vector<uint8_t>>(b.row_bytes * static_cast<size_t>(b.n_rows));
    for (int64_t r = 0; r < b.n_rows; ++r)
        std::memcpy(copy->data() + static_cast<size_t>(r) * b.row_bytes,
                    bytes + static_cast<size_t>(source_row(r, b.n_rows, src.permute_groups)) * b.row_bytes,
                    b.row_bytes);
    b.data = copy->data();
    b.owner = copy;
    return b;
}

std::vector<std::pair<std::string, std::string>> HfModel::metadata_summary() const { return m_summary; }

}  // namespace snapkv
