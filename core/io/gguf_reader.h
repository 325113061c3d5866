// GGUF container reader (v2, v3, little-endian): maps the file read-only, validates the whole
// header (metadata, tensor infos, alignment, every size and offset) before allocating from any
// count in it, then serves metadata values and raw tensor bytes. No architectures (gguf_model),
// no dequantization (dequant). GGUF lists dims innermost first; TensorInfo::shape is flipped to
// torch order. Every message starts "gguf: <path>: ".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/io/dequant.h"
#include "core/io/mapped_file.h"

namespace snapkv {

// GGUF metadata value types (gguf_type in ggml's gguf.h); the numbers are the on-disk ids.
enum class GgufValueType : uint32_t {
    Uint8 = 0,
    Int8 = 1,
    Uint16 = 2,
    Int16 = 3,
    Uint32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    Uint64 = 10,
    Int64 = 11,
    Float64 = 12,
};
const char* gguf_value_type_name(GgufValueType type);

struct GgufValue {
    GgufValueType type = GgufValueType::Uint8;
    uint64_t u64 = 0;  // Uint8..Uint64 and Bool
    int64_t i64 = 0;   // Int8..Int64
    double f64 = 0.0;  // Float32, Float64
    std::string str;   // String
    // Array: elements stay in the mapping and are decoded on request (a 150k-token vocabulary
    // is not copied into 150k values). Nested arrays are validated but only summarised.
    GgufValueType elem_type = GgufValueType::Uint8;
    uint64_t count = 0;
    size_t offset = 0;  // file offset of the first element
};

struct GgufKv {
    std::string key;
    GgufValue value;
};

struct GgufTensorInfo {
    std::string name;
    const GgmlType* type = nullptr;  // never null: unknown type ids are refused while parsing
    std::vector<int64_t> ne;         // GGUF order, innermost first, as stored in the file
    std::vector<int64_t> shape;      // torch order, outermost first: ne reversed
    int64_t numel = 0;
    uint64_t offset = 0;  // relative to the start of the data section, as in the file
    uint64_t nbytes = 0;
};

class GgufReader {
public:
    // Maps and validates path. Throws FileError (Io, BadMagic, BadVersion, Truncated, BadCount,
    // BadSize, Overflow, BadValue, UnknownType).
    explicit GgufReader(const std::string& path);

    const std::string& path() const { return m_file->path(); }
    uint32_t version() const { return m_version; }
    uint64_t alignment() const { return m_alignment; }
    uint64_t data_offset() const { return m_data_offset; }  // absolute file offset
    uint64_t file_size() const { return m_file->size(); }

    const std::vector<GgufKv>& kvs() const { return m_kvs; }                  // file order
    const GgufValue* find(const std::string& key) const;                      // nullptr if absent
    const std::vector<GgufTensorInfo>& tensors() const { return m_tensors; }  // file order
    const GgufTensorInfo* find_tensor(const std::string& name) const;         // nullptr if absent
    const uint8_t* tensor_data(const GgufTensorInfo& t) const;                // t.nbytes valid bytes
    // The mapping tensor_data points into, for views that must outlive this reader.
    std::shared_ptr<const MappedFile> mapping() const { return m_file; }

    // Typed getters: std::nullopt when the key is absent; FileError(BadValue) naming the key, the
    // type found and the type wanted when the value has another type or does not fit.
    std::optional<std::string> get_string(const std::string& key) const;
    std::optional<int64_t> get_int(const std::string& key) const;   // any integer type
    std::optional<double> get_float(const std::string& key) const;  // float32/64 or an integer
    std::optional<bool> get_bool(const std::string& key) const;
    std::optional<std::vector<std::string>> get_string_array(const std::string& key) const;
    std::optional<std::vector<float>> get_f32_array(const std::string& key) const;  // float arrays
    std::optional<std::vector<int64_t>> get_int_array(const std::string& key) const;

    // One-line rendering of a value for `snapkv info`: strings quoted and cut, arrays as
    // "[512 x string] "<unk>", "<s>", "</s>", ...".
    std::string summarize(const GgufValue& value) const;

    // "gguf: <path>: " — the prefix of every message about this file.
    std::string where() const { return "gguf: " + path() + ": "; }

private:
    void parse();

    std::shared_ptr<const MappedFile> m_file;  // shared with TensorBytes views
    uint32_t m_version = 0;
    uint64_t m_alignment = 32;
    uint64_t m_data_offset = 0;
    std::vector<GgufKv> m_kvs;
    std::unordered_map<std::string, size_t> m_kv_index;
    std::vector<GgufTensorInfo> m_tensors;
    std::unordered_map<std::string, size_t> m_tensor_index;
};

}  // namespace snapkv
