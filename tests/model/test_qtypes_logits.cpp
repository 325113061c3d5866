// Models whose every matrix is one of the six newer weight types (tests/data/qtypes, quantized by
// llama-quantize) give the logits llama.cpp computes for the same model after its own F32
// dequantization: within 1e-4 of the largest logit, at every position, on the multi-token path
// (prefill: tiles dequantized for BLAS) and the single-token path (the block kernels, on every CPU
// path this machine has), and with --weights f32.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/io/model_file.h"
#include "core/model/llama_model.h"
#include "core/quant/cpu_features.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::compare_values;
using snapkv::test::data_path;

namespace {

struct PathGuard {
    ~PathGuard() { clear_cpu_path(); }
};

}  // namespace

TEST_CASE("Models in Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL and IQ4_XS give llama.cpp's logits of their F32 dequantization",
          "[model][weights][reference]") {
    PathGuard guard;
    std::ifstream in(data_path("qtypes/ref/manifest.json"));
    REQUIRE(in.good());
    const nlohmann::json manifest = nlohmann::json::parse(in);
    const std::vector<int32_t> ids = manifest["ids"].get<std::vector<int32_t>>();
    const auto V = manifest["n_vocab"].get<int64_t>();
    const auto N = static_cast<int64_t>(ids.size());
    for (const char* name : {"Q5_0", "Q5_1", "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS"}) {
        const std::vector<float> want = snapkv::test::tiny::floats(
            data_path(std::string("qtypes/ref/") + name + ".logits-deq.bin"));
        REQUIRE(static_cast<int64_t>(want.size()) == N * V);
        float largest = 0.0f;
        for (float v : want) largest = std::max(largest, std::fabs(v));
        const double tol = 1e-4 * largest;
        const auto file = ModelFile::open(data_path(std::string("qtypes/tiny-") + name + ".gguf"));
        for (bool native : {true, false}) {
            ModelOptions mo;
            mo.native_weights = native;
            const auto model = LlamaModel::load(*file, mo);
            {
                KvCache cache = model->new_cache();
                ForwardOptions fo;
                fo.all_logits = true;
                const at::Tensor t = model->forward(ids, cache, fo).contiguous();  // [N, V]
                const auto rep = compare_values(t.data_ptr<float>(), want.data(), want.size(), tol, 0.0);
                INFO(name << (native ? " native" : " float32") << " multi-token: " << rep.str());
                CHECK(rep.first_bad == -1);
            }
            for (CpuPath path : supported_cpu_paths()) {
                if (!native && path != supported_cpu_paths().back()) continue;  // f32 weights: one path
                set_cpu_path(path);
                KvCache cache = model->new_cache(4);
                std::vector<float> got;
                for (int32_t id : ids) {
                    const at::Tensor t = model->forward({id}, cache).contiguous();  // [1, V]
                    got.insert(got.end(), t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
                }
                const auto rep = compare_values(got, want, want.size(), tol, 0.0);
                INFO(name << (native ? " native" : " float32") << " single-token, " << cpu_path_name(path)
                          << " path: " << rep.str());
                CHECK(rep.first_bad == -1);
                clear_cpu_path();
            }
        }
    }
}
