// Jinja's filters over sequences as jinja2 3.1's filters.py defines them: map, select, reject,
// selectattr, rejectattr, unique, items, batch and slice return single-use generators (truthy,
// without a length) as jinja2's do; sort, dictsort and groupby sort stably with jinja2's
// case-insensitive keys; join, first, last, min, max, sum, list, length, reverse. Attribute
// paths ("a.0.b") follow make_attrgetter. The table of the other filters is in jinja_filters.cpp.
#include <algorithm>

#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {

std::vector<Value> attribute_parts(const Value& attribute) {
    std::vector<Value> parts;
    if (attribute.is_none() || attribute.is_undefined()) return parts;
    if (!attribute.is_string()) {
        parts.push_back(attribute);
        return parts;
    }
    const std::string& s = attribute.str();
    size_t start = 0;
    while (true) {
        const size_t dot = s.find('.', start);
        const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool digits = !part.empty() && part.size() < 19 &&
                            std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        parts.push_back(digits ? Value::integer(std::stoll(part)) : Value::string(part));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

// make_attrgetter
Value get_path(Evaluator& ev, Value item, const std::vector<Value>& parts, const Value* fallback) {
    for (const Value& p : parts) {
        item = ev.getitem(item, p);
        if (fallback != nullptr && item.is_undefined()) item = *fallback;
    }
    return item;
}

namespace {

std::vector<Value> to_list(Evaluator& ev, const Value& v) {
    Items items = ev.iterate(v);
    return items.take();
}

std::string soft_str(Evaluator& ev, const Value& v) { return v.is_string() ? v.str() : ev.to_str(v); }

Value lower_if_string(const Value& v) { return v.is_string() ? Value::string(text::lower(v.str())) : v; }

bool arg_bool(const Value& v) { return truthy(v); }

Value f_batch(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "batch", {"linecount", "fill_with"});
    if (!p.has(0)) fail("batch() missing 1 required positional argument: 'linecount'");
    const int64_t n = arg_int(p[0], "batch", "linecount");
    if (n <= 0) fail("batch(): linecount must be positive, got " + std::to_string(n));
    const std::vector<Value> items = to_list(ev, v);
    std::vector<Value> out;
    for (size_t i = 0; i < items.size(); i += size_t(n)) {
        std::vector<Value> row(items.begin() + std::ptrdiff_t(i),
                               items.begin() + std::ptrdiff_t(std::min(items.size(), i + size_t(n))));
        if (row.size() < size_t(n) && p.has(1) && !p[1].is_none()) row.resize(size_t(n), p[1]);
        out.push_back(Value::list(std::move(row)));
    }
    return Value::iterator(std::move(out), "generator object do_batch");
}

Value f_length(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "length");
    return Value::integer(ev.length(v));
}

Value f_dictsort(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "dictsort", {"case_sensitive", "by", "reverse"});
    const bool case_sensitive = p.has(0) && arg_bool(p[0]);
    const std::string by = p.has(1) ? arg_str(p[1], "dictsort", "by") : "key";
    const bool reverse = p.has(2) && arg_bool(p[2]);
    if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
    if (v.is_undefined()) fail_undefined(v);
    if (v.kind() != Kind::Dict) fail("'" + type_name(v) + "' object has no attribute 'items'");
    const size_t pos = by == "key" ? 0 : 1;
    struct Entry {
        Value key;
        Value pair;
    };
    std::vector<Entry> entries;
    for (const auto& [k, val] : v.dict().entries) {
        const Value& sort_on = pos == 0 ? k : val;
        entries.push_back({case_sensitive ? sort_on : lower_if_string(sort_on), Value::tuple({k, val})});
    }
    ev.step(entries.size() * 4);
    std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
        return reverse ? py_less(b.key, a.key) : py_less(a.key, b.key);
    });
    std::vector<Value> out;
    for (auto& e : entries) out.push_back(std::move(e.pair));
    return Value::list(std::move(out));
}

Value f_first(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "first");
    if (v.kind() == Kind::Iterator) {
        IteratorData& it = v.iter();
        if (it.pos < it.items.size()) return it.items[it.pos++];
    } else {
        const Items items = ev.iterate(v);
        if (!items.get().empty()) return items.get().front();
    }
    return Value::undefined("No first item, sequence was empty.");
}

