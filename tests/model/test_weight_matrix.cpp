// WeightMatrix in native storage (the file's blocks, core/quant kernels) against the same matrix
// dequantized to a dense float32 tensor, on the stories260K files of every stored type: products
// for one token within float32 rounding, multi-token products (dequantized + BLAS) and row
// lookups bit-identical, tiled products of large matrices within rounding, row slices, byte
// counts; and the model loaded both ways.
#include <cmath>

#include "common/test_util.h"
#include "core/io/model_file.h"
#include "core/model/llama_model.h"
#include "core/model/weight_matrix.h"
#include "core/quant/qkernels.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::data_path;

namespace {

const char* const kFiles[] = {"stories260K.gguf", "stories260K-F16.gguf", "stories260K-Q8_0.gguf",
                              "stories260K-Q4_0.gguf", "stories260K-Q4_1.gguf"};

WeightMatrix dense_of(const ModelFile& f, const std::string& name) {
    at::Tensor w = at::empty(f.tensor(name).shape, at::kFloat);
    f.read_f32(name, w.data_ptr<float>());
    return WeightMatrix(w);
}

void check_bitwise(const at::Tensor& got, const at::Tensor& want) {
    REQUIRE(got.sizes() == want.sizes());
    const at::Tensor g = got.contiguous(), w = want.contiguous();
    const int64_t n = g.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float a = g.data_ptr<float>()[i], b = w.data_ptr<float>()[i];
        if (std::memcmp(&a, &b, sizeof a) != 0) FAIL("value " << i << ": got " << a << ", want " << b);
    }
}

// |got - want| <= 1e-5 * (|w| @ |x|) per output, the float32 rounding of a reordered sum.
void check_product(const at::Tensor& got, const at::Tensor& want, const at::Tensor& w, const at::Tensor& x) {
    REQUIRE(got.sizes() == want.sizes());
    const at::Tensor bound = at::linear(x.abs(), w.abs()) * 1e-5 + 1e-30;
    const at::Tensor err = (got - want).abs();
    const at::Tensor bad = err.gt(bound);
    INFO("max error " << err.max().item<float>() << ", bound there " << bound.flatten()[err.argmax()].item<float>());
    CHECK(bad.sum().item<int64_t>() == 0);
}

}  // namespace

TEST_CASE("Native weight matrices multiply like their float32 dequantization", "[model][weights]") {
    c10::InferenceMode guard;
    for (const char* file : kFiles) {
        const auto f = ModelFile::open(data_path(file));
        for (const char* name : {"token_embd.weight", "output.weight", "blk.0.attn_q.weight", "blk.2.ffn_down.weight",
                                 "blk.4.ffn_up.weight"}) {
            INFO(file << ": " << name << " (" << f->tensor(name).type << ")");
            const WeightMatrix native(f->tensor_bytes(name));
            const WeightMatrix dense = dense_of(*f, name);
            REQUIRE(native.native());
            CHECK(native.rows() == dense.rows());
            CHECK(native.cols() == dense.cols());
            CHECK(native.type_name() == f->tensor(name).type);
            CHECK(native.bytes() == static_cast<int64_t>(f->tensor(name).nbytes));
            const at::Tensor w = dense.dense();

            const at::Tensor x1 = at::randn({1, native.cols()});
            check_product(native.apply(x1), dense.apply(x1), w, x1);

            const at::Tensor x7 = at::randn({7, native.cols()});
            check_bitwise(native.apply(x7), at::linear(x7, w));

            const at::Tensor ids = at::tensor(std::vector<int64_t>{0, 5, 3, native.rows() - 1});
            check_bitwise(native.gather_rows(ids), w.index_select(0, ids));
            check_bitwise(native.to_float(), w);

            const WeightMatrix part = native.slice_rows(3, 9);
            CHECK(part.rows() == 9);
            check_bitwise(part.apply(x1), native.apply(x1).narrow(1, 3, 9));
            check_bitwise(part.apply(x7), at::linear(x7, w.narrow(0, 3, 9)));
        }
    }
}

TEST_CASE("Multi-token products of large matrices dequantize a tile at a time", "[model][weights]") {
    c10::InferenceMode guard;
    const auto f = ModelFile::open(data_path("stories260K-Q8_0.gguf"));
    const WeightMatrix native(f->tensor_bytes("output.weight"));  // [512, 64]
    const at::Tensor w = dense_of(*f, "output.weight").dense();
    const at::Tensor x = at::randn({5, native.cols()});
    const at::Tensor whole = native.apply(x);
    const int64_t before = WeightMatrix::set_tile_values(64 * 100);  // 100 rows per tile, 6 tiles
    const at::Tensor tiled = native.apply(x);
    WeightMatrix::set_tile_values(before);
    check_bitwise(whole, at::linear(x, w));
    // BLAS may order a narrower product's sums differently: equal within float32 rounding.
    check_product(tiled, whole, w, x);
}

TEST_CASE("Products of one input with several matrices equal the separate products", "[model][weights]") {
    c10::InferenceMode guard;
    const auto f = ModelFile::open(data_path("stories260K-Q4_1.gguf"));
    const WeightMatrix q(f->tensor_bytes("blk.1.attn_q.weight")), k(f->tensor_bytes("blk.1.attn_k.weight")),
        v(f->tensor_bytes("blk.1.attn_v.weight"));
    for (int64_t T : {1, 4}) {
        const at::Tensor x = at::randn({T, q.cols()});
        const std::vector<at::Tensor> all = WeightMatrix::apply_many({&q, &k, &v}, x);
        REQUIRE(all.size() == 3);
        check_bitwise(all[0], q.apply(x));
        check_bitwise(all[1], k.apply(x));
        check_bitwise(all[2], v.apply(x));
    }
}

TEST_CASE("A model keeps its file's blocks by default and float32 copies when asked", "[model][weights]") {
    for (const char* file : kFiles) {
        INFO(file);
        const auto f = ModelFile::open(data_path(file));
        ModelOptions f32;
        f32.native_weights = false;
        const auto native = LlamaModel::load(*f);
        const auto dense = LlamaModel::load(*f, f32);
        int64_t file_bytes = 0;
        for (const TensorDesc& t : f->tensors()) file_bytes += static_cast<int64_t>(t.nbytes);
        // Native: the file's bytes (norms are float32 in every file). Float32: 4 bytes a value.
        CHECK(native->weight_bytes() == file_bytes);
        CHECK(dense->weight_bytes() >= native->weight_bytes());

        const std::vector<int32_t> prompt = {1, 403, 407, 355, 261, 500};
        KvCache c1 = native->new_cache(), c2 = dense->new_cache();
        at::Tensor a = native->forward(prompt, c1), b = dense->forward(prompt, c2);
        // Prefill multiplies the same float32 weights through the same BLAS calls; the last
        // token's output product and every decode step sum in another order.
        CHECK((a - b).abs().max().item<double>() < 1e-4);
        for (int step = 0; step < 8; ++step) {
            const int32_t next = static_cast<int32_t>(b.argmax(-1).item<int64_t>());
            a = native->forward({next}, c1);
            b = dense->forward({next}, c2);
            const double diff = (a - b).abs().max().item<double>();
            INFO("decode step " << step << ": max logit difference " << diff);
            CHECK(diff < 1e-4);
        }
    }
}
