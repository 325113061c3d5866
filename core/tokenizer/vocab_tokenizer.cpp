// Vocabulary tables and special-token partition shared by the SentencePiece-style and byte-level
// tokenizers, following llama.cpp's llama_vocab::impl (load, tokenizer_st_partition). No LSTRIP /
// RSTRIP token attributes: none of the supported vocabularies uses them.
#include "core/tokenizer/vocab_tokenizer.h"

#include <algorithm>
#include <limits>

#include "core/common/errors.h"
#include "core/tokenizer/unicode_util.h"

namespace snapkv {
namespace {

// llama.cpp marks these as end-of-generation by their text (llama-vocab.cpp, "special_eog_ids")
// and forces them to control type, because converters often store them as normal tokens.
const char* const k_eog_texts[] = {"<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
                                   "<|endoftext|>", "<|eom_id|>", "<EOT>"};

void check_special_id(const char* what, int32_t id, size_t n_tokens) {
    if (id < -1 || (id >= 0 && size_t(id) >= n_tokens)) {
        throw FileError(FileError::Kind::BadValue, std::string("vocab: ") + what + " " + std::to_string(id) +
                                                       ": out of range; expected -1 (none) or 0.." +
                                                       std::to_string(n_tokens - 1));
    }
}

}  // namespace

std::vector<MergeSymbol> utf8_symbols(std::string_view text) {
    std::vector<MergeSymbol> symbols;
    symbols.reserve(text.size());
    for (size_t offs = 0; offs < text.size();) {
        const size_t n = std::min(utf8_char_len(text[offs]), text.size() - offs);
        const int32_t index = int32_t(symbols.size());
        symbols.push_back({index - 1, offs + n == text.size() ? -1 : index + 1, offs, n});
        offs += n;
    }
    return symbols;
}

void merge_symbols(std::vector<MergeSymbol>& symbols, int32_t left, int32_t right) {
    MergeSymbol& l = symbols[size_t(left)];
    MergeSymbol& r = symbols[size_t(right)];
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[size_t(r.next)].prev = left;
}

VocabTokenizer::VocabTokenizer(const VocabData& vocab)
    : m_tokens(vocab.tokens), m_scores(vocab.scores), m_types(vocab.types), m_bos_id(vocab.bos_id),
      m_eos_id(vocab.eos_id), m_unk_id(vocab.unk_id), m_add_bos(vocab.add_bos), m_add_eos(vocab.add_eos) {
    const size_t n = m_tokens.size();
    if (n == 0) {
        throw FileError(FileError::Kind::BadValue, "vocab: tokens: empty; expected at least one token");
    }
    if (n > size_t(std::numeric_limits<int32_t>::max())) {
        throw FileError(FileError::Kind::BadCount,
                        "vocab: tokens: " + std::to_string(n) + " entries; at most 2147483647 allowed");
    }
    if (!m_scores.empty() && m_scores.size() != n) {
        throw FileError(FileError::Kind::BadValue, "vocab: scores: " + std::to_string(m_scores.size()) +
                                                       " entries; expected 0 or " + std::to_string(n) +
                                                       " (one per token)");
    }
    if (!m_types.empty() && m_types.size() != n) {
        throw FileError(FileError::Kind::BadValue, "vocab: token types: " + std::to_string(m_types.size()) +
                                                       " entries; expected 0 or " + std::to_string(n) +
                                                       " (one per token)");
    }
    if (m_scores.empty()) m_scores.assign(n, 0.0f);
    if (m_types.empty()) m_types.assign(n, k_type_normal);
    check_special_id("bos_id", m_bos_id, n);
    check_special_id("eos_id", m_eos_id, n);
    check_special_id("unk_id", m_unk_id, n);
    check_special_id("pad_id", vocab.pad_id, n);
    for (int32_t id : vocab.eog_ids) check_special_id("eog id", id, n);
    if (m_add_bos && m_bos_id < 0) {
        throw FileError(FileError::Kind::BadValue, "vocab: add_bos is true but bos_id is -1; expected a BOS token id");
    }
    if (m_add_eos && m_eos_id < 0) {
        throw FileError(FileError::Kind::BadValue, "vocab: add_eos is true but eos_id is -1; expected an EOS token id");
    }

    m_token_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        // Later duplicates win, as in llama.cpp's token_to_id[word] = i.
        m_token_to_id[std::string_view(m_tokens[i])] = int32_t(i);
    }

