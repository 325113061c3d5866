// The Jinja parser's expressions: Python precedence from the inline if down to primaries,
// filters binding looser than unary minus, `is` tests with or without parentheses, subscripts
// and slices, calls with keyword, *args and **kwargs arguments (jinja2 3.1 parser.py, parse_*).
// Nesting is bounded (k_max_expr_depth). Statements are in jinja_parser.cpp.
#include "core/tokenizer/jinja_builtins.h"
#include "core/tokenizer/jinja_parser.h"

namespace snapkv::jinja {

bool Parser::is_tuple_end(const std::vector<std::string>& extra_end) const {
    const TokType ty = cur().type;
    if (ty == TokType::VarEnd || ty == TokType::BlockEnd || is_op(")")) return true;
    return at_end_tag(extra_end);
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                            bool explicit_parentheses) {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
        if (!args.empty()) expect_op(",");
        if (is_tuple_end(extra_end)) break;
        args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
        if (is_op(",")) {
            is_tuple = true;
        } else {
            break;
        }
    }
    if (!is_tuple) {
        if (!args.empty()) return std::move(args[0]);
        if (!explicit_parentheses) error("expected an expression, got " + describe(cur()));
    }
    ExprPtr t = node(ExprKind::Tuple, line);
    t->children = std::move(args);
    return t;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
    DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "expressions");
    return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
    const int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
        ExprPtr expr2 = parse_or();
        ExprPtr expr3;
        if (skip_name("else")) {
            DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "expressions");
            expr3 = parse_condexpr();
        }
        ExprPtr c = node(ExprKind::CondExpr, line);
        c->children.push_back(std::move(expr2));
        c->children.push_back(std::move(expr1));
        c->children.push_back(std::move(expr3));
        expr1 = std::move(c);
    }
    return expr1;
}

ExprPtr Parser::binary(ExprKind kind, ExprPtr l, ExprPtr r, int line) {
    ExprPtr e = node(kind, line);
    e->children.push_back(std::move(l));
    e->children.push_back(std::move(r));
    return e;
}

ExprPtr Parser::parse_or() {
    const int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) left = binary(ExprKind::Or, std::move(left), parse_and(), line);
    return left;
}

ExprPtr Parser::parse_and() {
    const int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) left = binary(ExprKind::And, std::move(left), parse_not(), line);
    return left;
}

ExprPtr Parser::parse_not() {
    if (is_name("not")) {
        const int line = cur().line;
        next();
        DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "'not' operators");
        ExprPtr e = node(ExprKind::Not, line);
        e->children.push_back(parse_not());
        return e;
    }
    return parse_compare();
}

ExprPtr Parser::parse_compare() {
    const int line = cur().line;
    ExprPtr expr = parse_math1();
    std::vector<ExprPtr> operands;
    std::vector<CmpOp> ops;
    while (true) {
        static const std::pair<const char*, CmpOp> k_ops[] = {{"==", CmpOp::Eq}, {"!=", CmpOp::Ne}, {"<", CmpOp::Lt},
                                                              {"<=", CmpOp::Le}, {">", CmpOp::Gt},  {">=", CmpOp::Ge}};
        bool matched = false;
        for (const auto& [text, op] : k_ops) {
            if (is_op(text)) {
                next();
                ops.push_back(op);
                operands.push_back(parse_math1());
                matched = true;
                break;
            }
        }
        if (matched) continue;
        if (skip_name("in")) {
            ops.push_back(CmpOp::In);
            operands.push_back(parse_math1());
        } else if (is_name("not") && tok_is_name(look(), "in")) {
            next();
            next();
            ops.push_back(CmpOp::NotIn);
            operands.push_back(parse_math1());
        } else {
            break;
        }
    }
    if (ops.empty()) return expr;
    ExprPtr c = node(ExprKind::Compare, line);
    c->children.push_back(std::move(expr));
    for (auto& o : operands) c->children.push_back(std::move(o));
    c->cmp_ops = std::move(ops);
    return c;
}

ExprPtr Parser::math(BinOp op, ExprPtr l, ExprPtr r, int line) {
    ExprPtr e = binary(ExprKind::Binary, std::move(l), std::move(r), line);
    e->op = op;
    return e;
}

ExprPtr Parser::parse_math1() {
    const int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
        const BinOp op = cur().text == "+" ? BinOp::Add : BinOp::Sub;
        next();
        left = math(op, std::move(left), parse_concat(), line);
    }
    return left;
}

