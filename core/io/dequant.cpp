// Row dequantizers for the ggml block formats we read, written from the block layouts in ggml's
// ggml-common.h and the reference dequantize_row_* functions in ggml-quants.c (bit layouts noted
// per format below). Plain scalar C++; the compiler vectorises the inner loops well enough for
// loading, and rows are spread over threads. No quantization (writing) here.
#include "core/io/dequant.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace snapkv {

namespace {

constexpr int64_t kQK = 32;     // values per block of the legacy formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL)
constexpr int64_t kQK_K = 256;  // values per K-quant super-block

inline uint16_t load_u16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));  // GGUF and safetensors are little-endian
}

inline uint32_t load_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}

void row_f32(const uint8_t* src, float* dst, int64_t n) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void row_f16(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(load_u16(src + 2 * i));
}

void row_bf16(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(load_u16(src + 2 * i));
}

// Q8_0 block (34 bytes): f16 d, int8 q[32]; x = d * q.
void row_q8_0(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, src += 34, dst += kQK) {
        const float d = half_to_float(load_u16(src));
        const int8_t* q = reinterpret_cast<const int8_t*>(src + 2);
        for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(q[j]);
    }
}

// Q4_0 block (18 bytes): f16 d, 16 bytes of nibbles. Byte j holds value j in its low nibble and
// value j + 16 in its high nibble; x = d * (q - 8).
void row_q4_0(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, src += 18, dst += kQK) {
        const float d = half_to_float(load_u16(src));
        const uint8_t* qs = src + 2;
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
            dst[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
        }
    }
}

// Q4_1 block (20 bytes): f16 d, f16 m, 16 bytes of nibbles laid out as in Q4_0; x = d * q + m.
void row_q4_1(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, src += 20, dst += kQK) {
        const float d = half_to_float(load_u16(src));
        const float m = half_to_float(load_u16(src + 2));
        const uint8_t* qs = src + 4;
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
            dst[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
        }
    }
}

// K-quant 6-bit scale/min pairs for the 8 sub-blocks of 32 values, packed in 12 bytes
// (ggml's get_scale_min_k4): sub-blocks 0..3 use the low 6 bits of bytes 0..3 (scale) and 4..7
// (min); sub-blocks 4..7 take their low 4 bits from a nibble of bytes 8..11 and their top 2 bits
// from the spare top bits of bytes 0..3 (scale) and 4..7 (min).
inline void k_scale_min(int j, const uint8_t* s, int* scale, int* min) {
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Scale and min of sub-block j of a Q4_K / Q5_K super-block as floats: d * scale, dmin * min.
inline void k_sub_block(int j, const uint8_t* scales, float d, float dmin, float* dj, float* mj) {
    int sc = 0, mn = 0;
    k_scale_min(j, scales, &sc, &mn);
    *dj = d * static_cast<float>(sc);
    *mj = dmin * static_cast<float>(mn);
}

// Q4_K super-block (144 bytes): f16 d, f16 dmin, 12 bytes scales/mins, 128 bytes nibbles.
// Each 64 values use 32 bytes: low nibbles give sub-block 2k, high nibbles sub-block 2k+1;
// x = d * scale * q - dmin * min.
void row_q4_k(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, src += 144) {
        const float d = half_to_float(load_u16(src));
        const float dmin = half_to_float(load_u16(src + 2));
        const uint8_t* scales = src + 4;
        const uint8_t* q = src + 16;
        for (int k = 0; k < 4; ++k, q += 32, dst += 64) {
            float d1 = 0.0f, m1 = 0.0f, d2 = 0.0f, m2 = 0.0f;
            k_sub_block(2 * k, scales, d, dmin, &d1, &m1);
            k_sub_block(2 * k + 1, scales, d, dmin, &d2, &m2);
            for (int l = 0; l < 32; ++l) dst[l] = d1 * static_cast<float>(q[l] & 0x0F) - m1;
            for (int l = 0; l < 32; ++l) dst[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
        }
    }
}

// Q5_K super-block (176 bytes): f16 d, f16 dmin, 12 bytes scales/mins, 32 bytes qh (fifth bits),
// 128 bytes low nibbles laid out as in Q4_K. For the k-th group of 64 values, bit 2k of qh[l]
// is the fifth bit of value l and bit 2k+1 that of value 32 + l.
void row_q5_k(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, src += 176) {
        const float d = half_to_float(load_u16(src));
        const float dmin = half_to_float(load_u16(src + 2));
        const uint8_t* scales = src + 4;
        const uint8_t* qh = src + 16;
        const uint8_t* ql = src + 48;
        for (int k = 0; k < 4; ++k, ql += 32, dst += 64) {
            float d1 = 0.0f, m1 = 0.0f, d2 = 0.0f, m2 = 0.0f;
            k_sub_block(2 * k, scales, d, dmin, &d1, &m1);
            k_sub_block(2 * k + 1, scales, d, dmin, &d2, &m2);
            const int lo_bit = 2 * k, hi_bit = 2 * k + 1;
            for (int l = 0; l < 32; ++l) {
                const int q = (ql[l] & 0x0F) | (((qh[l] >> lo_bit) & 1) << 4);
                dst[l] = d1 * static_cast<float>(q) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                const int q = (ql[l] >> 4) | (((qh[l] >> hi_bit) & 1) << 4);
                dst[32 + l] = d2 * static_cast<float>(q) - m2;
            }
        }
    }
}

