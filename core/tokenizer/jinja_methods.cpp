// Python attributes and methods of template values as jinja2's ImmutableSandboxedEnvironment
// exposes them: str, dict, list/tuple and number methods (CPython's semantics and messages),
// the loop object's attributes, namespace attributes; methods that modify a value (list.append,
// dict.update, ...) are an Undefined that refuses any use, as the sandbox's unsafe_undefined.
// Python methods we do not implement are callables that fail by name. Also the argument binder.
#include <algorithm>
#include <cmath>

#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {

Params::Params(const Args& args, std::string_view fname, std::initializer_list<const char*> names)
    : m_values(names.size()), m_given(names.size(), false) {
    const size_t n = names.size();
    if (args.pos.size() > n) {
        fail(std::string(fname) + "() takes at most " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") + " (" +
             std::to_string(args.pos.size()) + " given)");
    }
    for (size_t i = 0; i < args.pos.size(); ++i) {
        m_values[i] = args.pos[i];
        m_given[i] = true;
    }
    for (const auto& [key, value] : args.kw) {
        size_t i = 0;
        for (const char* name : names) {
            if (key == name) break;
            ++i;
        }
        if (i == n) fail(std::string(fname) + "() got an unexpected keyword argument '" + key + "'");
        if (m_given[i]) fail(std::string(fname) + "() got multiple values for argument '" + key + "'");
        m_values[i] = value;
        m_given[i] = true;
    }
}

void no_args(const Args& args, std::string_view fname) {
    if (!args.pos.empty() || !args.kw.empty()) {
        fail(std::string(fname) + "() takes no arguments (" + std::to_string(args.pos.size() + args.kw.size()) +
             " given)");
    }
}

int64_t arg_int(const Value& v, std::string_view fname, std::string_view param) {
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_integral()) {
        fail(std::string(fname) + "(): '" + std::string(param) + "' must be an integer, not '" + type_name(v) + "'");
    }
    return v.get_int();
}

const std::string& arg_str(const Value& v, std::string_view fname, std::string_view param) {
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_string()) {
        fail(std::string(fname) + "() argument '" + std::string(param) + "' must be str, not " + type_name(v));
    }
    return v.str();
}

