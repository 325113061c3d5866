// Jinja's operators with Python's semantics: + - * / // % ** on ints (64-bit, overflow is an
// error rather than a big integer), floats and bools, str/list/tuple concatenation and
// repetition, str % args, `in` and slicing (CPython's PySlice_AdjustIndices). Comparisons are
// in jinja_value.cpp; the evaluator decides what reaches here.
#include <cmath>
#include <limits>

#include "core/tokenizer/jinja_eval.h"
#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

const char* op_symbol(BinOp op) {
    switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::FloorDiv: return "//";
    case BinOp::Mod: return "%";
    case BinOp::Pow: return "**";
    }
    return "?";
}

[[noreturn]] void unsupported(BinOp op, const Value& a, const Value& b) {
    if (op == BinOp::Add && (a.is_string() || a.is_sequence()) && a.kind() != b.kind()) {
        fail("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
    }
    fail(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + type_name(a) + "' and '" +
         type_name(b) + "'");
}

[[noreturn]] void overflow(BinOp op, int64_t a, int64_t b) {
    fail("integer overflow: " + std::to_string(a) + " " + op_symbol(op) + " " + std::to_string(b) +
         " does not fit in 64 bits (Python would use a big integer)");
}

// CPython's float divmod: the remainder has the divisor's sign.
void float_divmod(double vx, double wx, double& div, double& mod) {
    if (wx == 0.0) fail("float division by zero");
    mod = std::fmod(vx, wx);
    div = (vx - mod) / wx;
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, wx);
    }
    if (div != 0.0) {
        const double floordiv = std::floor(div);
        if (div - floordiv > 0.5) div = floordiv + 1.0;
        else div = floordiv;
    } else {
        div = std::copysign(0.0, vx / wx);
    }
}

Value int_pow(int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 0) fail("0.0 cannot be raised to a negative power");
        return Value::number(std::pow(double(base), double(exp)));
    }
    int64_t result = 1;
    int64_t b = base;
    for (int64_t e = exp; e > 0;) {
        if ((e & 1) && __builtin_mul_overflow(result, b, &result)) overflow(BinOp::Pow, base, exp);
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(b, b, &b)) overflow(BinOp::Pow, base, exp);
    }
    return Value::integer(result);
}

Value repeat(Evaluator& ev, const Value& seq, int64_t n) {
    if (n <= 0)
        return seq.is_string() ? Value::string("") : (seq.kind() == Kind::Tuple ? Value::tuple({}) : Value::list({}));
    if (seq.is_string()) {
        const std::string& s = seq.str();
        if (!s.empty() && uint64_t(n) > ev.options().max_string_bytes / s.size()) {
            fail("string repetition of " + std::to_string(s.size()) + " bytes x " + std::to_string(n) +
                 " exceeds the string limit of " + std::to_string(ev.options().max_string_bytes) + " bytes");
        }
        std::string out;
        out.reserve(s.size() * size_t(n));
        for (int64_t i = 0; i < n; ++i) out += s;
        return ev.make_string(std::move(out), seq.is_markup());
    }
    const auto& items = seq.items();
    if (!items.empty()) ev.step(uint64_t(n) > UINT64_MAX / items.size() ? UINT64_MAX / 2 : uint64_t(n) * items.size());
    std::vector<Value> out;
    out.reserve(items.size() * size_t(n));
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return seq.kind() == Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

bool plain_sequence(const Value& v) { return v.flavor() == Flavor::Plain || v.flavor() == Flavor::GroupTuple; }

// Markup % args escapes the arguments (markupsafe's _MarkupEscapeHelper): strings and anything
// printed through str()/repr(); numbers stay numbers for %d and %f.
Value escaped_args(const Value& args, size_t limit) {
    const auto escape_one = [limit](const Value& x) {
        if (x.is_markup() || x.is_number()) return x;
        return Value::string(text::html_escape(py_str(x, limit)), true);
    };
    if (args.kind() != Kind::Tuple) return args.kind() == Kind::Dict || args.is_undefined() ? args : escape_one(args);
    std::vector<Value> out;
    for (const Value& x : args.items()) out.push_back(escape_one(x));
    return Value::tuple(std::move(out));
}

}  // namespace

