// The real stories260K GGUF fixtures (tests/data, facts from tests/data/PROVENANCE.md): header,
// hyperparameters, vocabulary, tensor types per file, and quantized weights compared with the F32
// original under error bounds derived from how llama.cpp quantizes each format.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/io/gguf_model.h"
#include "core/io/gguf_reader.h"
#include "core/io/model_file.h"
#include "tests/io/io_test_util.h"

using namespace snapkv;
using snapkv::test::compare_exact;
using snapkv::test::compare_floats;
using snapkv::test::data_path;

namespace {

std::map<std::string, int> type_counts(const ModelFile& m) {
    std::map<std::string, int> counts;
    for (const TensorDesc& t : m.tensors()) ++counts[t.type];
    return counts;
}

int64_t numel(const TensorDesc& t) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    return n;
}

std::vector<float> read_all(const ModelFile& m, const std::string& name) {
    std::vector<float> v(static_cast<size_t>(numel(m.tensor(name))));
    m.read_f32(name, v.data());
    return v;
}

}  // namespace

TEST_CASE("stories260K.gguf header parses as PROVENANCE.md describes", "[gguf]") {
    GgufReader r(data_path("stories260K.gguf"));
    CHECK(r.version() == 3);
    CHECK(r.tensors().size() == 48);
    CHECK(r.kvs().size() == 19);
    CHECK(r.alignment() == 32);
    CHECK(r.data_offset() == 14176);
    CHECK(r.file_size() == 1185376);
    const GgufTensorInfo* emb = r.find_tensor("token_embd.weight");
    REQUIRE(emb != nullptr);
    CHECK(emb->ne == std::vector<int64_t>{64, 512});     // GGUF order, innermost first
    CHECK(emb->shape == std::vector<int64_t>{512, 64});  // torch order
    const GgufTensorInfo* down = r.find_tensor("blk.4.ffn_down.weight");
    REQUIRE(down != nullptr);
    CHECK(down->shape == std::vector<int64_t>{64, 172});
    // The last tensor ends exactly at the end of the file.
    uint64_t end = 0;
    for (const GgufTensorInfo& t : r.tensors()) end = std::max(end, r.data_offset() + t.offset + t.nbytes);
    CHECK(end == r.file_size());
}

TEST_CASE("stories260K.gguf loads as a llama model with the documented hyperparameters", "[gguf]") {
    const auto m = ModelFile::open(data_path("stories260K.gguf"));
    CHECK(m->format() == "GGUF v3");
    const ModelConfig& c = m->config();
    CHECK(c.arch == "llama");
    CHECK(c.name == "llama");
    CHECK(c.n_layer == 5);
    CHECK(c.n_embd == 64);
    CHECK(c.n_ff == 172);
    CHECK(c.n_head == 8);
    CHECK(c.n_head_kv == 4);
    CHECK(c.head_dim == 8);
    CHECK(c.n_rot == 8);
    CHECK(c.n_vocab == 512);
    CHECK(c.n_ctx_train == 2048);
    CHECK(c.rope_freq_base == 10000.0f);
    CHECK(c.rope_scaling.type == "none");
    CHECK(c.rms_eps == 9.9999997e-06f);
    CHECK_FALSE(c.rope_neox);
    CHECK_FALSE(c.qkv_bias);
    CHECK_FALSE(c.tied_embeddings);  // output.weight is present (a copy of token_embd)
    CHECK(m->tensors().size() == 48);
    CHECK(m->tensor("blk.0.attn_k.weight").shape == std::vector<int64_t>{32, 64});
    CHECK(m->tensor("blk.0.attn_k.weight").nbytes == 32 * 64 * 4);
    CHECK_FALSE(m->has_tensor("rope_freqs.weight"));

    SECTION("output.weight is byte-identical to token_embd.weight") {
        const auto out = read_all(*m, "output.weight");
        const auto emb = read_all(*m, "token_embd.weight");
        const auto d = compare_exact(out.data(), emb.data(), static_cast<int64_t>(out.size()));
        INFO(d.text());
        CHECK(d.first_bad == -1);
    }
    SECTION("metadata_summary lists every key with short values") {
        const auto s = m->metadata_summary();
        CHECK(s.size() == 19);
        std::map<std::string, std::string> kv(s.begin(), s.end());
        CHECK(kv["general.architecture"] == "\"llama\"");
        CHECK(kv["llama.block_count"] == "5");
        CHECK(kv["tokenizer.ggml.tokens"].rfind("[512 x string] \"<unk>\", \"<s>\", \"</s>\", ...", 0) == 0);
        CHECK(kv["tokenizer.ggml.padding_token_id"] == "4294967295");
    }
}

