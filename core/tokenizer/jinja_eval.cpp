// The Jinja evaluator: statements and expressions over frames, with jinja2's scoping as its
// compiled code behaves (a for loop's body gets a fresh scope per iteration, if does not scope,
// macros see the frame they were defined in as it is when they run), macros and call blocks,
// sandboxed attribute and item access, and the render limits. Every runtime error becomes a
// TemplateError naming the line of the innermost node. Builtins and operators are elsewhere.
#include "core/tokenizer/jinja_eval.h"

#include <pthread.h>

#include <algorithm>

#include "core/tokenizer/jinja_format.h"
#include "core/tokenizer/jinja_text.h"

namespace snapkv::jinja {
namespace {

// Restores a pointer member when a scope ends, exceptions included.
template <typename T>
struct Restore {
    T& ref;
    T saved;
    Restore(T& r, T v) : ref(r), saved(r) { ref = v; }
    ~Restore() { ref = saved; }
    Restore(const Restore&) = delete;
    Restore& operator=(const Restore&) = delete;
};

// The lowest stack address rendering may reach: the thread's stack bottom plus a margin for the
// deepest non-recursive call chain (exception unwinding, PCRE2, sanitizers). Asked once per
// thread: on the main thread pthread_getattr_np reads /proc/self/maps (~0.1 ms).
const char* stack_limit() {
    const char* here = static_cast<const char*>(__builtin_frame_address(0));
    thread_local const char* limit = nullptr;
    thread_local bool known = false;
    if (!known) {
        known = true;
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void* addr = nullptr;
            size_t size = 0;
            const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
            pthread_attr_destroy(&attr);
            const char* bottom = static_cast<const char*>(addr);
            const size_t margin = 256 * 1024 + size / 8;
            if (ok && size > 2 * margin && here > bottom + margin) limit = bottom + margin;
        }
    }
    if (limit != nullptr && here > limit) return limit;
    return here - 512 * 1024;  // unknown stack: assume a small one
}

}  // namespace

TemplateError::TemplateError(const std::string& msg, int line)
    : InputError(line > 0 ? "template line " + std::to_string(line) + ": " + msg : "template: " + msg), m_line(line) {}

Template::Template(const std::string& source) : m_program(parse_template(source)) {}

std::string Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
    Evaluator ev(*m_program, options);
    return ev.render(context);
}

Evaluator::Evaluator(const Program& program, const RenderOptions& options) : m_program(program), m_options(options) {}

Evaluator::~Evaluator() = default;

void Evaluator::fail_steps() const {
    fail("rendering took more than " + std::to_string(m_options.max_steps) + " evaluation steps (a runaway loop?)");
}

void Evaluator::fail_bytes() const {
    fail("rendering built more than " + std::to_string(m_options.max_string_bytes) + " bytes of strings");
}

void Evaluator::check_stack(int line) const {
    const char* here = static_cast<const char*>(__builtin_frame_address(0));
    if (here < m_stack_limit) throw TemplateError("template nested too deeply for the stack", line);
}

std::string Evaluator::render(const nlohmann::ordered_json& context) {
    m_stack_limit = stack_limit();
    if (!context.is_object()) {
        throw TemplateError(std::string("the context must be a JSON object, got ") + context.type_name(), 0);
    }
    for (auto it = context.begin(); it != context.end(); ++it) {
        const auto sym = m_program.symbol_ids.find(it.key());
        if (sym == m_program.symbol_ids.end()) continue;  // the template never names it
        try {
            m_root.set(sym->second, from_json(it.value(), 0));
        } catch (const Fault& f) {
            throw TemplateError("context variable '" + it.key() + "': " + f.message, 0);
        }
    }
    enter_scope(m_program.scope, m_root);  // over the context: jinja2's locals shadow it
    std::string out;
    m_out = &out;
    exec_body(m_program.body, m_root);
    m_out = nullptr;
    return out;
}

