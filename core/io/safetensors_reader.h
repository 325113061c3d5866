// One .safetensors file: an 8-byte little-endian header length, a JSON header mapping tensor names
// to {dtype, shape, data_offsets}, then the raw data, memory-mapped read-only. Every entry is
// validated (dtype known, sizes consistent, offsets inside the data) when the file is opened.
// It neither maps names nor converts dtypes: hf_model does that. Messages start
// "safetensors: <path>: ".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/io/mapped_file.h"

namespace snapkv {

struct SafetensorsTensor {
    std::string name;
    std::string dtype;           // "F32", "F16", "BF16", "I64", ...
    std::vector<int64_t> shape;  // torch order, as stored
    int64_t numel = 0;
    uint64_t begin = 0;  // data_offsets, relative to the end of the header
    uint64_t end = 0;
};

class SafetensorsFile {
public:
    // Refuses headers longer than this: real headers are a few MB at most.
    static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

    // Throws FileError: Io, Truncated, BadSize (header length), BadJson, BadValue, Overflow,
    // Unsupported (unknown dtype, naming the tensor).
    explicit SafetensorsFile(const std::string& path);

    const std::string& path() const { return m_file->path(); }
    const std::vector<SafetensorsTensor>& tensors() const { return m_tensors; }  // sorted by name
    const SafetensorsTensor* find(const std::string& name) const;                // nullptr if absent
    const uint8_t* data(const SafetensorsTensor& t) const;                       // t.end - t.begin bytes
    // The mapping data() points into, for views that must outlive this object.
    std::shared_ptr<const MappedFile> mapping() const { return m_file; }
    // The optional "__metadata__" string map.
    const std::vector<std::pair<std::string, std::string>>& metadata() const { return m_metadata; }

    // Bytes per element of a safetensors dtype, 0 if unknown.
    static size_t dtype_size(const std::string& dtype);

private:
    std::shared_ptr<const MappedFile> m_file;  // shared with TensorBytes views
    uint64_t m_data_offset = 0;
    std::vector<SafetensorsTensor> m_tensors;
    std::unordered_map<std::string, size_t> m_index;
    std::vector<std::pair<std::string, std::string>> m_metadata;
};

}  // namespace snapkv