// Q6_K super-block (210 bytes): 128 bytes ql (low nibbles), 64 bytes qh (2-bit high parts),
// 16 int8 scales (one per 16 values), f16 d. Each half of 128 values uses 64 ql bytes, 32 qh bytes
// and 8 scales: for l in 0..31, value l / l+32 / l+64 / l+96 take the low / low / high / high
// nibble of ql[l] / ql[l+32] / ql[l] / ql[l+32] and bits 0-1 / 2-3 / 4-5 / 6-7 of qh[l];
// x = d * scale * (q - 32), multiplied in that order as ggml does ((d * scale) in float first).
void row_q6_k(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, src += 210) {
        const uint8_t* ql = src;
        const uint8_t* qh = src + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
        const float d = half_to_float(load_u16(src + 208));
        for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
            for (int l = 0; l < 32; ++l) {
                const int g = l / 16;  // which of the two 16-value scale groups
                const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l] = d * static_cast<float>(sc[g]) * static_cast<float>(q1);
                dst[l + 32] = d * static_cast<float>(sc[g + 2]) * static_cast<float>(q2);
                dst[l + 64] = d * static_cast<float>(sc[g + 4]) * static_cast<float>(q3);
                dst[l + 96] = d * static_cast<float>(sc[g + 6]) * static_cast<float>(q4);
            }
        }
    }
}

// Q5_0 block (22 bytes): f16 d, 4 bytes qh (a little-endian uint32 of fifth bits), 16 bytes of
// nibbles laid out as in Q4_0. Bit j of qh is the fifth bit of value j, bit 16 + j that of value
// 16 + j; x = d * (q - 16).
void row_q5_0(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, src += 22, dst += kQK) {
        const float d = half_to_float(load_u16(src));
        const uint32_t qh = load_u32(src + 2);
        const uint8_t* qs = src + 6;
        for (int j = 0; j < 16; ++j) {
            const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
            dst[j] = static_cast<float>(lo - 16) * d;
            dst[j + 16] = static_cast<float>(hi - 16) * d;
        }
    }
}

// Q5_1 block (24 bytes): f16 d, f16 m, 4 bytes qh, 16 bytes of nibbles as Q5_0; x = d * q + m.
void row_q5_1(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, src += 24, dst += kQK) {
        const float d = half_to_float(load_u16(src));
        const float m = half_to_float(load_u16(src + 2));
        const uint32_t qh = load_u32(src + 4);
        const uint8_t* qs = src + 8;
        for (int j = 0; j < 16; ++j) {
            const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
            dst[j] = static_cast<float>(lo) * d + m;
            dst[j + 16] = static_cast<float>(hi) * d + m;
        }
    }
}

// Q2_K super-block (84 bytes): 16 bytes of 4-bit scale (low nibble) / min (high nibble) pairs, one
// per 16 values; 64 bytes of 2-bit quants; f16 d; f16 dmin. Each 128-value half uses 32 quant
// bytes: value 32j + l (j = 0..3, l = 0..31) is bits 2j..2j+1 of byte l, with scale/min pair
// 8 * half + 2j + (l >= 16); x = d * scale * q - dmin * min.
void row_q2_k(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, src += 84) {
        const uint8_t* scales = src;
        const uint8_t* q = src + 16;
        const float d = half_to_float(load_u16(src + 80));
        const float dmin = half_to_float(load_u16(src + 82));
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int j = 0; j < 4; ++j) {
                for (int g = 0; g < 2; ++g, dst += 16) {
                    const uint8_t sc = scales[8 * half + 2 * j + g];
                    const float dl = d * static_cast<float>(sc & 0x0F);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l) dst[l] = dl * static_cast<float>((q[16 * g + l] >> (2 * j)) & 3) - ml;
                }
            }
        }
    }
}

