// jinja2's compile-time scoping, mirrored from its idtracking.py (Symbols, FrameSymbolVisitor,
// RootVisitor) closely enough to know which names each scope starts as Undefined: a name a
// scope assigns unconditionally before it reads it, and that no enclosing scope assigns or
// reads, is a local of that scope from its first line on. Loops and macros inside the scope that
// read it before the assignment get Undefined, not the context's value (jinja2 3.1 renders
// `{% for i in [1] %}{{ x }}{% endfor %}{% set x = 1 %}` as "" even when x is passed in).
// Only fills the Scope records; the evaluator applies them at each scope's entry.
#include <map>
#include <set>

#include "core/tokenizer/jinja_ast.h"

namespace snapkv::jinja {
namespace {

enum class Load : uint8_t { Param, Resolve, Alias, Undefined };

// idtracking.Symbols: the names one scope knows, and how each starts.
struct Symbols {
    const Symbols* parent = nullptr;
    std::map<int, Load> refs;
    std::set<int> stores;

    bool find(int s) const {
        for (const Symbols* p = this; p != nullptr; p = p->parent) {
            if (p->refs.count(s) != 0) return true;
        }
        return false;
    }
    void load(int s) {
        if (!find(s)) refs[s] = Load::Resolve;
    }
    void store(int s) {
        stores.insert(s);
        if (refs.count(s) == 0) refs[s] = parent != nullptr && parent->find(s) ? Load::Alias : Load::Undefined;
    }
    void param(int s) {
        stores.insert(s);
        refs[s] = Load::Param;
    }
    // After an if: names any branch assigned start from the enclosing value (or the context).
    void branch_update(const std::vector<Symbols>& branches) {
        std::set<int> branch_stores;
        for (const Symbols& b : branches) branch_stores.insert(b.stores.begin(), b.stores.end());
        for (const int s : stores) branch_stores.erase(s);
        for (const Symbols& b : branches) {
            for (const auto& [s, load] : b.refs) refs[s] = load;
            stores.insert(b.stores.begin(), b.stores.end());
        }
        for (const int s : branch_stores) refs[s] = parent != nullptr && parent->find(s) ? Load::Alias : Load::Resolve;
    }
    void fill(Scope& scope) const {
        scope.undefined_at_entry.clear();
        for (const auto& [s, load] : refs) {
            if (load == Load::Undefined) scope.undefined_at_entry.push_back(s);
        }
    }
};

void visit_expr(const Expr* e, Symbols& sym) {
    if (e == nullptr) return;
    if (e->kind == ExprKind::Name) sym.load(e->symbol);
    for (const auto& c : e->children) visit_expr(c.get(), sym);
    for (const auto& a : e->call.args) visit_expr(a.get(), sym);
    for (const auto& kw : e->call.kwargs) visit_expr(kw.second.get(), sym);
    visit_expr(e->call.dyn_args.get(), sym);
    visit_expr(e->call.dyn_kwargs.get(), sym);
}

void visit_target(const Target& t, Symbols& sym, bool as_param) {
    switch (t.kind) {
    case Target::Kind::Name:
        if (as_param) {
            sym.param(t.symbol);
        } else {
            sym.store(t.symbol);
        }
        break;
    case Target::Kind::Tuple:
        for (const Target& item : t.items) visit_target(item, sym, as_param);
        break;
    case Target::Kind::NsAttr: sym.load(t.symbol); break;
    }
}

void visit_body(const Body& body, Symbols& sym);

// FrameSymbolVisitor: what one statement does to the names of the scope it sits in.
void visit_stmt(const Stmt& s, Symbols& sym) {
    switch (s.kind) {
    case StmtKind::Output:
        for (const OutputPart& p : static_cast<const OutputStmt&>(s).parts) visit_expr(p.expr.get(), sym);
        break;
    case StmtKind::If: {
        // jinja2's If holds the first branch, a list of elif nodes and the else body.
        const auto& i = static_cast<const IfStmt&>(s);
        visit_expr(i.branches[0].first.get(), sym);
        Symbols body = sym;
        visit_body(i.branches[0].second, body);
        Symbols elifs = sym;
        for (size_t k = 1; k < i.branches.size(); ++k) {
            visit_expr(i.branches[k].first.get(), elifs);
            Symbols elif_body = elifs;
            visit_body(i.branches[k].second, elif_body);
            elifs.branch_update({elif_body, elifs, elifs});
        }
        Symbols else_body = sym;
        visit_body(i.else_body, else_body);
        sym.branch_update({body, elifs, else_body});
        break;
    }
    case StmtKind::For: visit_expr(static_cast<const ForStmt&>(s).iter.get(), sym); break;
    case StmtKind::Set: {
        const auto& a = static_cast<const SetStmt&>(s);
        visit_expr(a.value.get(), sym);
        visit_target(a.target, sym, false);
        break;
    }
    case StmtKind::SetBlock: visit_target(static_cast<const SetBlockStmt&>(s).target, sym, false); break;
    case StmtKind::Macro: sym.store(static_cast<const MacroStmt&>(s).symbol); break;
    case StmtKind::CallBlock: visit_expr(static_cast<const CallBlockStmt&>(s).call.get(), sym); break;
    case StmtKind::FilterBlock: visit_expr(static_cast<const FilterBlockStmt&>(s).filter.get(), sym); break;
    case StmtKind::With:
        for (const auto& a : static_cast<const WithStmt&>(s).assigns) visit_expr(a.second.get(), sym);
        break;
    case StmtKind::Scope:
    case StmtKind::Break:
    case StmtKind::Continue: break;
    }
}

void visit_body(const Body& body, Symbols& sym) {
    for (const auto& s : body) visit_stmt(*s, sym);
}

void analyze_children(const Body& body, const Symbols& parent, const Program& prog);

void analyze_macro(MacroStmt& m, const Symbols& parent, const Program& prog) {
    Symbols sym;
    sym.parent = &parent;
    for (const MacroParam& p : m.params) sym.param(p.symbol);
    for (const MacroParam& p : m.params) visit_expr(p.default_value.get(), sym);
    visit_body(m.body, sym);
    if (m.uses_caller) sym.param(prog.sym_caller);
    if (m.uses_varargs) sym.param(prog.sym_varargs);
    if (m.uses_kwargs) sym.param(prog.sym_kwargs);
    sym.fill(m.scope);
    analyze_children(m.body, sym, prog);
}

// A scope that is a plain body (filter block, set block, generation): its statements only.
void analyze_block(const Body& body, Scope& scope, const Symbols& parent, const Program& prog) {
    Symbols sym;
    sym.parent = &parent;
    visit_body(body, sym);
    sym.fill(scope);
    analyze_children(body, sym, prog);
}

// The scopes that statements of a body open, below that body's scope (parent); if branches open
// none, so their statements are searched too.
void analyze_children(const Body& body, const Symbols& parent, const Program& prog) {
    for (const auto& s : body) {
        switch (s->kind) {
        case StmtKind::If: {
            auto& i = static_cast<IfStmt&>(*s);
            for (const auto& branch : i.branches) analyze_children(branch.second, parent, prog);
            analyze_children(i.else_body, parent, prog);
            break;
        }
        case StmtKind::For: {
            auto& f = static_cast<ForStmt&>(*s);
            Symbols loop;
            loop.parent = &parent;
            visit_target(f.target, loop, true);
            loop.param(prog.sym_loop);
            visit_body(f.body, loop);
            loop.fill(f.body_scope);
            analyze_children(f.body, loop, prog);
            analyze_block(f.else_body, f.else_scope, parent, prog);
            break;
        }
        case StmtKind::Macro: analyze_macro(static_cast<MacroStmt&>(*s), parent, prog); break;
        case StmtKind::CallBlock: analyze_macro(*static_cast<CallBlockStmt&>(*s).body, parent, prog); break;
        case StmtKind::FilterBlock: {
            auto& f = static_cast<FilterBlockStmt&>(*s);
            analyze_block(f.body, f.scope, parent, prog);
            break;
        }
        case StmtKind::SetBlock: {
            auto& b = static_cast<SetBlockStmt&>(*s);
            analyze_block(b.body, b.scope, parent, prog);
            break;
        }
        case StmtKind::With: {
            auto& w = static_cast<WithStmt&>(*s);
            Symbols sym;
            sym.parent = &parent;
            for (const auto& a : w.assigns) visit_target(a.first, sym, true);
            visit_body(w.body, sym);
            sym.fill(w.scope);
            analyze_children(w.body, sym, prog);
            break;
        }
        case StmtKind::Scope: {
            auto& sc = static_cast<ScopeStmt&>(*s);
            if (sc.isolated) {  // a block is a function of the context alone
                const Symbols none;
                analyze_block(sc.body, sc.scope, none, prog);
            } else {
                analyze_block(sc.body, sc.scope, parent, prog);
            }
            break;
        }
        default: break;
        }
    }
}

}  // namespace

void resolve_scopes(Program& program) {
    Symbols root;
    visit_body(program.body, root);
    root.fill(program.scope);
    analyze_children(program.body, root, program);
}

}  // namespace snapkv::jinja
