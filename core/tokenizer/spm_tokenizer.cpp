// SentencePiece-style BPE after llama.cpp's llm_tokenizer_spm_session (src/llama-vocab.cpp):
// same symbol chain, same priority (score, then leftmost), same byte fallback, so ids match
// llama-tokenize exactly. A priority queue keeps a 100 KB run at O(n log n).
#include "core/tokenizer/spm_tokenizer.h"

#include <cstdio>
#include <queue>

#include "core/common/errors.h"

namespace snapkv {
namespace {

const std::string k_space_marker = "\xE2\x96\x81";  // U+2581 "▁"

// "<0xNN>" -> NN, or -1 for any other text.
int parse_byte_token(const std::string& text) {
    if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return -1;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
        const char c = text[i];
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (d < 0) return -1;
        value = value * 16 + d;
    }
    return value;
}

struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    size_t size;  // bytes of left + right when queued; a mismatch later means it is stale
};

// Highest score first; among equal scores the leftmost pair (llm_bigram_spm::comparator).
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

SpmTokenizer::SpmTokenizer(const VocabData& vocab) : VocabTokenizer(vocab) {
    m_add_space_prefix = vocab.add_space_prefix;
    if (vocab.types.empty()) {
        // No token types in the file: recognise byte tokens by their text.
        for (size_t i = 0; i < m_tokens.size(); ++i) {
            if (parse_byte_token(m_tokens[i]) >= 0) m_types[i] = k_type_byte;
        }
    }
    // llama.cpp's byte_to_token: "<0xNN>" (upper-case hex), else the byte itself as text.
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        int32_t id = find_token(name);
        if (id < 0) id = find_token(std::string(1, char(b)));
        m_byte_to_token[size_t(b)] = id;
    }
}

std::vector<int32_t> SpmTokenizer::encode(const std::string& text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 2 + 2);
    if (add_special && m_add_bos) out.push_back(m_bos_id);
    bool prev_special = true;  // the first run gets the space prefix too
    std::string run;
    for (const TextFragment& f : split_special(text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        run.clear();
        if (m_add_space_prefix && prev_special) run += k_space_marker;
        // llama_escape_whitespace: only ' ' becomes "▁"; tabs and newlines stay as they are.
        for (size_t i = f.offset; i < f.offset + f.length; ++i) {
            if (text[i] == ' ') run += k_space_marker;
            else run += text[i];
        }
        encode_run(run, out);
        prev_special = false;
    }
    if (add_special && m_add_eos) out.push_back(m_eos_id);
    return out;
}

void SpmTokenizer::encode_run(const std::string& text, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    std::vector<MergeSymbol> symbols = utf8_symbols(text);

    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
    const std::string_view view(text);
    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const MergeSymbol& l = symbols[size_t(left)];
        const MergeSymbol& r = symbols[size_t(right)];
        const int32_t id = find_token(view.substr(l.start, l.n + r.n));
        if (id < 0) return;
        queue.push({m_scores[size_t(id)], left, right, l.n + r.n});
    };
    for (int32_t i = 1; i < int32_t(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        const MergeSymbol& l = symbols[size_t(b.left)];
        const MergeSymbol& r = symbols[size_t(b.right)];
        if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
        merge_symbols(symbols, b.left, b.right);
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }

    // Every merged symbol is a token; a single character that is not becomes byte tokens
    // (llama.cpp's resegment reduces to exactly this, its rev_merge map never applies).
    for (int32_t i = 0; i != -1; i = symbols[size_t(i)].next) {
        const MergeSymbol& s = symbols[size_t(i)];
        const int32_t id = find_token(view.substr(s.start, s.n));
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        for (size_t j = 0; j < s.n; ++j) append_byte(static_cast<uint8_t>(text[s.start + j]), out);
    }
}

void SpmTokenizer::append_byte(uint8_t byte, std::vector<int32_t>& out) const {
    const int32_t id = m_byte_to_token[byte];
    if (id >= 0) {
        out.push_back(id);
    } else if (m_unk_id >= 0) {
        out.push_back(m_unk_id);  // llama.cpp would abort here; the unknown token is kinder
    } else {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02X", byte);
        throw InputError(std::string("tokenizer: byte ") + hex +
                         ": no token for it in this vocab (no <0xNN> token, no unknown token)");
    }
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
    check_id(id);
    if (std::optional<std::string> piece = special_piece(id, render_special)) return *piece;
    const std::string& text = m_tokens[size_t(id)];
    switch (m_types[size_t(id)]) {
    case k_type_normal: {
        std::string piece;
        piece.reserve(text.size());
        for (size_t i = 0; i < text.size();) {
            if (text.compare(i, k_space_marker.size(), k_space_marker) == 0) {
                piece += ' ';
                i += k_space_marker.size();
            } else {
                piece += text[i++];
            }
        }
        return piece;
    }
    case k_type_byte: {
        const int b = parse_byte_token(text);
        return b >= 0 ? std::string(1, char(b)) : text;
    }
    default: return std::string();  // unused / undefined: suppressed like llama.cpp
    }
}

}  // namespace snapkv
