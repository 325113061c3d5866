// Pre-tokenizer for byte-level BPE: the sequence of regexes llama.cpp uses for a vocab's `pre`
// name (src/llama-vocab.cpp, llm_tokenizer_bpe), run with PCRE2 (UTF-8, Unicode properties, JIT).
// It only cuts text into pieces; the byte-to-unicode map and the merges live in bpe_tokenizer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace snapkv {

struct PreTokenizerSpec {
    std::string name;                  // canonical name: "default", "gpt2", "smollm", "llama3", "qwen2"
    std::vector<std::string> regexes;  // applied in order, each to the pieces the previous one left
    bool ignore_merges = false;        // llama3: a piece that is a whole token skips the merges
};

// The spec for a tokenizer.ggml.pre value. Accepted (as in llama.cpp): "" and "default";
// "gpt2", "gpt-2"; "smollm", "starcoder", "refact"; "llama3", "llama-v3", "llama-bpe"; "qwen2".
// Throws FileError(Unsupported) naming the value and the accepted names.
PreTokenizerSpec pre_tokenizer_spec(const std::string& pre);

// Splits text with a sequence of regexes the way llama.cpp's unicode_regex_split does: each regex
// runs over each piece left by the previous one on its own (a lookahead cannot see past the
// piece), every match becomes a piece and so does every run of unmatched text between matches.
// Invalid UTF-8 never matches and so stays in the unmatched runs. Thread-safe after construction.
class RegexSplitter {
public:
    // Throws Error when a pattern does not compile (a bug, not bad input).
    explicit RegexSplitter(const std::vector<std::string>& patterns);
    ~RegexSplitter();
    RegexSplitter(const RegexSplitter&) = delete;
    RegexSplitter& operator=(const RegexSplitter&) = delete;

    // The pieces, in order; they are views into `text` and together cover all of it.
    std::vector<std::string_view> split(std::string_view text) const;

private:
    struct Pattern;
    std::vector<std::unique_ptr<Pattern>> m_patterns;
};

}  // namespace snapkv
