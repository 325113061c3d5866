// The Jinja lexer (private to core/tokenizer): template text -> tokens, with the whitespace rules
// transformers configures (trim_blocks, lstrip_blocks, no trailing newline) applied here, as
// jinja2's lexer applies them. Raw blocks come out as data and comments are dropped. It knows no
// statements; the parser does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snapkv::jinja {

enum class TokType : uint8_t {
    Data,        // template text between tags
    VarBegin,    // {{
    VarEnd,      // }}
    BlockBegin,  // {%
    BlockEnd,    // %}
    Name,
    String,  // text: the unescaped value
    Integer,
    Float,
    Op,  // text: the operator ("+", "//", "(", ...)
    Eof,
};

struct Token {
    TokType type = TokType::Eof;
    int line = 1;
    std::string text;
    int64_t int_value = 0;
    double float_value = 0.0;
};

// Throws TemplateError with the line for text that is not valid UTF-8, an unterminated comment or
// raw block, an unexpected character or bracket inside a tag, or a bad string escape.
std::vector<Token> tokenize(const std::string& source);

// How a token reads in an error message: "'foo'", "end of statement block", ...
std::string describe(const Token& tok);

}  // namespace snapkv::jinja
