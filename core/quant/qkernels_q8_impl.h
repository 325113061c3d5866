// Private to core/quant: the 8-bit-activation products (Q8Input, qkernels_table.h) in their generic
// form, the definition every path keeps. Each block's integer sum of weight x quantized input is
// exact, so only the float steps below fix a result, and the x86 kernels (qkernels_q8_avx2.h) take
// the same ones in the same order:
// - 32-value formats (Q8_0, Q4_0, Q5_0, IQ4_NL signed; Q4_1, Q5_1 unsigned with a minimum): block
//   b's 32 products are summed in 8 lanes of 4 consecutive values; lane k accumulates
//   acc[k] = acc[k] + (d_b * d32_b) * float(lane sum), a multiply then an add (no fused
//   multiply-add); the row's result is q8_lane_total(acc) (+ the minimum terms, in block order).
// - K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and IQ4_XS: super-block b gives the integers A (scale x
//   sum over each sub-block) and, for Q2_K / Q4_K / Q5_K, B (min x the input's sum over each
//   sub-block); acc = acc + (d * dk_b) * float(A) and mins = mins + (dmin * dk_b) * float(B) in
//   block order; the result is acc - mins.
// The files are built with -ffp-contract=off, so no compiler fuses the multiplies and adds.
#pragma once

#include <cstdint>

#include "core/quant/qkernels_impl.h"

namespace snapkv::quant_detail {
namespace {

// The 8 lanes added as the x86 kernels' horizontal sum does: the upper four onto the lower four,
// then lanes 2-3 onto 0-1, then lane 1 onto lane 0.
inline float q8_lane_total(const float* a) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }

// The 32-value formats: bytes per block, whether values are signed (else 0..15 plus a minimum),
// and their integer values in value order.
template <int Fmt>
struct Q8Block32;
template <>
struct Q8Block32<kQ8_0> {
    static constexpr int bytes = 34;
    static constexpr bool has_min = false;
    static void values(const uint8_t* p, int* v) {
        for (int i = 0; i < 32; ++i) v[i] = static_cast<int8_t>(p[2 + i]);
    }
};
template <>
struct Q8Block32<kQ4_0> {
    static constexpr int bytes = 18;
    static constexpr bool has_min = false;
    static void values(const uint8_t* p, int* v) {
        for (int i = 0; i < 16; ++i) {
            v[i] = (p[2 + i] & 0x0F) - 8;
            v[i + 16] = (p[2 + i] >> 4) - 8;
        }
    }
};
template <>
struct Q8Block32<kQ4_1> {
    static constexpr int bytes = 20;
    static constexpr bool has_min = true;
    static void values(const uint8_t* p, int* v) {
        for (int i = 0; i < 16; ++i) {
            v[i] = p[4 + i] & 0x0F;
            v[i + 16] = p[4 + i] >> 4;
        }
    }
};
template <>
struct Q8Block32<kQ5_0> {
    static constexpr int bytes = 22;
    static constexpr bool has_min = false;
    static void values(const uint8_t* p, int* v) {
        const uint32_t qh = load_u32(p + 2);
        for (int i = 0; i < 16; ++i) {
            v[i] = ((p[6 + i] & 0x0F) | (((qh >> i) & 1u) << 4)) - 16;
            v[i + 16] = ((p[6 + i] >> 4) | (((qh >> (i + 16)) & 1u) << 4)) - 16;
        }
    }
};

template <>
struct Q8Block32<kQ5_1> {
    static constexpr int bytes = 24;
    static constexpr bool has_min = true;
    static void values(const uint8_t* p, int* v) {
        const uint32_t qh = load_u32(p + 4);
        for (int i = 0; i < 16; ++i) {
            v[i] = (p[8 + i] & 0x0F) | (((qh >> i) & 1u) << 4);
            v[i + 16] = (p[8 + i] >> 4) | (((qh >> (i + 16)) & 1u) << 4);
        }
    }
};
template <>
struct Q8Block32<kIQ4_NL> {
    static constexpr int bytes = 18;
    static constexpr bool has_min = false;
    static void values(const uint8_t* p, int* v) {
        for (int i = 0; i < 16; ++i) {
            v[i] = kIq4Levels[p[2 + i] & 0x0F];
            v[i + 16] = kIq4Levels[p[2 + i] >> 4];
        }
    }
};

// The super-block formats: bytes per super-block, where its f16 d sits and, for those with
// minimums, its f16 dmin (-1: none).
template <int Fmt>
struct Q8Super;
template <>
struct Q8Super<kQ2_K> {
    static constexpr int bytes = 84, d_at = 80, dmin_at = 82;
};
template <>
struct Q8Super<kQ3_K> {
    static constexpr int bytes = 110, d_at = 108, dmin_at = -1;
};
template <>
struct Q8Super<kQ4_K> {
    static constexpr int bytes = 144, d_at = 0, dmin_at = 2;
};
template <>
struct Q8Super<kQ5_K> {
    static constexpr int bytes = 176, d_at = 0, dmin_at = 2;
};
template <>
struct Q8Super<kQ6_K> {
    static constexpr int bytes = 210, d_at = 208, dmin_at = -1;
};
template <>
struct Q8Super<kIQ4_XS> {
    static constexpr int bytes = 136, d_at = 0, dmin_at = -1;
};

// A super-block's integers against the quantized input: a = sum over sub-blocks of scale x
// (values . input), m = sum of min x the input's sum (formats with minimums).
struct Q8Ints {
    int32_t a = 0, m = 0;
};

// The float steps of every path's super-block products: ints(p, x, b) gives super-block b's
// integers (each path computes them its own way; they are exact), then acc and mins as the file's
// header says, in block order.
template <int Fmt, class HalfToFloat, class Ints>
inline void q8_k_rows(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const Q8Input& x, float* y,
                      HalfToFloat h2f, Ints ints) {
    using S = Q8Super<Fmt>;
    const int64_t nb = n_cols / 256;
    for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t* p = w + static_cast<size_t>(r) * row_bytes;
        float acc = 0.0f, mins = 0.0f;
        for (int64_t b = 0; b < nb; ++b, p += S::bytes) {
            const Q8Ints t = ints(p, x, b);
            acc = acc + (h2f(load_u16(p + S::d_at)) * x.dk[b]) * static_cast<float>(t.a);
            if constexpr (S::dmin_at >= 0)
                mins = mins + (h2f(load_u16(p + S::dmin_at)) * x.dk[b]) * static_cast<float>(t.m);
        }
        y[r] = acc - mins;  // acc - 0 = acc for the formats without minimums
    }
}