Value Evaluator::from_json(const nlohmann::ordered_json& j, int depth) {
    if (depth > int(k_max_value_depth)) fail("nested more than " + std::to_string(k_max_value_depth) + " deep");
    switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
        const auto u = j.get<uint64_t>();
        if (u > uint64_t(INT64_MAX)) fail("the integer " + std::to_string(u) + " does not fit in 64 bits");
        return Value::integer(int64_t(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
        std::vector<Value> items;
        items.reserve(j.size());
        for (const auto& x : j) items.push_back(from_json(x, depth + 1));
        return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
        DictData d;
        for (auto it = j.begin(); it != j.end(); ++it) d.put(Value::string(it.key()), from_json(it.value(), depth + 1));
        return Value::dict(std::move(d));
    }
    default: fail("a JSON value of type " + std::string(j.type_name()) + " has no template value");
    }
}

NamespaceData* Evaluator::new_namespace() {
    count_bytes(sizeof(NamespaceData));  // lives until the render ends
    return &m_namespaces.emplace_back();
}

void Evaluator::write(std::string_view s) {
    m_out_total += s.size();
    if (m_out_total > m_options.max_output_bytes) {
        fail("the output passed " + std::to_string(m_options.max_output_bytes) + " bytes");
    }
    m_out->append(s);
}

void Evaluator::write_value(const Value& v) {
    if (v.is_string()) {
        write(v.str());
        return;
    }
    std::string s;
    append_str(s, v, m_options.max_output_bytes);
    write(s);
}

std::string Evaluator::to_str(const Value& v) {
    std::string s = py_str(v, m_options.max_string_bytes);
    if (!v.is_string()) count_bytes(s.size());
    return s;
}

// ---- statements ----

