// Every supported architecture against Hugging Face transformers: the tiny models of
// tests/data/tiny were built and run by transformers (float32, eager attention), then written both
// as the HF folder transformers saves and as a GGUF converted the way llama.cpp's converter does.
// Per architecture and format: logits at every position within 1e-4, greedy continuation equal,
// GGUF and folder within 1e-5 of each other, and the window-attention rows the head view shows
// (Session::window_attention) within 1e-5 of transformers' attention probabilities.
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "common/tiny_models.h"
#include "core/io/model_file.h"
#include "core/model/generator.h"
#include "core/model/llama_model.h"
#include "core/session/session.h"
#include "core/tokenizer/tokenizer.h"

// After LibTorch: its glog CHECK macro must not shadow Catch's.
#include <catch2/catch.hpp>

using namespace snapkv;
using snapkv::test::compare_values;
namespace tiny = snapkv::test::tiny;

namespace {

constexpr double kLogitTol = 1e-4;   // float32, max abs, every position: ten times below the
                                     // ~1e-3 that one misrounded RoPE angle moves logits by
constexpr double kFormatTol = 1e-5;  // GGUF vs HF folder: the same float16 weights
constexpr double kAttnTol = 1e-5;    // window-attention rows vs transformers' probabilities

struct Run {
    std::unique_ptr<ModelFile> file;
    std::shared_ptr<const LlamaModel> model;
    std::unique_ptr<Tokenizer> tok;
};

Run open(const std::string& name, const std::string& format) {
    Run r;
    r.file = ModelFile::open(tiny::path(name, format));
    r.model = LlamaModel::load(*r.file);
    r.tok = Tokenizer::create(r.file->vocab());
    return r;
}

std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

// [N, V] logits of the whole sequence from an empty cache.
std::vector<float> all_logits(const Run& r, const std::vector<int32_t>& ids) {
    KvCache cache = r.model->new_cache();
    ForwardOptions fo;
    fo.all_logits = true;
    fo.attn_chunk = 16;  // several chunks: the sliding-window mask must hold across them
    const at::Tensor t = r.model->forward(ids, cache, fo).contiguous();
    return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
}

void check_arch(const std::string& name) {
    const nlohmann::json ref = tiny::ref(name);
    const std::vector<int32_t> ids = ids_of(ref["ids"]);
    const std::vector<float> want = tiny::logits(name);
    const auto V = ref["n_vocab"].get<int64_t>();
    const auto N = static_cast<int64_t>(ids.size());
    REQUIRE(static_cast<int64_t>(want.size()) == N * V);
    std::vector<float> by_format[2];
    for (int f = 0; f < 2; ++f) {
        const std::string format = f == 0 ? "gguf" : "hf";
        DYNAMIC_SECTION(format << ": logits at every position within 1e-4 of transformers") {
            const Run r = open(name, format);
            CHECK(r.model->config().arch == ref["arch"].get<std::string>());
            const std::vector<float> got = all_logits(r, ids);
            REQUIRE(got.size() == want.size());
            const auto rep = compare_values(got, want, want.size(), kLogitTol, 0.0);
            INFO(name << " " << format << ": " << rep.str());
            CHECK(rep.first_bad == -1);
            by_format[f] = got;
        }
        DYNAMIC_SECTION(format << ": token-by-token decode within 1e-4 of transformers, native and float32 weights") {
            // The single-token step (LlamaModel::forward_one) on its own, from a cache that must
            // grow, with the attention probe on (its rows are probabilities); and once with a
            // capture, which takes forward()'s general path and its single-query attention.
            for (int mode = 0; mode < 3; ++mode) {
                const bool native = mode != 1, capture = mode == 2;
                Run r;
                r.file = ModelFile::open(tiny::path(name, format));
                ModelOptions mo;
                mo.native_weights = native;
                r.model = LlamaModel::load(*r.file, mo);
                KvCache cache = r.model->new_cache(2);
                std::vector<float> got;
                for (int32_t id : ids) {
                    AttentionProbe probe;
                    ForwardOptions fo;
                    fo.probe = &probe;
                    PrefillCapture cap;
                    cap.max_window = 1;
                    if (capture) fo.capture = &cap;
                    const at::Tensor t = r.model->forward({id}, cache, fo).contiguous();
                    got.insert(got.end(), t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
                    for (const at::Tensor& p : probe.probs)
                        CHECK(at::allclose(p.sum(-1), at::ones({p.size(0)}), 1e-5, 1e-5));
                }
                REQUIRE(got.size() == want.size());
                const auto rep = compare_values(got, want, want.size(), kLogitTol, 0.0);
                INFO(name << " " << format << (native ? " native" : " float32") << (capture ? " with a capture" : "")
                          << ": " << rep.str());
                CHECK(rep.first_bad == -1);
            }
        }
        DYNAMIC_SECTION(format << ": greedy continuation equals transformers'") {
            const Run r = open(name, format);
            KvCache cache = r.model->new_cache();
            GenerateOptions go;
            go.max_tokens = static_cast<int64_t>(ref["greedy"].size());
            go.stop_at_eog = false;
            CHECK(generate(*r.model, *r.tok, ids, cache, go).ids == ids_of(ref["greedy"]));
        }
        DYNAMIC_SECTION(format << ": window-attention rows within 1e-5 of transformers' probabilities") {
            Session s;
            s.load_model(tiny::path(name, format));
            PromptSpec p;
            p.ids = ids;
            s.prefill(p);
            const auto n_layer = ref["n_layer"].get<int64_t>();
            const auto H = ref["n_head"].get<int64_t>();
            const auto W = ref["attn_rows"].get<int64_t>();
            const std::vector<float> attn = tiny::attention(name);  // [n_layer, H, W, N]
            REQUIRE(static_cast<int64_t>(attn.size()) == n_layer * H * W * N);
            for (int64_t l = 0; l < n_layer; ++l)
                for (int64_t h = 0; h < H; ++h) {
                    const std::vector<float> rows = s.window_attention(l, h, W);  // [W, N]
                    REQUIRE(static_cast<int64_t>(rows.size()) == W * N);
                    const float* expect = attn.data() + ((l * H + h) * W) * N;
                    const auto rep = compare_values(rows, expect, rows.size(), kAttnTol, 0.0);
                    INFO(name << " " << format << " layer " << l << " head " << h << ": " << rep.str());
                    CHECK(rep.first_bad == -1);
                }
        }
    }
    SECTION("GGUF and HF folder give the same logits (within 1e-5)") {
        const std::vector<float> a = all_logits(open(name, "gguf"), ids);
        const std::vector<float> b = all_logits(open(name, "hf"), ids);
        REQUIRE(a.size() == b.size());
        const auto rep = compare_values(a, b, a.size(), kFormatTol, 0.0);
        INFO(name << ": " << rep.str());
        CHECK(rep.first_bad == -1);
    }
}

}  // namespace

TEST_CASE("llama3 (Llama 3.x: llama3 RoPE scaling, rope_freqs) matches transformers", "[model][arch]") {
    check_arch("llama3");
}
TEST_CASE("mistral (sliding window on every layer) matches transformers", "[model][arch]") { check_arch("mistral"); }
TEST_CASE("qwen2 (NeoX RoPE, QKV bias, tied) matches transformers", "[model][arch]") { check_arch("qwen2"); }
TEST_CASE("qwen3 (q/k norm, head_dim != n_embd / n_head) matches transformers", "[model][arch]") {
    check_arch("qwen3");
}
TEST_CASE("gemma2 (soft-caps, pre/post norms, GeGLU, alternate sliding layers) matches transformers", "[model][arch]") {
    check_arch("gemma2");
}
TEST_CASE("gemma3 (q/k norm, local/global RoPE bases, sliding pattern) matches transformers", "[model][arch]") {
    check_arch("gemma3");
}
TEST_CASE("phi3 (fused QKV and gate-up, longrope, partial RoPE, sliding window) matches transformers",
          "[model][arch]") {
    check_arch("phi3");
}