    m_eog.assign(n, false);
    if (m_eos_id >= 0) m_eog[size_t(m_eos_id)] = true;
    for (int32_t id : vocab.eog_ids) m_eog[size_t(id)] = true;
    for (const char* text : k_eog_texts) {
        const int32_t id = find_token(text);
        if (id < 0) continue;
        m_eog[size_t(id)] = true;
        m_types[size_t(id)] = k_type_control;
    }

    for (size_t i = 0; i < n; ++i) {
        const int32_t t = m_types[i];
        if ((t == k_type_control || t == k_type_user_defined || t == k_type_unknown) && !m_tokens[i].empty()) {
            m_special_ids.push_back(int32_t(i));
        }
    }
    // Longest text first (llama.cpp sorts by length only; ties here keep id order).
    std::stable_sort(m_special_ids.begin(), m_special_ids.end(),
                     [&](int32_t a, int32_t b) { return m_tokens[size_t(a)].size() > m_tokens[size_t(b)].size(); });
}

const std::string& VocabTokenizer::token_text(int32_t id) const {
    check_id(id);
    return m_tokens[size_t(id)];
}

bool VocabTokenizer::is_eog(int32_t id) const { return id >= 0 && size_t(id) < m_eog.size() && m_eog[size_t(id)]; }

bool VocabTokenizer::is_control(int32_t id) const {
    return id >= 0 && size_t(id) < m_types.size() && m_types[size_t(id)] == k_type_control;
}

int32_t VocabTokenizer::find_token(std::string_view text) const {
    const auto it = m_token_to_id.find(text);
    return it == m_token_to_id.end() ? -1 : it->second;
}

void VocabTokenizer::check_id(int32_t id) const {
    if (id < 0 || size_t(id) >= m_tokens.size()) {
        throw InputError("tokenizer: token id " + std::to_string(id) + ": out of range; the vocab has " +
                         std::to_string(m_tokens.size()) + " tokens (0.." + std::to_string(m_tokens.size() - 1) + ")");
    }
}

std::optional<std::string> VocabTokenizer::special_piece(int32_t id, bool render_special) const {
    switch (m_types[size_t(id)]) {
    case k_type_control:
    case k_type_unknown: return render_special ? m_tokens[size_t(id)] : std::string();
    case k_type_user_defined: return m_tokens[size_t(id)];
    default: return std::nullopt;
    }
}

bool VocabTokenizer::starts_text_run_after(int32_t id) const {
    const int32_t t = m_types[size_t(id)];
    return id == m_bos_id || t == k_type_control || t == k_type_user_defined || t == k_type_unknown;
}

std::vector<TextFragment> VocabTokenizer::split_special(const std::string& text, bool parse_special) const {
    std::vector<TextFragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, 0, text.size()});
    const std::string_view all(text);
    std::vector<TextFragment> next;
    for (int32_t id : m_special_ids) {
        const int32_t t = m_types[size_t(id)];
        if (!parse_special && (t == k_type_control || t == k_type_unknown)) continue;
        const std::string& special = m_tokens[size_t(id)];
        next.clear();
        bool found_any = false;
        for (const TextFragment& f : fragments) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            const std::string_view piece = all.substr(f.offset, f.length);
            size_t start = 0;
            for (;;) {
                const size_t at = piece.find(special, start);
                if (at == std::string_view::npos) break;
                found_any = true;
                if (at > start) next.push_back({-1, f.offset + start, at - start});
                next.push_back({id, f.offset + at, special.size()});
                start = at + special.size();
            }
            if (start < piece.size()) next.push_back({-1, f.offset + start, piece.size() - start});
        }
        if (found_any) fragments.swap(next);
    }
    return fragments;
}

std::string VocabTokenizer::decode(const std::vector<int32_t>& ids, bool render_special,
                                   bool strip_leading_space) const {
    std::string out;
    // SentencePiece encode puts one space before each run of raw text (at the start and after
    // every special token); undo exactly that, so that decode(encode(s)) == s.
    const bool strip = strip_leading_space && m_add_space_prefix;
    bool at_run_start = true;
    for (int32_t id : ids) {
        check_id(id);
        std::string piece = token_to_piece(id, render_special);
        const bool special = starts_text_run_after(id);
        if (strip && at_run_start && !special && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        at_run_start = special;
        out += piece;
    }
    return out;
}

}  // namespace snapkv