Evaluator::Flow Evaluator::exec_body(const Body& body, Frame& frame) {
    for (const auto& s : body) {
        const Flow f = exec(*s, frame);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

std::string Evaluator::capture(const Body& body, Frame& frame, Flow& flow) {
    std::string buf;
    Restore<std::string*> r(m_out, &buf);
    flow = exec_body(body, frame);
    return buf;
}

// A frame for a scope below parent: kept in the arena when a macro captured it.
struct ScopedFrame {
    std::unique_ptr<Frame> frame;
    std::vector<std::unique_ptr<Frame>>& arena;
    ScopedFrame(Frame& parent, std::vector<std::unique_ptr<Frame>>& a) : frame(std::make_unique<Frame>()), arena(a) {
        frame->parent = &parent;
    }
    ~ScopedFrame() {
        if (frame && frame->captured) arena.push_back(std::move(frame));
    }
    ScopedFrame(const ScopedFrame&) = delete;
    ScopedFrame& operator=(const ScopedFrame&) = delete;
    // A clean frame for the next iteration; a captured one moves to the arena.
    void reset() {
        if (frame->captured) {
            Frame* parent = frame->parent;
            arena.push_back(std::move(frame));
            frame = std::make_unique<Frame>();
            frame->parent = parent;
        } else {
            frame->vars.clear();
        }
    }
};

Evaluator::Flow Evaluator::exec(const Stmt& s, Frame& frame) {
    step();
    check_stack(s.line);
    try {
        switch (s.kind) {
        case StmtKind::Output:
            for (const OutputPart& p : static_cast<const OutputStmt&>(s).parts) {
                if (p.expr) {
                    write_value(eval(*p.expr, frame));
                } else {
                    write(p.text);
                }
            }
            return Flow::Normal;
        case StmtKind::If: {
            const auto& i = static_cast<const IfStmt&>(s);
            for (const auto& [test, body] : i.branches) {
                if (truthy(eval(*test, frame))) return exec_body(body, frame);
            }
            return exec_body(i.else_body, frame);
        }
        case StmtKind::For: exec_for(static_cast<const ForStmt&>(s), frame); return Flow::Normal;
        case StmtKind::Set: {
            const auto& a = static_cast<const SetStmt&>(s);
            exec_set(a.target, eval(*a.value, frame), frame);
            return Flow::Normal;
        }
        case StmtKind::SetBlock: {
            const auto& a = static_cast<const SetBlockStmt&>(s);
            ScopedFrame inner(frame, m_captured);
            enter_scope(a.scope, *inner.frame);
            Flow flow = Flow::Normal;
            Value v = make_string(capture(a.body, *inner.frame, flow));
            if (flow != Flow::Normal) return flow;
            if (a.filter) v = eval_filter(*a.filter, frame, &v);
            exec_set(a.target, v, frame);
            return Flow::Normal;
        }
        case StmtKind::Macro: {
            const auto& m = static_cast<const MacroStmt&>(s);
            frame.set(m.symbol, define_macro(m, frame));
            return Flow::Normal;
        }
        case StmtKind::CallBlock: exec_call_block(static_cast<const CallBlockStmt&>(s), frame); return Flow::Normal;
        case StmtKind::FilterBlock: {
            const auto& f = static_cast<const FilterBlockStmt&>(s);
            ScopedFrame inner(frame, m_captured);
            enter_scope(f.scope, *inner.frame);
            Flow flow = Flow::Normal;
            const Value body = make_string(capture(f.body, *inner.frame, flow));
            if (flow != Flow::Normal) return flow;
            write_value(eval_filter(*f.filter, frame, &body));
            return Flow::Normal;
        }
        case StmtKind::With: {
            const auto& w = static_cast<const WithStmt&>(s);
            ScopedFrame inner(frame, m_captured);
            enter_scope(w.scope, *inner.frame);
            for (const auto& [target, value] : w.assigns) exec_set(target, eval(*value, frame), *inner.frame);
            return exec_body(w.body, *inner.frame);
        }
        case StmtKind::Scope: {
            const auto& sc = static_cast<const ScopeStmt&>(s);
            ScopedFrame inner(sc.isolated ? m_root : frame, m_captured);
            enter_scope(sc.scope, *inner.frame);
            exec_body(sc.body, *inner.frame);  // no loop reaches in
            return Flow::Normal;
        }
        case StmtKind::Break: return Flow::Break;
        case StmtKind::Continue: return Flow::Continue;
        }
    } catch (const Fault& f) {
        throw TemplateError(f.message, s.line);
    }
    return Flow::Normal;
}

void Evaluator::exec_for(const ForStmt& s, Frame& frame) { run_loop(s, eval(*s.iter, frame), frame, 1); }

void Evaluator::run_loop(const ForStmt& s, const Value& seq, Frame& frame, int depth) {
    Items items = iterate(seq);
    count_bytes(sizeof(LoopData));  // lives until the render ends
    LoopData& loop = m_loops.emplace_back();
    ScopedFrame iter(frame, m_captured);
    if (s.filter) {
        // The loop filter sees the target but not `loop`; jinja2 counts only the kept items.
        std::vector<Value> kept;
        for (const Value& item : items.get()) {
            step();
            iter.reset();
            exec_set(s.target, item, *iter.frame);
            if (truthy(eval(*s.filter, *iter.frame))) kept.push_back(item);
        }
        loop.holder = Value::list(std::move(kept));
    } else if (items.holder.is_sequence()) {
        loop.holder = items.holder;
    } else {
        loop.holder = Value::list(std::move(items.owned));
    }
    loop.items = &loop.holder.items();
    loop.depth = depth;
    loop.stmt = &s;
    loop.frame = &frame;
    const size_t n = loop.items->size();
    if (n == 0) {
        ScopedFrame inner(frame, m_captured);
        enter_scope(s.else_scope, *inner.frame);
        exec_body(s.else_body, *inner.frame);
        return;
    }
    Restore<bool> active(loop.active, true);
    const Value loop_value = Value::loop_object(&loop);
    for (size_t i = 0; i < n; ++i) {
        step();
        iter.reset();
        enter_scope(s.body_scope, *iter.frame);
        loop.index0 = i;
        iter.frame->set(m_program.sym_loop, loop_value);
        exec_set(s.target, (*loop.items)[i], *iter.frame);
        if (exec_body(s.body, *iter.frame) == Flow::Break) break;
    }
}

// loop(items) inside a recursive for loop: the loop body over items, one level deeper.
Value Evaluator::call_loop(LoopData& loop, const Args& args) {
    if (!loop.stmt->recursive) fail("The loop must have the 'recursive' marker to be called recursively.");
    if (!loop.active) fail("a recursive loop cannot be called after it ended");
    if (args.pos.size() != 1 || !args.kw.empty()) fail("loop() takes exactly one argument, the items to loop over");
    if (m_call_depth >= m_options.max_call_depth) {
        fail("recursive loop nested more than " + std::to_string(m_options.max_call_depth) + " levels deep");
    }
    Restore<int> depth(m_call_depth, m_call_depth + 1);
    std::string buf;
    {
        Restore<std::string*> out(m_out, &buf);
        run_loop(*loop.stmt, args.pos[0], *loop.frame, loop.depth + 1);
    }
    return make_string(std::move(buf));
}

void Evaluator::exec_set(const Target& target, const Value& value, Frame& frame) {
    switch (target.kind) {
    case Target::Kind::Name: frame.set(target.symbol, value); return;
    case Target::Kind::Tuple: {
        if (value.is_undefined()) fail_undefined(value);
        const Items items = iterate(value);
        const auto& v = items.get();
        const size_t want = target.items.size();
        if (v.size() > want) fail("too many values to unpack (expected " + std::to_string(want) + ")");
        if (v.size() < want) {
            fail("not enough values to unpack (expected " + std::to_string(want) + ", got " + std::to_string(v.size()) +
                 ")");
        }
        for (size_t i = 0; i < want; ++i) exec_set(target.items[i], v[i], frame);
        return;
    }
    case Target::Kind::NsAttr: {
        Value ns;
        for (Frame* f = &frame; f != nullptr; f = f->parent) {
            if (const Value* v = f->find_local(target.symbol)) {
                ns = *v;
                break;
            }
        }
        if (ns.kind() != Kind::Namespace) {
            fail("cannot assign attribute '" + target.attr + "' on '" + target.name + "', a " + type_name(ns) +
                 " and not a namespace object");
        }
        if (!target.attr.empty() && target.attr[0] == '_') {
            fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '" + target.attr +
                 "'. Please rename the attribute.");
        }
        if (ns.ns().find(target.attr) == nullptr)
            count_bytes(sizeof(std::pair<std::string, Value>) + target.attr.size());
        ns.ns().set(target.attr, value);
        return;
    }
    }
}

Value Evaluator::define_macro(const MacroStmt& m, Frame& frame) {
    for (Frame* f = &frame; f != nullptr && !f->captured; f = f->parent) {
        count_bytes(sizeof(Frame) + f->vars.size() * sizeof(f->vars[0]));  // kept until the render ends
        f->captured = true;
    }
    auto fn = std::make_shared<CallableData>();
    fn->name = m.name;
    fn->macro = &m;
    fn->closure = &frame;
    return Value::callable(std::move(fn));
}

void Evaluator::exec_call_block(const CallBlockStmt& s, Frame& frame) {
    const Expr& call = *s.call;
    Value fn;
    const Expr& callee = *call.children[0];
    if (callee.kind == ExprKind::Getattr) {
        fn = getattr(eval(*callee.children[0], frame), callee.name);
    } else {
        fn = eval(callee, frame);
    }
    Args args = eval_args(call.call, frame);
    args.kw.emplace_back("caller", define_macro(*s.body, frame));
    write_value(this->call(fn, args));
}

Value Evaluator::call_macro(const CallableData& fn, const Args& args) {
    const MacroStmt& m = *fn.macro;
    if (m_call_depth >= m_options.max_call_depth) {
        fail("macro '" + m.name + "' called more than " + std::to_string(m_options.max_call_depth) +
             " levels deep (runaway recursion?)");
    }
    Restore<int> depth(m_call_depth, m_call_depth + 1);
    ScopedFrame scope(*fn.closure, m_captured);
    Frame& f = *scope.frame;
    enter_scope(m.scope, f);
    const size_t n_params = m.params.size();
    if (args.pos.size() > n_params && !m.uses_varargs) {
        fail("macro '" + m.name + "' takes not more than " + std::to_string(n_params) + " argument(s)");
    }
    std::vector<bool> given(n_params, false);
    for (size_t i = 0; i < std::min(n_params, args.pos.size()); ++i) {
        f.set(m.params[i].symbol, args.pos[i]);
        given[i] = true;
    }
    Value caller;
    DictData extra_kw;
    for (const auto& [name, value] : args.kw) {
        size_t i = 0;
        while (i < n_params && m.params[i].name != name) ++i;
        if (i < n_params) {
            if (given[i]) fail("macro '" + m.name + "' got multiple values for argument '" + name + "'");
            f.set(m.params[i].symbol, value);
            given[i] = true;
        } else if (name == "caller" && m.uses_caller) {
            caller = value;
        } else if (m.uses_kwargs) {
            extra_kw.put(Value::string(name), value);
        } else {
            fail("macro '" + m.name + "' takes no keyword argument '" + name + "'");
        }
    }
    for (size_t i = 0; i < n_params; ++i) {
        if (given[i]) continue;
        const MacroParam& p = m.params[i];
        f.set(p.symbol, p.default_value ? eval(*p.default_value, f)
                                        : Value::undefined("parameter '" + p.name + "' was not provided"));
    }
    if (m.uses_varargs) {
        std::vector<Value> rest;
        for (size_t i = n_params; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
        f.set(m_program.sym_varargs, Value::tuple(std::move(rest)));
    }
    if (m.uses_kwargs) f.set(m_program.sym_kwargs, Value::dict(std::move(extra_kw)));
    if (m.uses_caller)
        f.set(m_program.sym_caller, caller.is_undefined() ? Value::undefined("No caller defined") : caller);
    Flow flow = Flow::Normal;
    return make_string(capture(m.body, f, flow));
}

Value Evaluator::call(const Value& fn, const Args& args) {
    if (fn.is_undefined()) fail_undefined(fn);
    if (fn.kind() == Kind::Loop) return call_loop(fn.loop(), args);
    if (fn.kind() != Kind::Callable) fail("'" + type_name(fn) + "' object is not callable");
    const CallableData& c = fn.callable();
    if (c.macro != nullptr) return call_macro(c, args);
    return c.fn(*this, c, args);
}

// ---- expressions ----

Value Evaluator::eval(const Expr& e, Frame& frame) {
    step();
    switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: return lookup(e, frame);
    default: break;
    }
    check_stack(e.line);
    try {
        return eval_inner(e, frame);
    } catch (const Fault& f) {
        throw TemplateError(f.message, e.line);
    }
}

Value Evaluator::lookup(const Expr& e, Frame& frame) {
    for (const Frame* f = &frame; f != nullptr; f = f->parent) {
        if (const Value* v = f->find_local(e.symbol)) return *v;
    }
    const int g = m_program.symbol_global[size_t(e.symbol)];
    if (g >= 0) return global_at(g);
    return m_program.undefined_values[size_t(e.symbol)];  // "'name' is undefined", shared
}

Value Evaluator::eval_inner(const Expr& e, Frame& frame) {
    const auto child = [&](size_t i) { return eval(*e.children[i], frame); };
    switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: return lookup(e, frame);
    case ExprKind::List:
    case ExprKind::Tuple: {
        std::vector<Value> items;
        items.reserve(e.children.size());
        for (const auto& c : e.children) items.push_back(eval(*c, frame));
        return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
        DictData d;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) d.put(child(i), child(i + 1));
        return Value::dict(std::move(d));
    }
    case ExprKind::Getattr: return getattr(child(0), e.name);
    case ExprKind::Getitem: {
        const Value obj = child(0);
        if (e.children[1]->kind == ExprKind::Slice) return eval_slice(obj, *e.children[1], frame);
        return getitem(obj, child(1));
    }
    case ExprKind::Slice: fail("a slice outside of a subscript");
    case ExprKind::Call: return eval_call(e, frame);
    case ExprKind::Filter: return eval_filter(e, frame, nullptr);
    case ExprKind::Test: return Value::boolean(eval_test(e, frame));
    case ExprKind::Neg: return negate(child(0));
    case ExprKind::Pos: {
        Value v = child(0);
        if (v.is_undefined()) fail_undefined(v);
        if (!v.is_number()) fail("bad operand type for unary +: '" + type_name(v) + "'");
        return v.kind() == Kind::Bool ? Value::integer(v.get_int()) : v;
    }
    case ExprKind::Not: return Value::boolean(!truthy(child(0)));
    case ExprKind::Binary: {
        const Value a = child(0);
        return binary_op(*this, e.op, a, child(1));
    }
    case ExprKind::And: {
        Value a = child(0);
        return truthy(a) ? child(1) : a;
    }
    case ExprKind::Or: {
        Value a = child(0);
        return truthy(a) ? a : child(1);
    }
    case ExprKind::Concat: {
        std::string s;
        for (const auto& c : e.children) {
            const Value v = eval(*c, frame);
            append_str(s, v, m_options.max_string_bytes);
            count_bytes(v.is_string() ? v.str().size() : 0);
        }
        count_bytes(s.size());
        return Value::string(std::move(s));
    }
    case ExprKind::Compare: return eval_compare(e, frame);
    case ExprKind::CondExpr:
        if (truthy(child(0))) return child(1);
        if (e.children[2]) return child(2);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
    }
    return Value();
}

