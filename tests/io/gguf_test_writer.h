// A small GGUF writer for tests: builds valid files from scratch (metadata of every type, tensors
// of any ggml type id with caller-supplied bytes) and exposes knobs to make them invalid (counts,
// version, offsets, raw values). It writes from the GGUF spec, independently of gguf_reader.
// Also builds a tiny but complete llama/qwen2 model. Test-only: no validation of its own.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace snapkv::test {

struct ByteWriter {
    std::vector<uint8_t> b;
    template <class T>
    void put(T v) {
        uint8_t tmp[sizeof(T)];
        std::memcpy(tmp, &v, sizeof(T));  // the test host is little-endian, like GGUF
        b.insert(b.end(), tmp, tmp + sizeof(T));
    }
    void str(const std::string& s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
    }
    void bytes(const std::vector<uint8_t>& v) { b.insert(b.end(), v.begin(), v.end()); }
};

// GGUF metadata type ids (gguf spec).
enum : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kStr = 8,
    kArr = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
};

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

class GgufWriter {
public:
    struct Kv {
        std::string key;
        uint32_t type;
        std::vector<uint8_t> payload;  // the value bytes after the type id
    };
    struct Tensor {
        std::string name;
        std::vector<uint64_t> ne;  // innermost first, as GGUF stores them
        uint32_t type = 0;
        std::vector<uint8_t> data;
        std::optional<uint64_t> offset;  // override the computed offset
    };
    // Where things ended up in the last build().
    struct Layout {
        size_t kv_begin = 0, tensor_info_begin = 0, data_begin = 0, size = 0;
        std::vector<size_t> kv_at;           // offset of each key/value entry
        std::vector<size_t> tensor_info_at;  // offset of each tensor info
    };

    uint32_t magic = 0x46554747;  // "GGUF" read as a little-endian u32
    uint32_t version = 3;
    std::optional<uint64_t> n_tensors_override, n_kv_override;
    uint64_t data_alignment = 32;  // used for layout; general.alignment must be set separately
    std::vector<Kv> kvs;
    std::vector<Tensor> tensors;

    void kv_raw(const std::string& key, uint32_t type, std::vector<uint8_t> payload, bool append = false) {
        if (!append)
            for (Kv& kv : kvs)
                if (kv.key == key) {
                    kv.type = type;
                    kv.payload = std::move(payload);
                    return;
                }
        kvs.push_back({key, type, std::move(payload)});
    }
    template <class T>
    void kv_scalar(const std::string& key, uint32_t type, T v) {
        ByteWriter w;
        w.put<T>(v);
        kv_raw(key, type, w.b);
    }
    void kv_u32(const std::string& k, uint32_t v) { kv_scalar<uint32_t>(k, kU32, v); }
    void kv_i32(const std::string& k, int32_t v) { kv_scalar<int32_t>(k, kI32, v); }
    void kv_f32(const std::string& k, float v) { kv_scalar<float>(k, kF32, v); }
    void kv_bool(const std::string& k, bool v) { kv_scalar<uint8_t>(k, kBool, v ? 1 : 0); }
    void kv_str(const std::string& k, const std::string& v) {
        ByteWriter w;
        w.str(v);
        kv_raw(k, kStr, w.b);
    }
    void kv_str_array(const std::string& k, const std::vector<std::string>& v) {
        ByteWriter w;
        w.put<uint32_t>(kStr);
        w.put<uint64_t>(v.size());
        for (const std::string& s : v) w.str(s);
        kv_raw(k, kArr, w.b);
    }
    void kv_f32_array(const std::string& k, const std::vector<float>& v) {
        ByteWriter w;
        w.put<uint32_t>(kF32);
        w.put<uint64_t>(v.size());
        for (float x : v) w.put<float>(x);
        kv_raw(k, kArr, w.b);
    }
    void kv_i32_array(const std::string& k, const std::vector<int32_t>& v) {
        ByteWriter w;
        w.put<uint32_t>(kI32);
        w.put<uint64_t>(v.size());
        for (int32_t x : v) w.put<int32_t>(x);
        kv_raw(k, kArr, w.b);
    }
    void remove_kv(const std::string& key) {
        for (size_t i = 0; i < kvs.size(); ++i)
            if (kvs[i].key == key) {
                kvs.erase(kvs.begin() + static_cast<long>(i));
                return;
            }
    }

