// End-to-end forward passes through the model paths no llama.cpp reference covers: a Hugging Face
// folder (safetensors + tokenizer.json) and the qwen2 architecture (NeoX RoPE, QKV bias). Each
// folder is written here from stories260K.gguf, so the GGUF llama model (tied to llama.cpp and
// llama2.c in test_model.cpp) is the reference. F16/BF16 and sharded folders are tests/io's job.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "core/io/model_file.h"
#include "core/model/generator.h"
#include "core/model/llama_model.h"
#include "core/tokenizer/tokenizer.h"
#include "model/hf_writer.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::compare_values;
using snapkv::test::data_path;
namespace hf = snapkv::test::hf;

namespace {

const char* const kPrompt = "Once upon a time";
constexpr int64_t kGreedyTokens = 32;
// Same weights, same float32 arithmetic up to the order of the q.k sums (NeoX vs adjacent pairs).
constexpr double kLogitTol = 1e-5;

struct Loaded {
    std::unique_ptr<hf::ScratchFolder> folder;  // declared first: outlives the file reading it
    std::unique_ptr<ModelFile> file;
    std::unique_ptr<Tokenizer> tok;
    std::shared_ptr<const LlamaModel> model;
};

Loaded load_path(const std::string& path) {
    Loaded l;
    l.file = ModelFile::open(path);
    l.tok = Tokenizer::create(l.file->vocab());
    l.model = LlamaModel::load(*l.file);
    return l;
}

const Loaded& gguf_model() {
    static const Loaded l = load_path(data_path("stories260K.gguf"));
    return l;
}

// stories260K written as an HF folder with the given options, then opened like any other folder.
Loaded folder_model(const hf::FolderOptions& o) {
    auto folder = std::make_unique<hf::ScratchFolder>();
    hf::write_folder(*gguf_model().file, folder->path(), o);
    Loaded l = load_path(folder->path());
    l.folder = std::move(folder);
    return l;
}

hf::FolderOptions qwen2_options() {
    hf::FolderOptions o;
    o.model_type = "qwen2";
    return o;
}

// Deterministic, nonzero values of order one, different per element.
std::vector<float> bias_values(int64_t n, float seed) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(seed + 0.7f * static_cast<float>(i));
    return v;
}

std::vector<int32_t> prompt_ids(const Loaded& l) { return l.tok->encode(kPrompt, true, true); }

std::vector<int32_t> greedy(const Loaded& l, const std::vector<int32_t>& prompt) {
    KvCache cache = l.model->new_cache();
    GenerateOptions go;
    go.max_tokens = kGreedyTokens;
    go.stop_at_eog = false;
    return generate(*l.model, *l.tok, prompt, cache, go).ids;
}

// Logits of the last prompt token from an empty cache: [V].
std::vector<float> first_step_logits(const Loaded& l, const std::vector<int32_t>& prompt) {
    KvCache cache = l.model->new_cache();
    const at::Tensor logits = l.model->forward(prompt, cache).contiguous();  // [1, V]
    return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    return compare_values(a, b, std::min(a.size(), b.size()), 0.0, 0.0).max_abs;
}

}  // namespace

TEST_CASE("an HF folder written from the GGUF generates the same greedy tokens", "[model][formats]") {
    const Loaded& ref = gguf_model();
    const Loaded hf_llama = folder_model(hf::FolderOptions());

    SECTION("the folder opens as a tied llama model read from safetensors") {
        const ModelConfig& c = hf_llama.model->config();
        CHECK(hf_llama.file->format() == "safetensors (1 file)");
        CHECK(c.arch == "llama");
        CHECK_FALSE(c.rope_neox);
        CHECK_FALSE(c.qkv_bias);
        CHECK(c.tied_embeddings);
        CHECK(c.n_vocab == ref.model->config().n_vocab);
    }
    SECTION("its tokenizer.json encodes the prompt like the GGUF vocab") {
        CHECK(prompt_ids(hf_llama) == prompt_ids(ref));
    }
    SECTION("first-step logits are within 1e-5 of the GGUF model's") {
        const std::vector<float> want = first_step_logits(ref, prompt_ids(ref));
        const std::vector<float> got = first_step_logits(hf_llama, prompt_ids(hf_llama));
        REQUIRE(got.size() == want.size());
        const auto r = compare_values(got, want, want.size(), kLogitTol, 0.0);
        INFO(r.str());
        CHECK(r.first_bad == -1);
    }
    SECTION("32 greedy tokens from the prompt are identical") {
        const std::vector<int32_t> want = greedy(ref, prompt_ids(ref));
        REQUIRE(want.size() == static_cast<size_t>(kGreedyTokens));
        CHECK(greedy(hf_llama, prompt_ids(hf_llama)) == want);
    }
}

