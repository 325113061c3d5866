// The per-`pre` regex tables (copied as data from llama.cpp's llm_tokenizer_bpe constructor, so
// that our pieces match llama.cpp's) and a PCRE2 splitter. No custom Unicode tables: \p{L}, \p{N}
// and \s come from PCRE2's UCP mode, which agrees with llama.cpp's tables on ordinary text.
#include "core/tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/tokenizer/unicode_util.h"

namespace snapkv {
namespace {

// GPT-2's pattern. llama.cpp drops the trailing "|\s+" of the original; it changes nothing,
// because text no alternative matches is kept as a piece of its own anyway.
const char* const k_gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

// Llama 3 / Qwen2: llama.cpp's rewrite of "(?i:'s|'t|...)" with explicit case classes.
const char* const k_llama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const k_qwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

}  // namespace

PreTokenizerSpec pre_tokenizer_spec(const std::string& pre) {
    PreTokenizerSpec spec;
    if (pre.empty() || pre == "default") {
        // llama.cpp's fallback for an unnamed BPE pre-tokenizer.
        spec.name = "default";
        spec.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", k_gpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
    } else if (pre == "gpt2" || pre == "gpt-2") {
        spec.name = "gpt2";
        spec.regexes = {k_gpt2};
    } else if (pre == "smollm" || pre == "starcoder" || pre == "refact") {
        // HF: Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)].
        spec.name = pre;
        spec.regexes = {"\\p{N}", k_gpt2};
    } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe") {
        spec.name = "llama3";
        spec.regexes = {k_llama3};
        spec.ignore_merges = true;  // llama.cpp sets tokenizer_ignore_merges for LLAMA3
    } else if (pre == "qwen2") {
        spec.name = "qwen2";
        spec.regexes = {k_qwen2};
    } else {
        throw FileError(FileError::Kind::Unsupported,
                        "vocab: pre-tokenizer '" + clip_text(pre) +
                            "': unsupported; supported: default, gpt2, "
                            "gpt-2, smollm, starcoder, refact, llama3, llama-v3, llama-bpe, qwen2");
    }
    return spec;
}

struct RegexSplitter::Pattern {
    pcre2_code* code = nullptr;
    ~Pattern() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(const std::vector<std::string>& patterns) {
    for (const std::string& p : patterns) {
        int err = 0;
        PCRE2_SIZE err_offset = 0;
        auto pat = std::make_unique<Pattern>();
        // MATCH_INVALID_UTF: invalid UTF-8 in the subject is never matched instead of being an
        // error, so any byte string can be tokenized (the bytes survive the byte-level map).
        pat->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.c_str()), p.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, nullptr);
        if (!pat->code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof(msg));
            throw Error("pre-tokenizer: regex '" + p + "' does not compile at offset " + std::to_string(err_offset) +
                        ": " + reinterpret_cast<const char*>(msg));
        }
        // JIT when PCRE2 was built with it; pcre2_match falls back to the interpreter otherwise.
        pcre2_jit_compile(pat->code, PCRE2_JIT_COMPLETE);
        m_patterns.push_back(std::move(pat));
    }
}

RegexSplitter::~RegexSplitter() = default;

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
    std::vector<std::string_view> pieces;
    if (text.empty()) return pieces;
    pieces.push_back(text);
    std::vector<std::string_view> next;
    for (const auto& pat : m_patterns) {
        using MatchData = std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)>;
        MatchData md(pcre2_match_data_create_from_pattern(pat->code, nullptr), &pcre2_match_data_free);
        next.clear();
        next.reserve(pieces.size() * 2);
        for (std::string_view piece : pieces) {
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
            size_t pos = 0;        // where the next search starts
            size_t unmatched = 0;  // start of text not yet emitted
            while (pos < piece.size()) {
                int rc = pcre2_match(pat->code, subject, piece.size(), pos, 0, md.get(), nullptr);
                if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
                    // Very long runs can exhaust JIT's default stack; the interpreter has none.
                    rc = pcre2_match(pat->code, subject, piece.size(), pos, PCRE2_NO_JIT, md.get(), nullptr);
                }
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0) {
                    PCRE2_UCHAR msg[256];
                    pcre2_get_error_message(rc, msg, sizeof(msg));
                    throw Error(std::string("pre-tokenizer: regex match failed: ") +
                                reinterpret_cast<const char*>(msg));
                }
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
                const size_t begin = ov[0], end = ov[1];
                if (end == begin) {
                    // An empty match (none of our patterns has one) emits nothing; step one char.
                    pos = begin + std::min(utf8_char_len(piece[begin]), piece.size() - begin);
                    continue;
                }
                if (begin > unmatched) next.push_back(piece.substr(unmatched, begin - unmatched));
                next.push_back(piece.substr(begin, end - begin));
                unmatched = pos = end;
            }
            if (unmatched < piece.size()) next.push_back(piece.substr(unmatched));
        }
        pieces.swap(next);
    }
    return pieces;
}

}  // namespace snapkv
