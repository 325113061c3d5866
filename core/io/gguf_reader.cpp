// GGUF parsing with a bounds-checked cursor over the mapping. Layout (ggml docs/gguf.md): "GGUF",
// u32 version, u64 n_tensors, u64 n_kv, n_kv x (string key, u32 type, value), n_tensors x (string
// name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset), padding, data; strings are u64 length +
// bytes. Counts and lengths are checked against the bytes left before use. Deliberately not
// supported: GGUF v1 (u32 counts) and big-endian files.
#include "core/io/gguf_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/io/tensor_checks.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf_reader reads little-endian files with plain loads: a big-endian host needs byte swaps"
#endif

namespace snapkv {

namespace {

using Kind = FileError::Kind;

constexpr uint32_t kMaxDims = 4;             // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;          // deeper nesting is refused rather than recursed into
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;  // key length, type, smallest value
// Name length, n_dims, one dimension, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// No converter writes a count or string length above 2^32 (GGUF v1 stored counts in 32 bits and
// real vocabularies hold well under a million tokens): above it a value is corrupt, not cut off.
constexpr uint64_t kMaxPlausibleCount = 0xFFFFFFFFull;
// The GGUF spec (ggml docs/gguf.md) caps keys at 2^16 - 1 bytes; ggml caps tensor names far lower
// (GGML_MAX_NAME, 64). Longer ones are corrupt lengths: refused before they are copied or quoted.
constexpr uint64_t kMaxKeyBytes = 65535;
constexpr uint64_t kMaxTensorNameBytes = 65535;

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::Float64); }

// Size of a fixed-size value, 0 for String and Array.
uint64_t fixed_value_size(GgufValueType t) {
    switch (t) {
    case GgufValueType::Uint8:
    case GgufValueType::Int8:
    case GgufValueType::Bool: return 1;
    case GgufValueType::Uint16:
    case GgufValueType::Int16: return 2;
    case GgufValueType::Uint32:
    case GgufValueType::Int32:
    case GgufValueType::Float32: return 4;
    case GgufValueType::Uint64:
    case GgufValueType::Int64:
    case GgufValueType::Float64: return 8;
    case GgufValueType::String:
    case GgufValueType::Array: return 0;
    }
    return 0;
}

// Fewest bytes one element of this type can occupy: used to refuse impossible counts up front.
uint64_t min_value_size(GgufValueType t) {
    if (t == GgufValueType::String) return 8;     // length
    if (t == GgufValueType::Array) return 4 + 8;  // element type + count
    return fixed_value_size(t);
}

bool is_integer(GgufValueType t) {
    switch (t) {
    case GgufValueType::Uint8:
    case GgufValueType::Int8:
    case GgufValueType::Uint16:
    case GgufValueType::Int16:
    case GgufValueType::Uint32:
    case GgufValueType::Int32:
    case GgufValueType::Uint64:
    case GgufValueType::Int64: return true;
    default: return false;
    }
}

bool is_signed(GgufValueType t) {
    return t == GgufValueType::Int8 || t == GgufValueType::Int16 || t == GgufValueType::Int32 ||
           t == GgufValueType::Int64;
}

std::string printable(const uint8_t* p, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] >= 32 && p[i] < 127) {
            out += static_cast<char>(p[i]);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
            out += buf;
        }
    }
    return out;
}

// A key, tensor name or string from the file, for messages: non-ASCII bytes escaped and at most
// kMaxQuotedBytes of it (a corrupt length can make a "name" a megabyte of raw bytes).
std::string quoted(const std::string& s) {
    const size_t n = std::min(s.size(), kMaxQuotedBytes);
    std::string out = "'" + printable(reinterpret_cast<const uint8_t*>(s.data()), n) + "'";
    if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
}

