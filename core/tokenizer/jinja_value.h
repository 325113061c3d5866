// The Jinja interpreter's value model (private to core/tokenizer): Python's None, bool, int
// (64-bit), float, str, list, tuple and insertion-ordered dict, jinja2's Undefined, single-use
// iterators (what map/select return), and the render-scoped mutable objects (namespace, loop,
// macros). Immutable data is reference counted and shared; mutable objects live in the render's
// arena, so no reference cycle can form. Python's ==, <, truthiness and type names live here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace snapkv::jinja {

// A runtime error raised by a value operation or builtin; the evaluator adds the template line.
struct Fault {
    std::string message;
};

[[noreturn]] void fail(std::string message);

enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,
    Dict,
    Iterator,
    Namespace,
    Callable,
    Loop,
};

class Value;
struct DictData;
struct NamespaceData;
struct LoopData;
struct CallableData;

// Python types that behave as a list or tuple here but print (and compare) as themselves.
enum class Flavor : uint8_t {
    Plain,
    Range,       // range(start, stop, step): a list that prints as range(0, 3)
    DictItems,   // dict.items(): prints as dict_items([...]), no indexing
    DictKeys,    // dict.keys()
    DictValues,  // dict.values()
    GroupTuple,  // groupby's (grouper, list) named tuple
};

struct ListData {
    std::vector<Value> items;
    uint32_t depth = 1;  // container nesting, bounded so printing and freeing cannot overflow the stack
    Flavor flavor = Flavor::Plain;
    int64_t range_start = 0, range_stop = 0, range_step = 1;
};

// A generator: iterated once (map, select, ... return one), truthy, without a length.
struct IteratorData {
    std::vector<Value> items;
    size_t pos = 0;
    const char* name = "generator";  // what Python prints: "<generator object NAME at 0x...>"
};

// Why a value is undefined, for the error raised when it is used.
struct UndefinedData {
    std::string message;    // "'x' is undefined", "'dict object' has no attribute 'y'"
    bool security = false;  // an attribute the immutable sandbox refuses (list.append, ...)
};

// Deepest container nesting a value may have.
constexpr uint32_t k_max_value_depth = 500;

class Value {
public:
    Value() = default;  // Undefined without a message

    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double f);
    // markup: markupsafe's Markup (|safe, |escape): + and % escape the other operand.
    static Value string(std::string s, bool markup = false);
    static Value list(std::vector<Value> items);
    static Value tuple(std::vector<Value> items);
    // A list (or tuple for GroupTuple) of another Python type; see Flavor.
    static Value flavored(Flavor flavor, std::vector<Value> items, int64_t start = 0, int64_t stop = 0,
                          int64_t step = 1);
    static Value dict(DictData data);
    static Value iterator(std::vector<Value> items, const char* name = "generator");
    static Value undefined(std::string message, bool security = false);
    static Value namespace_object(NamespaceData* ns);
    static Value loop_object(LoopData* loop);
    static Value callable(std::shared_ptr<const CallableData> fn);

    Kind kind() const { return m_kind; }
    bool is_undefined() const { return m_kind == Kind::Undefined; }
    bool is_none() const { return m_kind == Kind::None; }
    bool is_string() const { return m_kind == Kind::String; }
    bool is_markup() const { return m_kind == Kind::String && m_u.b; }
    bool is_number() const { return m_kind == Kind::Bool || m_kind == Kind::Int || m_kind == Kind::Float; }
    bool is_integral() const { return m_kind == Kind::Bool || m_kind == Kind::Int; }  // Python int (bool too)
    bool is_sequence() const { return m_kind == Kind::List || m_kind == Kind::Tuple; }

    bool get_bool() const { return m_u.b; }
    int64_t get_int() const { return m_kind == Kind::Bool ? int64_t(m_u.b) : m_u.i; }  // Bool or Int
    double get_float() const;                                                          // any number
    const std::string& str() const { return *static_cast<const std::string*>(m_ref.get()); }
    const std::vector<Value>& items() const { return list_data().items; }
    const ListData& list_data() const { return *static_cast<const ListData*>(m_ref.get()); }
    Flavor flavor() const { return is_sequence() ? list_data().flavor : Flavor::Plain; }
    const DictData& dict() const { return *static_cast<const DictData*>(m_ref.get()); }
    IteratorData& iter() const { return *static_cast<IteratorData*>(const_cast<void*>(m_ref.get())); }
    NamespaceData& ns() const { return *static_cast<NamespaceData*>(m_u.p); }
    LoopData& loop() const { return *static_cast<LoopData*>(m_u.p); }
    const CallableData& callable() const { return *static_cast<const CallableData*>(m_ref.get()); }
    const UndefinedData* undefined_info() const { return static_cast<const UndefinedData*>(m_ref.get()); }
    // The same object (Python `is` for mutable objects and containers).
    bool same_object(const Value& other) const;
    uint32_t depth() const;

private:
    Kind m_kind = Kind::Undefined;
    union {
        bool b;
        int64_t i;
        double f;
        void* p;
    } m_u{};
    std::shared_ptr<const void> m_ref;
};

// A Python dict: insertion-ordered entries; string keys are indexed once there are many.
struct DictData {
    std::vector<std::pair<Value, Value>> entries;
    uint32_t depth = 1;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    // Python's d[key] = value: replaces in place or appends. The key must be hashable.
    void put(Value key, Value value);
    size_t size() const { return entries.size(); }

private:
    std::unordered_map<std::string_view, size_t> m_index;  // views into the keys' own strings
    void index_key(size_t i);
};

struct NamespaceData {
    // A namespace(), or the state of a cycler() / joiner() object kept in the same arena.
    enum class Role : uint8_t { Namespace, Cycler, Joiner } role = Role::Namespace;
    std::vector<std::pair<std::string, Value>> attrs;
    const Value* find(std::string_view name) const;
    void set(const std::string& name, Value value);
};

// Python semantics.
bool truthy(const Value& v);
bool py_equal(const Value& a, const Value& b);
// Python's a OP b for OP in "<", "<=", ">", ">=": numbers, strings, lists and tuples
// (lexicographically); a Fault for types Python cannot order.
bool py_compare(const Value& a, const Value& b, std::string_view op);
bool py_less(const Value& a, const Value& b);
bool is_hashable(const Value& v);
// The Python type name: 'NoneType', 'int', 'str', 'dict', 'Undefined', ...
std::string type_name(const Value& v);
// jinja2's object_type_repr: "None", "dict object", "str object", ...
std::string object_type_repr(const Value& v);
// Raises the error an Undefined gives when used (its message, or "'name' is undefined").
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace snapkv::jinja
