// Jinja's tests (jinja2 3.1 tests.py: `x is defined`, `is divisibleby 3`, `is eq`, ...) and the
// globals a chat template can call: jinja2's range (sandboxed: at most 100000 items), cycler,
// joiner, and transformers' dict, namespace, raise_exception and strftime_now. lipsum is a
// known name that fails when called.
#include <algorithm>
#include <ctime>

#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

Value one_arg(const Args& args, const char* test) {
    const Params p(args, test, {"other"});
    if (!p.has(0)) fail(std::string("the test '") + test + "' needs one argument");
    return p[0];
}

bool t_odd(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "odd");
    return py_equal(binary_op(ev, BinOp::Mod, v, Value::integer(2)), Value::integer(1));
}
bool t_even(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "even");
    return py_equal(binary_op(ev, BinOp::Mod, v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "divisibleby", {"num"});
    if (!p.has(0)) fail("test_divisibleby() missing 1 required positional argument: 'num'");
    return py_equal(binary_op(ev, BinOp::Mod, v, p[0]), Value::integer(0));
}
bool t_defined(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "defined");
    return !v.is_undefined();
}
bool t_undefined(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "undefined");
    return v.is_undefined();
}
bool t_filter(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "filter");
    return v.is_string() && find_filter(v.str()) >= 0;
}
bool t_test(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "test");
    return v.is_string() && find_test(v.str()) >= 0;
}
bool t_none(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "none");
    return v.is_none();
}
bool t_boolean(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "boolean");
    return v.kind() == Kind::Bool;
}
bool t_false(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "false");
    return v.kind() == Kind::Bool && !v.get_bool();
}
bool t_true(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "true");
    return v.kind() == Kind::Bool && v.get_bool();
}
bool t_integer(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "integer");
    return v.kind() == Kind::Int;
}
bool t_float(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "float");
    return v.kind() == Kind::Float;
}
bool cased_test(Evaluator& ev, const Value& v, bool want_lower) {
    return text::str_is_cased_as(ev.to_str(v), want_lower);
}
bool t_lower(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "lower");
    return cased_test(ev, v, true);
}
bool t_upper(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "upper");
    return cased_test(ev, v, false);
}
bool t_string(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "string");
    return v.is_string();
}
bool t_mapping(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "mapping");
    return v.kind() == Kind::Dict;
}
bool t_number(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "number");
    return v.is_number();
}
bool t_sequence(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "sequence");
    const Kind k = v.kind();
    return k == Kind::String || k == Kind::List || k == Kind::Tuple || k == Kind::Dict || k == Kind::Undefined;
}
bool t_iterable(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "iterable");
    const Kind k = v.kind();
    return k == Kind::String || k == Kind::List || k == Kind::Tuple || k == Kind::Dict || k == Kind::Undefined ||
           k == Kind::Iterator || k == Kind::Loop;
}
bool t_callable(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "callable");
    return v.kind() == Kind::Callable || v.kind() == Kind::Undefined || v.kind() == Kind::Loop;
}
bool t_sameas(Evaluator&, const Value& v, const Args& args) {
    const Value other = one_arg(args, "sameas");
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
    case Kind::None: return true;
    case Kind::Bool: return v.get_bool() == other.get_bool();
    case Kind::Int:
        return v.get_int() == other.get_int() && v.get_int() >= -5 && v.get_int() <= 256;  // CPython's cache
    default: return v.same_object(other);
    }
}
bool t_escaped(Evaluator&, const Value&, const Args& args) {
    no_args(args, "escaped");
    return false;  // no Markup values
}
bool t_in(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "in", {"seq"});
    if (!p.has(0)) fail("test_in() missing 1 required positional argument: 'seq'");
    return contains(ev, p[0], v);
}
bool t_eq(Evaluator&, const Value& v, const Args& args) { return py_equal(v, one_arg(args, "eq")); }
bool t_ne(Evaluator&, const Value& v, const Args& args) { return !py_equal(v, one_arg(args, "ne")); }
bool t_gt(Evaluator&, const Value& v, const Args& args) { return py_compare(v, one_arg(args, "gt"), ">"); }
bool t_ge(Evaluator&, const Value& v, const Args& args) { return py_compare(v, one_arg(args, "ge"), ">="); }
bool t_lt(Evaluator&, const Value& v, const Args& args) { return py_compare(v, one_arg(args, "lt"), "<"); }
bool t_le(Evaluator&, const Value& v, const Args& args) { return py_compare(v, one_arg(args, "le"), "<="); }

struct TestEntry {
    const char* name;
    TestFn fn;
};