// What the parser is looking at, for messages. Formatted only when something goes wrong.
struct Spot {
    std::string item = "the header";
    int64_t element = -1;  // array element index, -1 when not inside an array
    std::string describe(const char* field) const {
        std::string s = item;
        if (element >= 0) s += " element " + std::to_string(element);
        if (field != nullptr && *field != '\0') s += std::string(" (") + field + ")";
        return s;
    }
};

class Cursor {
public:
    Cursor(const uint8_t* data, size_t size, size_t pos, const std::string& where, const Spot& spot)
        : m_data(data), m_size(size), m_pos(pos), m_where(where), m_spot(spot) {}

    size_t pos() const { return m_pos; }
    uint64_t left() const { return m_size - m_pos; }
    const std::string& note() const { return m_note; }

    template <class T>
    T read(const char* field) {
        need(sizeof(T), field);
        T v;
        std::memcpy(&v, m_data + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return v;
    }

    void skip(uint64_t n, const char* field) {
        need(n, field);
        m_pos += static_cast<size_t>(n);
    }

    // Reads the u64 length of a string and checks it against max_len and the bytes left; returns
    // the length. max_len: kMaxPlausibleCount, or a format limit such as kMaxKeyBytes.
    uint64_t string_length(const char* field, uint64_t max_len = kMaxPlausibleCount) {
        const uint64_t len = read<uint64_t>(field);
        if (len > kMaxPlausibleCount)
            throw FileError(Kind::BadSize, m_where + m_spot.describe(field) + ": string length " + std::to_string(len) +
                                               " is absurd (the file has " + std::to_string(m_size) + " bytes)");
        if (len > max_len)
            throw FileError(Kind::BadSize, m_where + m_spot.describe(field) + ": string length " + std::to_string(len) +
                                               ", allowed at most " + std::to_string(max_len));
        need(len, field);
        return len;
    }

    std::string read_string(const char* field, uint64_t max_len = kMaxPlausibleCount) {
        const uint64_t len = string_length(field, max_len);
        std::string s(reinterpret_cast<const char*>(m_data + m_pos), static_cast<size_t>(len));
        m_pos += static_cast<size_t>(len);
        return s;
    }

    void skip_string(const char* field) { m_pos += static_cast<size_t>(string_length(field)); }

    void need(uint64_t n, const char* field) const {
        if (n <= left()) return;
        throw FileError(Kind::Truncated, m_where + "file ends inside " + m_spot.describe(field) + ": " +
                                             std::to_string(n) + " bytes needed at byte " + std::to_string(m_pos) +
                                             ", the file has " + std::to_string(m_size) + " bytes" + m_note);
    }

    // A count of items taking at least min_bytes each. Counts no writer produces are BadCount.
    // A count the bytes left cannot hold is a truncated file (or a wrong count, which a cut file
    // cannot be told apart from): parsing goes on item by item, so the error names the item where
    // the file ends, and the note below adds the count. Returns how many items can safely be
    // reserved.
    void check_plausible(uint64_t count, const std::string& what) const {
        if (count > kMaxPlausibleCount)
            throw FileError(Kind::BadCount, m_where + m_spot.describe(nullptr) + ": " + what + " " +
                                                std::to_string(count) + " is absurd (more than 2^32; the file has " +
                                                std::to_string(m_size) + " bytes)");
    }

    uint64_t check_count(uint64_t count, uint64_t min_bytes, const std::string& what) {
        check_plausible(count, what);
        if (min_bytes == 0 || count <= left() / min_bytes) return count;
        m_note = " (" + what + " " + std::to_string(count) + " needs at least " + std::to_string(count * min_bytes) +
                 " bytes; " + std::to_string(left()) + " were left at byte " + std::to_string(m_pos) + ")";
        return left() / min_bytes;
    }

private:
    const uint8_t* m_data;
    size_t m_size;
    size_t m_pos;
    const std::string& m_where;
    const Spot& m_spot;
    std::string m_note;  // set when a declared count does not fit in what is left
};

// Reads one value of a known type. Scalars land in *out; arrays are validated (every nested
// length checked) and only their position is recorded.
void parse_value(Cursor& c, Spot& spot, const std::string& where, GgufValueType type, GgufValue& out, int depth) {
    out.type = type;
    switch (type) {
    case GgufValueType::Uint8: out.u64 = c.read<uint8_t>("value"); return;
    case GgufValueType::Int8: out.i64 = c.read<int8_t>("value"); return;
    case GgufValueType::Uint16: out.u64 = c.read<uint16_t>("value"); return;
    case GgufValueType::Int16: out.i64 = c.read<int16_t>("value"); return;
    case GgufValueType::Uint32: out.u64 = c.read<uint32_t>("value"); return;
    case GgufValueType::Int32: out.i64 = c.read<int32_t>("value"); return;
    case GgufValueType::Float32: out.f64 = c.read<float>("value"); return;
    case GgufValueType::Bool: out.u64 = c.read<uint8_t>("value") != 0 ? 1 : 0; return;
    case GgufValueType::String: out.str = c.read_string("string value"); return;
    case GgufValueType::Uint64: out.u64 = c.read<uint64_t>("value"); return;
    case GgufValueType::Int64: out.i64 = c.read<int64_t>("value"); return;
    case GgufValueType::Float64: out.f64 = c.read<double>("value"); return;
    case GgufValueType::Array: break;
    }
    if (depth >= kMaxArrayNesting)
        throw FileError(Kind::BadValue, where + spot.describe(nullptr) + ": arrays nested more than " +
                                            std::to_string(kMaxArrayNesting) + " deep");
    const uint32_t elem = c.read<uint32_t>("array element type");
    if (!known_value_type(elem))
        throw FileError(Kind::UnknownType, where + spot.describe(nullptr) + ": unknown array element type " +
                                               std::to_string(elem) + " (known: 0..12)");
    out.elem_type = static_cast<GgufValueType>(elem);
    out.count = c.read<uint64_t>("array length");
    c.check_count(out.count, min_value_size(out.elem_type), "array length");
    out.offset = c.pos();
    const uint64_t fixed = fixed_value_size(out.elem_type);
    if (fixed != 0) {
        c.skip(out.count * fixed, "array elements");  // count < 2^32, fixed <= 8: no overflow
        return;
    }
    const int64_t outer = spot.element;
    for (uint64_t i = 0; i < out.count; ++i) {
        spot.element = static_cast<int64_t>(i);
        if (out.elem_type == GgufValueType::String) {
            c.skip_string("string");
        } else {
            GgufValue nested;
            parse_value(c, spot, where, GgufValueType::Array, nested, depth + 1);
        }
    }
    spot.element = outer;
}

std::string shape_text(const std::vector<int64_t>& ne) {
    std::string s;
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? "x" : "") + std::to_string(ne[i]);
    return s;
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
    switch (type) {
    case GgufValueType::Uint8: return "uint8";
    case GgufValueType::Int8: return "int8";
    case GgufValueType::Uint16: return "uint16";
    case GgufValueType::Int16: return "int16";
    case GgufValueType::Uint32: return "uint32";
    case GgufValueType::Int32: return "int32";
    case GgufValueType::Float32: return "float32";
    case GgufValueType::Bool: return "bool";
    case GgufValueType::String: return "string";
    case GgufValueType::Array: return "array";
    case GgufValueType::Uint64: return "uint64";
    case GgufValueType::Int64: return "int64";
    case GgufValueType::Float64: return "float64";
    }
    return "unknown";
}

