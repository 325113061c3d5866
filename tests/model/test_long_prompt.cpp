// A long prompt's layers run in token chunks on the CPU (long_prompt_layer.cpp): the logits, the
// KV cache and the prefill capture must equal those of the same tokens fed in calls short enough
// to run whole, for architectures with grouped-query attention, a sliding window, soft-caps,
// post-norms, q/k norms and GeGLU (the tiny transformers-made models) and for stories260K.
#include <random>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/io/model_file.h"
#include "core/model/llama_model.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::random_ids;

namespace {

constexpr int64_t kLong = 1500;  // above the 1024-token chunk: one call runs in two chunks
constexpr int64_t kSplit = 700;  // the same tokens as calls of 700 and 800: each runs whole

void check_same_prefill(const LlamaModel& model, const std::vector<int32_t>& ids) {
    const ModelConfig& c = model.config();
    // One call: the chunked layers. Every position's logits, H2O sums, the last 16 queries.
    KvCache one = model.new_cache();
    PrefillCapture cap_one;
    cap_one.max_window = 16;
    cap_one.h2o = true;
    cap_one.query_stats = true;
    ForwardOptions fo;
    fo.all_logits = true;
    fo.capture = &cap_one;
    const at::Tensor logits_one = model.forward(ids, one, fo);  // [L, V]

    // Two calls that each run whole.
    KvCache two = model.new_cache();
    PrefillCapture cap_a, cap_b;
    for (PrefillCapture* p : {&cap_a, &cap_b}) {
        p->max_window = 16;
        p->h2o = true;
    }
    const std::vector<int32_t> first(ids.begin(), ids.begin() + kSplit), rest(ids.begin() + kSplit, ids.end());
    fo.capture = &cap_a;
    const at::Tensor la = model.forward(first, two, fo);
    fo.capture = &cap_b;
    const at::Tensor lb = model.forward(rest, two, fo);
    const at::Tensor logits_two = at::cat({la, lb}, 0);

    REQUIRE(logits_one.sizes() == logits_two.sizes());
    CHECK(at::allclose(logits_one, logits_two, 1e-4, 1e-4));
    REQUIRE(one.n_past() == two.n_past());
    for (int64_t l = 0; l < c.n_layer; ++l) {
        INFO("layer " << l);
        const LayerKv& a = one.layer(l);
        const LayerKv& b = two.layer(l);
        REQUIRE(a.size() == b.size());
        CHECK(at::allclose(a.keys().narrow(1, 0, a.size()), b.keys().narrow(1, 0, b.size()), 1e-4, 1e-4));
        CHECK(at::allclose(a.values().narrow(1, 0, a.size()), b.values().narrow(1, 0, b.size()), 1e-4, 1e-4));
        CHECK(at::equal(a.positions().narrow(1, 0, a.size()), b.positions().narrow(1, 0, b.size())));
        const auto li = static_cast<size_t>(l);
        CHECK(at::allclose(cap_one.window_queries[li], cap_b.window_queries[li], 1e-4, 1e-4));
        // H2O: the second call's sums cover every key; the first call's add its own queries'.
        at::Tensor h2o_two = cap_b.h2o_scores[li].clone();  // [H, L]
        h2o_two.narrow(1, 0, kSplit).add_(cap_a.h2o_scores[li]);
        CHECK(at::allclose(cap_one.h2o_scores[li], h2o_two, 1e-4, 1e-4));
        // The query statistics of one call over every query: a count of L - 16 after the first 16.
        const QueryStats& qs = cap_one.queries[li];
        CHECK(qs.count == static_cast<int64_t>(ids.size()) - kQueryHeadPositions);
        CHECK(qs.head.size(1) == kQueryHeadPositions);
        CHECK(at::isfinite(qs.m2).all().item<bool>());
    }
}

}  // namespace

TEST_CASE("a long prompt's chunked layers equal the prompt fed in calls that run whole", "[model][long]") {
    for (const std::string name : {"gemma3", "gemma2", "qwen3", "qwen2", "llama3", "mistral"}) {
        INFO(name);
        const auto file = ModelFile::open(snapkv::test::tiny::path(name, "gguf"));
        const auto model = LlamaModel::load(*file);
        check_same_prefill(*model, random_ids(kLong, model->config().n_vocab, 7));
    }
    const auto file = ModelFile::open(snapkv::test::data_path("stories260K.gguf"));
    const auto model = LlamaModel::load(*file);
    check_same_prefill(*model, random_ids(kLong, model->config().n_vocab, 11));
}