Value binary_op(Evaluator& ev, BinOp op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (op == BinOp::Mod && a.is_string()) {  // str.__mod__ takes any right side, an Undefined too
        const size_t limit = ev.options().max_string_bytes;
        if (a.is_markup()) return ev.make_string(percent_format(a.str(), escaped_args(b, limit), limit), true);
        return ev.make_string(percent_format(a.str(), b, limit));
    }
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) {
        if (a.is_integral() && b.is_integral()) {
            const int64_t x = a.get_int(), y = b.get_int();
            int64_t r = 0;
            switch (op) {
            case BinOp::Add:
                if (__builtin_add_overflow(x, y, &r)) overflow(op, x, y);
                return Value::integer(r);
            case BinOp::Sub:
                if (__builtin_sub_overflow(x, y, &r)) overflow(op, x, y);
                return Value::integer(r);
            case BinOp::Mul:
                if (__builtin_mul_overflow(x, y, &r)) overflow(op, x, y);
                return Value::integer(r);
            case BinOp::Div:
                if (y == 0) fail("division by zero");
                return Value::number(double(x) / double(y));
            case BinOp::FloorDiv:
            case BinOp::Mod: {
                if (y == 0) fail(op == BinOp::Mod ? "integer modulo by zero" : "integer division or modulo by zero");
                if (x == std::numeric_limits<int64_t>::min() && y == -1) {
                    if (op == BinOp::Mod) return Value::integer(0);
                    overflow(op, x, y);
                }
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    m += y;
                    q -= 1;
                }
                return Value::integer(op == BinOp::Mod ? m : q);
            }
            case BinOp::Pow: return int_pow(x, y);
            }
        }
        const double x = a.get_float(), y = b.get_float();
        switch (op) {
        case BinOp::Add: return Value::number(x + y);
        case BinOp::Sub: return Value::number(x - y);
        case BinOp::Mul: return Value::number(x * y);
        case BinOp::Div:
            if (y == 0.0) fail("float division by zero");
            return Value::number(x / y);
        case BinOp::FloorDiv:
        case BinOp::Mod: {
            double div = 0, mod = 0;
            float_divmod(x, y, div, mod);
            return Value::number(op == BinOp::Mod ? mod : div);
        }
        case BinOp::Pow: {
            if (x == 0.0 && y < 0.0) fail("0.0 cannot be raised to a negative power");
            if (x < 0.0 && std::isfinite(y) && y != std::floor(y)) {
                fail("a negative number to a fractional power is complex (not supported)");
            }
            const double r = std::pow(x, y);
            if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) fail("(34, 'Numerical result out of range')");
            return Value::number(r);
        }
        }
    }
    switch (op) {
    case BinOp::Add:
        if (a.is_string() && b.is_string()) {
            ev.count_bytes(a.str().size() + b.str().size());
            if (a.is_markup() || b.is_markup()) {  // Markup.__add__ / __radd__ escape the plain side
                const auto side = [](const Value& x) { return x.is_markup() ? x.str() : text::html_escape(x.str()); };
                return ev.make_string(side(a) + side(b), true);
            }
            return Value::string(a.str() + b.str());
        }
        if (a.is_sequence() && a.kind() == b.kind() && plain_sequence(a) && plain_sequence(b)) {
            ev.step(a.items().size() + b.items().size());
            std::vector<Value> out;
            out.reserve(a.items().size() + b.items().size());
            out.insert(out.end(), a.items().begin(), a.items().end());
            out.insert(out.end(), b.items().begin(), b.items().end());
            return a.kind() == Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
        }
        break;
    case BinOp::Mul:
        if ((a.is_string() || a.is_sequence()) && b.is_integral()) return repeat(ev, a, b.get_int());
        if ((b.is_string() || b.is_sequence()) && a.is_integral()) return repeat(ev, b, a.get_int());
        break;
    default: break;
    }
    unsupported(op, a, b);
}

