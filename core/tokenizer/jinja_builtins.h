// The builtin tables of the Jinja interpreter (private to core/tokenizer): filters, tests and
// globals looked up by name, Python methods and attributes of values as the immutable sandbox
// exposes them, and Python-style argument binding for all of them. The implementations live in
// jinja_filters.cpp, jinja_globals.cpp (tests and globals) and jinja_methods.cpp.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tokenizer/jinja_value.h"

namespace snapkv::jinja {

class Evaluator;
struct CallableData;

struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

using FilterFn = Value (*)(Evaluator& ev, const Value& subject, const Args& args);
using TestFn = bool (*)(Evaluator& ev, const Value& subject, const Args& args);
// A global function or a bound method: fn.self is the object (or the builtin's state), fn.name
// the function's name.
using BuiltinFn = Value (*)(Evaluator& ev, const CallableData& fn, const Args& args);

// jinja2's attribute paths (map(attribute=...), sort(attribute=...)): "a.0.b" -> ['a', 0, 'b'],
// and the lookup along one (getitem per part; fallback replaces an Undefined on the way).
std::vector<Value> attribute_parts(const Value& attribute);
Value get_path(Evaluator& ev, Value item, const std::vector<Value>& parts, const Value* fallback);

struct NamedFilter {
    const char* name;
    FilterFn fn;
};
// The filters over sequences (jinja_filters_seq.cpp); find_filter looks in both tables.
const NamedFilter* sequence_filters(size_t& count);

// -1 when there is no such filter / test / global.
int find_filter(std::string_view name);
int find_test(std::string_view name);
int find_global(std::string_view name);
FilterFn filter_at(int id);
TestFn test_at(int id);
Value global_at(int id);  // a callable

// Python attribute lookup on a value through the sandbox: methods of str, dict, list and tuple
// as bound callables, mutating methods as an Undefined that refuses use, loop and namespace
// attributes; nullopt-like Undefined (no message) when the type has no such attribute.
// found is set when the attribute exists.
Value python_attribute(Evaluator& ev, const Value& obj, const std::string& name, bool& found);

// Binds positional and keyword arguments to named parameters, as Python does for a function
// `fname(params...)`: a Fault for too many positional arguments, an unknown keyword or one given
// twice. Parameters not given are Undefined with has() false.
class Params {
public:
    Params(const Args& args, std::string_view fname, std::initializer_list<const char*> names);
    bool has(size_t i) const { return m_given[i]; }
    const Value& operator[](size_t i) const { return m_values[i]; }
    Value get(size_t i, Value fallback) const { return m_given[i] ? m_values[i] : std::move(fallback); }

private:
    std::vector<Value> m_values;
    std::vector<bool> m_given;
};

// A Fault unless args is empty.
void no_args(const Args& args, std::string_view fname);

// Argument conversions with Python's error messages.
int64_t arg_int(const Value& v, std::string_view fname, std::string_view param);
const std::string& arg_str(const Value& v, std::string_view fname, std::string_view param);

}  // namespace snapkv::jinja
