// The parsed form of a Jinja template (private to core/tokenizer): expression and statement
// nodes as jinja2's parser builds them (nodes.py), names interned as symbols, filter and test
// names resolved to the builtin tables. Produced by jinja_parser.cpp, read-only afterwards, so a
// Program can be rendered from several threads at once. No evaluation here.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizer/jinja_value.h"

namespace snapkv::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
    Const,     // value
    Name,      // symbol
    List,      // children: items
    Tuple,     // children: items
    Dict,      // children: key, value, key, value, ...
    Getattr,   // children: object; name: attribute
    Getitem,   // children: object, index (a Slice node for obj[a:b:c])
    Slice,     // children: start, stop, step (each may be null)
    Call,      // children: callee; call
    Filter,    // children: subject (null in a filter block or {% set %} block); name; call
    Test,      // children: subject; name; call
    Neg,       // children: operand
    Pos,       // children: operand
    Not,       // children: operand
    Binary,    // children: left, right; op
    And,       // children: left, right
    Or,        // children: left, right
    Concat,    // children: operands of ~
    Compare,   // children: first operand, then one per cmp_ops entry
    CondExpr,  // children: test, then, else (may be null)
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct CallArgs {
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    ExprPtr dyn_args;    // *args
    ExprPtr dyn_kwargs;  // **kwargs
};

struct Expr {
    ExprKind kind = ExprKind::Const;
    int line = 1;
    Value value;
    std::string name;
    int symbol = -1;
    int builtin = -1;  // Filter / Test: index into the builtin table; -1: unknown, an error when reached
    BinOp op = BinOp::Add;
    std::vector<ExprPtr> children;
    std::vector<CmpOp> cmp_ops;
    CallArgs call;
};

enum class StmtKind : uint8_t {
    Output,
    If,
    For,
    Set,
    SetBlock,
    Macro,
    CallBlock,
    FilterBlock,
    With,
    Scope,  // {% generation %}, {% block %}: the body in a scope of its own
    Break,
    Continue,
};

struct Stmt {
    explicit Stmt(StmtKind k, int l) : kind(k), line(l) {}
    virtual ~Stmt() = default;
    StmtKind kind;
    int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// What a scope (the template, a for body, a macro call, a block) starts with, from jinja2's
// compile-time symbol tracking (idtracking.py, mirrored in jinja_scopes.cpp): names the scope
// assigns before reading them, and that no enclosing scope has, start as Undefined there, so an
// inner loop or macro that reads one before the assignment sees Undefined, not the context's
// value. Everything else is looked up through the enclosing scopes at run time.
struct Scope {
    std::vector<int> undefined_at_entry;  // symbols
};

// An assignment target: a name, a tuple of targets, or namespace.attribute.
struct Target {
    enum class Kind : uint8_t { Name, Tuple, NsAttr } kind = Kind::Name;
    int line = 1;
    int symbol = -1;
    std::string name;  // the name (Name) or the namespace's name (NsAttr)
    std::string attr;  // NsAttr
    std::vector<Target> items;
};

struct OutputPart {
    std::string text;  // template text, when expr is null
    ExprPtr expr;
};

struct OutputStmt : Stmt {
    explicit OutputStmt(int l) : Stmt(StmtKind::Output, l) {}
    std::vector<OutputPart> parts;
};

struct IfStmt : Stmt {
    explicit IfStmt(int l) : Stmt(StmtKind::If, l) {}
    std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif, ...
    Body else_body;
};

struct ForStmt : Stmt {
    explicit ForStmt(int l) : Stmt(StmtKind::For, l) {}
    Target target;
    ExprPtr iter;
    ExprPtr filter;  // for x in xs if cond
    Body body;
    Body else_body;
    bool recursive = false;  // {% for ... recursive %}: loop(items) renders the body for them
    Scope body_scope;        // per iteration
    Scope else_scope;
};

struct SetStmt : Stmt {
    explicit SetStmt(int l) : Stmt(StmtKind::Set, l) {}
    Target target;
    ExprPtr value;
};

struct SetBlockStmt : Stmt {
    explicit SetBlockStmt(int l) : Stmt(StmtKind::SetBlock, l) {}
    Target target;
    ExprPtr filter;  // a Filter chain with a null subject, or null
    Body body;
    Scope scope;
};

struct MacroParam {
    int symbol = -1;
    std::string name;
    ExprPtr default_value;
};

struct MacroStmt : Stmt {
    explicit MacroStmt(int l) : Stmt(StmtKind::Macro, l) {}
    int symbol = -1;
    std::string name;
    std::vector<MacroParam> params;
    Body body;
    Scope scope;
    // The body reads varargs / kwargs / caller: extra arguments are accepted into them.
    bool uses_varargs = false;
    bool uses_kwargs = false;
    bool uses_caller = false;
};

struct CallBlockStmt : Stmt {
    explicit CallBlockStmt(int l) : Stmt(StmtKind::CallBlock, l) {}
    ExprPtr call;                     // a Call node
    std::unique_ptr<MacroStmt> body;  // the caller() macro
};

struct FilterBlockStmt : Stmt {
    explicit FilterBlockStmt(int l) : Stmt(StmtKind::FilterBlock, l) {}
    ExprPtr filter;  // a Filter chain with a null subject
    Body body;
    Scope scope;
};

struct WithStmt : Stmt {
    explicit WithStmt(int l) : Stmt(StmtKind::With, l) {}
    std::vector<std::pair<Target, ExprPtr>> assigns;
    Body body;
    Scope scope;
};

struct ScopeStmt : Stmt {
    explicit ScopeStmt(int l) : Stmt(StmtKind::Scope, l) {}
    Body body;
    Scope scope;
    bool isolated = false;  // a {% block %} without `scoped`: below the template level, not here
};

struct Program {
    Body body;
    Scope scope;                       // the template's top level
    std::vector<std::string> symbols;  // symbol id -> name
    std::unordered_map<std::string, int> symbol_ids;
    std::vector<int> symbol_global;       // symbol id -> builtin global id, or -1
    std::vector<Value> undefined_values;  // symbol -> Undefined("'name' is undefined")
    int sym_loop = -1;
    int sym_varargs = -1;
    int sym_kwargs = -1;
    int sym_caller = -1;
};

// Parses a whole template; throws TemplateError with the line.
std::shared_ptr<const Program> parse_template(const std::string& source);

// Fills every Scope of the program (jinja_scopes.cpp).
void resolve_scopes(Program& program);

}  // namespace snapkv::jinja