Value f_last(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "last");
    if (v.kind() == Kind::Iterator) fail("'generator' object is not reversible");
    const Items items = ev.iterate(v);
    if (!items.get().empty()) return items.get().back();
    return Value::undefined("No last item, sequence was empty.");
}

Value f_groupby(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "groupby", {"attribute", "default", "case_sensitive"});
    if (!p.has(0)) fail("groupby() missing 1 required positional argument: 'attribute'");
    const std::vector<Value> parts = attribute_parts(p[0]);
    const Value fallback = p.get(1, Value::none());
    const Value* fb = fallback.is_none() ? nullptr : &fallback;
    const bool case_sensitive = p.has(2) && arg_bool(p[2]);
    struct Entry {
        Value key;
        Value item;
    };
    std::vector<Entry> entries;
    for (const Value& item : to_list(ev, v)) {
        const Value k = get_path(ev, item, parts, fb);
        entries.push_back({case_sensitive ? k : lower_if_string(k), item});
    }
    ev.step(entries.size() * 4);
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return py_less(a.key, b.key); });
    std::vector<Value> out;
    for (size_t i = 0; i < entries.size();) {
        size_t j = i;
        std::vector<Value> group;
        while (j < entries.size() && py_equal(entries[j].key, entries[i].key)) group.push_back(entries[j++].item);
        const Value grouper = case_sensitive ? entries[i].key : get_path(ev, group.front(), parts, fb);
        out.push_back(Value::flavored(Flavor::GroupTuple, {grouper, Value::list(std::move(group))}));
        i = j;
    }
    return Value::list(std::move(out));
}

Value f_items(Evaluator&, const Value& v, const Args& args) {
    no_args(args, "items");
    if (v.is_undefined()) return Value::iterator({}, "generator object do_items");
    if (v.kind() != Kind::Dict) fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict().entries) out.push_back(Value::tuple({k, val}));
    return Value::iterator(std::move(out), "generator object do_items");
}

Value f_join(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "join", {"d", "attribute"});
    const std::string sep = p.has(0) ? soft_str(ev, p[0]) : "";
    const std::vector<Value> parts = p.has(1) && !p[1].is_none() ? attribute_parts(p[1]) : std::vector<Value>{};
    const bool by_attr = p.has(1) && !p[1].is_none();
    if (v.is_none() || v.is_number()) fail("'" + type_name(v) + "' object is not iterable");
    const Items items = ev.iterate(v);
    std::string out;
    bool first = true;
    for (const Value& item : items.get()) {
        if (!first) out += sep;
        first = false;
        const Value x = by_attr ? get_path(ev, item, parts, nullptr) : item;
        append_str(out, x, ev.options().max_string_bytes);
        if (out.size() > ev.options().max_string_bytes) fail("join() built a string over the limit");
    }
    return ev.make_string(std::move(out));
}

Value f_list(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "list");
    return Value::list(to_list(ev, v));
}

Value f_map(Evaluator& ev, const Value& v, const Args& args) {
    if (!truthy(v)) return Value::iterator({}, "generator object sync_do_map");
    const Items items = ev.iterate(v);
    std::vector<Value> out;
    out.reserve(items.get().size());
    const bool by_attr = args.pos.empty() && std::any_of(args.kw.begin(), args.kw.end(),
                                                         [](const auto& kw) { return kw.first == "attribute"; });
    if (by_attr) {
        Value attribute, fallback = Value::none();
        for (const auto& [k, val] : args.kw) {
            if (k == "attribute") {
                attribute = val;
            } else if (k == "default") {
                fallback = val;
            } else {
                fail("Unexpected keyword argument '" + k + "'");
            }
        }
        const std::vector<Value> parts = attribute_parts(attribute);
        for (const Value& item : items.get()) {
            ev.step();
            out.push_back(get_path(ev, item, parts, fallback.is_none() ? nullptr : &fallback));
        }
    } else {
        if (args.pos.empty()) fail("map requires a filter argument");
        const std::string& name = arg_str(args.pos[0], "map", "name");
        Args rest;
        rest.pos.assign(args.pos.begin() + 1, args.pos.end());
        rest.kw = args.kw;
        for (const Value& item : items.get()) {
            ev.step();
            out.push_back(ev.apply_filter(name, item, rest));
        }
    }
    return Value::iterator(std::move(out), "generator object sync_do_map");
}

