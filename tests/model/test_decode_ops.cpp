// decode_ops' scale-and-mask step against its formula, element by element and bit for bit: each
// score times the scale, soft-capped when asked, and -inf where the slot's position is later than
// the query's or (with a window) at or before the query's position minus the window. Heads that see
// every slot, heads that see some, positions read through strides, soft-cap on and off. Then
// core/quant's fused step against this one followed by softmax_rows.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/kv/kv_cache.h"
#include "core/model/decode_ops.h"
#include "core/quant/cpu_features.h"
#include "core/quant/qkernels.h"

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

// core/quant's fused step (scale, mask and softmax in one kernel, rows shared by the kernel
// threads) against decode_ops' masking pass followed by softmax_rows, bit for bit, on every path:
// rows in groups of one head (g up to 6, so a head's rows split into passes of four), lengths
// around the vector widths and long enough for several threads' takes, positions visible, later,
// padding and unordered, with and without a window, -0 and NaN scores.
TEST_CASE("decode_ops: attention_softmax equals scale_mask_rows then softmax_rows on every path and thread count",
          "[model]") {
    std::mt19937 rng(31);
    std::normal_distribution<float> nd(0.0f, 4.0f);
    const int threads_before = kernel_threads();
    const float scale = 0.125f;
    for (CpuPath path : supported_cpu_paths())
        for (int threads : {1, 2})
            for (auto [Hc, g] : {std::pair<int64_t, int64_t>{1, 4}, {3, 3}, {2, 6}, {2, 1}})
                for (int64_t S : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{37}, int64_t{300}, int64_t{5000}})
                    for (int64_t window : {int64_t{0}, int64_t{20}}) {
                        INFO("path " << cpu_path_name(path) << ", threads " << threads << ", Hc " << Hc << ", g " << g
                                     << ", S " << S << ", window " << window);
                        set_kernel_threads(threads);
                        const int64_t q_pos = S + 3, head_stride = S + 5;
                        std::vector<int64_t> pos(static_cast<size_t>(Hc * head_stride), 0);
                        for (int64_t h = 0; h < Hc; ++h)
                            for (int64_t s = 0; s < S; ++s) {
                                int64_t p = (h == 0) ? s : (s * 7919 + h) % (S + 9);  // unordered, some later
                                if (s % 11 == 5) p = kPadPosition;
                                pos[static_cast<size_t>(h * head_stride + s)] = p;
                            }
                        // The edges: q_pos (seen), q_pos + 1 (hidden), q_pos - window (hidden with a
                        // window) and one above it (seen), in the tail and inside whole vectors.
                        for (int64_t at : {S - 4, int64_t{8}})
                            if (at >= 1 && at + 4 <= S)
                                for (int64_t h = 0; h < Hc; ++h) {
                                    int64_t* ph = pos.data() + h * head_stride + at;
                                    ph[0] = q_pos;
                                    ph[1] = q_pos + 1;
                                    ph[2] = window > 0 ? q_pos - window : q_pos - 1;
                                    ph[3] = q_pos - window + 1;
                                }
                        pos[0] = 0;  // every row keeps a visible slot
                        std::vector<float> scores(static_cast<size_t>(Hc * g * S));
                        for (auto& x : scores) x = nd(rng);
                        if (S > 9) {
                            scores[3] = -0.0f;
                            scores[5] = std::numeric_limits<float>::quiet_NaN();  // a padding slot: hidden
                        }
                        if (S > 300 && Hc * g > 2) scores[static_cast<size_t>(2 * S + 1)] = -0.0f;
                        std::vector<float> want = scores;
                        decode_ops::scale_mask_rows(want.data(), Hc, g, S, pos.data(), head_stride, 1, q_pos, scale,
                                                    0.0, window);
                        softmax_rows_on(path, want.data(), Hc * g, S);
                        std::vector<float> got = scores;
                        if (threads == 1)
                            attention_softmax_on(path, got.data(), Hc, g, S, pos.data(), head_stride, q_pos, scale,
                                                 window);
                        else {
                            // The threaded entry runs the active path.
                            set_cpu_path(path);
                            attention_softmax(got.data(), Hc, g, S, pos.data(), head_stride, q_pos, scale, window);
                        }
                        int64_t differ = 0;
                        for (size_t i = 0; i < want.size(); ++i)
                            differ += std::memcmp(&want[i], &got[i], sizeof(float)) != 0;
                        CHECK(differ == 0);
                    }
    clear_cpu_path();
    set_kernel_threads(threads_before);
}
