// The per-layer KV cache: keys (after RoPE) and values of the positions a model may attend to.
// Entries are any subset of past positions, per head (SnapKV keeps different tokens per head), so
// every slot carries its absolute position; attention masks by position, never re-rotates keys.
// Heads may hold different numbers of entries (AdaKV): short heads are padded with masked slots.
// Storage grows by doubling so that decode appends are O(1) amortised. Not thread-safe.
//
// Storage (kv_type.h): f32 keeps the model's compute dtype (float32 on the CPU) and gives raw float
// rows to the CPU kernels; f16 / bf16 hold half tensors; q8_0 holds int8 quants [Hc, cap, D] and
// one f16 scale per 32 values [Hc, cap, D / 32] of rows rotated first as llama.cpp rotates them
// (kv_rotation, when head_dim is a multiple of 64). Every write rounds once, as llama.cpp's cache
// does; keys() / values() and the read_*_f32 calls give the stored values back in float, rotated back.
//
// Dimensions: Hc = heads stored in the cache (n_head_kv for a full cache, n_head after a
// query-head SnapKV selection), S = slots in use, D = head_dim, T = tokens appended at once.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include <ATen/ATen.h>

#include "core/kv/kv_type.h"

namespace snapkv {

// Position stored in padding slots: larger than any query position, so the causal mask hides it.
constexpr int64_t kPadPosition = std::numeric_limits<int64_t>::max() / 4;

class LayerKv {
public:
    LayerKv() = default;
    // values false: the values are deferred, allocated by the first append (an analysis creates
    // its cache so, to hold each layer's values only while the layer runs).
    // opts: the compute device and dtype (what keys() returns); type: how entries are stored
    // (InputError when the type does not fit head_dim, e.g. q8_0 with head_dim 80).
    LayerKv(int64_t n_heads, int64_t head_dim, int64_t capacity, at::TensorOptions opts, bool values = true,
            KvType type = KvType::F32);

    // Append T new entries to every head. k, v: [Hkv, T, D] as the model produces them; when the
    // cache holds more heads than Hkv (query-head mode), each KV head is repeated to its group.
    // pos: [T] int64 absolute positions.
    void append(const at::Tensor& k, const at::Tensor& v, const at::Tensor& pos);
    // Replace the whole content: k, v [Hc, S, D]; pos [Hc, S] (kPadPosition marks padding).
    // k and v are rounded to the storage type (a no-op for values that came out of it).
    void assign(const at::Tensor& k, const at::Tensor& v, const at::Tensor& pos);
    void reserve(int64_t capacity);

    // Frees the values for good (an analysis needs keys alone); anything that then reads or
    // appends values throws InputError.
    void drop_values();
    bool values_dropped() const { return m_values == Values::Dropped; }

    // Raw access for the single-token CPU step (only when cpu_readable()): one token's k and v
    // rows, head h of the Hkv at k + h * k_head_stride (D floats), rounded to the storage type;
    // key_data()/value_data(): the float32 storage [Hc, capacity, D] (only when cpu_float());
    // positions [Hc, capacity]; valid until the next append.
    bool cpu_float() const;     // f32 storage of float32, on the CPU, contiguous
    bool cpu_readable() const;  // on the CPU, contiguous, any storage type (float32 compute)
    void append_one(const float* k, int64_t k_head_stride, const float* v, int64_t v_head_stride, int64_t hkv,
                    int64_t pos);
    const float* key_data() const;
    const float* value_data() const;
    // The storage [Hc, capacity, D] as stored (q8_0: the int8 quants, rotated as stored; their f16
    // scales [Hc, capacity, D / 32] from key_scales / value_scales), for kernels that read rows in
    // place (cpu_readable()).
    const void* key_rows() const;
    const void* value_rows() const;
    const uint16_t* key_scales() const;
    const uint16_t* value_scales() const;
    // Slots [s0, s0 + n) of every head as float32 rows, [Hc, n, D] contiguous at out (cpu_readable()):
    // the stored values (dequantized, rotated back); for an f32 cache a copy. rotated: leave the rows
    // as stored, in the basis of key_rotation() / value_rotation() (what llama.cpp's attention reads).
    void read_keys_f32(int64_t s0, int64_t n, float* out, bool rotated = false) const;
    void read_values_f32(int64_t s0, int64_t n, float* out, bool rotated = false) const;
    KvType type() const { return m_type; }
    // Block size of the Walsh-Hadamard rotation the stored keys / values carry (kv_rotation; 0: none).
    int64_t key_rotation() const { return m_k_rot; }
    int64_t value_rotation() const { return m_v_rot; }
    const int64_t* position_data() const;
    int64_t capacity() const;