const TestEntry k_tests[] = {
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"filter", t_filter},
    {"test", t_test},
    {"none", t_none},
    {"boolean", t_boolean},
    {"false", t_false},
    {"true", t_true},
    {"integer", t_integer},
    {"float", t_float},
    {"lower", t_lower},
    {"upper", t_upper},
    {"string", t_string},
    {"mapping", t_mapping},
    {"number", t_number},
    {"sequence", t_sequence},
    {"iterable", t_iterable},
    {"callable", t_callable},
    {"sameas", t_sameas},
    {"escaped", t_escaped},
    {"in", t_in},
    {"==", t_eq},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"!=", t_ne},
    {"ne", t_ne},
    {">", t_gt},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">=", t_ge},
    {"ge", t_ge},
    {"<", t_lt},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<=", t_le},
    {"le", t_le},
};

// ---- globals ----

constexpr int64_t k_max_range = 100000;  // jinja2.sandbox.MAX_RANGE

Value g_range(Evaluator& ev, const CallableData&, const Args& args) {
    if (!args.kw.empty()) fail("range() takes no keyword arguments");
    if (args.pos.empty() || args.pos.size() > 3) {
        fail("range expected at most 3 arguments, got " + std::to_string(args.pos.size()));
    }
    int64_t v[3];
    for (size_t i = 0; i < args.pos.size(); ++i) {
        const Value& a = args.pos[i];
        if (a.is_undefined()) fail_undefined(a);
        if (!a.is_integral()) fail("'" + type_name(a) + "' object cannot be interpreted as an integer");
        v[i] = a.get_int();
    }
    int64_t start = 0, stop = 0, step = 1;
    if (args.pos.size() == 1) {
        stop = v[0];
    } else {
        start = v[0];
        stop = v[1];
        if (args.pos.size() == 3) step = v[2];
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    // length without overflow: count in 128 bits
    __int128 n = 0;
    if (step > 0 && start < stop) n = ((__int128)stop - start - 1) / step + 1;
    if (step < 0 && start > stop) n = ((__int128)start - stop - 1) / -(__int128)step + 1;
    if (n > k_max_range) {
        fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(k_max_range) + ").");
    }
    ev.step(uint64_t(n));
    std::vector<Value> out;
    out.reserve(size_t(n));
    for (int64_t i = 0; i < int64_t(n); ++i) out.push_back(Value::integer(start + i * step));
    return Value::flavored(Flavor::Range, std::move(out), start, stop, step);
}

// dict(*args, **kwargs) as transformers' TemplateDict / Python's dict().
DictData make_dict(Evaluator& ev, const Args& args, const char* fname) {
    if (args.pos.size() > 1)
        fail(std::string(fname) + " expected at most 1 argument, got " + std::to_string(args.pos.size()));
    DictData d;
    if (!args.pos.empty()) {
        const Value& src = args.pos[0];
        if (src.kind() == Kind::Dict) {
            d = src.dict();
        } else {
            size_t i = 0;
            const Items items = ev.iterate(src);
            for (const Value& pair : items.get()) {
                if (!pair.is_sequence() && !pair.is_string()) {
                    fail("cannot convert dictionary update sequence element #" + std::to_string(i) + " to a sequence");
                }
                const Items kv = ev.iterate(pair);
                if (kv.get().size() != 2) {
                    fail("dictionary update sequence element #" + std::to_string(i) + " has length " +
                         std::to_string(kv.get().size()) + "; 2 is required");
                }
                d.put(kv.get()[0], kv.get()[1]);
                ++i;
            }
        }
    }
    for (const auto& [k, v] : args.kw) d.put(Value::string(k), v);
    return d;
}

Value g_dict(Evaluator& ev, const CallableData&, const Args& args) { return Value::dict(make_dict(ev, args, "dict")); }

Value g_namespace(Evaluator& ev, const CallableData&, const Args& args) {
    const DictData d = make_dict(ev, args, "namespace");
    NamespaceData* ns = ev.new_namespace();
    for (const auto& [k, v] : d.entries) {
        if (!k.is_string()) fail("namespace attribute names must be strings, got " + type_name(k));
        if (!k.str().empty() && k.str()[0] == '_') {
            fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got " +
                 string_repr(k.str()) + ". Please rename the attribute.");
        }
        ns->set(k.str(), v);
    }
    return Value::namespace_object(ns);
}

Value g_raise_exception(Evaluator& ev, const CallableData&, const Args& args) {
    const Params p(args, "raise_exception", {"message"});
    if (!p.has(0)) fail("raise_exception() missing 1 required positional argument: 'message'");
    throw TemplateRaised(py_str(p[0], ev.options().max_string_bytes));
}

