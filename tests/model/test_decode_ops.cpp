// decode_ops' scale-and-mask step against its formula, element by element and bit for bit: each
// score times the scale, soft-capped when asked, and -inf where the slot's position is later than
// the query's or (with a window) at or before the query's position minus the window. Heads that see
// every slot, heads that see some, positions read through strides, soft-cap on and off.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/decode_ops.h"

using namespace snapkv;

TEST_CASE("decode_ops: scale_mask_rows scales, soft-caps and masks each score as its formula", "[model]") {
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    const int64_t Hc = 3, g = 2, S = 37, q_pos = 50;
    for (int64_t window : {int64_t{0}, int64_t{20}})
        for (double softcap : {0.0, 30.0})
            for (int64_t slot_stride : {int64_t{1}, int64_t{3}}) {
                INFO("window " << window << ", softcap " << softcap << ", slot stride " << slot_stride);
                const int64_t head_stride = S * slot_stride + 5;
                std::vector<int64_t> pos(static_cast<size_t>(Hc * head_stride), -1);
                for (int64_t s = 0; s < S; ++s) {
                    pos[static_cast<size_t>(0 * head_stride + s * slot_stride)] = s;           // every slot visible
                    pos[static_cast<size_t>(1 * head_stride + s * slot_stride)] = 2 * s;       // later ones too
                    pos[static_cast<size_t>(2 * head_stride + s * slot_stride)] = 40 + s % 3;  // order free
                }
                std::vector<float> scores(static_cast<size_t>(Hc * g * S));
                for (auto& x : scores) x = nd(rng);
                const double scale = 0.125;
                std::vector<float> want(scores.size());
                for (int64_t h = 0; h < Hc; ++h)
                    for (int64_t j = 0; j < g; ++j)
                        for (int64_t s = 0; s < S; ++s) {
                            const size_t i = static_cast<size_t>((h * g + j) * S + s);
                            float v = scores[i] * static_cast<float>(scale);
                            if (softcap > 0.0)
                                v = std::tanh(v / static_cast<float>(softcap)) * static_cast<float>(softcap);
                            const int64_t p = pos[static_cast<size_t>(h * head_stride + s * slot_stride)];
                            const bool hidden = p > q_pos || (window > 0 && p <= q_pos - window);
                            want[i] = hidden ? -std::numeric_limits<float>::infinity() : v;
                        }
                decode_ops::scale_mask_rows(scores.data(), Hc, g, S, pos.data(), head_stride, slot_stride, q_pos, scale,
                                            softcap, window);
                int64_t differ = 0, masked = 0;
                for (size_t i = 0; i < want.size(); ++i) {
                    differ += std::memcmp(&want[i], &scores[i], sizeof(float)) != 0;
                    masked += std::isinf(want[i]);
                }
                CHECK(masked > 0);
                CHECK(differ == 0);
            }
}