Value Evaluator::eval_compare(const Expr& e, Frame& frame) {
    Value left = eval(*e.children[0], frame);
    for (size_t i = 0; i < e.cmp_ops.size(); ++i) {
        Value right = eval(*e.children[i + 1], frame);
        bool r = false;
        switch (e.cmp_ops[i]) {
        case CmpOp::Eq: r = py_equal(left, right); break;
        case CmpOp::Ne: r = !py_equal(left, right); break;
        case CmpOp::Lt: r = py_compare(left, right, "<"); break;
        case CmpOp::Le: r = py_compare(left, right, "<="); break;
        case CmpOp::Gt: r = py_compare(left, right, ">"); break;
        case CmpOp::Ge: r = py_compare(left, right, ">="); break;
        case CmpOp::In: r = contains(*this, right, left); break;
        case CmpOp::NotIn: r = !contains(*this, right, left); break;
        }
        if (!r) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Value Evaluator::eval_slice(const Value& obj, const Expr& slice, Frame& frame) {
    Value parts[3] = {Value::none(), Value::none(), Value::none()};
    for (size_t i = 0; i < 3; ++i) {
        if (slice.children[i]) parts[i] = eval(*slice.children[i], frame);
    }
    return slice_value(*this, obj, parts[0], parts[1], parts[2]);
}

Args Evaluator::eval_args(const CallArgs& call, Frame& frame) {
    Args args;
    args.pos.reserve(call.args.size());
    for (const auto& a : call.args) args.pos.push_back(eval(*a, frame));
    for (const auto& [name, value] : call.kwargs) args.kw.emplace_back(name, eval(*value, frame));
    if (call.dyn_args) {
        const Value v = eval(*call.dyn_args, frame);
        const Items items = iterate(v);
        args.pos.insert(args.pos.end(), items.get().begin(), items.get().end());
    }
    if (call.dyn_kwargs) {
        const Value v = eval(*call.dyn_kwargs, frame);
        if (v.kind() != Kind::Dict) fail("argument after ** must be a mapping, not " + type_name(v));
        for (const auto& [k, val] : v.dict().entries) {
            if (!k.is_string()) fail("keywords must be strings");
            args.kw.emplace_back(k.str(), val);
        }
    }
    for (size_t i = 0; i < args.kw.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            if (args.kw[i].first == args.kw[j].first)
                fail("got multiple values for keyword argument '" + args.kw[i].first + "'");
        }
    }
    return args;
}

Value Evaluator::eval_call(const Expr& e, Frame& frame) {
    const Expr& callee = *e.children[0];
    const Value fn = eval(callee, frame);
    const Args args = eval_args(e.call, frame);
    return call(fn, args);
}

Value Evaluator::eval_filter(const Expr& e, Frame& frame, const Value* input) {
    Value subject;
    if (!e.children[0]) {
        subject = *input;
    } else if (input != nullptr && e.children[0]->kind == ExprKind::Filter) {
        subject = eval_filter(*e.children[0], frame, input);
    } else {
        subject = eval(*e.children[0], frame);
    }
    if (e.builtin < 0) fail("No filter named '" + e.name + "' found.");
    const Args args = eval_args(e.call, frame);
    return filter_at(e.builtin)(*this, subject, args);
}

bool Evaluator::eval_test(const Expr& e, Frame& frame) {
    const Value subject = eval(*e.children[0], frame);
    if (e.builtin < 0) fail("No test named '" + e.name + "' found.");
    const Args args = eval_args(e.call, frame);
    return test_at(e.builtin)(*this, subject, args);
}

Value Evaluator::apply_filter(const std::string& name, const Value& v, const Args& args) {
    const int id = find_filter(name);
    if (id < 0) fail("No filter named '" + name + "' found.");
    return filter_at(id)(*this, v, args);
}

bool Evaluator::apply_test(const std::string& name, const Value& v, const Args& args) {
    const int id = find_test(name);
    if (id < 0) fail("No test named '" + name + "' found.");
    return test_at(id)(*this, v, args);
}

// jinja2's sandboxed getattr: a Python attribute first, then the item.
Value Evaluator::getattr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
        return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) +
                                    "' object is unsafe (the sandbox refuses underscore attributes).",
                                true);
    }
    bool found = false;
    Value attr = python_attribute(*this, obj, name, found);
    if (found) return attr;
    if (obj.kind() == Kind::Dict) {
        if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
        return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + name + "'");
}