GgufReader::GgufReader(const std::string& path) : m_file(std::make_shared<MappedFile>(path, "gguf")) { parse(); }

void GgufReader::parse() {
    const std::string where = this->where();
    const uint8_t* data = m_file->data();
    const size_t size = m_file->size();

    if (size < 4 || std::memcmp(data, "GGUF", 4) != 0)
        throw FileError(Kind::BadMagic, where + "not a GGUF file (starts with '" +
                                            printable(data, std::min<size_t>(size, 4)) +
                                            "', expected 'GGUF'; file is " + std::to_string(size) + " bytes)");

    Spot spot;
    Cursor c(data, size, 4, where, spot);
    m_version = c.read<uint32_t>("version");
    if (m_version != 2 && m_version != 3) {
        std::string msg = where + "GGUF version " + std::to_string(m_version) + " is not supported (supported: 2, 3)";
        if (m_version == 1) msg += "; version 1 files predate 64-bit counts: re-convert the model";
        if (__builtin_bswap32(m_version) == 2 || __builtin_bswap32(m_version) == 3)
            msg += "; this looks like a big-endian file";
        throw FileError(Kind::BadVersion, msg);
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor count");
    const uint64_t n_kv = c.read<uint64_t>("metadata key/value count");
    c.check_plausible(n_tensors, "tensor count");

    // An error inside a list whose declared count did not fit may be caused by that count:
    // say so in the message.
    auto with_note = [&c](const FileError& e) {
        const std::string msg = e.what();
        if (c.note().empty() || msg.find(c.note()) != std::string::npos) return e;
        return FileError(e.kind(), msg + c.note());
    };

    // Metadata.
    spot.item = "the metadata";
    m_kvs.reserve(static_cast<size_t>(c.check_count(n_kv, kMinKvBytes, "metadata key/value count")));
    try {
        for (uint64_t i = 0; i < n_kv; ++i) {
            spot.item = "metadata key/value " + std::to_string(i);
            spot.element = -1;
            GgufKv kv;
            kv.key = c.read_string("key", kMaxKeyBytes);
            if (kv.key.empty()) throw FileError(Kind::BadValue, where + spot.item + ": empty key");
            spot.item += " (" + quoted(kv.key) + ")";
            const uint32_t type = c.read<uint32_t>("value type");
            if (!known_value_type(type))
                throw FileError(Kind::UnknownType, where + "metadata key " + quoted(kv.key) + ": unknown value type " +
                                                       std::to_string(type) + " (known: 0..12)");
            parse_value(c, spot, where, static_cast<GgufValueType>(type), kv.value, 0);
            const auto [it, fresh] = m_kv_index.emplace(kv.key, m_kvs.size());
            if (!fresh)
                throw FileError(Kind::BadValue, where + "duplicate metadata key " + quoted(kv.key) + " (entries " +
                                                    std::to_string(it->second) + " and " + std::to_string(i) + ")");
            m_kvs.push_back(std::move(kv));
        }
    } catch (const FileError& e) {
        throw with_note(e);
    }

    // general.alignment (default 32): tensor offsets and the data section are multiples of it.
    if (const GgufValue* v = find("general.alignment")) {
        const bool is_int = is_integer(v->type);
        const int64_t a = !is_int              ? 0
                          : is_signed(v->type) ? v->i64
                                               : static_cast<int64_t>(std::min<uint64_t>(v->u64, INT64_MAX));
        if (!is_int || a <= 0 || (a & (a - 1)) != 0)
            throw FileError(Kind::BadValue, where + "key 'general.alignment' = " + summarize(*v) +
                                                ": must be a power of two greater than 0 (the default is 32)");
        m_alignment = static_cast<uint64_t>(a);
    }

    // Tensor infos.
    spot.item = "the tensor infos";
    spot.element = -1;
    m_tensors.reserve(static_cast<size_t>(c.check_count(n_tensors, kMinTensorInfoBytes, "tensor count")));
    try {
        for (uint64_t i = 0; i < n_tensors; ++i) {
            spot.item = "tensor info " + std::to_string(i);
            GgufTensorInfo t;
            t.name = c.read_string("name", kMaxTensorNameBytes);
            spot.item += " (" + quoted(t.name) + ")";
            const std::string tw = where + "tensor " + quoted(t.name) + ": ";
            if (t.name.empty()) throw FileError(Kind::BadValue, where + spot.item + ": empty name");
            const uint32_t n_dims = c.read<uint32_t>("dimension count");
            if (n_dims == 0 || n_dims > kMaxDims)
                throw FileError(Kind::BadSize,
                                tw + std::to_string(n_dims) + " dimensions, allowed 1 to " + std::to_string(kMaxDims));
            for (uint32_t d = 0; d < n_dims; ++d) {
                const uint64_t ne = c.read<uint64_t>("dimensions");
                if (ne == 0)
                    throw FileError(Kind::BadSize, tw + "dimension " + std::to_string(d) + " is 0, must be at least 1");
                if (ne > static_cast<uint64_t>(INT64_MAX))
                    throw FileError(Kind::Overflow, tw + "dimension " + std::to_string(d) + " is " +
                                                        std::to_string(ne) + ", more than 2^63-1");
                t.ne.push_back(static_cast<int64_t>(ne));
            }
            const uint32_t type_id = c.read<uint32_t>("type");
            t.type = ggml_type_by_id(type_id);
            if (t.type == nullptr)
                throw FileError(Kind::UnknownType, tw + "unknown ggml type id " + std::to_string(type_id));
            t.offset = c.read<uint64_t>("offset");

            int64_t numel = 1;
            for (int64_t ne : t.ne)
                if (__builtin_mul_overflow(numel, ne, &numel))
                    throw FileError(Kind::Overflow,
                                    tw + "dimensions " + shape_text(t.ne) + " (innermost first) overflow 64 bits");
            t.numel = numel;
            if (t.ne[0] % t.type->block_size != 0)
                throw FileError(Kind::BadSize, tw + "row length " + std::to_string(t.ne[0]) +
                                                   " is not a multiple of the " + t.type->name + " block size " +
                                                   std::to_string(t.type->block_size));
            const uint64_t blocks = static_cast<uint64_t>(numel / t.type->block_size);
            if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(t.type->block_bytes), &t.nbytes))
                throw FileError(Kind::Overflow,
                                tw + "byte size of " + shape_text(t.ne) + " " + t.type->name + " overflows 64 bits");
            // GGUF stores ne innermost first (ne[0] is the row length); torch order is the reverse.
            // This is the one place the order is flipped.
            t.shape.assign(t.ne.rbegin(), t.ne.rend());

            const auto [it, fresh] = m_tensor_index.emplace(t.name, m_tensors.size());
            if (!fresh)
                throw FileError(Kind::BadValue, where + "duplicate tensor name " + quoted(t.name) + " (tensor infos " +
                                                    std::to_string(it->second) + " and " + std::to_string(i) + ")");
            m_tensors.push_back(std::move(t));
        }
    } catch (const FileError& e) {
        throw with_note(e);
    }

    // Data section: starts at the next multiple of the alignment after the header.
    const uint64_t header_end = c.pos();
    const uint64_t pad = (m_alignment - header_end % m_alignment) % m_alignment;
    if (__builtin_add_overflow(header_end, pad, &m_data_offset))
        throw FileError(Kind::Overflow, where + "data section offset overflows 64 bits");
    for (const GgufTensorInfo& t : m_tensors) {
        const std::string tw = where + "tensor " + quoted(t.name) + ": ";
        if (t.offset % m_alignment != 0)
            throw FileError(Kind::BadValue, tw + "offset " + std::to_string(t.offset) +
                                                " is not a multiple of the alignment " + std::to_string(m_alignment));
        uint64_t start = 0, end = 0;
        if (__builtin_add_overflow(m_data_offset, t.offset, &start) || __builtin_add_overflow(start, t.nbytes, &end))
            throw FileError(Kind::Overflow, tw + "offset " + std::to_string(t.offset) + " + " +
                                                std::to_string(t.nbytes) + " bytes overflows 64 bits");
        if (end > size)
            throw FileError(Kind::Truncated, tw + "offset " + std::to_string(t.offset) + " + " +
                                                 std::to_string(t.nbytes) + " bytes runs past the end of the file (" +
                                                 std::to_string(size) + " bytes; tensor data starts at byte " +
                                                 std::to_string(m_data_offset) + ")");
    }
    // Two tensors sharing bytes, or a tensor whose type was changed to one of another size,
    // would read garbage. ggml (gguf.cpp) requires the tensors to follow each other in info order,
    // each at the previous end padded to the alignment; overlaps get their own message first.
    std::vector<ByteRange> ranges;
    ranges.reserve(m_tensors.size());
    for (const GgufTensorInfo& t : m_tensors) ranges.push_back({t.name, t.offset, t.offset + t.nbytes});
    check_no_overlap(where, std::move(ranges));
    uint64_t expected = 0;
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        const GgufTensorInfo& t = m_tensors[i];
        if (t.offset != expected)
            throw FileError(
                Kind::BadValue,
                where + "tensor " + quoted(t.name) + ": offset " + std::to_string(t.offset) + ", expected " +
                    std::to_string(expected) +
                    (i == 0 ? std::string(" (the first tensor starts the data section)")
                            : " (right after " + quoted(m_tensors[i - 1].name) + ", " +
                                  std::string(m_tensors[i - 1].type->name) + " " + shape_text(m_tensors[i - 1].ne) +
                                  ", padded to the alignment " + std::to_string(m_alignment) + ")") +
                    ": tensor data must follow the tensor infos' order and sizes");
        expected = t.offset + (t.nbytes + m_alignment - 1) / m_alignment * m_alignment;
    }
}

