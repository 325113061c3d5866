// LlamaModel::forward_batch: one token for each of several sequences, each with its own KV cache
// (the compressed runs of an evaluation grid decoding in lockstep). Each row of its logits and each
// cache must equal those of the same sequence stepped alone with forward(), bit for bit, whatever
// the other sequences are: caches of different lengths, a sliding window passed by one of them,
// quantized and float weights.
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

void check_batch_equals_alone(const LlamaModel& model) {
    const ModelConfig& c = model.config();
    // Prompts of different lengths; the longest passes the tiny gemmas' sliding windows and stays
    // within the tiny phi3's 128-token context.
    const std::vector<int64_t> lengths = {5, 37, 110, 1};
    const auto n = lengths.size();
    std::vector<KvCache> alone, batched;
    std::vector<int32_t> next(n);
    for (size_t j = 0; j < n; ++j) {
        const auto ids = random_ids(lengths[j], c.n_vocab, static_cast<uint32_t>(17 + j));
        for (auto* caches : {&alone, &batched}) {
            caches->push_back(model.new_cache());
            model.forward(ids, caches->back());
        }
        next[j] = ids.back();
    }
    std::mt19937 rng(3);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(c.n_vocab - 1));
    for (int step = 0; step < 4; ++step) {
        INFO("step " << step);
        // One sequence sits the last steps out, as a run that reached its end does.
        const size_t active = step < 2 ? n : n - 1;
        std::vector<int32_t> tokens;
        std::vector<KvCache*> caches;
        for (size_t j = 0; j < active; ++j) {
            tokens.push_back(next[j]);
            caches.push_back(&batched[j]);
        }
        const at::Tensor got = model.forward_batch(tokens, caches);  // [active, V]
        REQUIRE(got.size(0) == static_cast<int64_t>(active));
        for (size_t j = 0; j < active; ++j) {
            INFO("sequence " << j);
            const at::Tensor want = model.forward({tokens[j]}, alone[j]);  // [1, V]
            CHECK(at::equal(got.narrow(0, static_cast<int64_t>(j), 1), want));
            REQUIRE(batched[j].n_past() == alone[j].n_past());
            for (int64_t l = 0; l < c.n_layer; ++l) {
                const LayerKv& a = alone[j].layer(l);
                const LayerKv& b = batched[j].layer(l);
                REQUIRE(a.size() == b.size());
                CHECK(at::equal(a.keys().narrow(1, 0, a.size()), b.keys().narrow(1, 0, b.size())));
                CHECK(at::equal(a.values().narrow(1, 0, a.size()), b.values().narrow(1, 0, b.size())));
            }
            next[j] = pick(rng);
        }
    }
}

}  // namespace

TEST_CASE("forward_batch gives each sequence the logits and cache of stepping it alone", "[model]") {
    for (const std::string& name : snapkv::test::tiny::names()) {
        INFO(name);
        const auto file = ModelFile::open(snapkv::test::tiny::path(name, "gguf"));
        check_batch_equals_alone(*LlamaModel::load(*file));
    }
    for (const char* f : {"stories260K.gguf", "stories260K-Q4_1.gguf", "stories260K-Q8_0.gguf", "qtypes/tiny-Q2_K.gguf",
                          "qtypes/tiny-IQ4_XS.gguf"}) {
        INFO(f);
        const auto file = ModelFile::open(snapkv::test::data_path(f));
        check_batch_equals_alone(*LlamaModel::load(*file));
    }
}

TEST_CASE("forward_batch refuses what it cannot run, naming it", "[model]") {
    const auto file = ModelFile::open(snapkv::test::data_path("stories260K.gguf"));
    const auto model = LlamaModel::load(*file);
    KvCache a = model->new_cache();
    model->forward({1, 2, 3}, a);
    CHECK_THROWS_WITH(model->forward_batch({}, {}), Catch::Contains("no sequences"));
    CHECK_THROWS_WITH(model->forward_batch({static_cast<int32_t>(model->config().n_vocab + 5)}, {&a}),
                      Catch::Contains("outside the vocabulary"));
    CHECK_THROWS(model->forward_batch({1, 2}, {&a}));
}