Value min_max(Evaluator& ev, const Value& v, const Args& args, const char* fname, bool want_max) {
    const Params p(args, fname, {"case_sensitive", "attribute"});
    const bool case_sensitive = p.has(0) && arg_bool(p[0]);
    const std::vector<Value> parts = p.has(1) ? attribute_parts(p[1]) : std::vector<Value>{};
    const Items items = ev.iterate(v);
    if (items.get().empty()) return Value::undefined("No aggregated item, sequence was empty.");
    const auto key = [&](const Value& x) {
        const Value k = get_path(ev, x, parts, nullptr);
        return case_sensitive ? k : lower_if_string(k);
    };
    const Value* best = &items.get().front();
    Value best_key = key(*best);
    for (size_t i = 1; i < items.get().size(); ++i) {
        ev.step();
        const Value k = key(items.get()[i]);
        if (want_max ? py_less(best_key, k) : py_less(k, best_key)) {
            best = &items.get()[i];
            best_key = k;
        }
    }
    return *best;
}

Value f_max(Evaluator& ev, const Value& v, const Args& args) { return min_max(ev, v, args, "max", true); }
Value f_min(Evaluator& ev, const Value& v, const Args& args) { return min_max(ev, v, args, "min", false); }

Value select_reject(Evaluator& ev, const Value& v, const Args& args, bool select, bool by_attr, const char* fname) {
    if (!truthy(v)) return Value::iterator({}, "generator object select_or_reject");
    const Items items = ev.iterate(v);
    size_t off = 0;
    std::vector<Value> parts;
    if (by_attr) {
        if (args.pos.empty()) fail("Missing parameter for attribute name");
        parts = attribute_parts(args.pos[0]);
        off = 1;
    }
    std::string test;
    const bool has_test = args.pos.size() > off;
    if (has_test) test = arg_str(args.pos[off], fname, "test");
    Args rest;
    if (has_test) rest.pos.assign(args.pos.begin() + std::ptrdiff_t(off + 1), args.pos.end());
    rest.kw = args.kw;
    std::vector<Value> out;
    for (const Value& item : items.get()) {
        ev.step();
        const Value x = by_attr ? get_path(ev, item, parts, nullptr) : item;
        const bool r = has_test ? ev.apply_test(test, x, rest) : truthy(x);
        if (r == select) out.push_back(item);
    }
    return Value::iterator(std::move(out), "generator object select_or_reject");
}

Value f_select(Evaluator& ev, const Value& v, const Args& a) { return select_reject(ev, v, a, true, false, "select"); }
Value f_reject(Evaluator& ev, const Value& v, const Args& a) { return select_reject(ev, v, a, false, false, "reject"); }
Value f_selectattr(Evaluator& ev, const Value& v, const Args& a) {
    return select_reject(ev, v, a, true, true, "selectattr");
}
Value f_rejectattr(Evaluator& ev, const Value& v, const Args& a) {
    return select_reject(ev, v, a, false, true, "rejectattr");
}

Value f_reverse(Evaluator& ev, const Value& v, const Args& args) {
    no_args(args, "reverse");
    if (v.is_string()) {
        const auto cps = text::code_points(v.str());
        std::string out;
        for (auto it = cps.rbegin(); it != cps.rend(); ++it) text::append_code_point(out, *it);
        return ev.make_string(std::move(out));
    }
    std::vector<Value> items = to_list(ev, v);
    std::reverse(items.begin(), items.end());
    // reversed() of a sequence is an iterator; a generator becomes a reversed list.
    if (v.kind() == Kind::Iterator) return Value::list(std::move(items));
    const char* name = v.kind() == Kind::List
                           ? "list_reverseiterator object"
                           : (v.kind() == Kind::Dict ? "dict_reversekeyiterator object" : "reversed object");
    return Value::iterator(std::move(items), name);
}

