// The types a KV cache can store its keys and values in, with llama.cpp's meaning (`-ctk/-ctv`):
// f32 (exact, the default), f16 and bf16 (each value rounded to nearest-even) and q8_0 (blocks of
// 32 values along head_dim: an f16 scale d = amax / 127 and 32 int8 quants round(x * 127 / amax),
// ties to even, as ggml's x86 quantize_row_q8_0 writes them; like llama.cpp, of rows first rotated
// by kv_rotation's Walsh-Hadamard transform where head_dim allows). Keys are stored after RoPE; a
// value is rounded once, when it is written into the cache, and every later read (this call's
// attention included) sees the stored value. Torch-free: the apps, the memory estimate and the CLI
// use it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snapkv {

enum class KvType { F32, F16, BF16, Q8_0 };

inline constexpr int64_t kQ8_0Block = 32;  // values per q8_0 block (one f16 scale each)

// "f32", "f16", "bf16", "q8_0" (llama.cpp's spelling).
inline const char* kv_type_name(KvType t) {
    switch (t) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::BF16: return "bf16";
    case KvType::Q8_0: return "q8_0";
    }
    return "f32";
}

inline std::vector<KvType> all_kv_types() { return {KvType::F32, KvType::F16, KvType::BF16, KvType::Q8_0}; }

// Parses a name as kv_type_name writes it (case-insensitive; "float32"/"float16"/"bfloat16" and
// "q8" accepted too). False for anything else.
bool parse_kv_type(const std::string& text, KvType* out);
// parse_kv_type or InputError: "cache type 'x' is not one of f32, f16, bf16, q8_0".
KvType kv_type_from_name(const std::string& text);

// Bytes one head's row of head_dim values takes in the cache (f32: 4 * D, f16/bf16: 2 * D, q8_0:
// 34 bytes per 32 values). Valid only where kv_type_fits(t, head_dim).
inline int64_t kv_row_bytes(KvType t, int64_t head_dim) {
    switch (t) {
    case KvType::F32: return 4 * head_dim;
    case KvType::F16:
    case KvType::BF16: return 2 * head_dim;
    case KvType::Q8_0: return head_dim / kQ8_0Block * (kQ8_0Block + 2);
    }
    return 4 * head_dim;
}

// q8_0 needs head_dim a multiple of 32 (llama.cpp refuses the same); the others fit any head_dim.
inline bool kv_type_fits(KvType t, int64_t head_dim) { return t != KvType::Q8_0 || head_dim % kQ8_0Block == 0; }

// llama.cpp rotates what a quantized cache stores (src/llama-kv-cache.cpp attn_rot_k / attn_rot_v,
// llama.cpp PR 21038): with head_dim a multiple of 64, each key row is multiplied by an orthonormal
// Walsh-Hadamard matrix (Sylvester order, entries +-1/sqrt(n)) in blocks of n values before it is
// quantized, spreading an outlier over its block; attention then works in the rotated basis (the
// query is rotated the same way and the output rotated back), so only the rounding changes. Keys:
// n = the largest power of two dividing head_dim; values: n = 64. Returns n, or 0 for no rotation
// (f32, f16, bf16, or head_dim not a multiple of 64). llama.cpp turns it off with the environment
// variable LLAMA_ATTN_ROT_DISABLE=1; we always follow its default.
inline int64_t kv_rotation(KvType t, int64_t head_dim, bool values) {
    if (t != KvType::Q8_0 || head_dim <= 0 || head_dim % 64 != 0) return 0;
    if (values) return 64;
    int64_t n = 64;
    while (head_dim % (2 * n) == 0) n *= 2;
    return n;
}

}  // namespace snapkv