const GgufValue* GgufReader::find(const std::string& key) const {
    const auto it = m_kv_index.find(key);
    return it == m_kv_index.end() ? nullptr : &m_kvs[it->second].value;
}

const GgufTensorInfo* GgufReader::find_tensor(const std::string& name) const {
    const auto it = m_tensor_index.find(name);
    return it == m_tensor_index.end() ? nullptr : &m_tensors[it->second];
}

const uint8_t* GgufReader::tensor_data(const GgufTensorInfo& t) const {
    return m_file->data() + m_data_offset + t.offset;  // validated in parse()
}

namespace {

[[noreturn]] void wrong_type(const std::string& where, const std::string& key, const GgufValue& v, const char* wanted) {
    std::string found = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::Array) found += std::string(" of ") + gguf_value_type_name(v.elem_type);
    throw FileError(Kind::BadValue, where + "key " + quoted(key) + " is " + found + ", expected " + wanted);
}

}  // namespace

std::optional<std::string> GgufReader::get_string(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufValueType::String) wrong_type(where(), key, *v, "a string");
    return v->str;
}

std::optional<int64_t> GgufReader::get_int(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!is_integer(v->type)) wrong_type(where(), key, *v, "an integer");
    if (is_signed(v->type)) return v->i64;
    if (v->u64 > static_cast<uint64_t>(INT64_MAX))
        throw FileError(Kind::BadValue,
                        where() + "key " + quoted(key) + " = " + std::to_string(v->u64) + ": larger than 2^63-1");
    return static_cast<int64_t>(v->u64);
}