TEST_CASE("a qwen2 model with NeoX RoPE and zero biases equals the llama model it was made from", "[model][formats]") {
    // HF keeps Q/K rows in rotate-half order; NeoX RoPE on those rows computes the same q.k as
    // llama's adjacent-pair RoPE on the GGUF rows, and zero biases add nothing.
    const Loaded& ref = gguf_model();
    const Loaded qwen2 = folder_model(qwen2_options());

    SECTION("the folder opens as qwen2 with NeoX RoPE and QKV biases") {
        const ModelConfig& c = qwen2.model->config();
        CHECK(c.arch == "qwen2");
        CHECK(c.rope_neox);
        CHECK(c.qkv_bias);
        CHECK(qwen2.file->has_tensor("blk.4.attn_v.bias"));
    }
    SECTION("first-step logits are within 1e-5 of the llama model's") {
        const std::vector<int32_t> prompt = prompt_ids(ref);
        REQUIRE(prompt_ids(qwen2) == prompt);
        const std::vector<float> want = first_step_logits(ref, prompt);
        const std::vector<float> got = first_step_logits(qwen2, prompt);
        REQUIRE(got.size() == want.size());
        const auto r = compare_values(got, want, want.size(), kLogitTol, 0.0);
        INFO(r.str());
        CHECK(r.first_bad == -1);
    }
    SECTION("32 greedy tokens from the prompt are identical") {
        const std::vector<int32_t> prompt = prompt_ids(ref);
        CHECK(greedy(qwen2, prompt) == greedy(ref, prompt));
    }
}

TEST_CASE("QKV biases are applied: a v bias moves the logits, a q or k bias cannot move a one-token step",
          "[model][formats]") {
    const Loaded& ref = gguf_model();
    const ModelConfig& c = ref.model->config();
    const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim;
    const Loaded zero_bias = folder_model(qwen2_options());
    const std::vector<int32_t> prompt = prompt_ids(ref);
    const std::vector<int32_t> one_token = {ref.tok->bos_id()};

    SECTION("a nonzero v_proj bias moves the first-step logits by more than 1e-3") {
        hf::FolderOptions o = qwen2_options();
        o.v_bias = bias_values(n_kv, 1.0f);
        const Loaded biased = folder_model(o);
        const double d = max_abs_diff(first_step_logits(biased, prompt), first_step_logits(zero_bias, prompt));
        INFO("max abs logit change " << d);
        CHECK(d > 1e-3);
    }

    // The same bias values for both checks below; q and k each in turn.
    auto with_bias = [&](const std::string& proj) {
        hf::FolderOptions o = qwen2_options();
        (proj == "q" ? o.q_bias : o.k_bias) = bias_values(proj == "q" ? n_q : n_kv, 2.0f);
        return folder_model(o);
    };

    SECTION("a q_proj or k_proj bias leaves a one-token step exactly unchanged") {
        // One key: its softmax weight is exactly 1 whatever the score, so the output is its value.
        const std::vector<float> want = first_step_logits(zero_bias, one_token);
        for (const std::string proj : {"q", "k"}) {
            INFO(proj << "_proj bias");
            const std::vector<float> got = first_step_logits(with_bias(proj), one_token);
            const auto r = compare_values(got, want, want.size(), 0.0, 0.0);
            INFO(r.str());
            CHECK(r.first_bad == -1);
        }
    }
    SECTION("the same q_proj or k_proj bias moves a multi-token prompt's logits by more than 1e-3") {
        // With several keys the bias changes the scores unevenly (RoPE turns it per position).
        const std::vector<float> want = first_step_logits(zero_bias, prompt);
        for (const std::string proj : {"q", "k"}) {
            const double d = max_abs_diff(first_step_logits(with_bias(proj), prompt), want);
            INFO(proj << "_proj bias: max abs logit change " << d);
            CHECK(d > 1e-3);
        }
    }
}
