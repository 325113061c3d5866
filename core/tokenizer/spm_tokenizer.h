// SentencePiece-style BPE ("llama" vocabs): spaces become "▁", one "▁" starts each run of raw
// text, adjacent symbols merge by highest token score, leftovers fall back to <0xNN> byte tokens.
// Mirrors llama.cpp's llm_tokenizer_spm_session. No Unigram (T5) models, no NFKC normalisation.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tokenizer/vocab_tokenizer.h"

namespace snapkv {

class SpmTokenizer final : public VocabTokenizer {
public:
    explicit SpmTokenizer(const VocabData& vocab);

    std::vector<int32_t> encode(const std::string& text, bool add_special = true,
                                bool parse_special = true) const override;
    std::string token_to_piece(int32_t id, bool render_special = true) const override;
    std::string kind() const override { return "SentencePiece BPE"; }

private:
    // Merges one run of text (spaces already "▁") and appends its tokens.
    void encode_run(const std::string& text, std::vector<int32_t>& out) const;
    void append_byte(uint8_t byte, std::vector<int32_t>& out) const;

    std::array<int32_t, 256> m_byte_to_token;  // "<0xNN>" (or the raw byte) -> id, or -1
};

}  // namespace snapkv