    void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, std::vector<uint8_t> data) {
        tensors.push_back({name, std::move(ne), type, std::move(data), std::nullopt});
    }
    Tensor* find_tensor(const std::string& name) {
        for (Tensor& t : tensors)
            if (t.name == name) return &t;
        return nullptr;
    }
    void remove_tensor(const std::string& name) {
        for (size_t i = 0; i < tensors.size(); ++i)
            if (tensors[i].name == name) {
                tensors.erase(tensors.begin() + static_cast<long>(i));
                return;
            }
    }

    std::vector<uint8_t> build(Layout* layout = nullptr) const {
        Layout l;
        ByteWriter w;
        w.put<uint32_t>(magic);
        w.put<uint32_t>(version);
        w.put<uint64_t>(n_tensors_override.value_or(tensors.size()));
        w.put<uint64_t>(n_kv_override.value_or(kvs.size()));
        l.kv_begin = w.b.size();
        for (const Kv& kv : kvs) {
            l.kv_at.push_back(w.b.size());
            w.str(kv.key);
            w.put<uint32_t>(kv.type);
            w.bytes(kv.payload);
        }
        l.tensor_info_begin = w.b.size();
        std::vector<uint64_t> offsets;
        uint64_t next = 0;
        for (const Tensor& t : tensors) {
            offsets.push_back(t.offset.value_or(next));
            next += t.data.size();
            next = (next + data_alignment - 1) / data_alignment * data_alignment;
        }
        for (size_t i = 0; i < tensors.size(); ++i) {
            const Tensor& t = tensors[i];
            l.tensor_info_at.push_back(w.b.size());
            w.str(t.name);
            w.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
            for (uint64_t d : t.ne) w.put<uint64_t>(d);
            w.put<uint32_t>(t.type);
            w.put<uint64_t>(offsets[i]);
        }
        while (w.b.size() % data_alignment != 0) w.b.push_back(0);
        l.data_begin = w.b.size();
        uint64_t pos = 0;
        for (const Tensor& t : tensors) {
            w.bytes(t.data);
            pos += t.data.size();
            while (pos % data_alignment != 0) {
                w.b.push_back(0);
                ++pos;
            }
        }
        l.size = w.b.size();
        if (layout != nullptr) *layout = l;
        return w.b;
    }
};

// Deterministic values in about [-1, 1] so tests do not depend on a random generator.
inline std::vector<float> test_values(size_t n, float seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = std::sin(static_cast<float>(i) * 0.731f + seed) * (0.5f + 0.5f * std::cos(seed * i));
    return v;
}

struct TinySpec {
    std::string arch = "llama";
    uint32_t n_layer = 1, n_embd = 32, n_head = 4, n_head_kv = 2, n_ff = 64, n_vocab = 16;
    bool with_output = true;
};

// A valid tiny model: every tensor llama.cpp's llama/qwen2 loaders need, F32, 16 tokens.
inline GgufWriter tiny_model(const TinySpec& s = TinySpec()) {
    GgufWriter g;
    const std::string a = s.arch + ".";
    g.kv_str("general.architecture", s.arch);
    g.kv_str("general.name", "tiny");
    g.kv_u32(a + "context_length", 128);
    g.kv_u32(a + "embedding_length", s.n_embd);
    g.kv_u32(a + "feed_forward_length", s.n_ff);
    g.kv_u32(a + "block_count", s.n_layer);
    g.kv_u32(a + "attention.head_count", s.n_head);
    g.kv_u32(a + "attention.head_count_kv", s.n_head_kv);
    g.kv_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    g.kv_str("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    while (tokens.size() < s.n_vocab) tokens.push_back(std::string(1, char('a' + tokens.size())));
    std::vector<float> scores(tokens.size());
    std::vector<int32_t> types(tokens.size(), 1);
    for (size_t i = 0; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i);
    types[0] = 2;
    types[1] = types[2] = 3;
    g.kv_str_array("tokenizer.ggml.tokens", tokens);
    g.kv_f32_array("tokenizer.ggml.scores", scores);
    g.kv_i32_array("tokenizer.ggml.token_type", types);
    g.kv_u32("tokenizer.ggml.bos_token_id", 1);
    g.kv_u32("tokenizer.ggml.eos_token_id", 2);
    g.kv_u32("tokenizer.ggml.unknown_token_id", 0);

    const uint64_t hd = s.n_embd / s.n_head, q = s.n_head * hd, kv = s.n_head_kv * hd;
    float seed = 0.1f;
    auto add = [&](const std::string& name, std::vector<uint64_t> ne) {
        size_t n = 1;
        for (uint64_t d : ne) n *= d;
        g.tensor(name, std::move(ne), 0, f32_bytes(test_values(n, seed += 1.0f)));
    };
    add("token_embd.weight", {s.n_embd, s.n_vocab});
    add("output_norm.weight", {s.n_embd});
    if (s.with_output) add("output.weight", {s.n_embd, s.n_vocab});
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        add(b + "attn_norm.weight", {s.n_embd});
        add(b + "attn_q.weight", {s.n_embd, q});
        add(b + "attn_k.weight", {s.n_embd, kv});
        add(b + "attn_v.weight", {s.n_embd, kv});
        add(b + "attn_output.weight", {q, s.n_embd});
        if (s.arch == "qwen2") {
            add(b + "attn_q.bias", {q});
            add(b + "attn_k.bias", {kv});
            add(b + "attn_v.bias", {kv});
        }
        add(b + "ffn_norm.weight", {s.n_embd});
        add(b + "ffn_gate.weight", {s.n_embd, s.n_ff});
        add(b + "ffn_up.weight", {s.n_embd, s.n_ff});
        add(b + "ffn_down.weight", {s.n_ff, s.n_embd});
    }
    return g;
}

}  // namespace snapkv::test
