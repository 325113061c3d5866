// The one tensor comparison of the snapkv tests: element-wise |got - want| <= atol + rtol * |want|,
// reporting shapes, max abs / rel error and the first mismatching index. Use CHECK_TENSORS_CLOSE so
// that a failure prints the report. Not a general-purpose assertion library.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

namespace snapkv_test {

struct TensorComparison {
    bool ok = true;
    double max_abs = 0.0;
    double max_rel = 0.0;
    int64_t mismatches = 0;
    std::string report;  // one line for INFO
};

inline std::string shape_of(const at::Tensor& t) {
    std::ostringstream os;
    os << "[";
    for (int64_t i = 0; i < t.dim(); ++i) os << (i ? ", " : "") << t.size(i);
    os << "]";
    return os.str();
}

// got, want: any shapes/devices/dtypes; compared as double on the CPU.
inline TensorComparison compare_tensors(const at::Tensor& got, const at::Tensor& want, double atol, double rtol) {
    TensorComparison r;
    std::ostringstream os;
    if (!got.defined() || !want.defined() || got.sizes() != want.sizes()) {
        r.ok = false;
        os << "shape mismatch: got " << (got.defined() ? shape_of(got) : "undefined") << ", want "
           << (want.defined() ? shape_of(want) : "undefined");
        r.report = os.str();
        return r;
    }
    at::Tensor g = got.detach().to(at::kCPU, at::kDouble).contiguous();
    at::Tensor w = want.detach().to(at::kCPU, at::kDouble).contiguous();
    const double* gp = g.data_ptr<double>();
    const double* wp = w.data_ptr<double>();
    int64_t first_bad = -1;
    for (int64_t i = 0; i < g.numel(); ++i) {
        const double abs_err = std::fabs(gp[i] - wp[i]);
        const double rel_err = abs_err / std::max(std::fabs(wp[i]), 1e-30);
        const bool bad = std::isnan(gp[i]) != std::isnan(wp[i]) ||
                         (!std::isnan(wp[i]) && abs_err > atol + rtol * std::fabs(wp[i]));
        if (!std::isnan(abs_err)) {
            r.max_abs = std::max(r.max_abs, abs_err);
            r.max_rel = std::max(r.max_rel, rel_err);
        }
        if (bad) {
            ++r.mismatches;
            if (first_bad < 0) first_bad = i;
        }
    }
    r.ok = r.mismatches == 0;
    os << "shape " << shape_of(g) << ", max abs err " << r.max_abs << ", max rel err " << r.max_rel << " (atol " << atol
       << ", rtol " << rtol << "), " << r.mismatches << " mismatches";
    if (first_bad >= 0) {
        // Unravel the flat index into a multi-index.
        std::vector<int64_t> idx(static_cast<size_t>(g.dim()));
        int64_t rest = first_bad;
        for (int64_t d = g.dim() - 1; d >= 0; --d) {
            idx[static_cast<size_t>(d)] = rest % g.size(d);
            rest /= g.size(d);
        }
        os << "; first at [";
        for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
        os << "]: got " << gp[first_bad] << ", want " << wp[first_bad];
    }
    r.report = os.str();
    return r;
}

}  // namespace snapkv_test

#define CHECK_TENSORS_CLOSE(got, want, atol, rtol)                                            \
    do {                                                                                      \
        const auto snapkv_cmp_ = snapkv_test::compare_tensors((got), (want), (atol), (rtol)); \
        INFO(#got " vs " #want ": " << snapkv_cmp_.report);                                   \
        CHECK(snapkv_cmp_.ok);                                                                \
    } while (false)
