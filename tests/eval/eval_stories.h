// The stories260K session the model-backed evaluation tests share: one per test binary, loaded on
// first use.
#pragma once

#include "common/test_util.h"
#include "core/session/session.h"

namespace snapkv::test {

inline Session& stories() {
    static Session s;
    if (!s.has_model()) s.load_model(data_path("stories260K.gguf"));
    return s;
}

}  // namespace snapkv::test
