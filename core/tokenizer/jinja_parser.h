// The Jinja parser's class (private to core/tokenizer): a recursive-descent parser over the
// lexer's tokens, production for production as jinja2 3.1's parser.py. Statements are parsed in
// jinja_parser.cpp, expressions in jinja_parser_expr.cpp; parse_template() in jinja_ast.h is the
// only entry point the rest of the interpreter uses.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/tokenizer/jinja.h"
#include "core/tokenizer/jinja_ast.h"
#include "core/tokenizer/jinja_lexer.h"

namespace snapkv::jinja {

constexpr int k_max_expr_depth = 200;   // nested brackets, unary operators and sub-expressions
constexpr int k_max_block_depth = 200;  // nested statements with bodies

class Parser {
public:
    Parser(std::vector<Token> toks, Program& prog) : m_toks(std::move(toks)), m_prog(prog) {}

    Body parse_template() {
        Body body = subparse({});
        if (cur().type != TokType::Eof) error("unexpected " + describe(cur()));
        return body;
    }

private:
    std::vector<Token> m_toks;
    Program& m_prog;
    size_t m_i = 0;
    int m_expr_depth = 0;
    int m_block_depth = 0;
    int m_loop_depth = 0;  // for bodies around the current statement (break/continue)
    std::vector<std::vector<std::string>> m_end_stack;
    std::vector<std::string> m_tag_stack;

    struct DepthGuard {
        int& depth;
        DepthGuard(int& d, int limit, const Parser& p, const char* what) : depth(d) {
            if (++depth > limit) {
                --depth;
                p.error(std::string(what) + " nested more than " + std::to_string(limit) + " deep");
            }
        }
        ~DepthGuard() { --depth; }
        DepthGuard(const DepthGuard&) = delete;
        DepthGuard& operator=(const DepthGuard&) = delete;
    };

    const Token& cur() const { return m_toks[m_i]; }
    const Token& look(size_t k = 1) const { return m_toks[std::min(m_i + k, m_toks.size() - 1)]; }
    void next();
    [[noreturn]] void error(const std::string& msg) const { throw TemplateError(msg, cur().line); }
    [[noreturn]] void error_at(const std::string& msg, int line) const { throw TemplateError(msg, line); }

    bool is_op(const char* op) const { return cur().type == TokType::Op && cur().text == op; }
    bool is_name(const char* name) const { return cur().type == TokType::Name && cur().text == name; }
    static bool tok_is_name(const Token& t, const char* name) { return t.type == TokType::Name && t.text == name; }
    bool skip_op(const char* op);
    bool skip_name(const char* name);
    void expect_op(const char* op);
    void expect(TokType type, const char* what);
    std::string expect_name();
    int symbol(const std::string& name);
    static ExprPtr node(ExprKind kind, int line);

    // ---- statements ----

    bool at_end_tag(const std::vector<std::string>& end_tokens) const;

    // Template text and tags until one of end_tokens is the next tag's name (left current).
    Body subparse(const std::vector<std::string>& end_tokens);
    [[noreturn]] void fail_eof(const std::vector<std::string>& end_tokens) const;

    // Parses the body after a statement's header up to one of end_tokens; drop_needle also
    // consumes that end tag's name.
    Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle);
    void parse_statement(Body& body);
    [[noreturn]] void fail_unknown_tag(const std::string& tag, int line) const;

    // A body that is its own function in jinja2 (macro, call, filter, generation): break and
    // continue cannot reach an enclosing loop from it.
    Body parse_loop_free_body(const std::vector<std::string>& end_tokens);
    StmtPtr parse_for();
    StmtPtr parse_if();
    StmtPtr parse_set();
    void parse_signature(MacroStmt& m);
    StmtPtr parse_macro();
    StmtPtr parse_call_block();
    StmtPtr parse_filter_block();
    StmtPtr parse_with();

    // jinja2's find_undeclared over the macro body: does it read varargs, kwargs or caller?
    void note_special_names(MacroStmt& m);

    // ---- assignment targets ----

    Target parse_assign_target(bool with_tuple, bool name_only, const std::vector<std::string>& extra_end,
                               bool with_namespace);
    Target parse_target_primary();

    // ---- expressions ----

    bool is_tuple_end(const std::vector<std::string>& extra_end) const;

    ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                        bool explicit_parentheses);
    ExprPtr parse_expression(bool with_condexpr);
    ExprPtr parse_condexpr();
    ExprPtr binary(ExprKind kind, ExprPtr l, ExprPtr r, int line);
    ExprPtr parse_or();
    ExprPtr parse_and();
    ExprPtr parse_not();
    ExprPtr parse_compare();
    ExprPtr math(BinOp op, ExprPtr l, ExprPtr r, int line);
    ExprPtr parse_math1();
    ExprPtr parse_concat();
    ExprPtr parse_math2();
    ExprPtr parse_pow();
    ExprPtr parse_unary(bool with_filter);
    ExprPtr parse_primary();
    ExprPtr parse_list();
    ExprPtr parse_dict();
    ExprPtr parse_postfix(ExprPtr n);
    ExprPtr parse_filter_expr(ExprPtr n);
    ExprPtr parse_subscript(ExprPtr obj);
    ExprPtr parse_subscribed();
    void parse_call_args(CallArgs& call);
    ExprPtr parse_call(ExprPtr callee);
    std::string parse_dotted_name();

    // x|f|g(args); with a null subject for filter blocks ({% filter f %}) and set blocks.
    ExprPtr parse_filter(ExprPtr subject, bool start_inline);
    ExprPtr parse_test(ExprPtr subject);

public:
    // Calls fn on every expression node of body, statements included.
    static void walk_body(const Body& body, const std::function<void(const Expr*)>& fn);
};

}  // namespace snapkv::jinja
