// What both BPE flavours share: the vocabulary tables built from VocabData (text -> id, token
// types, BOS/EOS/EOG ids), llama.cpp's special-token partition of the input, and the Tokenizer
// getters that need nothing else. Does not encode text itself: see spm_ and bpe_tokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/io/model_config.h"
#include "core/tokenizer/tokenizer.h"

namespace snapkv {

// llama.cpp's token types (llama_token_type), as GGUF's tokenizer.ggml.token_type stores them.
enum TokenType : int32_t {
    k_type_undefined = 0,
    k_type_normal = 1,
    k_type_unknown = 2,
    k_type_control = 3,
    k_type_user_defined = 4,
    k_type_unused = 5,
    k_type_byte = 6,
};

// One symbol of the chain both BPE flavours merge (llama.cpp's llm_symbol): a byte range of the
// text being merged, linked to its live neighbours.
struct MergeSymbol {
    int32_t prev;  // -1 at the start
    int32_t next;  // -1 at the end
    size_t start;  // byte offset in the text
    size_t n;      // bytes; 0 once merged into its left neighbour
};

// One symbol per UTF-8 character of text (utf8_char_len's split), chained left to right.
std::vector<MergeSymbol> utf8_symbols(std::string_view text);
// Merges symbols[right] into its left neighbour symbols[left] and unlinks it.
void merge_symbols(std::vector<MergeSymbol>& symbols, int32_t left, int32_t right);

// One part of the input after special tokens are cut out: a token, or a run of raw text.
struct TextFragment {
    int32_t token = -1;  // >= 0: this special token; -1: text[offset, offset + length)
    size_t offset = 0;
    size_t length = 0;
};

class VocabTokenizer : public Tokenizer {
public:
    VocabTokenizer(const VocabTokenizer&) = delete;
    VocabTokenizer& operator=(const VocabTokenizer&) = delete;

    const std::string& token_text(int32_t id) const override;
    int32_t n_vocab() const override { return int32_t(m_tokens.size()); }
    int32_t bos_id() const override { return m_bos_id; }
    int32_t eos_id() const override { return m_eos_id; }
    bool add_bos() const override { return m_add_bos; }
    bool is_eog(int32_t id) const override;
    bool is_control(int32_t id) const override;
    std::string decode(const std::vector<int32_t>& ids, bool render_special = false,
                       bool strip_leading_space = true) const override;

protected:
    // Validates sizes and special ids (FileError(BadValue) naming the item) and builds the tables.
    explicit VocabTokenizer(const VocabData& vocab);

    int32_t find_token(std::string_view text) const;  // -1 when text is not a token
    int32_t token_type(int32_t id) const { return m_types[size_t(id)]; }
    void check_id(int32_t id) const;  // InputError when out of range

    // llama.cpp's tokenizer_st_partition: for each special token, longest text first, every
    // occurrence in the remaining raw text becomes a token fragment. Control and unknown tokens
    // only when parse_special; user-defined tokens always (as llama.cpp and HF do).
    std::vector<TextFragment> split_special(const std::string& text, bool parse_special) const;

    // The piece of a control, unknown or user-defined token, as llama.cpp's token_to_piece
    // renders it (control/unknown only when render_special); nullopt for the other types, which
    // each tokenizer decodes its own way. id must be valid.
    std::optional<std::string> special_piece(int32_t id, bool render_special) const;

    // Tokens whose text starts a new run of raw text in encode (after them SentencePiece adds
    // its space prefix again): the special tokens split_special can produce.
    bool starts_text_run_after(int32_t id) const;

    std::vector<std::string> m_tokens;
    std::vector<float> m_scores;   // one per token (0 when the vocab has none)
    std::vector<int32_t> m_types;  // one per token (normal when the vocab has none)
    int32_t m_bos_id = -1;
    int32_t m_eos_id = -1;
    int32_t m_unk_id = -1;
    bool m_add_bos = false;
    bool m_add_eos = false;
    bool m_add_space_prefix = false;  // SentencePiece only; decode strips what encode added

private:
    std::unordered_map<std::string_view, int32_t> m_token_to_id;  // views into m_tokens
    std::vector<int32_t> m_special_ids;                           // longest text first
    std::vector<bool> m_eog;                                      // per token
};

}  // namespace snapkv
