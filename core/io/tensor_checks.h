// Checks that a model file's tensors are what its metadata says, beyond what the readers' header
// validation covers: no weight is NaN or infinite (scanned on the raw stored bytes, one function
// per ggml type: every value of F32/F16/BF16, the block scales and mins of the quantized types),
// no tensor belongs to a block beyond the declared layer count, and no two tensors share bytes.
// Shared by the GGUF and Hugging Face readers. No dequantization and no file I/O here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/io/dequant.h"

namespace snapkv {

// Where the scan found a non-finite number: the first value it affects and what held it.
struct NonFinite {
    int64_t element = -1;  // index of the first affected value (the block's first for a scale)
    std::string field;     // "value", "block scale d", "block min m", ...
};

// Scans n values of `type` stored at src (a whole number of blocks). For the quantized types
// the values are finite exactly when the block's float fields are (the quants are small
// integers), so only those are read. nullopt when all are finite, or when the type has no scan
// (a type no reader accepts).
std::optional<NonFinite> find_non_finite(const GgmlType& type, const uint8_t* src, int64_t n);

// True when find_non_finite knows this type's layout.
bool has_finite_scan(const GgmlType& type);

// Throws FileError(BadValue): "<where>tensor <shown>: NaN or infinite value at element E (<field>);
// the file is corrupt". shown: the tensor's name as messages show it ("'blk.0.attn_q.weight'").
void check_finite(const std::string& where, const std::string& shown, const GgmlType& type, const uint8_t* src,
                  int64_t n);

// Every tensor whose block index (block_of(name), nullopt for non-block tensors) is >= n_layer:
// throws FileError(BadValue) "<where>tensor <shown> belongs to block B, but <n_layer_key> = N
// (blocks 0..N-1): the file holds more blocks than its metadata declares".
void check_layer_blocks(int64_t n_layer, const std::string& n_layer_key, const std::string& where,
                        const std::vector<std::string>& names,
                        const std::function<std::optional<int64_t>(const std::string&)>& block_of);

// "blk.12.attn_q.weight" -> 12; nullopt for tensors outside the blocks (GGUF names).
std::optional<int64_t> gguf_block_index(const std::string& name);

struct ByteRange {
    std::string name;
    uint64_t begin = 0;  // [begin, end), relative to the data section
    uint64_t end = 0;
};

// Throws FileError(BadValue) naming two tensors whose byte ranges overlap (empty ranges never do).
void check_no_overlap(const std::string& where, std::vector<ByteRange> ranges);

}  // namespace snapkv