TEST_CASE("stories260K.gguf vocabulary matches the llama2.c tokenizer", "[gguf]") {
    const auto m = ModelFile::open(data_path("stories260K.gguf"));
    const VocabData& v = m->vocab();
    CHECK(v.model == "llama");
    CHECK(v.pre == "default");
    REQUIRE(v.tokens.size() == 512);
    CHECK(v.tokens[0] == "<unk>");
    CHECK(v.tokens[1] == "<s>");
    CHECK(v.tokens[2] == "</s>");
    CHECK(v.tokens[3] == "<0x00>");
    CHECK(v.tokens[258] == "<0xFF>");
    CHECK(v.bos_id == 1);
    CHECK(v.eos_id == 2);
    CHECK(v.unk_id == 0);
    CHECK(v.pad_id == -1);  // stored as 0xFFFFFFFF
    CHECK(v.add_bos);
    CHECK_FALSE(v.add_eos);
    CHECK(v.add_space_prefix);
    CHECK(v.eog_ids == std::vector<int32_t>{2});
    REQUIRE(v.scores.size() == 512);
    CHECK(*std::min_element(v.scores.begin(), v.scores.end()) == -252.0f);
    CHECK(*std::max_element(v.scores.begin(), v.scores.end()) == 0.0f);
    REQUIRE(v.types.size() == 512);
    CHECK(std::count(v.types.begin(), v.types.end(), 6) == 256);  // byte tokens
    CHECK(std::count(v.types.begin(), v.types.end(), 1) == 253);  // normal
    CHECK(std::count(v.types.begin(), v.types.end(), 3) == 2);    // control
    CHECK(std::count(v.types.begin(), v.types.end(), 2) == 1);    // unknown
    CHECK(v.merges.empty());
    CHECK(v.chat_template.empty());
}

TEST_CASE("Re-encoded stories260K files hold the tensor types PROVENANCE.md lists", "[gguf]") {
    struct Case {
        const char* file;
        std::map<std::string, int> types;
    };
    const Case cases[] = {
        {"stories260K.gguf", {{"F32", 48}}},
        {"stories260K-F16.gguf", {{"F16", 37}, {"F32", 11}}},
        {"stories260K-Q8_0.gguf", {{"Q8_0", 32}, {"F16", 5}, {"F32", 11}}},
        {"stories260K-Q4_0.gguf", {{"Q4_0", 31}, {"Q8_0", 1}, {"F16", 5}, {"F32", 11}}},
        {"stories260K-Q4_1.gguf", {{"Q4_1", 31}, {"Q8_0", 1}, {"F16", 5}, {"F32", 11}}},
    };
    for (const Case& c : cases) {
        INFO(c.file);
        const auto m = ModelFile::open(data_path(c.file));
        CHECK(type_counts(*m) == c.types);
        const auto* g = dynamic_cast<const GgufModel*>(m.get());
        REQUIRE(g != nullptr);
        CHECK(g->reader().kvs().size() == (std::string(c.file) == "stories260K.gguf" ? 19u : 21u));
        if (std::string(c.file) != "stories260K.gguf") CHECK(g->reader().data_offset() == 14240);
        CHECK(m->config().n_layer == 5);
        CHECK(m->vocab().tokens.size() == 512);
    }
    const auto q4 = ModelFile::open(data_path("stories260K-Q4_0.gguf"));
    CHECK(q4->tensor("token_embd.weight").type == "Q4_0");
    CHECK(q4->tensor("output.weight").type == "Q8_0");
    CHECK(q4->tensor("blk.2.ffn_down.weight").type == "F16");
    CHECK(q4->tensor("blk.2.ffn_norm.weight").type == "F32");
}

