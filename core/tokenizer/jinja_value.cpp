// The Jinja value model: constructors, dict lookup, and Python's equality, ordering, truthiness
// and type names (CPython's object.c / listobject.c rules, jinja2's Undefined.__eq__). Printing
// values is jinja_format.cpp's job; operators and builtins are elsewhere.
#include "core/tokenizer/jinja_value.h"

#include <algorithm>
#include <cmath>

#include "core/tokenizer/jinja_eval.h"

namespace snapkv::jinja {

void fail(std::string message) { throw Fault{std::move(message)}; }

namespace {

uint32_t max_depth(const std::vector<Value>& items) {
    uint32_t d = 0;
    for (const Value& v : items) d = std::max(d, v.depth());
    return d;
}

void check_depth(uint32_t depth) {
    if (depth > k_max_value_depth) {
        fail("a value nested " + std::to_string(depth) + " containers deep; at most " +
             std::to_string(k_max_value_depth) + " are allowed");
    }
}

// Python compares an int and a float exactly (2**53 + 1 != 2.0**53).
int compare_int_float(int64_t i, double f) {  // -1, 0, 1; 2 when f is NaN
    if (std::isnan(f)) return 2;
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    const double t = std::trunc(f);
    const auto ti = static_cast<int64_t>(t);
    if (i < ti) return -1;
    if (i > ti) return 1;
    if (f > t) return -1;
    if (f < t) return 1;
    return 0;
}

bool holds(int cmp, std::string_view op) {
    if (cmp == 2) return false;  // NaN: every ordering is false
    if (op == "<") return cmp < 0;
    if (op == "<=") return cmp <= 0;
    if (op == ">") return cmp > 0;
    return cmp >= 0;
}

int compare_numbers(const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) {
        const int64_t x = a.get_int(), y = b.get_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_integral()) return compare_int_float(a.get_int(), b.get_float());
    if (b.is_integral()) {
        const int c = compare_int_float(b.get_int(), a.get_float());
        return c == 2 ? 2 : -c;
    }
    const double x = a.get_float(), y = b.get_float();
    if (std::isnan(x) || std::isnan(y)) return 2;
    return x < y ? -1 : (x > y ? 1 : 0);
}

}  // namespace

Value Value::none() {
    Value v;
    v.m_kind = Kind::None;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.m_kind = Kind::Bool;
    v.m_u.b = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.m_kind = Kind::Int;
    v.m_u.i = i;
    return v;
}

Value Value::number(double f) {
    Value v;
    v.m_kind = Kind::Float;
    v.m_u.f = f;
    return v;
}

Value Value::string(std::string s, bool markup) {
    Value v;
    v.m_kind = Kind::String;
    v.m_u.b = markup;
    v.m_ref = std::make_shared<const std::string>(std::move(s));
    return v;
}

Value Value::list(std::vector<Value> items) {
    Value v;
    v.m_kind = Kind::List;
    const uint32_t depth = max_depth(items) + 1;
    check_depth(depth);
    v.m_ref = std::make_shared<const ListData>(ListData{std::move(items), depth});
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.m_kind = Kind::Tuple;
    return v;
}

Value Value::flavored(Flavor flavor, std::vector<Value> items, int64_t start, int64_t stop, int64_t step) {
    Value v;
    v.m_kind = flavor == Flavor::GroupTuple ? Kind::Tuple : Kind::List;
    const uint32_t depth = max_depth(items) + 1;
    check_depth(depth);
    v.m_ref = std::make_shared<const ListData>(ListData{std::move(items), depth, flavor, start, stop, step});
    return v;
}

Value Value::dict(DictData data) {
    Value v;
    v.m_kind = Kind::Dict;
    uint32_t depth = 0;
    for (const auto& [k, val] : data.entries) depth = std::max({depth, k.depth(), val.depth()});
    data.depth = depth + 1;
    check_depth(data.depth);
    v.m_ref = std::make_shared<const DictData>(std::move(data));
    return v;
}

Value Value::iterator(std::vector<Value> items, const char* name) {
    Value v;
    v.m_kind = Kind::Iterator;
    check_depth(max_depth(items) + 1);
    v.m_ref = std::make_shared<IteratorData>(IteratorData{std::move(items), 0, name});
    return v;
}

Value Value::undefined(std::string message, bool security) {
    Value v;
    v.m_ref = std::make_shared<const UndefinedData>(UndefinedData{std::move(message), security});
    return v;
}

Value Value::namespace_object(NamespaceData* ns) {
    Value v;
    v.m_kind = Kind::Namespace;
    v.m_u.p = ns;
    return v;
}

Value Value::loop_object(LoopData* loop) {
    Value v;
    v.m_kind = Kind::Loop;
    v.m_u.p = loop;
    return v;
}

Value Value::callable(std::shared_ptr<const CallableData> fn) {
    Value v;
    v.m_kind = Kind::Callable;
    v.m_ref = std::move(fn);
    return v;
}

double Value::get_float() const {
    switch (m_kind) {
    case Kind::Bool: return m_u.b ? 1.0 : 0.0;
    case Kind::Int: return double(m_u.i);
    default: return m_u.f;
    }
}

bool Value::same_object(const Value& other) const {
    if (m_kind != other.m_kind) return false;
    if (m_kind == Kind::Namespace || m_kind == Kind::Loop) return m_u.p == other.m_u.p;
    return m_ref && m_ref == other.m_ref;
}