// Scale i (0..15) of a Q3_K super-block: 6 bits, stored as a low nibble (bytes 0..7; the low
// nibbles for i < 8, the high ones for i >= 8) and 2 high bits (bits 2 * (i / 4) of byte 8 + i % 4),
// read as signed by subtracting 32 (ggml's kmask unpacking of dequantize_row_q3_K).
inline int q3_k_scale(const uint8_t* s, int i) {
    const int low = i < 8 ? (s[i] & 0x0F) : (s[i - 8] >> 4);
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// Q3_K super-block (110 bytes): 32 bytes hmask, 64 bytes of 2-bit quants (laid out as in Q2_K),
// 12 bytes of 6-bit scales, f16 d. Value 128 * half + 32j + l takes its third bit from bit
// 4 * half + j of hmask[l]; q = low 2 bits + 4 * that bit - 4 (in -4..3); x = d * scale * q.
void row_q3_k(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, src += 110) {
        const uint8_t* hmask = src;
        const uint8_t* q = src + 32;
        const uint8_t* scales = src + 96;
        const float d = half_to_float(load_u16(src + 108));
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int j = 0; j < 4; ++j) {
                const int bit = 4 * half + j;
                for (int g = 0; g < 2; ++g, dst += 16) {
                    const float dl = d * static_cast<float>(q3_k_scale(scales, 8 * half + 2 * j + g));
                    for (int l = 0; l < 16; ++l) {
                        const int at = 16 * g + l;
                        const int v = ((q[at] >> (2 * j)) & 3) - (((hmask[at] >> bit) & 1) ? 0 : 4);
                        dst[l] = dl * static_cast<float>(v);
                    }
                }
            }
        }
    }
}

// The 16 non-linear levels of IQ4_NL and IQ4_XS (ggml-common.h kvalues_iq4nl).
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_NL block (18 bytes): f16 d, 16 bytes of nibbles laid out as in Q4_0, each an index into the
// levels; x = d * level.
void row_iq4_nl(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, src += 18, dst += kQK) {
        const float d = half_to_float(load_u16(src));
        const uint8_t* qs = src + 2;
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * static_cast<float>(kIq4Levels[qs[j] & 0x0F]);
            dst[j + 16] = d * static_cast<float>(kIq4Levels[qs[j] >> 4]);
        }
    }
}

// IQ4_XS super-block (136 bytes): f16 d, u16 scales_h, 4 bytes scales_l, 128 bytes of nibbles.
// Sub-block ib (32 values) has the 6-bit scale ls = nibble ib % 2 of scales_l[ib / 2] | bits
// 2ib..2ib+1 of scales_h << 4, and its 16 bytes of nibbles laid out as in IQ4_NL;
// x = d * (ls - 32) * level.
void row_iq4_xs(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, src += 136) {
        const float d = half_to_float(load_u16(src));
        const uint16_t scales_h = load_u16(src + 2);
        const uint8_t* scales_l = src + 4;
        const uint8_t* qs = src + 8;
        for (int ib = 0; ib < 8; ++ib, qs += 16, dst += 32) {
            const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * static_cast<float>(ls - 32);
            for (int j = 0; j < 16; ++j) {
                dst[j] = dl * static_cast<float>(kIq4Levels[qs[j] & 0x0F]);
                dst[j + 16] = dl * static_cast<float>(kIq4Levels[qs[j] >> 4]);
            }
        }
    }
}

