// What the model-backed evaluation tests share: the stories260K session (one per test binary,
// loaded on first use) and a small grid of configurations.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/test_util.h"
#include "core/eval/eval_grid.h"
#include "core/eval/eval_runner.h"
#include "core/session/session.h"

namespace snapkv::test {

inline Session& stories() {
    static Session s;
    if (!s.has_model()) s.load_model(data_path("stories260K.gguf"));
    return s;
}

// The full cache and each policy at each budget, W 16, K 5; answers of max_tokens tokens, KL over
// all of them.
inline eval::RunOptions small_grid(std::vector<std::string> policies, std::vector<int64_t> budgets,
                                   int64_t max_tokens) {
    eval::GridAxes a;
    a.policies = std::move(policies);
    a.budgets = std::move(budgets);
    a.windows = {16};
    a.kernels = {5};
    eval::RunOptions r;
    r.configs = eval::expand_configs(a);
    r.generation.max_tokens = max_tokens;
    r.kl_steps = max_tokens;
    return r;
}

}  // namespace snapkv::test
