// Byte-level BPE ("gpt2" vocabs: GPT-2, SmolLM2, Llama 3, Qwen2): split text with the vocab's
// pre-tokenizer regexes, map each piece's bytes to GPT-2's printable code points, then apply the
// merges by rank. Mirrors llama.cpp's llm_tokenizer_bpe_session. No NFC normalisation (Qwen2's
// tokenizer.json asks for it; llama.cpp skips it too).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/vocab_tokenizer.h"

namespace snapkv {

class BpeTokenizer final : public VocabTokenizer {
public:
    // Throws FileError(Unsupported) for an unknown vocab.pre, FileError(BadValue) for a merge
    // that is not "left right".
    explicit BpeTokenizer(const VocabData& vocab);

    std::vector<int32_t> encode(const std::string& text, bool add_special = true,
                                bool parse_special = true) const override;
    std::string token_to_piece(int32_t id, bool render_special = true) const override;
    std::string kind() const override { return "byte-level BPE (" + m_pre.name + ")"; }

private:
    // BPE over one pre-token already mapped to GPT-2 code points; appends its token ids.
    void encode_word(const std::string& word, std::vector<int32_t>& out) const;
    int32_t merge_rank(std::string_view left, std::string_view right, std::string& key) const;

    PreTokenizerSpec m_pre;
    RegexSplitter m_splitter;
    std::unordered_map<std::string, int32_t> m_ranks;  // "left\0right" -> merge rank
};

}  // namespace snapkv
