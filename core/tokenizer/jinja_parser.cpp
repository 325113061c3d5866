// The Jinja parser's statements: tokens -> Program, tag for tag as jinja2 3.1's parser.py (for,
// if, set, macro, call, filter, with, print, the loopcontrols and generation tags). Unknown
// filters and tests fail here unless they sit inside an if or an inline if, where jinja2 defers
// the error to run time. Nesting is bounded so hostile input cannot exhaust the stack. Extends,
// include, import and autoescape are refused with a message naming them.
#include <algorithm>
#include <functional>

#include "core/tokenizer/jinja.h"
#include "core/tokenizer/jinja_ast.h"
#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_lexer.h"
#include "core/tokenizer/jinja_parser.h"

namespace snapkv::jinja {

void Parser::next() {
    if (m_i + 1 < m_toks.size()) ++m_i;
}

bool Parser::skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
}

bool Parser::skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
}

void Parser::expect_op(const char* op) {
    if (!skip_op(op)) error(std::string("expected '") + op + "', got " + describe(cur()));
}

void Parser::expect(TokType type, const char* what) {
    if (cur().type != type) error(std::string("expected ") + what + ", got " + describe(cur()));
    next();
}

std::string Parser::expect_name() {
    if (cur().type != TokType::Name) error("expected a name, got " + describe(cur()));
    std::string name = cur().text;
    next();
    return name;
}

int Parser::symbol(const std::string& name) {
    const auto it = m_prog.symbol_ids.find(name);
    if (it != m_prog.symbol_ids.end()) return it->second;
    const int id = int(m_prog.symbols.size());
    m_prog.symbols.push_back(name);
    m_prog.symbol_ids.emplace(name, id);
    return id;
}

ExprPtr Parser::node(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
}

bool Parser::at_end_tag(const std::vector<std::string>& end_tokens) const {
    if (cur().type != TokType::Name) return false;
    return std::find(end_tokens.begin(), end_tokens.end(), cur().text) != end_tokens.end();
}

Body Parser::subparse(const std::vector<std::string>& end_tokens) {
    Body body;
    std::unique_ptr<OutputStmt> out;
    const auto flush = [&] {
        if (out) body.push_back(std::move(out));
        out.reset();
    };
    const auto output = [&](int line) -> OutputStmt& {
        if (!out) out = std::make_unique<OutputStmt>(line);
        return *out;
    };
    if (!end_tokens.empty()) m_end_stack.push_back(end_tokens);
    while (cur().type != TokType::Eof) {
        const Token& t = cur();
        if (t.type == TokType::Data) {
            OutputStmt& o = output(t.line);
            if (!o.parts.empty() && !o.parts.back().expr) {
                o.parts.back().text += t.text;
            } else {
                o.parts.push_back({t.text, nullptr});
            }
            next();
        } else if (t.type == TokType::VarBegin) {
            const int line = t.line;
            next();
            ExprPtr e = parse_tuple(false, true, {}, false);
            expect(TokType::VarEnd, "end of print statement '}}'");
            output(line).parts.push_back({{}, std::move(e)});
        } else if (t.type == TokType::BlockBegin) {
            flush();
            next();
            if (!end_tokens.empty() && at_end_tag(end_tokens)) {
                m_end_stack.pop_back();
                return body;
            }
            parse_statement(body);
            expect(TokType::BlockEnd, "end of statement block '%}'");
        } else {
            error("unexpected " + describe(t));
        }
    }
    flush();
    if (!end_tokens.empty()) {
        fail_eof(end_tokens);
    }
    return body;
}

Body Parser::parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
    DepthGuard guard(m_block_depth, k_max_block_depth, *this, "blocks");
    skip_op(":");
    expect(TokType::BlockEnd, "end of statement block '%}'");
    Body body = subparse(end_tokens);
    if (cur().type == TokType::Eof) fail_eof(end_tokens);
    if (drop_needle) next();
    return body;
}