Value g_strftime_now(Evaluator& ev, const CallableData&, const Args& args) {
    const Params p(args, "strftime_now", {"format"});
    if (!p.has(0)) fail("strftime_now() missing 1 required positional argument: 'format'");
    const std::string& fmt = arg_str(p[0], "strftime", "format");
    if (fmt.find('\0') != std::string::npos) fail("embedded null character");
    if (fmt.size() > 4096) fail("strftime_now(): a format of " + std::to_string(fmt.size()) + " bytes is too long");
    std::tm tm{};
    long micros = 0;
    if (ev.options().now) {
        // Fill the weekday and day of the year from the date (the caller may set only the date
        // and time fields); timegm normalises without any time zone.
        tm = *ev.options().now;
        std::tm probe = tm;
        if (timegm(&probe) != time_t(-1)) {
            tm.tm_wday = probe.tm_wday;
            tm.tm_yday = probe.tm_yday;
        }
    } else {
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        const time_t secs = ts.tv_sec;
        localtime_r(&secs, &tm);
        micros = ts.tv_nsec / 1000;
    }
    // datetime.strftime handles %f, %z and %Z itself (a naive datetime: no zone), the C library the rest.
    std::string c_fmt;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] == '%' && i + 1 < fmt.size()) {
            const char c = fmt[i + 1];
            if (c == 'f') {
                char buf[16];
                std::snprintf(buf, sizeof(buf), "%06ld", micros);
                c_fmt += buf;
                ++i;
                continue;
            }
            if (c == 'z' || c == 'Z') {
                ++i;
                continue;
            }
            c_fmt += fmt[i];
            c_fmt += fmt[++i];
            continue;
        }
        c_fmt += fmt[i];
    }
    if (c_fmt.empty()) return Value::string("");
    // strftime returns 0 both for "too small" and for an empty result: grow a few times, then accept empty.
    std::string out;
    for (size_t cap = 256; cap <= 1u << 20; cap *= 4) {
        std::string buf(cap, '\0');
        const size_t n = std::strftime(buf.data(), cap, c_fmt.c_str(), &tm);
        if (n > 0) {
            buf.resize(n);
            out = std::move(buf);
            break;
        }
    }
    return ev.make_string(std::move(out));
}

Value g_joiner_call(Evaluator&, const CallableData& fn, const Args& args) {
    no_args(args, "joiner");
    NamespaceData& state = fn.self.ns();
    const Value* used = state.find("used");
    if (used == nullptr || !truthy(*used)) {
        state.set("used", Value::boolean(true));
        return Value::string("");
    }
    return *state.find("sep");
}

Value g_joiner(Evaluator& ev, const CallableData&, const Args& args) {
    const Params p(args, "joiner", {"sep"});
    NamespaceData* state = ev.new_namespace();
    state->role = NamespaceData::Role::Joiner;
    state->set("sep", p.get(0, Value::string(", ")));
    auto c = std::make_shared<CallableData>();
    c->name = "joiner";
    c->fn = g_joiner_call;
    c->self = Value::namespace_object(state);
    return Value::callable(std::move(c));
}

Value g_cycler(Evaluator& ev, const CallableData&, const Args& args) {
    if (!args.kw.empty()) fail("cycler() takes no keyword arguments");
    if (args.pos.empty()) fail("at least one item has to be provided");
    NamespaceData* state = ev.new_namespace();
    state->role = NamespaceData::Role::Cycler;
    state->set("items", Value::tuple(args.pos));
    state->set("pos", Value::integer(0));
    return Value::namespace_object(state);
}

Value g_not_implemented(Evaluator&, const CallableData& fn, const Args&) {
    fail("the global function '" + fn.name + "' is not implemented");
}

struct GlobalEntry {
    const char* name;
    BuiltinFn fn;
};

const GlobalEntry k_globals[] = {
    {"range", g_range},
    {"dict", g_dict},
    {"namespace", g_namespace},
    {"raise_exception", g_raise_exception},
    {"strftime_now", g_strftime_now},
    {"joiner", g_joiner},
    {"cycler", g_cycler},
    {"lipsum", g_not_implemented},
};

}  // namespace

int find_test(std::string_view name) {
    for (size_t i = 0; i < std::size(k_tests); ++i) {
        if (name == k_tests[i].name) return int(i);
    }
    return -1;
}

TestFn test_at(int id) { return k_tests[id].fn; }

int find_global(std::string_view name) {
    for (size_t i = 0; i < std::size(k_globals); ++i) {
        if (name == k_globals[i].name) return int(i);
    }
    return -1;
}

Value global_at(int id) {
    // Built once; the callables are immutable and shared by every render and thread.
    static const std::vector<Value> values = [] {
        std::vector<Value> v;
        for (const GlobalEntry& g : k_globals) {
            auto c = std::make_shared<CallableData>();
            c->name = g.name;
            c->fn = g.fn;
            v.push_back(Value::callable(std::move(c)));
        }
        return v;
    }();
    return values[size_t(id)];
}

}  // namespace snapkv::jinja