ExprPtr Parser::parse_concat() {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    args.push_back(parse_math2());
    while (skip_op("~")) args.push_back(parse_math2());
    if (args.size() == 1) return std::move(args[0]);
    ExprPtr e = node(ExprKind::Concat, line);
    e->children = std::move(args);
    return e;
}

ExprPtr Parser::parse_math2() {
    const int line = cur().line;
    ExprPtr left = parse_pow();
    while (true) {
        BinOp op;
        if (is_op("*")) {
            op = BinOp::Mul;
        } else if (is_op("/")) {
            op = BinOp::Div;
        } else if (is_op("//")) {
            op = BinOp::FloorDiv;
        } else if (is_op("%")) {
            op = BinOp::Mod;
        } else {
            break;
        }
        next();
        left = math(op, std::move(left), parse_pow(), line);
    }
    return left;
}

ExprPtr Parser::parse_pow() {
    const int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) left = math(BinOp::Pow, std::move(left), parse_unary(true), line);
    return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
    DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "unary operators");
    const int line = cur().line;
    ExprPtr n;
    if (is_op("-") || is_op("+")) {
        const ExprKind kind = cur().text == "-" ? ExprKind::Neg : ExprKind::Pos;
        next();
        n = node(kind, line);
        n->children.push_back(parse_unary(false));
    } else {
        n = parse_primary();
    }
    n = parse_postfix(std::move(n));
    if (with_filter) n = parse_filter_expr(std::move(n));
    return n;
}

ExprPtr Parser::parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    ExprPtr n;
    switch (t.type) {
    case TokType::Name:
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
            n = node(ExprKind::Const, line);
            n->value = Value::boolean(t.text[0] == 't' || t.text[0] == 'T');
        } else if (t.text == "none" || t.text == "None") {
            n = node(ExprKind::Const, line);
            n->value = Value::none();
        } else {
            n = node(ExprKind::Name, line);
            n->name = t.text;
            n->symbol = symbol(t.text);
        }
        next();
        return n;
    case TokType::String: {
        std::string s = t.text;
        next();
        while (cur().type == TokType::String) {  // adjacent literals concatenate
            s += cur().text;
            next();
        }
        n = node(ExprKind::Const, line);
        n->value = Value::string(std::move(s));
        return n;
    }
    case TokType::Integer:
        n = node(ExprKind::Const, line);
        n->value = Value::integer(t.int_value);
        next();
        return n;
    case TokType::Float:
        n = node(ExprKind::Const, line);
        n->value = Value::number(t.float_value);
        next();
        return n;
    default: break;
    }
    if (skip_op("(")) {
        n = parse_tuple(false, true, {}, true);
        expect_op(")");
        return n;
    }
    if (is_op("[")) return parse_list();
    if (is_op("{")) return parse_dict();
    error("unexpected " + describe(t));
}

ExprPtr Parser::parse_list() {
    ExprPtr n = node(ExprKind::List, cur().line);
    expect_op("[");
    while (!is_op("]")) {
        if (!n->children.empty()) expect_op(",");
        if (is_op("]")) break;
        n->children.push_back(parse_expression(true));
    }
    expect_op("]");
    return n;
}

ExprPtr Parser::parse_dict() {
    ExprPtr n = node(ExprKind::Dict, cur().line);
    expect_op("{");
    while (!is_op("}")) {
        if (!n->children.empty()) expect_op(",");
        if (is_op("}")) break;
        n->children.push_back(parse_expression(true));
        expect_op(":");
        n->children.push_back(parse_expression(true));
    }
    expect_op("}");
    return n;
}

ExprPtr Parser::parse_postfix(ExprPtr n) {
    while (true) {
        if (is_op(".") || is_op("[")) {
            n = parse_subscript(std::move(n));
        } else if (is_op("(")) {
            n = parse_call(std::move(n));
        } else {
            return n;
        }
    }
}

ExprPtr Parser::parse_filter_expr(ExprPtr n) {
    while (true) {
        if (is_op("|")) {
            n = parse_filter(std::move(n), false);
        } else if (is_name("is")) {
            n = parse_test(std::move(n));
        } else if (is_op("(")) {
            n = parse_call(std::move(n));
        } else {
            return n;
        }
    }
}

