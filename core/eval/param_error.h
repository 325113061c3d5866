// The error of an evaluation parameter the user chose (a grid axis, lengths, depths, samples, ...):
// it names the parameters as core calls them ("budgets", "lengths", "n_sink"), never a front end's
// option, and keeps the rest of the message apart, so each front end names them its own way (the
// CLI prints "--budgets: ...", the Evaluate tab shows the parameter). Not for a file's contents:
// those errors name the file and the line.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/errors.h"

namespace snapkv::eval {

class ParamError : public InputError {
public:
    // A parameter -> how a front end calls it ("budgets" -> "--budgets").
    using Namer = std::function<std::string(const std::string& param)>;

    // "budgets: the list is empty"; several parameters: "ratios, budgets: give at least one ...".
    ParamError(std::vector<std::string> params, const std::string& detail)
        : InputError(joined(params, {}) + ": " + detail), m_params(std::move(params)), m_detail(detail) {}
    ParamError(const std::string& param, const std::string& detail)
        : ParamError(std::vector<std::string>{param}, detail) {}

    const std::vector<std::string>& params() const { return m_params; }
    const std::string& detail() const { return m_detail; }
    // The message with every parameter named by `name`.
    std::string text(const Namer& name) const { return printable_message(joined(m_params, name) + ": " + m_detail); }

private:
    static std::string joined(const std::vector<std::string>& params, const Namer& name) {
        std::string s;
        for (const std::string& p : params) s += (s.empty() ? "" : ", ") + (name ? name(p) : p);
        return s;
    }

    std::vector<std::string> m_params;
    std::string m_detail;
};

}  // namespace snapkv::eval