// Error bounds per stored type, for a value `want` of the F32 original inside a 32-value block
// whose largest magnitude is amax and whose range is [lo, hi] (llama.cpp's reference quantizers,
// ggml-quants.c quantize_row_*_ref, no importance matrix, as PROVENANCE.md says):
// - F32: stored as is, exact.
// - F16: round to nearest half: |err| <= 2^-11 |want| for normals, 2^-25 for subnormals.
// - Q8_0: d = amax/127, q = round(x/d), d stored as f16: |err| <= d/2 + 127 d 2^-11 < 0.57 d.
// - Q4_0: d = -max/8 with max the signed extreme; q = x/d + 8 rounded and clamped to 15, so the
//   opposite extreme loses a whole step: |err| <= amax/8, plus 8 |d| 2^-11 for d's f16 rounding.
// - Q4_1: d = (hi - lo)/15, m = lo, q = round((x - lo)/d): |err| <= d/2, plus 15 d 2^-11 and
//   |lo| 2^-11 for the f16 rounding of d and m.
// A tiny absolute slack (2^-24) covers f16 subnormal scales.
TEST_CASE("Quantized stories260K weights stay within the quantization error of the F32 file", "[gguf][dequant]") {
    const auto ref = ModelFile::open(data_path("stories260K.gguf"));
    const char* files[] = {"stories260K-F16.gguf", "stories260K-Q8_0.gguf", "stories260K-Q4_0.gguf",
                           "stories260K-Q4_1.gguf"};
    const double eps16 = std::ldexp(1.0, -11), slack = std::ldexp(1.0, -24);
    for (const char* file : files) {
        const auto m = ModelFile::open(data_path(file));
        for (const TensorDesc& t : m->tensors()) {
            INFO(file << ": " << t.name << " (" << t.type << ")");
            const auto got = read_all(*m, t.name);
            const auto want = read_all(*ref, t.name);
            REQUIRE(got.size() == want.size());
            const int64_t n = static_cast<int64_t>(want.size());
            // Per 32-value block statistics of the original (rows are multiples of 32 for the
            // quantized tensors, so blocks never straddle rows).
            std::vector<double> amax((n + 31) / 32, 0.0), lo(amax.size(), 1e30), hi(amax.size(), -1e30);
            for (int64_t i = 0; i < n; ++i) {
                const size_t b = static_cast<size_t>(i / 32);
                amax[b] = std::max(amax[b], std::fabs(static_cast<double>(want[i])));
                lo[b] = std::min(lo[b], static_cast<double>(want[i]));
                hi[b] = std::max(hi[b], static_cast<double>(want[i]));
            }
            std::function<double(int64_t, float)> tol;
            if (t.type == "F32") {
                tol = [](int64_t, float) { return 0.0; };
            } else if (t.type == "F16") {
                tol = [&](int64_t, float w) { return eps16 * std::fabs(w) + slack; };
            } else if (t.type == "Q8_0") {
                tol = [&](int64_t i, float) { return 0.57 * amax[i / 32] / 127.0 + slack; };
            } else if (t.type == "Q4_0") {
                tol = [&](int64_t i, float) { return amax[i / 32] / 8.0 * (1.0 + 8 * eps16) + slack; };
            } else if (t.type == "Q4_1") {
                tol = [&](int64_t i, float) {
                    const double d = (hi[i / 32] - lo[i / 32]) / 15.0;
                    return d * (0.5 + 15 * eps16) + std::fabs(lo[i / 32]) * eps16 + slack;
                };
            } else {
                FAIL("unexpected type " << t.type);
            }
            const auto d = compare_floats(got.data(), want.data(), n, tol);
            INFO(d.text());
            CHECK(d.first_bad == -1);
        }
    }
}
