// KV cache storage types (core/kv/kv_type.h): what is stored, when it is rounded, and that every
// path reading the cache (prefill's blocked attention, the single-token step, the ATen path, the
// gather, clone and prefix) sees the stored values. Agreement with llama.cpp's -ctk/-ctv runs is
// tests/model/test_kv_types_llamacpp.cpp; this file checks the cache itself.
#include <cmath>
#include <cstring>
#include <random>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/common/errors.h"
#include "core/io/dequant.h"
#include "core/io/model_file.h"
#include "core/kv/kv_cache.h"
#include "core/model/llama_model.h"
#include "quant/fwht_reference.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::ggml_fwht_blocks;
using snapkv::test::random_ids;

namespace {

at::Tensor random_rows(int64_t h, int64_t t, int64_t d, uint64_t seed) {
    at::manual_seed(seed);
    at::Tensor x = at::randn({h, t, d}) * 3.0;
    // Blocks whose largest value is not at a round place, an all-zero block and a block with one
    // value: the q8_0 cases a plain normal draw rarely makes.
    x.select(1, 0).narrow(1, 0, std::min<int64_t>(d, 32)).zero_();
    if (t > 1) {
        x.select(1, 1).zero_();
        x.select(1, 1).select(1, 3).fill_(-7.25);
    }
    return x;
}

at::Tensor positions(int64_t t, int64_t from = 0) { return at::arange(from, from + t, at::kLong); }

// q8_0 of one row as ggml's x86 quantize_row_q8_0 writes it, then dequantized: written out here
// from llama.cpp's description (d = amax / 127 as f16, q = nearest-even(x * (127 / amax))).
std::vector<float> q8_0_roundtrip(const float* x, int64_t d) {
    std::vector<float> out(static_cast<size_t>(d));
    for (int64_t b = 0; b < d; b += 32) {
        float amax = 0;
        for (int64_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
        const float id = amax != 0 ? 127.0f / amax : 0.0f;
        const float scale = static_cast<float>(c10::Half(amax / 127.0f));
        for (int64_t j = 0; j < 32; ++j) out[size_t(b + j)] = std::nearbyint(x[b + j] * id) * scale;
    }
    return out;
}

// llama.cpp's rotation of a quantized cache's rows: ggml's transform on each block of n of d values.
void hadamard_blocks(float* x, int64_t d, int64_t n) { ggml_fwht_blocks(x, d / n, n); }

// What the cache holds for rows x [..., D] of type t. rot: llama.cpp's rotation block (0: none);
// stored_basis: the rows as stored (rotated), else rotated back (what keys() returns).
at::Tensor expected_stored(const at::Tensor& x, KvType t, int64_t rot = 0, bool stored_basis = false) {
    switch (t) {
    case KvType::F32: return x;
    case KvType::F16: return x.to(at::kHalf).to(at::kFloat);
    case KvType::BF16: return x.to(at::kBFloat16).to(at::kFloat);
    case KvType::Q8_0: {
        at::Tensor c = x.contiguous().clone();
        at::Tensor out = at::empty_like(c);
        const int64_t d = c.size(-1), rows = c.numel() / d;
        for (int64_t r = 0; r < rows; ++r) {
            float* row = c.data_ptr<float>() + r * d;
            if (rot > 0) hadamard_blocks(row, d, rot);
            std::vector<float> v = q8_0_roundtrip(row, d);
            if (rot > 0 && !stored_basis) hadamard_blocks(v.data(), d, rot);
            std::memcpy(out.data_ptr<float>() + r * d, v.data(), size_t(d) * sizeof(float));
        }
        return out;
    }
    }
    return x;
}

bool same(const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && at::equal(a, b); }

}  // namespace

TEST_CASE("kv types: names, row bytes and the head_dim q8_0 needs", "[kv]") {
    for (KvType t : all_kv_types()) {
        KvType back = KvType::F32;
        REQUIRE(parse_kv_type(kv_type_name(t), &back));
        CHECK(back == t);
    }
    CHECK_FALSE(parse_kv_type("q4_0", nullptr));
    CHECK_THROWS_WITH(kv_type_from_name("f8"), Catch::Contains("'f8'") && Catch::Contains("q8_0"));
    CHECK(kv_row_bytes(KvType::F32, 64) == 256);
    CHECK(kv_row_bytes(KvType::F16, 64) == 128);
    CHECK(kv_row_bytes(KvType::BF16, 64) == 128);
    CHECK(kv_row_bytes(KvType::Q8_0, 64) == 68);  // two blocks of 32 int8 + an f16 scale
    CHECK(kv_type_fits(KvType::Q8_0, 256));
    CHECK_FALSE(kv_type_fits(KvType::Q8_0, 80));
    CHECK_THROWS_WITH(LayerKv(2, 16, 4, at::TensorOptions().dtype(at::kFloat), true, KvType::Q8_0),
                      Catch::Contains("q8_0") && Catch::Contains("head_dim is 16"));
}

TEST_CASE("kv types: a q8_0 cache rotates its rows as llama.cpp does, where head_dim allows", "[kv]") {
    // llama.cpp rotates a quantized type's keys in blocks of the largest power of two dividing
    // head_dim and its values in blocks of 64, only for head_dim a multiple of 64.
    CHECK(kv_rotation(KvType::Q8_0, 64, false) == 64);
    CHECK(kv_rotation(KvType::Q8_0, 128, false) == 128);
    CHECK(kv_rotation(KvType::Q8_0, 192, false) == 64);
    CHECK(kv_rotation(KvType::Q8_0, 256, false) == 256);
    CHECK(kv_rotation(KvType::Q8_0, 256, true) == 64);
    CHECK(kv_rotation(KvType::Q8_0, 32, false) == 0);
    CHECK(kv_rotation(KvType::Q8_0, 96, true) == 0);
    for (KvType t : {KvType::F32, KvType::F16, KvType::BF16}) CHECK(kv_rotation(t, 64, false) == 0);
    // The rotation is orthonormal and its own inverse, up to float rounding.
    at::Tensor x = random_rows(3, 4, 256, 7).contiguous();
    at::Tensor y = x.clone();
    kv_rotate_rows(y.data_ptr<float>(), 12, 256, 256);
    CHECK(y.norm().item<double>() == Approx(x.norm().item<double>()).epsilon(1e-5));
    kv_rotate_rows(y.data_ptr<float>(), 12, 256, 256);
    CHECK(at::allclose(y, x, 1e-5, 1e-5));
    // Why llama.cpp rotates: one outlier in a block makes q8_0's step coarse for the other 31
    // values; rotated, the outlier is spread over the block and the rows come back closer.
    const auto opts = at::TensorOptions().dtype(at::kFloat);
    at::manual_seed(11);
    at::Tensor k = at::randn({1, 16, 64});
    k.select(2, 5).mul_(40.0);
    LayerKv rotated(1, 64, 16, opts, true, KvType::Q8_0);
    rotated.append(k, k, positions(16));
    const double err_rotated = (rotated.keys() - k).pow(2).mean().item<double>();
    const double err_plain = (expected_stored(k, KvType::Q8_0) - k).pow(2).mean().item<double>();
    CHECK(err_rotated < 0.5 * err_plain);
}

TEST_CASE("kv types: stored values are rounded once, on write, by every write path", "[kv]") {
    const auto opts = at::TensorOptions().dtype(at::kFloat);
    // head_dim 64 (q8_0 rows rotated, keys and values in blocks of 64), 256 (keys in one block of
    // 256) and 32 (no rotation).
    const int64_t D = GENERATE(64, 256, 32);
    const int64_t H = 2, T = 5;
    const at::Tensor k = random_rows(H, T, D, 1), v = random_rows(H, T, D, 2);
    for (KvType t : all_kv_types()) {
        INFO(kv_type_name(t) << ", head_dim " << D);
        const int64_t k_rot = kv_rotation(t, D, false), v_rot = kv_rotation(t, D, true);
        // Prefill's write (many rows at once: threaded row loops on the CPU, LibTorch ops on CUDA)
        // and decode's (one token at a time) agree bit for bit with the rounding as llama.cpp
        // describes it.
        LayerKv bulk(H, D, 2, opts, true, t);
        bulk.append(k, v, positions(T));
        LayerKv steps(H, D, 1, opts, true, t);
        for (int64_t s = 0; s < T; ++s) {
            const at::Tensor ks = k.narrow(1, s, 1).contiguous(), vs = v.narrow(1, s, 1).contiguous();
            steps.append_one(ks.data_ptr<float>(), ks.stride(0), vs.data_ptr<float>(), vs.stride(0), H, s);
        }
        CHECK(bulk.key_rotation() == k_rot);
        CHECK(bulk.value_rotation() == v_rot);
        CHECK(same(bulk.keys(), expected_stored(k, t, k_rot)));
        CHECK(same(bulk.values(), expected_stored(v, t, v_rot)));
        CHECK(same(steps.keys(), bulk.keys()));
        CHECK(same(steps.values(), bulk.values()));
        if (t != KvType::F32) CHECK_FALSE(same(bulk.keys(), k));  // something was rounded
        // The float rows the CPU kernels read are the stored values.
        at::Tensor rows = at::empty({H, T - 1, D});
        bulk.read_keys_f32(1, T - 1, rows.data_ptr<float>());
        CHECK(same(rows, bulk.keys().narrow(1, 1, T - 1)));
        bulk.read_values_f32(0, T - 1, rows.data_ptr<float>());
        CHECK(same(rows, bulk.values().narrow(1, 0, T - 1)));
        // As stored (rotated), what llama.cpp's attention reads.
        bulk.read_keys_f32(0, T, rows.resize_({H, T, D}).data_ptr<float>(), /*rotated=*/true);
        CHECK(same(rows, expected_stored(k, t, k_rot, /*stored_basis=*/true)));
        bulk.read_values_f32(0, T, rows.data_ptr<float>(), /*rotated=*/true);
        CHECK(same(rows, expected_stored(v, t, v_rot, /*stored_basis=*/true)));
        // The rows decode's kernels read in place: the storage itself, [H, capacity, D] of the type;
        // for q8_0 the quants and their f16 scales, q x scale the rows as stored (rotated).
        const int64_t cap = bulk.capacity();
        if (t == KvType::Q8_0) {
            for (bool keys : {true, false}) {
                const auto* q = static_cast<const int8_t*>(keys ? bulk.key_rows() : bulk.value_rows());
                const uint16_t* d = keys ? bulk.key_scales() : bulk.value_scales();
                at::Tensor got = at::empty({H, T, D});
                for (int64_t h = 0; h < H; ++h)
                    for (int64_t s = 0; s < T; ++s)
                        for (int64_t i = 0; i < D; ++i) {
                            const int64_t e = (h * cap + s) * D + i;
                            got[h][s][i] = static_cast<float>(q[e]) * half_to_float(d[e / kQ8_0Block]);
                        }
                CHECK(same(got, expected_stored(keys ? k : v, t, keys ? k_rot : v_rot, /*stored_basis=*/true)));
            }
        } else {
            CHECK_THROWS(bulk.key_scales());
            const auto st = at::TensorOptions().dtype(t == KvType::F16    ? at::kHalf
                                                      : t == KvType::BF16 ? at::kBFloat16
                                                                          : at::kFloat);
            const at::Tensor kr = at::from_blob(const_cast<void*>(bulk.key_rows()), {H, cap, D}, st);
            const at::Tensor vr = at::from_blob(const_cast<void*>(bulk.value_rows()), {H, cap, D}, st);
            CHECK(same(kr.narrow(1, 0, T).to(at::kFloat), bulk.keys()));
            CHECK(same(vr.narrow(1, 0, T).to(at::kFloat), bulk.values()));
        }
        // Real bytes: K and V rows of the type, per used slot.
        CHECK(bulk.bytes() == H * T * 2 * kv_row_bytes(t, D));
        CHECK(bulk.row_bytes() == kv_row_bytes(t, D));
    }
}

TEST_CASE("kv types: gather, clone and prefix copy the stored rows without rounding again", "[kv]") {
    const int64_t Hkv = 2, D = 64, T = 9;
    const auto opts = at::TensorOptions().dtype(at::kFloat);
    for (KvType t : all_kv_types()) {
        INFO(kv_type_name(t));
        KvCache cache(1, Hkv, D, opts, 4, true, t);
        cache.layer(0).append(random_rows(Hkv, T, D, 3), random_rows(Hkv, T, D, 4), positions(T));
        cache.set_n_past(T);
        const LayerKv& src = cache.layer(0);
        // Query-head gather (4 result heads from 2), uneven lengths: the short head is padded.
        const std::vector<LayerKeep> keep = {{{0, 3, 8}, {1, 2}, {4, 5, 6}, {7}}};
        const KvCache g = gather_cache(cache, keep, 2);
        const LayerKv& out = g.layer(0);
        REQUIRE(out.n_heads() == 4);
        REQUIRE(out.type() == t);
        for (int64_t h = 0; h < 4; ++h) {
            const auto& list = keep[0][size_t(h)];
            for (size_t j = 0; j < list.size(); ++j) {
                CHECK(same(out.keys()[h][int64_t(j)], src.keys()[h / 2][list[j]]));
                CHECK(same(out.values()[h][int64_t(j)], src.values()[h / 2][list[j]]));
                CHECK(out.positions()[h][int64_t(j)].item<int64_t>() == list[j]);
            }
        }
        CHECK(out.positions()[3][2].item<int64_t>() == kPadPosition);
        CHECK(out.bytes() == 9 * 2 * kv_row_bytes(t, D));  // padding is not counted
        const KvCache c = cache.clone();
        CHECK(same(c.layer(0).keys(), src.keys()));
        CHECK(same(c.layer(0).values(), src.values()));
        const KvCache p = cache.prefix(4);
        CHECK(same(p.layer(0).keys(), src.keys().narrow(1, 0, 4)));
        CHECK(p.n_past() == 4);
    }
}

TEST_CASE("kv types: a model's prefill, decode and generation read the stored cache", "[kv][model]") {
    // qwen3's tiny model has head_dim 32 (q8_0 fits); llama3's has 16 (q8_0 must be refused).
    const auto file = ModelFile::open(snapkv::test::tiny::path("qwen3", "gguf"));
    ModelOptions mo;
    const auto model = LlamaModel::load(*file, mo);
    const ModelConfig& c = model->config();
    const std::vector<int32_t> ids = random_ids(40, c.n_vocab, 5);
    const std::vector<int32_t> head(ids.begin(), ids.end() - 1);
    at::Tensor exact;
    for (KvType t : all_kv_types()) {
        INFO(kv_type_name(t));
        model->set_cache_type(t);
        // Whole prompt at once (the blocked CPU attention) vs all but the last token then one step
        // (the single-token path): both attend over the same stored values.
        KvCache one = model->new_cache();
        REQUIRE(one.layer(0).type() == t);
        const at::Tensor a = model->forward(ids, one, {}).reshape({-1}).narrow(0, 0, c.n_vocab);
        KvCache two = model->new_cache(4);
        model->forward(head, two, {});
        const at::Tensor b = model->forward({ids.back()}, two, {}).reshape({-1});
        CHECK(at::allclose(a, b, 1e-4, 1e-4));
        // The plain-buffer decode step (generation's) reads the same stored values.
        KvCache three = model->new_cache(4);
        model->forward(head, three, {});
        const at::Tensor d = model->forward_batch({ids.back()}, {&three}, {}).reshape({-1});
        CHECK(at::allclose(a, d, 1e-4, 1e-4));
        CHECK(at::allclose(three.layer(0).keys(), two.layer(0).keys(), 1e-3, 1e-3));
        CHECK(one.bytes() == c.n_layer * c.n_head_kv * int64_t(ids.size()) * 2 * kv_row_bytes(t, c.head_dim));
        for (int64_t l = 0; l < c.n_layer; ++l)
            CHECK(at::allclose(one.layer(l).keys(), two.layer(l).keys(), 1e-3, 1e-3));
        if (t == KvType::F32) {
            exact = a;
        } else {
            // Rounded caches move the logits a little, never a lot.
            const double diff = (a - exact).abs().max().item<double>();
            CHECK(diff > 0);
            CHECK(diff < 0.05 * exact.abs().max().item<double>());
        }
    }
    model->set_cache_type(KvType::F32);
    const auto llama = ModelFile::open(snapkv::test::tiny::path("llama3", "gguf"));
    ModelOptions q8;
    q8.cache_type = KvType::Q8_0;
    const auto small = LlamaModel::load(*llama, q8);
    CHECK_THROWS_AS(small->new_cache(), InputError);
}

TEST_CASE("kv types: a head_dim-64 model reads its rotated q8_0 cache alike in prefill and decode", "[kv][model]") {
    // The tiny models' head_dim (16, 32) is too small for llama.cpp's rotation; SmolLM2 (64) uses
    // it for keys and values. The single-token step rotates the query and the output instead of
    // every stored row (core/model/model_attention.cpp); prefill reads the rows rotated back.
    const std::string path = snapkv::test::smollm2_path();
    INFO("the model file comes with the setup step (datasets/fetch_model.sh); expected at " << path);
    REQUIRE(snapkv::test::file_exists(path));
    const auto file = ModelFile::open(path);
    ModelOptions mo;
    mo.cache_type = KvType::Q8_0;
    const auto model = LlamaModel::load(*file, mo);
    const ModelConfig& c = model->config();
    REQUIRE(kv_rotation(KvType::Q8_0, c.head_dim, false) > 0);
    const std::vector<int32_t> ids = random_ids(24, c.n_vocab, 9);
    const std::vector<int32_t> head(ids.begin(), ids.end() - 1);
    KvCache one = model->new_cache();
    REQUIRE(one.layer(0).key_rotation() == 64);
    const at::Tensor a = model->forward(ids, one, {}).reshape({-1}).narrow(0, 0, c.n_vocab);
    KvCache two = model->new_cache(4);
    model->forward(head, two, {});
    const at::Tensor b = model->forward({ids.back()}, two, {}).reshape({-1});
    KvCache three = model->new_cache(4);
    model->forward(head, three, {});
    const at::Tensor d = model->forward_batch({ids.back()}, {&three}, {}).reshape({-1});
    // The rotation's float rounding, and one more: the last token's own key and value rows come from
    // the batched and from the single-token computation, which differ in the last bits (~4e-6), and
    // q8_0's rounding on write can turn that into a whole quantum (0.016 in these logits on the
    // AVX-512 path of a Zen 4 EPYC, 2e-5 on AVX2). A rotation left out of the query or the output
    // moves them by 25-36.
    CHECK((a - b).abs().max().item<double>() < 0.1);
    CHECK((a - d).abs().max().item<double>() < 0.1);
}