std::optional<double> GgufReader::get_float(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type == GgufValueType::Float32 || v->type == GgufValueType::Float64) return v->f64;
    if (is_integer(v->type)) return is_signed(v->type) ? static_cast<double>(v->i64) : static_cast<double>(v->u64);
    wrong_type(where(), key, *v, "a number");
}

std::optional<bool> GgufReader::get_bool(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufValueType::Bool) wrong_type(where(), key, *v, "a bool");
    return v->u64 != 0;
}

std::optional<std::vector<std::string>> GgufReader::get_string_array(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufValueType::Array || v->elem_type != GgufValueType::String)
        wrong_type(where(), key, *v, "an array of string");
    Spot spot;
    spot.item = "metadata key " + quoted(key);
    const std::string w = where();
    Cursor c(m_file->data(), m_file->size(), v->offset, w, spot);
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(v->count));  // count validated against the file in parse()
    for (uint64_t i = 0; i < v->count; ++i) out.push_back(c.read_string("string"));
    return out;
}

std::optional<std::vector<float>> GgufReader::get_f32_array(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufValueType::Array ||
        (v->elem_type != GgufValueType::Float32 && v->elem_type != GgufValueType::Float64))
        wrong_type(where(), key, *v, "an array of float32");
    std::vector<float> out(static_cast<size_t>(v->count));
    const uint8_t* p = m_file->data() + v->offset;
    for (size_t i = 0; i < out.size(); ++i) {
        if (v->elem_type == GgufValueType::Float32) {
            std::memcpy(&out[i], p + 4 * i, 4);
        } else {
            double d;
            std::memcpy(&d, p + 8 * i, 8);
            out[i] = static_cast<float>(d);
        }
    }
    return out;
}

