// Shared test helpers: fixture paths, the llama.cpp reference JSON, and one tensor comparison that
// reports max abs/rel error and the first mismatching index.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace snapkv::test {

inline std::string data_path(const std::string& rel) { return std::string(SNAPKV_TEST_DATA) + "/" + rel; }

inline std::string smollm2_path() {
    if (const char* env = std::getenv("SNAPKV_SMOLLM2")) return env;
    return std::string(SNAPKV_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// Gemma 3 270M Q4_K_M, the second real model (datasets/fetch_model.sh; SNAPKV_GEMMA3 overrides).
inline std::string gemma3_path() {
    if (const char* env = std::getenv("SNAPKV_GEMMA3")) return env;
    return std::string(SNAPKV_MODELS_DIR) + "/gemma-3-270m-q4_k_m.gguf";
}

inline bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

// n token ids drawn uniformly from 1 .. vocab - 1 with the given seed.
inline std::vector<int32_t> random_ids(int64_t n, int64_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(1, static_cast<int32_t>(vocab - 1));
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = pick(rng);
    return ids;
}

inline const nlohmann::json& reference() {
    static const nlohmann::json j = [] {
        std::ifstream in(data_path("reference/llamacpp-reference.json"));
        return nlohmann::json::parse(in);
    }();
    return j;
}

inline const nlohmann::json& first_logits() {
    static const nlohmann::json j = [] {
        std::ifstream in(data_path("reference/llamacpp-first-logits.json"));
        return nlohmann::json::parse(in);
    }();
    return j;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct CompareReport {
    double max_abs = 0;
    double max_rel = 0;
    long first_bad = -1;
    std::string str() const {
        std::ostringstream ss;
        ss << "max abs err " << max_abs << ", max rel err " << max_rel << ", first index over tolerance " << first_bad;
        return ss.str();
    }
};

// Compare two float sequences; an element is bad when |a-b| > atol + rtol*|b|.
template <typename A, typename B>
CompareReport compare_values(const A& a, const B& b, size_t n, double atol, double rtol) {
    CompareReport r;
    for (size_t i = 0; i < n; ++i) {
        const double x = a[i], y = b[i];
        const double d = std::fabs(x - y);
        r.max_abs = std::max(r.max_abs, d);
        if (y != 0) r.max_rel = std::max(r.max_rel, d / std::fabs(y));
        if ((d > atol + rtol * std::fabs(y) || std::isnan(x) != std::isnan(y)) && r.first_bad < 0)
            r.first_bad = static_cast<long>(i);
    }
    return r;
}

}  // namespace snapkv::test
