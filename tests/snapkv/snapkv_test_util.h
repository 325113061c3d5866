// Small helpers the snapkv tests share. Tensor comparison lives in tensor_compare.h and the naive
// loop reference in naive_reference.h; this file holds neither.
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "core/common/errors.h"

namespace snapkv_test {

// Runs f and returns the message of the snapkv::InputError it throws; fails the test if it
// throws nothing.
template <class F>
std::string input_error_of(F&& f) {
    try {
        f();
    } catch (const snapkv::InputError& e) {
        return e.what();
    }
    FAIL("expected an InputError");
    return "";
}

}  // namespace snapkv_test