std::optional<std::vector<int64_t>> GgufReader::get_int_array(const std::string& key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufValueType::Array || !is_integer(v->elem_type))
        wrong_type(where(), key, *v, "an array of integers");
    const size_t width = static_cast<size_t>(fixed_value_size(v->elem_type));
    const bool sign = is_signed(v->elem_type);
    std::vector<int64_t> out(static_cast<size_t>(v->count));
    const uint8_t* p = m_file->data() + v->offset;
    for (size_t i = 0; i < out.size(); ++i) {
        uint64_t raw = 0;
        std::memcpy(&raw, p + width * i, width);  // little-endian host: low bytes first
        if (sign && width < 8 && (raw >> (8 * width - 1)) != 0) raw |= ~uint64_t(0) << (8 * width);
        if (!sign && raw > static_cast<uint64_t>(INT64_MAX))
            throw FileError(Kind::BadValue, where() + "key " + quoted(key) + " element " + std::to_string(i) + " = " +
                                                std::to_string(raw) + ": larger than 2^63-1");
        out[i] = static_cast<int64_t>(raw);
    }
    return out;
}

namespace {

std::string short_text(const std::string& s, size_t max_chars) {
    std::string out;
    for (char ch : s) {
        if (out.size() >= max_chars) {
            out += "...";
            break;
        }
        if (ch == '\n') out += "\\n";
        else if (ch == '\t') out += "\\t";
        else out += ch;
    }
    return "\"" + out + "\"";
}

std::string number_text(double d) {
    std::ostringstream os;
    os.precision(8);
    os << d;
    return os.str();
}

}  // namespace