template <class H>
struct Q8Generic {
    template <int Fmt>
    static void matvec_32(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const Q8Input& x,
                          float* y) {
        using B = Q8Block32<Fmt>;
        const int64_t nb = n_cols / 32;
        for (int64_t r = 0; r < n_rows; ++r) {
            const uint8_t* p = w + static_cast<size_t>(r) * row_bytes;
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            float mins = 0.0f;
            for (int64_t b = 0; b < nb; ++b, p += B::bytes) {
                int v[32];
                B::values(p, v);
                const int8_t* q = x.q32 + 32 * b;
                const float dd = H::h2f(load_u16(p)) * x.d32[b];
                for (int k = 0; k < 8; ++k) {
                    int s = 0;
                    for (int i = 4 * k; i < 4 * k + 4; ++i) s += v[i] * q[i];
                    acc[k] = acc[k] + dd * static_cast<float>(s);
                }
                if (B::has_min) mins = mins + H::h2f(load_u16(p + 2)) * x.m32[b];
            }
            y[r] = q8_lane_total(acc) + mins;
        }
    }

    // Q4_K (144 bytes: f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes; Five: Q5_K, 176 bytes,
    // qh[32] after the scales giving bit s of qh[l] to value 32 s + l as its fifth bit): sub-block s
    // of 32 values takes nibbles of qs[32 (s / 2) + l] (low for even s) and k_scale_min(s).
    template <bool Five>
    static Q8Ints ints_q45_k(const uint8_t* p, const Q8Input& x, int64_t b) {
        const int8_t* q = x.qk + 256 * b;
        const int16_t* bs = x.bk + 16 * b;
        const uint8_t* qs = p + (Five ? 48 : 16);
        Q8Ints t;
        for (int s = 0; s < 8; ++s) {
            int sc, mn;
            k_scale_min(s, p + 4, &sc, &mn);
            int32_t sum = 0;
            for (int l = 0; l < 32; ++l) {
                int v = s % 2 == 0 ? (qs[32 * (s / 2) + l] & 0x0F) : (qs[32 * (s / 2) + l] >> 4);
                if (Five) v |= ((p[16 + l] >> s) & 1) << 4;
                sum += v * q[32 * s + l];
            }
            t.a += sc * sum;
            t.m += mn * (bs[2 * s] + bs[2 * s + 1]);
        }
        return t;
    }