void Parser::parse_statement(Body& body) {
    const Token& t = cur();
    if (t.type != TokType::Name) error("tag name expected, got " + describe(t));
    const std::string tag = t.text;
    const int line = t.line;
    static const char* const k_known[] = {"for",  "if",    "set",        "macro", "call",  "filter",
                                          "with", "print", "generation", "block", "break", "continue"};
    const bool known = std::find(std::begin(k_known), std::end(k_known), tag) != std::end(k_known);
    if (!known) fail_unknown_tag(tag, line);
    m_tag_stack.push_back(tag);
    if (tag == "for") {
        body.push_back(parse_for());
    } else if (tag == "if") {
        body.push_back(parse_if());
    } else if (tag == "set") {
        body.push_back(parse_set());
    } else if (tag == "macro") {
        body.push_back(parse_macro());
    } else if (tag == "call") {
        body.push_back(parse_call_block());
    } else if (tag == "filter") {
        body.push_back(parse_filter_block());
    } else if (tag == "with") {
        body.push_back(parse_with());
    } else if (tag == "print") {
        next();
        auto out = std::make_unique<OutputStmt>(line);
        while (cur().type != TokType::BlockEnd) {
            if (!out->parts.empty()) expect_op(",");
            out->parts.push_back({{}, parse_expression(true)});
        }
        body.push_back(std::move(out));
    } else if (tag == "generation") {
        next();
        auto s = std::make_unique<ScopeStmt>(line);
        s->body = parse_loop_free_body({"endgeneration"});
        body.push_back(std::move(s));
    } else if (tag == "block") {
        next();
        expect_name();
        auto s = std::make_unique<ScopeStmt>(line);
        s->isolated = true;  // a block sees the template's variables, not the enclosing loop's
        while (is_name("scoped") || is_name("required")) {
            if (cur().text == "scoped") s->isolated = false;
            next();
        }
        s->body = parse_loop_free_body({"endblock"});
        if (cur().type == TokType::Name) next();  // {% endblock name %}
        body.push_back(std::move(s));
    } else {  // break, continue
        if (m_loop_depth == 0) error("'" + tag + "' outside of a for loop");
        next();
        body.push_back(std::make_unique<Stmt>(tag == "break" ? StmtKind::Break : StmtKind::Continue, line));
    }
    m_tag_stack.pop_back();
}

Body Parser::parse_loop_free_body(const std::vector<std::string>& end_tokens) {
    const int saved = m_loop_depth;
    m_loop_depth = 0;
    Body b = parse_statements(end_tokens, true);
    m_loop_depth = saved;
    return b;
}

StmtPtr Parser::parse_for() {
    auto s = std::make_unique<ForStmt>(cur().line);
    next();
    s->target = parse_assign_target(true, false, {"in"}, false);
    if (!skip_name("in")) error("expected 'in', got " + describe(cur()));
    s->iter = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++m_loop_depth;
    s->body = parse_statements({"endfor", "else"}, false);
    --m_loop_depth;
    const bool has_else = cur().text == "else";
    next();
    if (has_else) s->else_body = parse_statements({"endfor"}, true);
    return s;
}

StmtPtr Parser::parse_if() {
    auto s = std::make_unique<IfStmt>(cur().line);
    next();
    while (true) {
        ExprPtr test = parse_tuple(false, false, {}, false);
        Body body = parse_statements({"elif", "else", "endif"}, false);
        s->branches.emplace_back(std::move(test), std::move(body));
        const std::string tag = cur().text;
        next();
        if (tag == "elif") continue;
        if (tag == "else") s->else_body = parse_statements({"endif"}, true);
        break;
    }
    return s;
}

StmtPtr Parser::parse_set() {
    const int line = cur().line;
    next();
    Target target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
        auto s = std::make_unique<SetStmt>(line);
        s->target = std::move(target);
        s->value = parse_tuple(false, true, {}, false);
        return s;
    }
    auto s = std::make_unique<SetBlockStmt>(line);
    s->target = std::move(target);
    if (is_op("|")) s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
}

void Parser::parse_signature(MacroStmt& m) {
    expect_op("(");
    bool seen_default = false;
    while (!skip_op(")")) {
        if (!m.params.empty()) expect_op(",");
        MacroParam p;
        p.name = expect_name();
        p.symbol = symbol(p.name);
        if (skip_op("=")) {
            p.default_value = parse_expression(true);
            seen_default = true;
        } else if (seen_default) {
            error("non-default argument '" + p.name + "' follows default argument");
        }
        m.params.push_back(std::move(p));
    }
}

