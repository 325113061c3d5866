// Text forms of Jinja values (private to core/tokenizer): Python's str() and repr() (shortest
// round-trip float repr included), json.dumps as transformers' tojson calls it
// (jinja_format.cpp), printf-style `fmt % args` and str.format with the format-spec
// mini-language (jinja_pyformat.cpp). No evaluation here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_value.h"

namespace snapkv::jinja {

// Python str() of v appended to out (an Undefined prints nothing, as jinja2's does). A Fault
// once the text passes limit bytes (a list of a million long strings is small in memory).
void append_str(std::string& out, const Value& v, size_t limit = SIZE_MAX);
std::string py_str(const Value& v, size_t limit = SIZE_MAX);
std::string py_repr(const Value& v, size_t limit = SIZE_MAX);
// repr() for an error message: short, never a Fault.
std::string repr_for_message(const Value& v);
// repr(float): the shortest string that reads back as f ("0.1", "1e-05", "1e+16", "inf").
std::string float_repr(double f);
// Python's repr() of a str ('a', "it's", '\n').
std::string string_repr(std::string_view s);
// Python's escape of a code point in repr() and ascii(): \xNN below 0x100, \uNNNN below 0x10000,
// else \UNNNNNNNN, lower-case hex.
void append_code_point_escape(std::string& out, uint32_t cp);

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // json.dumps indent, already made a string (n spaces)
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
    size_t max_bytes = SIZE_MAX;  // a Fault past this
};
std::string json_dumps(const Value& v, const JsonOptions& options);

// Python's fmt % args for str; a Fault once the result passes limit bytes.
std::string percent_format(std::string_view fmt, const Value& args, size_t limit = SIZE_MAX);
// Python's format(v, spec).
std::string format_value(const Value& v, std::string_view spec);
// Python's fmt.format(*args.pos, **args.kw), fields with attribute and index chains.
std::string str_format(Evaluator& ev, std::string_view fmt, const Args& args);

}  // namespace snapkv::jinja