    // [Hc, S, D] in the compute dtype: a view for an f32 cache, else the stored values decoded (a copy).
    at::Tensor keys() const;
    at::Tensor values() const;
    // [Hc, S, D]: a view of the stored key rows when they can be read as a LibTorch dtype as they
    // are (f32, f16, bf16: no rotation, no block scales); otherwise keys() (q8_0 decoded, a copy).
    at::Tensor stored_keys() const;
    at::Tensor positions() const;  // [Hc, S] view, int64
    int64_t n_heads() const { return m_n_heads; }
    int64_t size() const { return m_size; }
    int64_t used_slots() const;  // slots holding real entries, summed over heads
    bool has_padding() const { return m_padding > 0; }
    int64_t bytes() const;      // bytes of the real entries: used_slots * 2 * kv_row_bytes (f32: element size)
    int64_t row_bytes() const;  // bytes one head's row of D values takes in this cache
    bool empty() const { return m_size == 0; }

    // A new layer of the same type holding, per result head h, source slots index[h] (index
    // [Hs, M]; rows of is_pad are masked padding) of source head h / g; room for extra more slots.
    // The stored rows are copied as stored (no second rounding).
    LayerKv gathered(const at::Tensor& index, const at::Tensor& is_pad, int64_t g, int64_t extra) const;
    // A deep copy of the first n slots, with room for extra more.
    LayerKv copy_prefix(int64_t n, int64_t extra) const;

private:
    enum class Values { Held, Deferred, Dropped };
    void require_values() const;  // throws InputError when dropped
    void ensure_values();         // allocates deferred values; throws InputError when dropped
    // Writes k, v [Hc, t, D] (compute dtype, rounded here) at slots [s, s + t).
    void write_rows(int64_t s, const at::Tensor& k, const at::Tensor& v);

    KvType m_type = KvType::F32;
    at::TensorOptions m_opts;  // compute device and dtype
    Values m_values = Values::Held;
    int64_t m_n_heads = 0;
    int64_t m_head_dim = 0;
    int64_t m_size = 0;
    int64_t m_padding = 0;  // padding slots (over all heads)
    int64_t m_k_rot = 0;    // kv_rotation of the keys (q8_0 with head_dim a multiple of 64), 0: none
    int64_t m_v_rot = 0;    // kv_rotation of the values
    at::Tensor m_k;         // [Hc, capacity, D] in the storage dtype (q8_0: int8 quants)
    at::Tensor m_v;         // [Hc, capacity, D]
    at::Tensor m_ks;        // q8_0 only: [Hc, capacity, D / 32] f16 scales of m_k
    at::Tensor m_vs;        // q8_0 only: scales of m_v
    at::Tensor m_pos;       // [Hc, capacity] int64
};

class KvCache {
public:
    KvCache() = default;
    // A cache of n_layer layers holding n_heads heads each (n_head_kv for a plain cache).
    KvCache(int64_t n_layer, int64_t n_heads, int64_t head_dim, at::TensorOptions opts, int64_t capacity = 256,
            bool values = true, KvType type = KvType::F32);
    KvCache(std::vector<LayerKv> layers, int64_t n_past);

    int64_t n_layer() const { return static_cast<int64_t>(m_layers.size()); }
    LayerKv& layer(int64_t l) { return m_layers[static_cast<size_t>(l)]; }
    const LayerKv& layer(int64_t l) const { return m_layers[static_cast<size_t>(l)]; }
    // Next absolute position to decode at (positions are never re-used after eviction).
    int64_t n_past() const { return m_n_past; }
    void set_n_past(int64_t n) { m_n_past = n; }
    void reserve(int64_t extra_tokens);
    int64_t bytes() const;
    KvCache clone() const;  // deep copy (full and compressed runs continue separately)
    // The first n slots of every layer (a fresh prefill's slots are its positions 0..n-1).
    KvCache prefix(int64_t n) const;

private:
    std::vector<LayerKv> m_layers;
    int64_t m_n_past = 0;
};

// Per-layer slots to keep: an empty outer entry keeps the layer whole; otherwise one sorted list of
// slot indices per cache head of the result. The result holds keep[l].size() heads; when that is
// more than the source's heads (query-head SnapKV), each source head is repeated to its group.
// Heads with fewer entries than the longest are padded with masked slots. This is the CPU/LibTorch
// reference of the gather that kernels/ fuses on the GPU. n_slots >= 0 reads only the first
// n_slots slots of src (a whole layer keeps those; the result decodes from position n_slots): the
// same cache as gathering from src.prefix(n_slots), without copying that prefix first.
using LayerKeep = std::vector<std::vector<int64_t>>;  // [head][slot]

// llama.cpp's cache rotation (kv_rotation), in place on rows [rows, D] at x: each block of n values
// (n a power of two dividing D) multiplied by the orthonormal Walsh-Hadamard matrix of size n, as
// ggml-cpu's fast transform computes it. Its own inverse (up to float rounding).
void kv_rotate_rows(float* x, int64_t rows, int64_t D, int64_t n);
KvCache gather_cache(const KvCache& src, const std::vector<LayerKeep>& keep, int64_t extra_capacity = 0,
                     int64_t n_slots = -1);

}  // namespace snapkv