StmtPtr Parser::parse_macro() {
    auto s = std::make_unique<MacroStmt>(cur().line);
    next();
    s->name = expect_name();
    s->symbol = symbol(s->name);
    parse_signature(*s);
    s->body = parse_loop_free_body({"endmacro"});
    note_special_names(*s);
    return s;
}

StmtPtr Parser::parse_call_block() {
    auto s = std::make_unique<CallBlockStmt>(cur().line);
    next();
    s->body = std::make_unique<MacroStmt>(s->line);
    s->body->name = "caller";
    s->body->symbol = symbol("caller");
    if (is_op("(")) parse_signature(*s->body);
    s->call = parse_expression(true);
    if (s->call->kind != ExprKind::Call) error_at("expected a call after {% call %}", s->line);
    s->body->body = parse_loop_free_body({"endcall"});
    note_special_names(*s->body);
    return s;
}

StmtPtr Parser::parse_filter_block() {
    auto s = std::make_unique<FilterBlockStmt>(cur().line);
    next();
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
}

StmtPtr Parser::parse_with() {
    auto s = std::make_unique<WithStmt>(cur().line);
    next();
    while (cur().type != TokType::BlockEnd) {
        if (!s->assigns.empty()) expect_op(",");
        Target t = parse_assign_target(true, false, {}, false);
        expect_op("=");
        s->assigns.emplace_back(std::move(t), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
}

void Parser::note_special_names(MacroStmt& m) {
    const int v = symbol("varargs"), k = symbol("kwargs"), c = symbol("caller");
    std::function<void(const Expr*)> visit_expr = [&](const Expr* e) {
        if (e == nullptr) return;
        if (e->kind == ExprKind::Name) {
            m.uses_varargs |= e->symbol == v;
            m.uses_kwargs |= e->symbol == k;
            m.uses_caller |= e->symbol == c;
        }
        for (const auto& ch : e->children) visit_expr(ch.get());
        for (const auto& a : e->call.args) visit_expr(a.get());
        for (const auto& kw : e->call.kwargs) visit_expr(kw.second.get());
        visit_expr(e->call.dyn_args.get());
        visit_expr(e->call.dyn_kwargs.get());
    };
    walk_body(m.body, visit_expr);
}

Target Parser::parse_assign_target(bool with_tuple, bool name_only, const std::vector<std::string>& extra_end,
                                   bool with_namespace) {
    Target t;
    t.line = cur().line;
    if (with_namespace && look().type == TokType::Op && look().text == ".") {
        t.kind = Target::Kind::NsAttr;
        t.name = expect_name();
        t.symbol = symbol(t.name);
        next();  // .
        t.attr = expect_name();
        return t;
    }
    if (name_only || !with_tuple) {
        t.name = expect_name();
        t.symbol = symbol(t.name);
        return t;
    }
    // A simplified tuple of names: a, b / (a, b) / a
    std::vector<Target> items;
    bool is_tuple = false;
    while (true) {
        if (!items.empty()) expect_op(",");
        if (is_tuple_end(extra_end)) break;
        items.push_back(parse_target_primary());
        if (is_op(",")) {
            is_tuple = true;
        } else {
            break;
        }
    }
    if (!is_tuple) {
        if (items.empty()) error("expected an assignment target, got " + describe(cur()));
        return std::move(items[0]);
    }
    t.kind = Target::Kind::Tuple;
    t.items = std::move(items);
    return t;
}

Target Parser::parse_target_primary() {
    DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "assignment targets");
    Target t;
    t.line = cur().line;
    if (skip_op("(")) {
        std::vector<Target> items;
        bool is_tuple = false;
        while (!is_op(")")) {
            if (!items.empty()) expect_op(",");
            if (is_op(")")) break;
            items.push_back(parse_target_primary());
            if (is_op(",")) is_tuple = true;
        }
        expect_op(")");
        if (!is_tuple && items.size() == 1) return std::move(items[0]);
        t.kind = Target::Kind::Tuple;
        t.items = std::move(items);
        return t;
    }
    if (cur().type != TokType::Name) error("can't assign to " + describe(cur()));
    t.name = cur().text;
    if (t.name == "true" || t.name == "false" || t.name == "none" || t.name == "True" || t.name == "False" ||
        t.name == "None") {
        error("can't assign to the constant '" + t.name + "'");
    }
    t.symbol = symbol(t.name);
    next();
    return t;
}

void Parser::walk_body(const Body& body, const std::function<void(const Expr*)>& fn) {
    const auto walk_target = [](const Target&) {};
    for (const auto& s : body) {
        switch (s->kind) {
        case StmtKind::Output:
            for (const auto& p : static_cast<const OutputStmt&>(*s).parts) fn(p.expr.get());
            break;
        case StmtKind::If: {
            const auto& i = static_cast<const IfStmt&>(*s);
            for (const auto& [test, b] : i.branches) {
                fn(test.get());
                walk_body(b, fn);
            }
            walk_body(i.else_body, fn);
            break;
        }
        case StmtKind::For: {
            const auto& f = static_cast<const ForStmt&>(*s);
            walk_target(f.target);
            fn(f.iter.get());
            fn(f.filter.get());
            walk_body(f.body, fn);
            walk_body(f.else_body, fn);
            break;
        }
        case StmtKind::Set: fn(static_cast<const SetStmt&>(*s).value.get()); break;
        case StmtKind::SetBlock: {
            const auto& b = static_cast<const SetBlockStmt&>(*s);
            fn(b.filter.get());
            walk_body(b.body, fn);
            break;
        }
        case StmtKind::Macro: {
            const auto& m = static_cast<const MacroStmt&>(*s);
            for (const auto& p : m.params) fn(p.default_value.get());
            walk_body(m.body, fn);
            break;
        }
        case StmtKind::CallBlock: {
            const auto& c = static_cast<const CallBlockStmt&>(*s);
            fn(c.call.get());
            for (const auto& p : c.body->params) fn(p.default_value.get());
            walk_body(c.body->body, fn);
            break;
        }
        case StmtKind::FilterBlock: {
            const auto& f = static_cast<const FilterBlockStmt&>(*s);
            fn(f.filter.get());
            walk_body(f.body, fn);
            break;
        }
        case StmtKind::With: {
            const auto& w = static_cast<const WithStmt&>(*s);
            for (const auto& a : w.assigns) fn(a.second.get());
            walk_body(w.body, fn);
            break;
        }
        case StmtKind::Scope: walk_body(static_cast<const ScopeStmt&>(*s).body, fn); break;
        case StmtKind::Break:
        case StmtKind::Continue: break;
        }
    }
}

void Parser::fail_eof(const std::vector<std::string>& end_tokens) const {
    std::string msg = "unexpected end of template; Jinja was looking for ";
    for (size_t i = 0; i < end_tokens.size(); ++i) msg += (i ? " or '" : "'") + end_tokens[i] + "'";
    if (!m_tag_stack.empty()) msg += "; the innermost block that needs to be closed is '" + m_tag_stack.back() + "'";
    error(msg);
}

void Parser::fail_unknown_tag(const std::string& tag, int line) const {
    std::string msg = "encountered unknown tag '" + tag + "'";
    static const char* const k_refused[] = {"extends", "include", "import", "from", "autoescape", "do"};
    if (std::find(std::begin(k_refused), std::end(k_refused), tag) != std::end(k_refused)) {
        msg += tag == "do" ? " (transformers does not enable the do extension)"
                           : " (template inheritance, includes, imports and autoescape are not supported)";
    }
    if (!m_end_stack.empty()) {
        msg += "; Jinja was looking for the following tags: ";
        const auto& ends = m_end_stack.back();
        for (size_t i = 0; i < ends.size(); ++i) msg += (i ? " or '" : "'") + ends[i] + "'";
    }
    if (!m_tag_stack.empty()) msg += "; the innermost block that needs to be closed is '" + m_tag_stack.back() + "'";
    error_at(msg, line);
}

namespace {

// jinja2 fails at compile time on an unknown filter or test unless it sits in an if statement
// (test and bodies) or an inline if, which are "soft" frames checked at run time; a for, macro,
// call, filter or set-block body starts a hard frame again.
void check_unknown_names(const Expr* e, bool soft) {
    if (e == nullptr) return;
    if (e->kind == ExprKind::CondExpr) soft = true;
    if (!soft && e->builtin < 0 && (e->kind == ExprKind::Filter || e->kind == ExprKind::Test)) {
        throw TemplateError(
            std::string("No ") + (e->kind == ExprKind::Filter ? "filter" : "test") + " named '" + e->name + "'.",
            e->line);
    }
    for (const auto& c : e->children) check_unknown_names(c.get(), soft);
    for (const auto& a : e->call.args) check_unknown_names(a.get(), soft);
    for (const auto& kw : e->call.kwargs) check_unknown_names(kw.second.get(), soft);
    check_unknown_names(e->call.dyn_args.get(), soft);
    check_unknown_names(e->call.dyn_kwargs.get(), soft);
}

void check_unknown_names(const Body& body, bool soft) {
    for (const auto& s : body) {
        switch (s->kind) {
        case StmtKind::Output:
            for (const auto& p : static_cast<const OutputStmt&>(*s).parts) check_unknown_names(p.expr.get(), soft);
            break;
        case StmtKind::If: {
            const auto& i = static_cast<const IfStmt&>(*s);
            for (const auto& [test, b] : i.branches) {
                check_unknown_names(test.get(), true);
                check_unknown_names(b, true);
            }
            check_unknown_names(i.else_body, true);
            break;
        }
        case StmtKind::For: {
            const auto& f = static_cast<const ForStmt&>(*s);
            check_unknown_names(f.iter.get(), soft);
            check_unknown_names(f.filter.get(), false);
            check_unknown_names(f.body, false);
            check_unknown_names(f.else_body, false);
            break;
        }
        case StmtKind::Set: check_unknown_names(static_cast<const SetStmt&>(*s).value.get(), soft); break;
        case StmtKind::SetBlock: {
            const auto& b = static_cast<const SetBlockStmt&>(*s);
            check_unknown_names(b.filter.get(), false);
            check_unknown_names(b.body, false);
            break;
        }
        case StmtKind::Macro: {
            const auto& m = static_cast<const MacroStmt&>(*s);
            for (const auto& p : m.params) check_unknown_names(p.default_value.get(), false);
            check_unknown_names(m.body, false);
            break;
        }
        case StmtKind::CallBlock: {
            const auto& c = static_cast<const CallBlockStmt&>(*s);
            check_unknown_names(c.call.get(), soft);
            for (const auto& p : c.body->params) check_unknown_names(p.default_value.get(), false);
            check_unknown_names(c.body->body, false);
            break;
        }
        case StmtKind::FilterBlock: {
            const auto& f = static_cast<const FilterBlockStmt&>(*s);
            check_unknown_names(f.filter.get(), false);
            check_unknown_names(f.body, false);
            break;
        }
        case StmtKind::With: {
            const auto& w = static_cast<const WithStmt&>(*s);
            for (const auto& a : w.assigns) check_unknown_names(a.second.get(), soft);
            check_unknown_names(w.body, false);
            break;
        }
        case StmtKind::Scope: check_unknown_names(static_cast<const ScopeStmt&>(*s).body, false); break;
        case StmtKind::Break:
        case StmtKind::Continue: break;
        }
    }
}

}  // namespace

std::shared_ptr<const Program> parse_template(const std::string& source) {
    auto prog = std::make_shared<Program>();
    Parser parser(tokenize(source), *prog);
    prog->body = parser.parse_template();
    check_unknown_names(prog->body, false);
    const auto sym = [&](const char* name) {
        const auto it = prog->symbol_ids.find(name);
        if (it != prog->symbol_ids.end()) return it->second;
        const int id = int(prog->symbols.size());
        prog->symbols.emplace_back(name);
        prog->symbol_ids.emplace(name, id);
        return id;
    };
    prog->sym_loop = sym("loop");
    prog->sym_varargs = sym("varargs");
    prog->sym_kwargs = sym("kwargs");
    prog->sym_caller = sym("caller");
    prog->symbol_global.resize(prog->symbols.size());
    for (size_t i = 0; i < prog->symbols.size(); ++i) {
        prog->symbol_global[i] = find_global(prog->symbols[i]);
        prog->undefined_values.push_back(Value::undefined("'" + prog->symbols[i] + "' is undefined"));
    }
    resolve_scopes(*prog);
    return prog;
}

}  // namespace snapkv::jinja