// Block sizes and byte counts from ggml-common.h (block_* structs and their static_asserts).
// Ids missing from the table (4, 5, 31..33, 36..38) were removed from ggml and are refused.
const GgmlType kTypes[] = {
    {0, "F32", 1, 4, row_f32},          {1, "F16", 1, 2, row_f16},
    {2, "Q4_0", 32, 18, row_q4_0},      {3, "Q4_1", 32, 20, row_q4_1},
    {6, "Q5_0", 32, 22, row_q5_0},      {7, "Q5_1", 32, 24, row_q5_1},
    {8, "Q8_0", 32, 34, row_q8_0},      {9, "Q8_1", 32, 36, nullptr},
    {10, "Q2_K", 256, 84, row_q2_k},    {11, "Q3_K", 256, 110, row_q3_k},
    {12, "Q4_K", 256, 144, row_q4_k},   {13, "Q5_K", 256, 176, row_q5_k},
    {14, "Q6_K", 256, 210, row_q6_k},   {15, "Q8_K", 256, 292, nullptr},
    {16, "IQ2_XXS", 256, 66, nullptr},  {17, "IQ2_XS", 256, 74, nullptr},
    {18, "IQ3_XXS", 256, 98, nullptr},  {19, "IQ1_S", 256, 50, nullptr},
    {20, "IQ4_NL", 32, 18, row_iq4_nl}, {21, "IQ3_S", 256, 110, nullptr},
    {22, "IQ2_S", 256, 82, nullptr},    {23, "IQ4_XS", 256, 136, row_iq4_xs},
    {24, "I8", 1, 1, nullptr},          {25, "I16", 1, 2, nullptr},
    {26, "I32", 1, 4, nullptr},         {27, "I64", 1, 8, nullptr},
    {28, "F64", 1, 8, nullptr},         {29, "IQ1_M", 256, 56, nullptr},
    {30, "BF16", 1, 2, row_bf16},       {34, "TQ1_0", 256, 54, nullptr},
    {35, "TQ2_0", 256, 66, nullptr},    {39, "MXFP4", 32, 17, nullptr},
};

}  // namespace

const GgmlType* ggml_type_by_id(uint32_t id) {
    for (const GgmlType& t : kTypes)
        if (t.id == id) return &t;
    return nullptr;
}

const GgmlType* ggml_type_by_name(const std::string& name) {
    for (const GgmlType& t : kTypes)
        if (name == t.name) return &t;
    return nullptr;
}

std::string readable_ggml_type_names() {
    std::string out;
    for (const GgmlType& t : kTypes) {
        if (t.dequant_row == nullptr) continue;
        if (!out.empty()) out += ", ";
        out += t.name;
    }
    return out;
}

float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits = 0;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);  // inf or NaN (payload kept)
    } else if (exp != 0) {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);  // normal: rebias 15 -> 127
    } else if (mant == 0) {
        bits = sign;  // signed zero
    } else {
        // Subnormal half (mant * 2^-24) is a normal float: shift the mantissa up until its
        // leading one reaches the implicit-bit position, lowering the exponent as we go.
        int shifts = 0;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            ++shifts;
        }
        mant &= 0x3FFu;
        exp = static_cast<uint32_t>(127 - 14 - shifts);
        bits = sign | (exp << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

float bf16_to_float(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;  // bfloat16 is the top half of a float
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

void parallel_rows(int64_t n_rows, int64_t row_values, const std::function<void(int64_t, int64_t)>& fn) {
    if (n_rows <= 0) return;
    // Below ~1M values a thread costs more than it saves.
    constexpr int64_t kValuesPerThread = int64_t(1) << 20;
    const int64_t total = n_rows * std::max<int64_t>(row_values, 1);
    int64_t n_threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), 16);
    n_threads = std::min(n_threads, std::max<int64_t>(1, total / kValuesPerThread));
    n_threads = std::min(n_threads, n_rows);
    if (n_threads <= 1) {
        fn(0, n_rows);
        return;
    }
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(n_threads - 1));
    const int64_t chunk = (n_rows + n_threads - 1) / n_threads;
    for (int64_t t = 1; t < n_threads; ++t) {
        const int64_t begin = t * chunk, end = std::min(n_rows, begin + chunk);
        if (begin < end) pool.emplace_back([&fn, begin, end] { fn(begin, end); });
    }
    fn(0, std::min(n_rows, chunk));
    for (std::thread& th : pool) th.join();
}

void dequantize_rows(const GgmlType& type, const uint8_t* src, float* dst, int64_t n_rows, int64_t row_len) {
    const size_t row_bytes = static_cast<size_t>(row_len / type.block_size) * type.block_bytes;
    const DequantRowFn fn = type.dequant_row;
    // Rows are whole blocks stored back to back, so a run of rows is one long run of blocks.
    parallel_rows(n_rows, row_len, [&](int64_t begin, int64_t end) {
        fn(src + static_cast<size_t>(begin) * row_bytes, dst + begin * row_len, (end - begin) * row_len);
    });
}

}  // namespace snapkv