// jinja2's sandboxed getitem: the item first, then a Python attribute for string keys.
Value Evaluator::getitem(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail_undefined(obj);
    switch (obj.kind()) {
    case Kind::Dict:
        if (is_hashable(key)) {
            if (const Value* v = obj.dict().find(key)) return *v;
        }
        break;
    case Kind::List:
    case Kind::Tuple:
        if (key.is_integral() &&
            (obj.flavor() == Flavor::Plain || obj.flavor() == Flavor::Range || obj.flavor() == Flavor::GroupTuple)) {
            const auto& items = obj.items();
            int64_t i = key.get_int();
            if (i < 0) i += int64_t(items.size());
            if (i >= 0 && i < int64_t(items.size())) return items[size_t(i)];
        }
        break;
    case Kind::String:
        if (key.is_integral()) {
            const std::string& s = obj.str();
            const bool ascii = text::is_ascii(s);
            const int64_t len = ascii ? int64_t(s.size()) : int64_t(text::code_point_count(s));
            int64_t i = key.get_int();
            if (i < 0) i += len;
            if (i >= 0 && i < len) {
                if (ascii) return Value::string(std::string(1, s[size_t(i)]));
                const auto cps = text::code_points(s);
                std::string ch;
                text::append_code_point(ch, cps[size_t(i)]);
                return Value::string(std::move(ch));
            }
        }
        break;
    default: break;
    }
    if (key.is_string()) {
        if (obj.kind() != Kind::Dict) return getattr(obj, key.str());
        bool found = false;
        Value attr = python_attribute(*this, obj, key.str(), found);
        if (found) return attr;
        return Value::undefined("'dict object' has no attribute '" + key.str() + "'");
    }
    return Value::undefined(object_type_repr(obj) + " has no element " + repr_for_message(key));
}

