// Next-token choice from a logits vector: greedy argmax (lowest id on ties, like llama.cpp's greedy
// sampler) or temperature / top-k / top-p sampling with a seeded generator. CPU, float32 only.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <ATen/ATen.h>

namespace snapkv {

struct SamplingParams {
    bool greedy = true;
    float temperature = 0.8f;  // > 0
    int64_t top_k = 40;        // 0 = off
    float top_p = 0.95f;       // 1 = off
    uint64_t seed = 42;
};

void validate_sampling(const SamplingParams& p);  // throws InputError

class Sampler {
public:
    explicit Sampler(const SamplingParams& p);
    int32_t sample(const at::Tensor& logits);  // logits: [V] (any device/dtype)
    // Probabilities the sampler would draw from (after temperature/top-k/top-p), for display: [V].
    static std::vector<float> softmax(const float* logits, int64_t n, float temperature = 1.0f);

private:
    SamplingParams m_p;
    std::mt19937_64 m_rng;
};

int32_t argmax(const float* logits, int64_t n);

}  // namespace snapkv