ExprPtr Parser::parse_subscript(ExprPtr obj) {
    DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "subscripts");
    const int line = cur().line;
    if (skip_op(".")) {
        const Token& a = cur();
        if (a.type == TokType::Name) {
            ExprPtr n = node(ExprKind::Getattr, line);
            n->name = a.text;
            n->children.push_back(std::move(obj));
            next();
            return n;
        }
        if (a.type != TokType::Integer) error("expected a name or number after '.', got " + describe(a));
        ExprPtr idx = node(ExprKind::Const, line);
        idx->value = Value::integer(a.int_value);
        next();
        ExprPtr n = node(ExprKind::Getitem, line);
        n->children.push_back(std::move(obj));
        n->children.push_back(std::move(idx));
        return n;
    }
    expect_op("[");
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
        if (!args.empty()) expect_op(",");
        args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr index;
    if (args.size() == 1) {
        index = std::move(args[0]);
    } else {
        index = node(ExprKind::Tuple, line);
        index->children = std::move(args);
    }
    ExprPtr n = node(ExprKind::Getitem, line);
    n->children.push_back(std::move(obj));
    n->children.push_back(std::move(index));
    return n;
}

ExprPtr Parser::parse_subscribed() {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    if (skip_op(":")) {
        args.push_back(nullptr);
    } else {
        ExprPtr e = parse_expression(true);
        if (!skip_op(":")) return e;
        args.push_back(std::move(e));
    }
    if (is_op(":")) {
        args.push_back(nullptr);
    } else if (!is_op("]") && !is_op(",")) {
        args.push_back(parse_expression(true));
    } else {
        args.push_back(nullptr);
    }
    if (skip_op(":")) {
        args.push_back(!is_op("]") && !is_op(",") ? parse_expression(true) : nullptr);
    } else {
        args.push_back(nullptr);
    }
    ExprPtr s = node(ExprKind::Slice, line);
    s->children = std::move(args);
    return s;
}

void Parser::parse_call_args(CallArgs& call) {
    expect_op("(");
    bool require_comma = false;
    while (!is_op(")")) {
        if (require_comma) {
            expect_op(",");
            if (is_op(")")) break;
        }
        if (is_op("*")) {
            if (call.dyn_args || call.dyn_kwargs) error("invalid syntax for a function call: a second *args");
            next();
            call.dyn_args = parse_expression(true);
        } else if (is_op("**")) {
            if (call.dyn_kwargs) error("invalid syntax for a function call: a second **kwargs");
            next();
            call.dyn_kwargs = parse_expression(true);
        } else if (cur().type == TokType::Name && look().type == TokType::Op && look().text == "=") {
            if (call.dyn_args || call.dyn_kwargs) error("invalid syntax for a function call: keyword after *args");
            std::string key = cur().text;
            next();
            next();
            call.kwargs.emplace_back(std::move(key), parse_expression(true));
        } else {
            if (call.dyn_args || call.dyn_kwargs || !call.kwargs.empty()) {
                error("invalid syntax for a function call: positional argument after keyword arguments");
            }
            call.args.push_back(parse_expression(true));
        }
        require_comma = true;
    }
    expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr callee) {
    DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "calls");
    ExprPtr n = node(ExprKind::Call, cur().line);
    n->children.push_back(std::move(callee));
    parse_call_args(n->call);
    return n;
}

std::string Parser::parse_dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    return name;
}

ExprPtr Parser::parse_filter(ExprPtr subject, bool start_inline) {
    while (is_op("|") || start_inline) {
        DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "filters");
        if (!start_inline) next();
        start_inline = false;
        ExprPtr n = node(ExprKind::Filter, cur().line);
        n->name = parse_dotted_name();
        n->builtin = find_filter(n->name);
        n->children.push_back(std::move(subject));
        if (is_op("(")) parse_call_args(n->call);
        subject = std::move(n);
    }
    return subject;
}

ExprPtr Parser::parse_test(ExprPtr subject) {
    DepthGuard guard(m_expr_depth, k_max_expr_depth, *this, "tests");
    const int line = cur().line;
    next();  // is
    const bool negated = skip_name("not");
    ExprPtr n = node(ExprKind::Test, line);
    n->name = parse_dotted_name();
    n->builtin = find_test(n->name);
    n->children.push_back(std::move(subject));
    const TokType ty = cur().type;
    if (is_op("(")) {
        parse_call_args(n->call);
    } else if ((ty == TokType::Name || ty == TokType::String || ty == TokType::Integer || ty == TokType::Float ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) error("you cannot chain multiple tests with 'is'");
        n->call.args.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return n;
    ExprPtr neg = node(ExprKind::Not, line);
    neg->children.push_back(std::move(n));
    return neg;
}

}  // namespace snapkv::jinja