Items Evaluator::iterate(const Value& v) {
    Items out;
    switch (v.kind()) {
    case Kind::List:
    case Kind::Tuple:
        out.holder = v;
        out.borrowed = &v.items();
        return out;
    case Kind::Dict:
        step(v.dict().size());
        for (const auto& [k, val] : v.dict().entries) out.owned.push_back(k);
        break;
    case Kind::String: {
        const std::string& s = v.str();
        step(s.size());
        size_t pos = 0;
        while (pos < s.size()) {
            const size_t start = pos;
            text::next_code_point(s, pos);
            out.owned.push_back(Value::string(s.substr(start, pos - start)));
        }
        break;
    }
    case Kind::Iterator: {
        IteratorData& it = v.iter();
        step(it.items.size() - it.pos);
        out.owned.assign(it.items.begin() + std::ptrdiff_t(it.pos), it.items.end());
        it.pos = it.items.size();
        break;
    }
    case Kind::Undefined: break;
    default: fail("'" + type_name(v) + "' object is not iterable");
    }
    return out;
}

int64_t Evaluator::length(const Value& v) {
    switch (v.kind()) {
    case Kind::String: return int64_t(text::code_point_count(v.str()));
    case Kind::List:
    case Kind::Tuple: return int64_t(v.items().size());
    case Kind::Dict: return int64_t(v.dict().size());
    case Kind::Undefined: return 0;
    default: fail("object of type '" + type_name(v) + "' has no len()");
    }
}

}  // namespace snapkv::jinja
