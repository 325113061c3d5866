// ggml tensor types: a table keyed by ggml type id giving name, values per block, bytes per block
// and, for the types we can read, a row dequantizer to float32 with exact ggml semantics (F32, F16,
// BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS). Other ggml
// types (the grid i-quants IQ1-IQ3, TQ1_0/TQ2_0, MXFP4, integer types) are listed so that file
// sizes can be validated and errors can name them, but have no dequantizer. Add a format = add a
// table row. No file I/O here: callers hand in bytes already bounds-checked against the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace snapkv {

// Converts n values (a whole number of blocks) starting at src to float32 in dst. src needs no
// particular alignment.
using DequantRowFn = void (*)(const uint8_t* src, float* dst, int64_t n);

struct GgmlType {
    uint32_t id;               // ggml_type value, as stored in GGUF tensor infos
    const char* name;          // "Q4_K"
    int64_t block_size;        // values per block (1 for plain types)
    size_t block_bytes;        // bytes per block
    DequantRowFn dequant_row;  // nullptr: a known ggml type that this program cannot read
};

// nullptr when the id is not a ggml type (or one ggml removed, like 4, 5 or 31..33).
const GgmlType* ggml_type_by_id(uint32_t id);
// nullptr when no ggml type has this name ("F16", "Q8_0", ...).
const GgmlType* ggml_type_by_name(const std::string& name);
// Comma-separated names of the readable types, for error messages.
std::string readable_ggml_type_names();

// IEEE 754 binary16 and bfloat16 bit patterns to float (subnormals, inf and NaN preserved).
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t h);

// Runs fn(begin, end) over [0, n_rows) split into contiguous chunks, on up to
// hardware_concurrency threads when there is enough work (values = n_rows * row_values).
// fn must not throw.
void parallel_rows(int64_t n_rows, int64_t row_values, const std::function<void(int64_t begin, int64_t end)>& fn);

// Dequantizes n_rows rows of row_len values each (row_len a multiple of type.block_size), rows
// stored back to back, into dst (n_rows * row_len floats). Requires type.dequant_row.
void dequantize_rows(const GgmlType& type, const uint8_t* src, float* dst, int64_t n_rows, int64_t row_len);

}  // namespace snapkv
