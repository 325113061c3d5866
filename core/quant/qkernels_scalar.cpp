// The portable kernel path: plain C++ over 4-float "vectors" (which the compiler may map to the
// baseline SIMD of the target), for CPUs without AVX2 and for non-x86 builds.
#include <cmath>
#include <cstring>

#include "core/io/dequant.h"
#include "core/quant/attn_kernels_impl.h"
#include "core/quant/qkernels_impl.h"
#include "core/quant/qkernels_q8_impl.h"

namespace snapkv::quant_detail {
namespace {

struct ScalarV {
    static constexpr int N = 4;
    struct vec {
        float v[4];
    };

    static vec zero() { return {{0.0f, 0.0f, 0.0f, 0.0f}}; }
    static vec set1(float f) { return {{f, f, f, f}}; }
    static vec load(const float* p) { return {{p[0], p[1], p[2], p[3]}}; }
    static vec load_unaligned(const uint8_t* p) {
        vec r;
        std::memcpy(r.v, p, sizeof r.v);
        return r;
    }
    static void store(float* p, vec a) {
        for (int i = 0; i < N; ++i) p[i] = a.v[i];
    }
    static vec add(vec a, vec b) {
        for (int i = 0; i < N; ++i) a.v[i] += b.v[i];
        return a;
    }
    static vec sub(vec a, vec b) {
        for (int i = 0; i < N; ++i) a.v[i] -= b.v[i];
        return a;
    }
    static vec mul(vec a, vec b) {
        for (int i = 0; i < N; ++i) a.v[i] *= b.v[i];
        return a;
    }
    static vec fmadd(vec a, vec b, vec c) {
        for (int i = 0; i < N; ++i) c.v[i] += a.v[i] * b.v[i];
        return c;
    }
    static vec div(vec a, vec b) {
        for (int i = 0; i < N; ++i) a.v[i] /= b.v[i];
        return a;
    }
    // As maxps / minps: b when either is NaN.
    static vec max(vec a, vec b) {
        for (int i = 0; i < N; ++i) a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
        return a;
    }
    static vec min(vec a, vec b) {
        for (int i = 0; i < N; ++i) a.v[i] = a.v[i] < b.v[i] ? a.v[i] : b.v[i];
        return a;
    }
    static vec round(vec a) {
        for (int i = 0; i < N; ++i) a.v[i] = std::nearbyint(a.v[i]);
        return a;
    }
    static vec ldexp(vec p, vec n) {
        for (int i = 0; i < N; ++i) {
            // Lanes whose n is out of range (NaN, or exp_nonpos_v's x below its bound, whose
            // result is replaced) must not reach the int conversion (undefined).
            const int32_t e = n.v[i] >= -126.0f && n.v[i] <= 127.0f ? static_cast<int32_t>(n.v[i]) : 0;
            const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
            float s;
            std::memcpy(&s, &bits, sizeof bits);
            p.v[i] *= s;
        }
        return p;
    }
    static vec zero_below(vec x, vec b, vec y) {
        for (int i = 0; i < N; ++i) y.v[i] = x.v[i] < b.v[i] ? 0.0f : y.v[i];
        return y;
    }
    static vec above(vec x, vec b, vec t, vec f) {
        for (int i = 0; i < N; ++i) f.v[i] = x.v[i] > b.v[i] ? t.v[i] : f.v[i];
        return f;
    }
    struct shown_mask {
        bool v[N];
    };
    static shown_mask shown_positions(const int64_t* p, int64_t hi, int64_t lo) {
        shown_mask m;
        for (int i = 0; i < N; ++i) m.v[i] = !(p[i] > hi || p[i] <= lo);
        return m;
    }
    static vec shown_or_ninf(shown_mask m, vec s) {
        for (int i = 0; i < N; ++i)
            if (!m.v[i]) s.v[i] = -__builtin_inff();
        return s;
    }
    static vec bfly(vec a, int len) {
        vec r;
        for (int i = 0; i < N; ++i) r.v[i] = (i & len) ? a.v[i ^ len] - a.v[i] : a.v[i] + a.v[i ^ len];
        return r;
    }
    static float hmax(vec a) {
        float m = a.v[0];
        for (int i = 1; i < N; ++i) m = a.v[i] > m ? a.v[i] : m;
        return m;
    }
    static float hsum(vec a) { return (a.v[0] + a.v[1]) + (a.v[2] + a.v[3]); }
    static float h2f(uint16_t h) { return half_to_float(h); }
    static vec from_f16(const uint8_t* p) {
        vec r;
        for (int i = 0; i < N; ++i) r.v[i] = half_to_float(load_u16(p + 2 * i));
        return r;
    }
    static vec from_bf16(const uint8_t* p) {
        vec r;
        for (int i = 0; i < N; ++i) r.v[i] = bf16_to_float(load_u16(p + 2 * i));
        return r;
    }
    static vec from_i8(const int8_t* p) {
        vec r;
        for (int i = 0; i < N; ++i) r.v[i] = static_cast<float>(p[i]);
        return r;
    }

    // 16 bytes as one value, and the byte operations on it.
    struct q16 {
        uint8_t b[16];
    };
    static q16 load16(const uint8_t* p) {
        q16 r;
        std::memcpy(r.b, p, 16);
        return r;
    }
    template <class F>
    static q16 each(q16 a, F f) {
        for (int i = 0; i < 16; ++i) a.b[i] = static_cast<uint8_t>(f(a.b[i]));
        return a;
    }
    static q16 lo4(q16 a) {
        return each(a, [](int v) { return v & 0x0F; });
    }
    static q16 hi4(q16 a) {
        return each(a, [](int v) { return v >> 4; });
    }
    static q16 bits(q16 a, int s, int mask) {
        return each(a, [=](int v) { return (v >> s) & mask; });
    }
    static q16 shl4(q16 a) {
        return each(a, [](int v) { return v << 4; });
    }
    static q16 sub8(q16 a, int k) {
        return each(a, [=](int v) { return v - k; });
    }
    static q16 shl(q16 a, int s) {
        return each(a, [=](int v) { return v << s; });
    }
    static q16 bits16(uint32_t m) {
        q16 r;
        for (int i = 0; i < 16; ++i) r.b[i] = static_cast<uint8_t>((m >> i) & 1u);
        return r;
    }
    static q16 lut16(q16 a, q16 table) {
        return each(a, [&](int v) { return table.b[v & 0x0F]; });
    }
    static q16 or_(q16 a, q16 b) {
        for (int i = 0; i < 16; ++i) a.b[i] = static_cast<uint8_t>(a.b[i] | b.b[i]);
        return a;
    }
    static void to_f32(q16 a, vec* f) {
        for (int i = 0; i < 16; ++i) f[i / N].v[i % N] = static_cast<float>(static_cast<int8_t>(a.b[i]));
    }
};

}  // namespace

const KernelTable& scalar_kernels() {
    static const KernelTable table = [] {
        KernelTable t = Kernels<ScalarV>::table();
        AttnKernels<ScalarV>::fill(t);
        Q8Generic<ScalarV>::fill(t);
        return t;
    }();
    return table;
}

}  // namespace snapkv::quant_detail