namespace {

Value bound(const Value& self, const std::string& name, BuiltinFn fn) {
    auto c = std::make_shared<CallableData>();
    c->name = name;
    c->fn = fn;
    c->self = self;
    return Value::callable(std::move(c));
}

bool in_list(std::string_view name, std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

Value not_implemented(Evaluator&, const CallableData& fn, const Args&) {
    fail("the method " + type_name(fn.self) + "." + fn.name + "() is not implemented");
}

Value unsafe(const Value& self, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + type_name(self) +
                                "' object is unsafe (the immutable sandbox refuses methods that modify a value).",
                            true);
}

// Optional start/end arguments of find, count, startswith, ... (None = the whole string).
void slice_bounds(const Params& p, size_t first, int64_t& start, int64_t& end, std::string_view fname) {
    start = 0;
    end = INT64_MAX;
    if (p.has(first) && !p[first].is_none()) start = arg_int(p[first], fname, "start");
    if (p.has(first + 1) && !p[first + 1].is_none()) end = arg_int(p[first + 1], fname, "end");
}

// ---- str ----

Value str_method(Evaluator& ev, const CallableData& fn, const Args& args) {
    const std::string& s = fn.self.str();
    const std::string& m = fn.name;
    if (m == "strip" || m == "lstrip" || m == "rstrip") {
        const Params p(args, m, {"chars"});
        const bool has = p.has(0) && !p[0].is_none();
        if (has && !p[0].is_string()) fail(m + " arg must be None or str");
        return ev.make_string(std::string(text::strip(s, has ? &p[0].str() : nullptr, m != "rstrip", m != "lstrip")));
    }
    if (m == "split" || m == "rsplit") {
        const Params p(args, m, {"sep", "maxsplit"});
        const bool has = p.has(0) && !p[0].is_none();
        if (has && !p[0].is_string()) fail("must be str or None, not " + type_name(p[0]));
        if (has && p[0].str().empty()) fail("empty separator");
        const int64_t maxsplit = p.has(1) ? arg_int(p[1], m, "maxsplit") : -1;
        ev.step(s.size() / 8);
        std::vector<Value> out;
        ev.charge_search(s.size(), has ? p[0].str().size() : 1);
        for (std::string& piece : text::split(s, has ? &p[0].str() : nullptr, maxsplit, m == "rsplit")) {
            out.push_back(Value::string(std::move(piece)));
        }
        ev.count_bytes(s.size());
        return Value::list(std::move(out));
    }
    if (m == "splitlines") {
        const Params p(args, m, {"keepends"});
        std::vector<Value> out;
        for (std::string& line : text::splitlines(s, p.has(0) && truthy(p[0])))
            out.push_back(Value::string(std::move(line)));
        ev.count_bytes(s.size());
        return Value::list(std::move(out));
    }
    if (m == "startswith" || m == "endswith") {
        const Params p(args, m, {"prefix", "start", "end"});
        if (!p.has(0)) fail(m + "() takes at least 1 argument (0 given)");
        int64_t start = 0, end = 0;
        slice_bounds(p, 1, start, end, m);
        std::vector<Value> candidates;
        if (p[0].kind() == Kind::Tuple) {
            candidates = p[0].items();
        } else {
            candidates.push_back(p[0]);
        }
        const std::vector<uint32_t> cps = text::code_points(s);
        const auto len = int64_t(cps.size());
        if (end > len) end = len;
        if (end < 0) end = std::max<int64_t>(end + len, 0);
        if (start < 0) start = std::max<int64_t>(start + len, 0);
        for (const Value& c : candidates) {
            if (!c.is_string()) {
                fail(m + " first arg must be str or a tuple of str, not " + type_name(c));
            }
            const std::vector<uint32_t> sub = text::code_points(c.str());
            const auto n = int64_t(sub.size());
            if (start > len || end - start < n) continue;
            const auto at = cps.begin() + (m == "startswith" ? start : end - n);
            if (std::equal(sub.begin(), sub.end(), at)) return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    if (m == "upper" || m == "lower" || m == "casefold" || m == "title" || m == "capitalize" || m == "swapcase") {
        no_args(args, m);
        if (m == "upper") return ev.make_string(text::upper(s));
        if (m == "lower" || m == "casefold") return ev.make_string(text::lower(s));
        if (m == "title") return ev.make_string(text::title(s));
        if (m == "capitalize") return ev.make_string(text::capitalize(s));
        return ev.make_string(text::swapcase(s));
    }
    if (m == "replace") {
        const Params p(args, m, {"old", "new", "count"});
        if (!p.has(0) || !p.has(1)) fail("replace expected at least 2 arguments");
        const std::string& old = arg_str(p[0], m, "old");
        const std::string& repl = arg_str(p[1], m, "new");
        const int64_t count = p.has(2) ? arg_int(p[2], m, "count") : -1;
        if (old.empty() && (s.size() + 1) * repl.size() > ev.options().max_string_bytes) {
            fail("replace() would build a string over the limit");
        }
        ev.charge_search(s.size(), old.size());
        return ev.make_string(text::replace(s, old, repl, count));
    }
    if (m == "find" || m == "rfind" || m == "index" || m == "rindex" || m == "count") {
        const Params p(args, m, {"sub", "start", "end"});
        if (!p.has(0)) fail(m + "() takes at least 1 argument (0 given)");
        const std::string& sub = arg_str(p[0], m, "sub");
        int64_t start = 0, end = 0;
        slice_bounds(p, 1, start, end, m);
        ev.charge_search(s.size(), sub.size());
        if (m == "count") return Value::integer(text::count(s, sub, start, end));
        const int64_t at = text::find(s, sub, start, end, m[0] == 'r');
        if (at < 0 && (m == "index" || m == "rindex")) fail("substring not found");
        return Value::integer(at);
    }
    if (m == "join") {
        const Params p(args, m, {"iterable"});
        if (!p.has(0)) fail("join() takes exactly one argument (0 given)");
        const Items items = ev.iterate(p[0]);
        std::string out;
        size_t i = 0;
        for (const Value& v : items.get()) {
            if (!v.is_string()) {
                fail("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(v) + " found");
            }
            if (i++) out += s;
            out += v.str();
            if (out.size() > ev.options().max_string_bytes) fail("join() built a string over the limit");
        }
        return ev.make_string(std::move(out));
    }
    if (m == "format") return ev.make_string(str_format(ev, s, args));
    if (m == "format_map") {
        const Params p(args, m, {"mapping"});
        if (!p.has(0) || p[0].kind() != Kind::Dict) fail("format_map() argument must be a mapping");
        Args kw;
        for (const auto& [k, v] : p[0].dict().entries) {
            if (k.is_string()) kw.kw.emplace_back(k.str(), v);
        }
        return ev.make_string(str_format(ev, s, kw));
    }
    if (m.compare(0, 2, "is") == 0) {
        no_args(args, m);
        const std::vector<uint32_t> cps = text::code_points(s);
        const auto all = [&](bool (*pred)(uint32_t)) {
            return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
        };
        if (m == "isdigit") return Value::boolean(all(text::is_digit));
        if (m == "isdecimal") return Value::boolean(all(text::is_decimal));
        if (m == "isnumeric") return Value::boolean(all(text::is_numeric));
        if (m == "isalpha") return Value::boolean(all(text::is_alpha));
        if (m == "isalnum") {
            return Value::boolean(all([](uint32_t c) { return text::is_alpha(c) || text::is_numeric(c); }));
        }
        if (m == "isspace") return Value::boolean(all(text::is_space));
        if (m == "isascii") return Value::boolean(text::is_ascii(s));
        if (m == "isprintable") return Value::boolean(std::all_of(cps.begin(), cps.end(), text::is_printable));
        if (m == "isidentifier") {
            bool ok = !cps.empty() && (cps[0] == '_' || text::is_alpha(cps[0]));
            for (const uint32_t c : cps) ok = ok && (c == '_' || text::is_alpha(c) || text::is_numeric(c));
            return Value::boolean(ok);
        }
        if (m == "islower" || m == "isupper") return Value::boolean(text::str_is_cased_as(s, m == "islower"));
        if (m == "istitle") {
            bool cased = false, previous_cased = false, ok = true;
            for (const uint32_t c : cps) {
                if (text::is_upper_cased(c) || text::is_title_cased(c)) {
                    ok = ok && !previous_cased;
                    previous_cased = cased = true;
                } else if (text::is_lower_cased(c)) {
                    ok = ok && previous_cased;
                    previous_cased = cased = true;
                } else {
                    previous_cased = false;
                }
            }
            return Value::boolean(ok && cased);
        }
    }
    if (m == "center" || m == "ljust" || m == "rjust") {
        const Params p(args, m, {"width", "fillchar"});
        if (!p.has(0)) fail(m + "() takes at least 1 argument (0 given)");
        const int64_t width = arg_int(p[0], m, "width");
        if (width > int64_t(ev.options().max_string_bytes))
            fail(m + "(): width " + std::to_string(width) + " too large");
        std::string fill = " ";
        if (p.has(1)) {
            fill = arg_str(p[1], m, "fillchar");
            if (text::code_point_count(fill) != 1) fail("The fill character must be exactly one character long");
        }
        if (m == "center") return ev.make_string(text::center(s, width, fill));
        return ev.make_string(m == "ljust" ? text::ljust(s, width, fill) : text::rjust(s, width, fill));
    }
    if (m == "zfill") {
        const Params p(args, m, {"width"});
        if (!p.has(0)) fail("zfill() takes exactly one argument (0 given)");
        const int64_t width = arg_int(p[0], m, "width");
        if (width > int64_t(ev.options().max_string_bytes)) fail("zfill(): width too large");
        const auto len = int64_t(text::code_point_count(s));
        if (width <= len) return fn.self;
        const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
        std::string out = sign ? s.substr(0, 1) : "";
        out += std::string(size_t(width - len), '0');
        out += sign ? s.substr(1) : s;
        return ev.make_string(std::move(out));
    }
    if (m == "partition" || m == "rpartition") {
        const Params p(args, m, {"sep"});
        if (!p.has(0)) fail(m + "() takes exactly one argument (0 given)");
        const std::string& sep = arg_str(p[0], m, "sep");
        if (sep.empty()) fail("empty separator");
        ev.charge_search(s.size(), sep.size());
        const size_t at = m == "partition" ? s.find(sep) : s.rfind(sep);
        if (at == std::string::npos) {
            return m == "partition" ? Value::tuple({fn.self, Value::string(""), Value::string("")})
                                    : Value::tuple({Value::string(""), Value::string(""), fn.self});
        }
        return Value::tuple({Value::string(s.substr(0, at)), p[0], Value::string(s.substr(at + sep.size()))});
    }
    if (m == "removeprefix" || m == "removesuffix") {
        const Params p(args, m, {"fix"});
        if (!p.has(0)) fail(m + "() takes exactly one argument (0 given)");
        const std::string& fix = arg_str(p[0], m, "fix");
        if (m == "removeprefix" && s.compare(0, fix.size(), fix) == 0) return Value::string(s.substr(fix.size()));
        if (m == "removesuffix" && !fix.empty() && s.size() >= fix.size() &&
            s.compare(s.size() - fix.size(), fix.size(), fix) == 0) {
            return Value::string(s.substr(0, s.size() - fix.size()));
        }
        return fn.self;
    }
    return not_implemented(ev, fn, args);
}

// ---- dict ----

Value dict_method(Evaluator& ev, const CallableData& fn, const Args& args) {
    const DictData& d = fn.self.dict();
    const std::string& m = fn.name;
    if (m == "get") {
        const Params p(args, m, {"key", "default"});
        if (!p.has(0)) fail("get expected at least 1 argument, got 0");
        if (!is_hashable(p[0])) fail("unhashable type: '" + type_name(p[0]) + "'");
        if (const Value* v = d.find(p[0])) return *v;
        return p.get(1, Value::none());
    }
    if (m == "items" || m == "keys" || m == "values") {
        no_args(args, m);
        ev.step(d.size());
        std::vector<Value> out;
        out.reserve(d.size());
        for (const auto& [k, v] : d.entries) {
            out.push_back(m == "items" ? Value::tuple({k, v}) : (m == "keys" ? k : v));
        }
        const Flavor view = m == "items" ? Flavor::DictItems : (m == "keys" ? Flavor::DictKeys : Flavor::DictValues);
        return Value::flavored(view, std::move(out));
    }
    if (m == "copy") {
        no_args(args, m);
        return fn.self;
    }
    return not_implemented(ev, fn, args);
}

// ---- list and tuple ----

Value list_method(Evaluator& ev, const CallableData& fn, const Args& args) {
    const auto& items = fn.self.items();
    const std::string& m = fn.name;
    if (m == "index") {
        const Params p(args, m, {"value", "start", "stop"});
        if (!p.has(0)) fail("index expected at least 1 argument, got 0");
        auto len = int64_t(items.size());
        int64_t start = p.has(1) ? arg_int(p[1], m, "start") : 0;
        int64_t stop = p.has(2) ? arg_int(p[2], m, "stop") : len;
        if (start < 0) start = std::max<int64_t>(start + len, 0);
        if (stop < 0) stop = std::max<int64_t>(stop + len, 0);
        for (int64_t i = start; i < std::min(stop, len); ++i) {
            ev.step();
            if (py_equal(items[size_t(i)], p[0])) return Value::integer(i);
        }
        fail(repr_for_message(p[0]) + " is not in " + type_name(fn.self));
    }
    if (m == "count") {
        const Params p(args, m, {"value"});
        if (!p.has(0)) fail("count() takes exactly one argument (0 given)");
        ev.step(items.size());
        return Value::integer(
            std::count_if(items.begin(), items.end(), [&](const Value& v) { return py_equal(v, p[0]); }));
    }
    if (m == "copy") {
        no_args(args, m);
        return Value::list(items);
    }
    return not_implemented(ev, fn, args);
}

// ---- numbers ----

Value number_method(Evaluator& ev, const CallableData& fn, const Args& args) {
    const Value& x = fn.self;
    const std::string& m = fn.name;
    if (m == "conjugate") {
        no_args(args, m);
        return x.kind() == Kind::Bool ? Value::integer(x.get_int()) : x;
    }
    if (m == "is_integer" && x.kind() == Kind::Float) {
        no_args(args, m);
        const double f = x.get_float();
        return Value::boolean(std::isfinite(f) && f == std::floor(f));
    }
    if (m == "bit_length" && x.is_integral()) {
        no_args(args, m);
        uint64_t u = x.get_int() < 0 ? uint64_t(0) - uint64_t(x.get_int()) : uint64_t(x.get_int());
        int64_t n = 0;
        while (u) {
            ++n;
            u >>= 1;
        }
        return Value::integer(n);
    }
    return not_implemented(ev, fn, args);
}

// ---- dict.fromkeys (transformers' TemplateDict) and cycler objects ----

Value dict_fromkeys(Evaluator& ev, const CallableData&, const Args& args) {
    const Params p(args, "fromkeys", {"iterable", "value"});
    if (!p.has(0)) fail("fromkeys expected at least 1 argument, got 0");
    DictData d;
    const Value value = p.get(1, Value::none());
    const Items items = ev.iterate(p[0]);
    for (const Value& k : items.get()) {
        ev.step();
        d.put(k, value);
    }
    return Value::dict(std::move(d));
}

Value cycler_method(Evaluator&, const CallableData& fn, const Args& args) {
    no_args(args, fn.name);
    NamespaceData& state = fn.self.ns();
    const std::vector<Value>& items = state.find("items")->items();
    const int64_t pos = state.find("pos")->get_int();
    if (fn.name == "reset") {
        state.set("pos", Value::integer(0));
        return Value::none();
    }
    state.set("pos", Value::integer((pos + 1) % int64_t(items.size())));  // next()
    return items[size_t(pos)];
}

Value cycler_attribute(const Value& obj, const std::string& name, bool& found) {
    found = true;
    if (name == "next" || name == "reset") return bound(obj, name, cycler_method);
    if (name == "current") {
        const NamespaceData& state = obj.ns();
        return state.find("items")->items()[size_t(state.find("pos")->get_int())];
    }
    found = false;
    return Value();
}

// ---- the loop object ----

Value loop_cycle(Evaluator&, const CallableData& fn, const Args& args) {
    if (!args.kw.empty()) fail("cycle() takes no keyword arguments");
    if (args.pos.empty()) fail("no items for cycling given");
    return args.pos[fn.self.loop().index0 % args.pos.size()];
}

Value loop_changed(Evaluator&, const CallableData& fn, const Args& args) {
    LoopData& l = fn.self.loop();
    const Value current = Value::tuple(args.pos);
    const bool changed = !l.changed_called || !py_equal(current, l.last_changed);
    l.changed_called = true;
    l.last_changed = current;
    return Value::boolean(changed);
}

Value loop_attribute(const Value& self, const std::string& name, bool& found) {
    const LoopData& l = self.loop();
    const auto n = int64_t(l.items->size());
    const auto i = int64_t(l.index0);
    found = true;
    if (name == "index") return Value::integer(i + 1);
    if (name == "index0") return Value::integer(i);
    if (name == "revindex") return Value::integer(n - i);
    if (name == "revindex0") return Value::integer(n - i - 1);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(i == n - 1);
    if (name == "length") return Value::integer(n);
    if (name == "depth") return Value::integer(l.depth);
    if (name == "depth0") return Value::integer(l.depth - 1);
    if (name == "previtem") {
        return i > 0 ? (*l.items)[size_t(i - 1)] : Value::undefined("there is no previous item");
    }
    if (name == "nextitem") {
        return i + 1 < n ? (*l.items)[size_t(i + 1)] : Value::undefined("there is no next item");
    }
    if (name == "cycle") return bound(self, name, loop_cycle);
    if (name == "changed") return bound(self, name, loop_changed);
    found = false;
    return Value();
}

}  // namespace

Value python_attribute(Evaluator& ev, const Value& obj, const std::string& name, bool& found) {
    (void)ev;
    found = false;
    switch (obj.kind()) {
    case Kind::String:
        if (in_list(name,
                    {"capitalize", "casefold",     "center",       "count",   "encode",     "endswith",    "expandtabs",
                     "find",       "format",       "format_map",   "index",   "isalnum",    "isalpha",     "isascii",
                     "isdecimal",  "isdigit",      "isidentifier", "islower", "isnumeric",  "isprintable", "isspace",
                     "istitle",    "isupper",      "join",         "ljust",   "lower",      "lstrip",      "maketrans",
                     "partition",  "removeprefix", "removesuffix", "replace", "rfind",      "rindex",      "rjust",
                     "rpartition", "rsplit",       "rstrip",       "split",   "splitlines", "startswith",  "strip",
                     "swapcase",   "title",        "translate",    "upper",   "zfill"})) {
            found = true;
            return bound(obj, name, str_method);
        }
        return Value();
    case Kind::Dict:
        if (in_list(name, {"clear", "pop", "popitem", "setdefault", "update"})) {
            found = true;
            return unsafe(obj, name);
        }
        if (in_list(name, {"copy", "fromkeys", "get", "items", "keys", "values"})) {
            found = true;
            return bound(obj, name, dict_method);
        }
        return Value();
    case Kind::List:
        if (in_list(name, {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"})) {
            found = true;
            return unsafe(obj, name);
        }
        if (in_list(name, {"copy", "count", "index"})) {
            found = true;
            return bound(obj, name, list_method);
        }
        return Value();
    case Kind::Tuple:
        if (obj.flavor() == Flavor::GroupTuple && (name == "grouper" || name == "list")) {
            found = true;
            return obj.items()[name == "grouper" ? 0 : 1];
        }
        if (in_list(name, {"count", "index"})) {
            found = true;
            return bound(obj, name, list_method);
        }
        return Value();
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
        if (name == "real") {
            found = true;
            return obj.kind() == Kind::Bool ? Value::integer(obj.get_int()) : obj;
        }
        if (name == "imag") {
            found = true;
            return obj.kind() == Kind::Float ? Value::number(0.0) : Value::integer(0);
        }
        if (obj.is_integral() && (name == "numerator" || name == "denominator")) {
            found = true;
            return Value::integer(name == "numerator" ? obj.get_int() : 1);
        }
        if (in_list(name, {"conjugate", "as_integer_ratio"}) ||
            (obj.kind() == Kind::Float && in_list(name, {"is_integer", "hex", "fromhex"})) ||
            (obj.kind() != Kind::Float && in_list(name, {"bit_length", "bit_count", "to_bytes", "from_bytes"}))) {
            found = true;
            return bound(obj, name, number_method);
        }
        return Value();
    case Kind::Loop: return loop_attribute(obj, name, found);
    case Kind::Namespace:
        if (obj.ns().role == NamespaceData::Role::Cycler) return cycler_attribute(obj, name, found);
        if (obj.ns().role != NamespaceData::Role::Namespace) return Value();
        if (const Value* v = obj.ns().find(name)) {
            found = true;
            return *v;
        }
        return Value();
    case Kind::Callable:
        if (obj.callable().macro != nullptr && name == "name") {
            found = true;
            return Value::string(obj.callable().name);
        }
        if (obj.callable().macro == nullptr && obj.callable().name == "dict" && name == "fromkeys") {
            found = true;
            return bound(obj, name, dict_fromkeys);
        }
        return Value();
    default: return Value();
    }
}

}  // namespace snapkv::jinja
