// safetensors parsing (format: huggingface/safetensors README): the header is parsed with
// nlohmann::json (nesting limited) after its length has been checked against the file; each
// entry's byte range must equal numel x dtype size and lie inside the data, and no two entries
// may share bytes. Dtypes beyond F32/F16/BF16 are accepted here only so the header can be
// validated; hf_model refuses them for tensors it needs.
#include "core/io/safetensors_reader.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/io/json_text.h"
#include "core/io/tensor_checks.h"

namespace snapkv {

namespace {

using Kind = FileError::Kind;
using nlohmann::json;

// Reads a non-negative integer, refusing floats, negatives and other JSON types.
bool as_u64(const json& j, uint64_t* out) {
    if (!j.is_number_integer()) return false;
    if (j.is_number_unsigned()) {
        *out = j.get<uint64_t>();
        return true;
    }
    const int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
}

}  // namespace

size_t SafetensorsFile::dtype_size(const std::string& d) {
    if (d == "F64" || d == "I64" || d == "U64") return 8;
    if (d == "F32" || d == "I32" || d == "U32") return 4;
    if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
    if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2" || d == "F8_E8M0") return 1;
    return 0;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : m_file(std::make_shared<MappedFile>(path, "safetensors")) {
    const std::string w = "safetensors: " + path + ": ";
    const uint8_t* bytes = m_file->data();
    const uint64_t size = m_file->size();
    if (size < 8)
        throw FileError(Kind::Truncated,
                        w + "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes, 8);  // little-endian host
    if (header_len > kMaxHeaderBytes)
        throw FileError(Kind::BadSize, w + "header length " + std::to_string(header_len) + " bytes is more than the " +
                                           std::to_string(kMaxHeaderBytes) + " allowed");
    if (header_len > size - 8)
        throw FileError(Kind::Truncated, w + "header length " + std::to_string(header_len) +
                                             " bytes runs past the end of the file (" + std::to_string(size) +
                                             " bytes)");
    m_data_offset = 8 + header_len;
    const uint64_t data_size = size - m_data_offset;

    // Nesting limited: '__metadata__' values are dumped, which recurses per level (json_text.h).
    const json header = parse_json_text(
        std::string_view(reinterpret_cast<const char*>(bytes) + 8, static_cast<size_t>(header_len)),
        w + "header is ");  // "header is not valid JSON: ...", "header is JSON nested ..."
    if (!header.is_object())
        throw FileError(Kind::BadJson,
                        w + "header is a JSON " + std::string(header.type_name()) + ", expected an object");

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const json& e = it.value();
        if (name == "__metadata__") {
            if (!e.is_object()) throw FileError(Kind::BadJson, w + "'__metadata__' must be an object of strings");
            for (auto m = e.begin(); m != e.end(); ++m)
                m_metadata.emplace_back(m.key(),
                                        m.value().is_string() ? m.value().get<std::string>() : m.value().dump());
            continue;
        }
        const std::string tw = w + "tensor '" + clip_text(name) + "': ";
        if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
            !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
            e["data_offsets"].size() != 2)
            throw FileError(Kind::BadJson, tw +
                                               "entry must be {\"dtype\": string, \"shape\": [ints], "
                                               "\"data_offsets\": [begin, end]}, found " +
                                               e.dump().substr(0, 200));
        SafetensorsTensor t;
        t.name = name;
        t.dtype = e["dtype"].get<std::string>();
        const size_t elem = dtype_size(t.dtype);
        if (elem == 0) throw FileError(Kind::Unsupported, tw + "dtype '" + t.dtype + "' is not supported");
        int64_t numel = 1;
        for (const json& d : e["shape"]) {
            uint64_t dim = 0;
            if (!as_u64(d, &dim))
                throw FileError(Kind::BadJson, tw + "shape entry " + d.dump() + " is not a non-negative integer");
            if (dim > static_cast<uint64_t>(INT64_MAX) ||
                __builtin_mul_overflow(numel, static_cast<int64_t>(dim), &numel))
                throw FileError(Kind::Overflow, tw + "shape " + e["shape"].dump() + " overflows 64 bits");
            t.shape.push_back(static_cast<int64_t>(dim));
        }
        t.numel = numel;
        if (!as_u64(e["data_offsets"][0], &t.begin) || !as_u64(e["data_offsets"][1], &t.end))
            throw FileError(Kind::BadJson,
                            tw + "data_offsets " + e["data_offsets"].dump() + " must be two non-negative integers");
        if (t.begin > t.end)
            throw FileError(Kind::BadValue, tw + "data_offsets " + e["data_offsets"].dump() + ": begin is after end");
        if (t.end > data_size)
            throw FileError(Kind::Truncated, tw + "data_offsets " + e["data_offsets"].dump() +
                                                 " run past the end of the data (" + std::to_string(data_size) +
                                                 " bytes after the " + std::to_string(m_data_offset) + "-byte header)");
        uint64_t expected = 0;
        if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(elem), &expected))
            throw FileError(Kind::Overflow, tw + "byte size overflows 64 bits");
        if (t.end - t.begin != expected)
            throw FileError(Kind::BadSize, tw + "data_offsets " + e["data_offsets"].dump() + " hold " +
                                               std::to_string(t.end - t.begin) + " bytes, but " + t.dtype + " " +
                                               e["shape"].dump() + " needs " + std::to_string(expected));
        m_index.emplace(t.name, m_tensors.size());  // JSON object keys are unique after parsing
        m_tensors.push_back(std::move(t));
    }
    // Tensors sharing bytes would read each other's data (the safetensors library refuses them).
    std::vector<ByteRange> ranges;
    ranges.reserve(m_tensors.size());
    for (const SafetensorsTensor& t : m_tensors) ranges.push_back({t.name, t.begin, t.end});
    check_no_overlap(w, std::move(ranges));
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_tensors[it->second];
}

const uint8_t* SafetensorsFile::data(const SafetensorsTensor& t) const {
    return m_file->data() + m_data_offset + t.begin;
}

}  // namespace snapkv