uint32_t Value::depth() const {
    switch (m_kind) {
    case Kind::List:
    case Kind::Tuple: return list_data().depth;
    case Kind::Dict: return dict().depth;
    case Kind::Iterator: return max_depth(iter().items) + 1;
    default: return 0;
    }
}

const Value* DictData::find(std::string_view key) const {
    if (!m_index.empty()) {
        const auto it = m_index.find(key);
        return it == m_index.end() ? nullptr : &entries[it->second].second;
    }
    for (const auto& [k, v] : entries) {
        if (k.is_string() && k.str() == key) return &v;
    }
    return nullptr;
}

const Value* DictData::find(const Value& key) const {
    if (key.is_string()) return find(std::string_view(key.str()));
    for (const auto& [k, v] : entries) {
        if (!k.is_string() && py_equal(k, key)) return &v;
    }
    return nullptr;
}

void DictData::index_key(size_t i) {
    const Value& k = entries[i].first;
    if (k.is_string()) m_index.emplace(std::string_view(k.str()), i);
}

void DictData::put(Value key, Value value) {
    if (!is_hashable(key)) fail("unhashable type: '" + type_name(key) + "'");
    if (const Value* existing = find(key)) {
        const_cast<Value&>(*existing) = std::move(value);
        return;
    }
    entries.emplace_back(std::move(key), std::move(value));
    constexpr size_t k_index_from = 9;  // a linear scan is faster for the small dicts of messages
    if (entries.size() == k_index_from) {
        for (size_t i = 0; i < entries.size(); ++i) index_key(i);
    } else if (entries.size() > k_index_from) {
        index_key(entries.size() - 1);
    }
}

const Value* NamespaceData::find(std::string_view name) const {
    for (const auto& [k, v] : attrs) {
        if (k == name) return &v;
    }
    return nullptr;
}

void NamespaceData::set(const std::string& name, Value value) {
    for (auto& [k, v] : attrs) {
        if (k == name) {
            v = std::move(value);
            return;
        }
    }
    attrs.emplace_back(name, std::move(value));
}

bool truthy(const Value& v) {
    switch (v.kind()) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return v.get_bool();
    case Kind::Int: return v.get_int() != 0;
    case Kind::Float: return v.get_float() != 0.0;
    case Kind::String: return !v.str().empty();
    case Kind::List:
    case Kind::Tuple: return !v.items().empty();
    case Kind::Dict: return v.dict().size() != 0;
    default: return true;  // generators, namespaces, callables, loops
    }
}

bool py_equal(const Value& a, const Value& b) {
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Kind::None: return true;
    case Kind::String: return a.str() == b.str();
    case Kind::List:
    case Kind::Tuple: {
        const bool a_tuple_like = a.flavor() == Flavor::Plain || a.flavor() == Flavor::GroupTuple;
        const bool b_tuple_like = b.flavor() == Flavor::Plain || b.flavor() == Flavor::GroupTuple;
        if (a.flavor() != b.flavor() && !(a_tuple_like && b_tuple_like)) return false;
        const auto& x = a.items();
        const auto& y = b.items();
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i) {
            if (!py_equal(x[i], y[i])) return false;
        }
        return true;
    }
    case Kind::Dict: {
        const DictData& x = a.dict();
        const DictData& y = b.dict();
        if (x.size() != y.size()) return false;
        for (const auto& [k, v] : x.entries) {
            const Value* other = y.find(k);
            if (other == nullptr || !py_equal(v, *other)) return false;
        }
        return true;
    }
    default: return a.same_object(b);
    }
}

bool py_compare(const Value& a, const Value& b, std::string_view op) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) return holds(compare_numbers(a, b), op);
    if (a.is_string() && b.is_string()) {
        const int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
        return holds(c < 0 ? -1 : (c > 0 ? 1 : 0), op);
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!py_equal(x[i], y[i])) return py_compare(x[i], y[i], op);
        }
        return holds(x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0), op);
    }
    fail("'" + std::string(op) + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) +
         "'");
}

bool py_less(const Value& a, const Value& b) { return py_compare(a, b, "<"); }

bool is_hashable(const Value& v) {
    switch (v.kind()) {
    case Kind::List:
    case Kind::Dict: return false;
    case Kind::Tuple:
        return std::all_of(v.items().begin(), v.items().end(), [](const Value& x) { return is_hashable(x); });
    default: return true;
    }
}

std::string type_name(const Value& v) {
    switch (v.kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List:
    case Kind::Tuple:
        switch (v.flavor()) {
        case Flavor::Range: return "range";
        case Flavor::DictItems: return "dict_items";
        case Flavor::DictKeys: return "dict_keys";
        case Flavor::DictValues: return "dict_values";
        case Flavor::GroupTuple: return "_GroupTuple";
        case Flavor::Plain: break;
        }
        return v.kind() == Kind::List ? "list" : "tuple";
    case Kind::Dict: return "dict";
    case Kind::Iterator: {  // "generator object sync_do_map" -> generator
        const std::string name = v.iter().name;
        return name.substr(0, name.find(' '));
    }
    case Kind::Namespace: return "TemplateNamespace";
    case Kind::Callable: return v.callable().macro != nullptr ? "Macro" : "builtin_function_or_method";
    case Kind::Loop: return "LoopContext";
    }
    return "object";
}

std::string object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    return type_name(v) + " object";
}

void fail_undefined(const Value& v) {
    const UndefinedData* info = v.undefined_info();
    if (info != nullptr && !info->message.empty()) fail(info->message);
    fail("a value is undefined");
}

}  // namespace snapkv::jinja
