// See tensor_checks.h. Block layouts from ggml's ggml-common.h (the same as dequant.cpp): every
// legacy 32-value block starts with an f16 scale d (Q4_1, Q5_1: then an f16 min m; Q8_1: an f16
// sum s); Q4_K/Q5_K start with f16 d and dmin; Q2_K ends with them; Q3_K and Q6_K end with f16 d;
// IQ4_NL / IQ4_XS start with f16 d; Q8_K starts with a float32 d. IEEE: a value is non-finite when its exponent bits are all ones.
#include "core/io/tensor_checks.h"

#include <algorithm>
#include <cstring>

#include "core/common/clip_text.h"
#include "core/common/errors.h"

namespace snapkv {
namespace {

using Kind = FileError::Kind;

inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);  // little-endian host (gguf_reader refuses others)
    return v;
}
inline bool f16_bad(uint16_t h) { return (h & 0x7C00u) == 0x7C00u; }
inline bool bf16_bad(uint16_t h) { return (h & 0x7F80u) == 0x7F80u; }
inline bool f32_bad(uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u; }

std::optional<NonFinite> scan_f32(const uint8_t* src, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (f32_bad(load_u32(src + 4 * i))) return NonFinite{i, "value"};
    return std::nullopt;
}

std::optional<NonFinite> scan_f16(const uint8_t* src, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (f16_bad(load_u16(src + 2 * i))) return NonFinite{i, "value"};
    return std::nullopt;
}

std::optional<NonFinite> scan_bf16(const uint8_t* src, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (bf16_bad(load_u16(src + 2 * i))) return NonFinite{i, "value"};
    return std::nullopt;
}

// One f16 field at a fixed offset of every block.
struct HalfField {
    size_t offset;
    const char* name;
};

std::optional<NonFinite> scan_blocks(const uint8_t* src, int64_t n, int64_t block_size, size_t block_bytes,
                                     std::initializer_list<HalfField> fields) {
    const int64_t blocks = n / block_size;
    for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = src + static_cast<size_t>(b) * block_bytes;
        for (const HalfField& f : fields)
            if (f16_bad(load_u16(blk + f.offset))) return NonFinite{b * block_size, f.name};
    }
    return std::nullopt;
}

std::optional<NonFinite> scan_q8_k(const uint8_t* src, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b)
        if (f32_bad(load_u32(src + static_cast<size_t>(b) * 292))) return NonFinite{b * 256, "block scale d"};
    return std::nullopt;
}

}  // namespace

bool has_finite_scan(const GgmlType& type) {
    switch (type.id) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 6:
    case 7:
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 14:
    case 15:
    case 20:
    case 23:
    case 30: return true;
    default: return false;
    }
}

std::optional<NonFinite> find_non_finite(const GgmlType& type, const uint8_t* src, int64_t n) {
    const HalfField d{0, "block scale d"};
    switch (type.id) {
    case 0: return scan_f32(src, n);                                                                // F32
    case 1: return scan_f16(src, n);                                                                // F16
    case 30: return scan_bf16(src, n);                                                              // BF16
    case 2: return scan_blocks(src, n, 32, 18, {d});                                                // Q4_0
    case 3: return scan_blocks(src, n, 32, 20, {d, {2, "block min m"}});                            // Q4_1
    case 6: return scan_blocks(src, n, 32, 22, {d});                                                // Q5_0
    case 7: return scan_blocks(src, n, 32, 24, {d, {2, "block min m"}});                            // Q5_1
    case 8: return scan_blocks(src, n, 32, 34, {d});                                                // Q8_0
    case 9: return scan_blocks(src, n, 32, 36, {d, {2, "block sum s"}});                            // Q8_1
    case 10: return scan_blocks(src, n, 256, 84, {{80, "block scale d"}, {82, "block min dmin"}});  // Q2_K
    case 11: return scan_blocks(src, n, 256, 110, {{108, "block scale d"}});                        // Q3_K
    case 12: return scan_blocks(src, n, 256, 144, {d, {2, "block min dmin"}});                      // Q4_K
    case 13: return scan_blocks(src, n, 256, 176, {d, {2, "block min dmin"}});                      // Q5_K
    case 14: return scan_blocks(src, n, 256, 210, {{208, "block scale d"}});                        // Q6_K
    case 15: return scan_q8_k(src, n);                                                              // Q8_K
    case 20: return scan_blocks(src, n, 32, 18, {d});                                               // IQ4_NL
    case 23: return scan_blocks(src, n, 256, 136, {d});                                             // IQ4_XS
    default: return std::nullopt;
    }
}

void check_finite(const std::string& where, const std::string& shown, const GgmlType& type, const uint8_t* src,
                  int64_t n) {
    const std::optional<NonFinite> bad = find_non_finite(type, src, n);
    if (!bad) return;
    throw FileError(Kind::BadValue, where + "tensor " + shown + " (" + type.name + "): NaN or infinite " + bad->field +
                                        " at element " + std::to_string(bad->element) +
                                        "; the weights are corrupt (a model must hold finite numbers)");
}

namespace {

std::optional<int64_t> index_after(const std::string& name, const std::string& prefix) {
    if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
    size_t i = prefix.size();
    int64_t v = 0;
    size_t digits = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 12) {
        v = v * 10 + (name[i] - '0');
        ++i;
        ++digits;
    }
    if (digits == 0 || i >= name.size() || name[i] != '.') return std::nullopt;
    return v;
}

}  // namespace

std::optional<int64_t> gguf_block_index(const std::string& name) { return index_after(name, "blk."); }

void check_layer_blocks(int64_t n_layer, const std::string& n_layer_key, const std::string& where,
                        const std::vector<std::string>& names,
                        const std::function<std::optional<int64_t>(const std::string&)>& block_of) {
    for (const std::string& name : names) {
        const std::optional<int64_t> b = block_of(name);
        if (!b || *b < n_layer) continue;
        throw FileError(Kind::BadValue,
                        where + "tensor '" + clip_text(name) + "' belongs to block " + std::to_string(*b) + ", but '" +
                            n_layer_key + "' = " + std::to_string(n_layer) + " (blocks 0.." +
                            std::to_string(n_layer - 1) + "): the file holds more blocks than its metadata declares");
    }
}

void check_no_overlap(const std::string& where, std::vector<ByteRange> ranges) {
    ranges.erase(std::remove_if(ranges.begin(), ranges.end(), [](const ByteRange& r) { return r.end <= r.begin; }),
                 ranges.end());
    std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (size_t i = 1; i < ranges.size(); ++i) {
        const ByteRange& a = ranges[i - 1];
        const ByteRange& b = ranges[i];
        if (b.begin < a.end)
            throw FileError(Kind::BadValue, where + "tensors '" + clip_text(a.name) + "' (bytes " +
                                                std::to_string(a.begin) + ".." + std::to_string(a.end) + ") and '" +
                                                clip_text(b.name) + "' (bytes " + std::to_string(b.begin) + ".." +
                                                std::to_string(b.end) + ") overlap: each tensor needs its own data");
    }
}

}  // namespace snapkv