std::string GgufReader::summarize(const GgufValue& v) const {
    switch (v.type) {
    case GgufValueType::Uint8:
    case GgufValueType::Uint16:
    case GgufValueType::Uint32:
    case GgufValueType::Uint64: return std::to_string(v.u64);
    case GgufValueType::Int8:
    case GgufValueType::Int16:
    case GgufValueType::Int32:
    case GgufValueType::Int64: return std::to_string(v.i64);
    case GgufValueType::Float32:
    case GgufValueType::Float64: return number_text(v.f64);
    case GgufValueType::Bool: return v.u64 ? "true" : "false";
    case GgufValueType::String: return short_text(v.str, 60);
    case GgufValueType::Array: break;
    }
    std::string out = "[" + std::to_string(v.count) + " x " + gguf_value_type_name(v.elem_type) + "]";
    const uint64_t shown = std::min<uint64_t>(v.count, 3);
    if (shown == 0 || v.elem_type == GgufValueType::Array) return out;
    Spot spot;
    const std::string w = where();
    Cursor c(m_file->data(), m_file->size(), v.offset, w, spot);
    for (uint64_t i = 0; i < shown; ++i) {
        GgufValue elem;
        parse_value(c, spot, w, v.elem_type, elem, 0);
        out += (i ? ", " : " ") + summarize(elem);
    }
    if (v.count > shown) out += ", ...";
    return out;
}

}  // namespace snapkv