Value f_slice(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "slice", {"slices", "fill_with"});
    if (!p.has(0)) fail("slice() missing 1 required positional argument: 'slices'");
    const int64_t slices = arg_int(p[0], "slice", "slices");
    if (slices <= 0) fail(slices == 0 ? "integer division or modulo by zero" : "slice(): slices must be positive");
    if (slices > 100000) fail("slice(): " + std::to_string(slices) + " slices is too many");
    const std::vector<Value> seq = to_list(ev, v);
    const auto length = int64_t(seq.size());
    const int64_t per = length / slices, extra = length % slices;
    int64_t offset = 0;
    std::vector<Value> out;
    for (int64_t n = 0; n < slices; ++n) {
        const int64_t start = offset + n * per;
        if (n < extra) ++offset;
        const int64_t end = offset + (n + 1) * per;
        std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
        if (p.has(1) && !p[1].is_none() && n >= extra) tmp.push_back(p[1]);
        out.push_back(Value::list(std::move(tmp)));
    }
    return Value::iterator(std::move(out), "generator object sync_do_slice");
}

Value f_sort(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "sort", {"reverse", "case_sensitive", "attribute"});
    const bool reverse = p.has(0) && arg_bool(p[0]);
    const bool case_sensitive = p.has(1) && arg_bool(p[1]);
    // make_multi_attrgetter: "a,b" sorts on several attributes
    std::vector<std::vector<Value>> paths;
    if (p.has(2) && p[2].is_string()) {
        const std::string& s = p[2].str();
        size_t start = 0;
        while (true) {
            const size_t comma = s.find(',', start);
            paths.push_back(
                attribute_parts(Value::string(s.substr(start, comma == std::string::npos ? comma : comma - start))));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    } else {
        paths.push_back(p.has(2) ? attribute_parts(p[2]) : std::vector<Value>{});
    }
    struct Entry {
        Value key;
        Value item;
    };
    std::vector<Entry> entries;
    for (const Value& item : to_list(ev, v)) {
        std::vector<Value> key;
        for (const auto& path : paths) {
            const Value k = get_path(ev, item, path, nullptr);
            key.push_back(case_sensitive ? k : lower_if_string(k));
        }
        entries.push_back({Value::list(std::move(key)), item});
    }
    ev.step(entries.size() * 4);
    std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
        return reverse ? py_less(b.key, a.key) : py_less(a.key, b.key);
    });
    std::vector<Value> out;
    for (auto& e : entries) out.push_back(std::move(e.item));
    return Value::list(std::move(out));
}

Value f_sum(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "sum", {"attribute", "start"});
    const bool by_attr = p.has(0) && !p[0].is_none();
    const std::vector<Value> parts = by_attr ? attribute_parts(p[0]) : std::vector<Value>{};
    Value total = p.get(1, Value::integer(0));
    if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
    const Items items = ev.iterate(v);
    for (const Value& item : items.get()) {
        ev.step();
        total = binary_op(ev, BinOp::Add, total, by_attr ? get_path(ev, item, parts, nullptr) : item);
    }
    return total;
}

Value f_unique(Evaluator& ev, const Value& v, const Args& args) {
    const Params p(args, "unique", {"case_sensitive", "attribute"});
    const bool case_sensitive = p.has(0) && arg_bool(p[0]);
    const std::vector<Value> parts = p.has(1) ? attribute_parts(p[1]) : std::vector<Value>{};
    std::vector<Value> seen, out;
    const Items items = ev.iterate(v);
    for (const Value& item : items.get()) {
        Value k = get_path(ev, item, parts, nullptr);
        if (!case_sensitive) k = lower_if_string(k);
        if (!is_hashable(k)) fail("unhashable type: '" + type_name(k) + "'");
        ev.step(seen.size() + 1);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, k); })) {
            seen.push_back(k);
            out.push_back(item);
        }
    }
    return Value::iterator(std::move(out), "generator object sync_do_unique");
}

const NamedFilter k_sequence_filters[] = {
    {"batch", f_batch},     {"count", f_length},    {"dictsort", f_dictsort},
    {"first", f_first},     {"groupby", f_groupby}, {"items", f_items},
    {"join", f_join},       {"last", f_last},       {"length", f_length},
    {"list", f_list},       {"map", f_map},         {"max", f_max},
    {"min", f_min},         {"reject", f_reject},   {"rejectattr", f_rejectattr},
    {"reverse", f_reverse}, {"select", f_select},   {"selectattr", f_selectattr},
    {"slice", f_slice},     {"sort", f_sort},       {"sum", f_sum},
    {"unique", f_unique},
};

}  // namespace

const NamedFilter* sequence_filters(size_t& count) {
    count = std::size(k_sequence_filters);
    return k_sequence_filters;
}

}  // namespace snapkv::jinja
