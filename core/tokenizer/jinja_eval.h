// The Jinja evaluator (private to core/tokenizer): walks a Program with a context, keeps the
// scopes (a frame per for-iteration, macro call and scoped block, as jinja2's compiled code
// behaves), the render-scoped arena of mutable objects, and the limits (steps, output bytes,
// string bytes, call depth, stack). Builtins reach back into it through the public members.
// Operators are in jinja_ops.cpp; filters, tests and methods in their own files.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/jinja.h"
#include "core/tokenizer/jinja_ast.h"
#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_value.h"

namespace snapkv::jinja {

// One scope's variables. Frames form a chain to the template's root frame; a frame stays alive
// for the whole render once a macro defined in it has captured it.
struct Frame {
    Frame* parent = nullptr;
    std::vector<std::pair<int, Value>> vars;  // symbol -> value
    bool captured = false;

    const Value* find_local(int symbol) const {
        for (const auto& [s, v] : vars) {
            if (s == symbol) return &v;
        }
        return nullptr;
    }
    void set(int symbol, Value v) {
        for (auto& [s, old] : vars) {
            if (s == symbol) {
                old = std::move(v);
                return;
            }
        }
        vars.emplace_back(symbol, std::move(v));
    }
};

// The `loop` variable of a for loop.
struct LoopData {
    Value holder;                               // keeps the iterated items alive
    const std::vector<Value>* items = nullptr;  // the (filtered) items
    size_t index0 = 0;
    int depth = 1;
    Value last_changed;  // loop.changed()
    bool changed_called = false;
    const ForStmt* stmt = nullptr;  // for loop(items) in a recursive loop
    Frame* frame = nullptr;         // the frame around the loop, alive while `active`
    bool active = false;
};

struct CallableData {
    std::string name;
    BuiltinFn fn = nullptr;            // builtin global or bound method
    Value self;                        // the bound object or the builtin's state
    const MacroStmt* macro = nullptr;  // a macro or a call block's caller
    Frame* closure = nullptr;          // the frame the macro was defined in
    Value caller;                      // a call block's caller, passed to its macro
};

// The items a value iterates over without copying a list's own vector: borrowed from holder (a
// list or tuple, kept alive here) or owned.
struct Items {
    Value holder;
    const std::vector<Value>* borrowed = nullptr;  // into holder's heap data: stays valid when moved
    std::vector<Value> owned;
    const std::vector<Value>& get() const { return borrowed != nullptr ? *borrowed : owned; }
    std::vector<Value> take() { return borrowed != nullptr ? *borrowed : std::move(owned); }
};

class Evaluator {
public:
    Evaluator(const Program& program, const RenderOptions& options);
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;
    ~Evaluator();

    std::string render(const nlohmann::ordered_json& context);

    // ---- for the builtins ----
    const RenderOptions& options() const { return m_options; }
    // Counts evaluation work; a Fault once max_steps is passed.
    void step(uint64_t n = 1) {
        m_steps += n;
        if (m_steps > m_options.max_steps) fail_steps();
    }
    // Counts bytes of built strings; a Fault once max_string_bytes is passed.
    void count_bytes(size_t n) {
        m_string_bytes += n;
        if (m_string_bytes > m_options.max_string_bytes) fail_bytes();
    }
    // Counts a substring search of needle in hay at its naive worst case, so a search that would
    // take minutes (a long near-miss needle in a long text) hits the step limit instead.
    void charge_search(size_t hay, size_t needle) { step(1 + uint64_t(hay) * (uint64_t(needle) + 1) / 64); }
    Value make_string(std::string s, bool markup = false) {
        count_bytes(s.size());
        return Value::string(std::move(s), markup);
    }
    NamespaceData* new_namespace();
    Value call(const Value& fn, const Args& args);
    Value apply_filter(const std::string& name, const Value& v, const Args& args);
    bool apply_test(const std::string& name, const Value& v, const Args& args);
    Value getattr(const Value& obj, const std::string& name);
    Value getitem(const Value& obj, const Value& key);
    // The items of an iterable (a generator is consumed); a Fault for non-iterables.
    Items iterate(const Value& v);
    // len(v); a Fault for values without a length.
    int64_t length(const Value& v);
    // Python str(v) with the string budget counted.
    std::string to_str(const Value& v);

private:
    const Program& m_program;
    RenderOptions m_options;
    uint64_t m_steps = 0;
    uint64_t m_string_bytes = 0;
    int m_call_depth = 0;
    const char* m_stack_limit = nullptr;
    std::string* m_out = nullptr;
    size_t m_out_total = 0;  // bytes written to every output buffer
    Frame m_root;
    std::vector<std::unique_ptr<Frame>> m_captured;  // frames macros hold on to
    std::deque<NamespaceData> m_namespaces;
    std::deque<LoopData> m_loops;

    enum class Flow { Normal, Break, Continue };

    [[noreturn]] void fail_steps() const;
    [[noreturn]] void fail_bytes() const;
    void check_stack(int line) const;
    void write(std::string_view s);
    void write_value(const Value& v);

    Flow exec_body(const Body& body, Frame& frame);
    Flow exec(const Stmt& s, Frame& frame);
    void exec_for(const ForStmt& s, Frame& frame);
    void run_loop(const ForStmt& s, const Value& seq, Frame& frame, int depth);
    Value call_loop(LoopData& loop, const Args& args);
    void exec_set(const Target& target, const Value& value, Frame& frame);
    void exec_call_block(const CallBlockStmt& s, Frame& frame);
    Value define_macro(const MacroStmt& m, Frame& frame);
    // Renders body in a new frame below parent into a string (macro bodies, blocks).
    std::string render_scoped(const Body& body, Frame& frame, Flow* flow = nullptr);
    std::string capture(const Body& body, Frame& frame, Flow& flow);
    Value call_macro(const CallableData& fn, const Args& args);

    Value eval(const Expr& e, Frame& frame);
    Value eval_inner(const Expr& e, Frame& frame);
    Value lookup(const Expr& e, Frame& frame);
    Value eval_call(const Expr& e, Frame& frame);
    Value eval_filter(const Expr& e, Frame& frame, const Value* input);
    bool eval_test(const Expr& e, Frame& frame);
    Value eval_compare(const Expr& e, Frame& frame);
    Value eval_slice(const Value& obj, const Expr& slice, Frame& frame);
    Args eval_args(const CallArgs& call, Frame& frame);
    Value from_json(const nlohmann::ordered_json& j, int depth);
    // Sets the names a scope starts as Undefined (jinja_scopes.cpp).
    void enter_scope(const Scope& scope, Frame& frame) const {
        for (const int s : scope.undefined_at_entry) frame.set(s, m_program.undefined_values[size_t(s)]);
    }
};

// Operators with Python semantics (jinja_ops.cpp).
Value binary_op(Evaluator& ev, BinOp op, const Value& a, const Value& b);
Value negate(const Value& v);
bool contains(Evaluator& ev, const Value& container, const Value& item);
// Python's obj[start:stop:step] on a str, list or tuple (absent bounds are None).
Value slice_value(Evaluator& ev, const Value& obj, const Value& start, const Value& stop, const Value& step);

}  // namespace snapkv::jinja