Value negate(const Value& v) {
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_integral()) {
        if (v.get_int() == std::numeric_limits<int64_t>::min()) fail("integer overflow negating -2**63");
        return Value::integer(-v.get_int());
    }
    if (v.kind() == Kind::Float) return Value::number(-v.get_float());
    fail("bad operand type for unary -: '" + type_name(v) + "'");
}

bool contains(Evaluator& ev, const Value& container, const Value& item) {
    switch (container.kind()) {
    case Kind::String:
        if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + type_name(item));
        ev.charge_search(container.str().size(), item.str().size());
        return container.str().find(item.str()) != std::string::npos;
    case Kind::List:
    case Kind::Tuple:
        for (const Value& v : container.items()) {
            ev.step();
            if (py_equal(v, item)) return true;
        }
        return false;
    case Kind::Dict:
        if (!is_hashable(item)) fail("unhashable type: '" + type_name(item) + "'");
        return container.dict().find(item) != nullptr;
    case Kind::Iterator: {
        IteratorData& it = container.iter();
        while (it.pos < it.items.size()) {
            ev.step();
            if (py_equal(it.items[it.pos++], item)) return true;
        }
        return false;
    }
    case Kind::Undefined: return false;  // iterating an Undefined yields nothing
    default: fail("argument of type '" + type_name(container) + "' is not iterable");
    }
}

Value slice_value(Evaluator& ev, const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
    const auto index = [](const Value& v, bool& ok) -> int64_t {
        if (v.is_none()) return 0;
        if (!v.is_integral()) ok = false;
        return v.is_integral() ? v.get_int() : 0;
    };
    // jinja2 compiles obj[a:b] to plain Python subscription (not its getitem), so errors raise.
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.kind() == Kind::Dict) fail("unhashable type: 'slice'");
    const Flavor fl = obj.flavor();
    if (!(obj.is_string() || obj.is_sequence()) || fl == Flavor::DictItems || fl == Flavor::DictKeys ||
        fl == Flavor::DictValues) {
        fail("'" + type_name(obj) + "' object is not subscriptable");
    }
    bool ok = true;
    const int64_t step = step_v.is_none() ? 1 : index(step_v, ok);
    const int64_t start_raw = index(start_v, ok), stop_raw = index(stop_v, ok);
    if (!ok) fail("slice indices must be integers or None or have an __index__ method");
    if (step == 0) fail("slice step cannot be zero");
    const bool ascii = obj.is_string() && text::is_ascii(obj.str());
    std::vector<uint32_t> cps;
    if (obj.is_string() && !ascii) cps = text::code_points(obj.str());
    const int64_t len = obj.is_string() ? int64_t(ascii ? obj.str().size() : cps.size()) : int64_t(obj.items().size());
    // PySlice_AdjustIndices
    const auto adjust = [&](const Value& v, int64_t raw, bool is_start) {
        if (v.is_none()) return step < 0 ? (is_start ? len - 1 : -1) : (is_start ? 0 : len);
        int64_t x = raw;
        if (x < 0) {
            x += len;
            if (x < 0) x = step < 0 ? -1 : 0;
        } else if (x >= len) {
            x = step < 0 ? len - 1 : len;
        }
        return x;
    };
    const int64_t start = adjust(start_v, start_raw, true), stop = adjust(stop_v, stop_raw, false);
    int64_t n = 0;
    if (step > 0 && start < stop) n = (stop - start - 1) / step + 1;
    if (step < 0 && stop < start) n = (start - stop - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1;
    ev.step(uint64_t(n));
    std::vector<int64_t> picks(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) picks[size_t(k)] = start + k * step;  // |k * step| < len: no overflow
    if (obj.is_string()) {
        std::string out;
        if (ascii && step == 1) {
            out = obj.str().substr(size_t(start), picks.size());
        } else {
            for (const int64_t i : picks) {
                if (ascii) {
                    out += obj.str()[size_t(i)];
                } else {
                    text::append_code_point(out, cps[size_t(i)]);
                }
            }
        }
        return ev.make_string(std::move(out));
    }
    std::vector<Value> out;
    out.reserve(picks.size());
    for (const int64_t i : picks) out.push_back(obj.items()[size_t(i)]);
    return obj.kind() == Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace snapkv::jinja