    // Q2_K (84 bytes: 16 scale bytes (scale low nibble, min high nibble), qs[64], f16 d, f16 dmin)
    // and Q3_K (110 bytes: hmask[32], qs[64], 12 scale bytes, f16 d): value 128 h + 32 j + l of a
    // super-block has bits 2j, 2j + 1 of qs[32 h + l], and for Q3_K bit 4h + j of hmask[l] as its
    // third (set: + 0, clear: - 4 after it); 16-value groups 8h + 2j + l / 16 with their scales.
    template <bool Three>
    static Q8Ints ints_k23(const uint8_t* p, const Q8Input& x, int64_t b) {
        const int8_t* q = x.qk + 256 * b;
        const int16_t* bs = x.bk + 16 * b;
        const uint8_t* qs = Three ? p + 32 : p + 16;
        Q8Ints t;
        for (int g = 0; g < 16; ++g) {
            const int h = g / 8, j = (g % 8) / 2, l0 = 16 * (g % 2);
            int32_t sum = 0;
            for (int l = l0; l < l0 + 16; ++l) {
                int v = (qs[32 * h + l] >> (2 * j)) & 3;
                if (Three) v |= ((p[l] >> (4 * h + j)) & 1) << 2;  // 0..7: the value + 4
                sum += v * q[128 * h + 32 * j + l];
            }
            if (Three) {
                t.a += q3_k_scale(p + 96, g) * (sum - 4 * bs[g]);
            } else {
                t.a += (p[g] & 0x0F) * sum;
                t.m += (p[g] >> 4) * bs[g];
            }
        }
        return t;
    }

    // Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], f16 d): value 128 h + 32 k + l of a
    // super-block is ql's nibble (bytes 64 h + l, + 32 for k odd; high nibble for k >= 2) with bits
    // 2k, 2k + 1 of qh[32 h + l] above it, minus 32; scale (value index) / 16.
    static Q8Ints ints_q6_k(const uint8_t* p, const Q8Input& x, int64_t b) {
        const int8_t* q = x.qk + 256 * b;
        const int16_t* bs = x.bk + 16 * b;
        const auto* sc = reinterpret_cast<const int8_t*>(p + 192);
        Q8Ints t;
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k)
                for (int l = 0; l < 32; ++l) {
                    const int lo = p[64 * h + 32 * (k % 2) + l];
                    const int v = ((k < 2 ? lo & 0x0F : lo >> 4) | (((p[128 + 32 * h + l] >> (2 * k)) & 3) << 4));
                    const int idx = 128 * h + 32 * k + l;
                    t.a += sc[idx / 16] * v * q[idx];
                }
        for (int i = 0; i < 16; ++i) t.a -= 32 * sc[i] * bs[i];
        return t;
    }

    // IQ4_XS (136 bytes: f16 d, u16 scales_h, 4 bytes scales_l, 128 nibble bytes): sub-block ib's
    // 32 values are IQ4_NL's levels of its 16 bytes (low nibbles, then high), its scale
    // iq4_xs_scale(ib).
    static Q8Ints ints_iq4_xs(const uint8_t* p, const Q8Input& x, int64_t b) {
        const int8_t* q = x.qk + 256 * b;
        Q8Ints t;
        for (int ib = 0; ib < 8; ++ib) {
            int32_t sum = 0;
            for (int i = 0; i < 16; ++i) {
                const uint8_t byte = p[8 + 16 * ib + i];
                sum += kIq4Levels[byte & 0x0F] * q[32 * ib + i] + kIq4Levels[byte >> 4] * q[32 * ib + 16 + i];
            }
            t.a += iq4_xs_scale(p, ib) * sum;
        }
        return t;
    }

    template <int Fmt, Q8Ints (*Ints)(const uint8_t*, const Q8Input&, int64_t)>
    static void matvec_k(const uint8_t* w, size_t row_bytes, int64_t n_rows, int64_t n_cols, const Q8Input& x,
                         float* y) {
        q8_k_rows<Fmt>(w, row_bytes, n_rows, n_cols, x, y, H::h2f, Ints);
    }

    static void fill(KernelTable& t) {
        t.q8_matvec[kQ8_0] = matvec_32<kQ8_0>;
        t.q8_matvec[kQ4_0] = matvec_32<kQ4_0>;
        t.q8_matvec[kQ4_1] = matvec_32<kQ4_1>;
        t.q8_matvec[kQ5_0] = matvec_32<kQ5_0>;
        t.q8_matvec[kQ5_1] = matvec_32<kQ5_1>;
        t.q8_matvec[kIQ4_NL] = matvec_32<kIQ4_NL>;
        t.q8_matvec[kQ2_K] = matvec_k<kQ2_K, ints_k23<false>>;
        t.q8_matvec[kQ3_K] = matvec_k<kQ3_K, ints_k23<true>>;
        t.q8_matvec[kQ4_K] = matvec_k<kQ4_K, ints_q45_k<false>>;
        t.q8_matvec[kQ5_K] = matvec_k<kQ5_K, ints_q45_k<true>>;
        t.q8_matvec[kQ6_K] = matvec_k<kQ6_K, ints_q6_k>;
        t.q8_matvec[kIQ4_XS] = matvec_k<kIQ4_XS, ints_iq4_xs>;
    }
};

}  // namespace
}  // namespace snapkv::quant_detail
