// Byte-level BPE after llama.cpp's llm_tokenizer_bpe_session (src/llama-vocab.cpp): pieces from
// the pre-tokenizer, merges by lowest rank then leftmost, per-piece results cached for the call.
// Does not apply tokenizer.json's "clean up tokenization spaces" on decode (it breaks round trips).
#include "core/tokenizer/bpe_tokenizer.h"

#include <queue>

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/tokenizer/unicode_util.h"

namespace snapkv {
namespace {

struct Pair {
    int32_t rank;
    int32_t left;
    int32_t right;
    size_t left_n;  // sizes when queued: if either symbol changed since, the pair is stale
    size_t right_n;
};

// Lowest rank first; among equal ranks the leftmost pair (llm_bigram_bpe::comparator).
struct PairOrder {
    bool operator()(const Pair& a, const Pair& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

}  // namespace

BpeTokenizer::BpeTokenizer(const VocabData& vocab)
    : VocabTokenizer(vocab), m_pre(pre_tokenizer_spec(vocab.pre)), m_splitter(m_pre.regexes) {
    m_ranks.reserve(vocab.merges.size());
    std::string key;
    for (size_t i = 0; i < vocab.merges.size(); ++i) {
        const std::string& merge = vocab.merges[i];
        // Split at the first space after the first character, as llama.cpp does.
        const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
        if (space == std::string::npos) {
            throw FileError(FileError::Kind::BadValue, "vocab: merge " + std::to_string(i) + " '" + clip_text(merge) +
                                                           "': no space; expected 'left right'");
        }
        key.assign(merge, 0, space);
        key += '\0';
        key.append(merge, space + 1, std::string::npos);
        m_ranks.emplace(key, int32_t(i));  // the first (lowest) rank of a duplicate wins
    }
}

int32_t BpeTokenizer::merge_rank(std::string_view left, std::string_view right, std::string& key) const {
    key.assign(left);
    key += '\0';
    key.append(right);
    const auto it = m_ranks.find(key);
    return it == m_ranks.end() ? -1 : it->second;
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_special && m_add_bos) out.push_back(m_bos_id);
    // Natural text repeats its words: cache each distinct piece's ids for this call.
    std::unordered_map<std::string_view, std::vector<int32_t>> cache;
    std::vector<int32_t> ids;
    const std::string_view all(text);
    for (const TextFragment& f : split_special(text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            continue;
        }
        for (std::string_view piece : m_splitter.split(all.substr(f.offset, f.length))) {
            auto it = cache.find(piece);
            if (it == cache.end()) {
                ids.clear();
                encode_word(bytes_to_unicode(piece), ids);
                it = cache.emplace(piece, ids).first;
            }
            out.insert(out.end(), it->second.begin(), it->second.end());
        }
    }
    if (add_special && m_add_eos) out.push_back(m_eos_id);
    return out;
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
    if (word.empty()) return;
    if (m_pre.ignore_merges) {
        const int32_t id = find_token(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    std::vector<MergeSymbol> symbols = utf8_symbols(word);

    const std::string_view view(word);
    std::string key;
    std::priority_queue<Pair, std::vector<Pair>, PairOrder> queue;
    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const MergeSymbol& l = symbols[size_t(left)];
        const MergeSymbol& r = symbols[size_t(right)];
        const int32_t rank = merge_rank(view.substr(l.start, l.n), view.substr(r.start, r.n), key);
        if (rank < 0) return;
        queue.push({rank, left, right, l.n, r.n});
    };
    for (int32_t i = 1; i < int32_t(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Pair p = queue.top();
        queue.pop();
        const MergeSymbol& l = symbols[size_t(p.left)];
        const MergeSymbol& r = symbols[size_t(p.right)];
        // Live symbols never move their start, so equal sizes mean the same text as queued.
        if (l.n == 0 || r.n == 0 || l.n != p.left_n || r.n != p.right_n) continue;
        merge_symbols(symbols, p.left, p.right);
        try_add(l.prev, p.left);
        try_add(p.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = symbols[size_t(i)].next) {
        const MergeSymbol& s = symbols[size_t(i)];
        const std::string_view sym = view.substr(s.start, s.n);
        const int32_t id = find_token(sym);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // Not a token (a vocab without every byte): llama.cpp tries each byte, skipping misses.
        for (char c : sym) {
            const int32_t byte_id = find_token(std::string_view(&c, 1));
            if (byte_id >= 0) out.push_back(byte_id);
        }
    }
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
    check_id(id);
    if (std::optional<std::string> piece = special_piece(id, render_special)) return *piece;
    const std::string& text = m_tokens[size_t(id)];
    switch (m_types[size_t(id)]) {
    case k_type_normal: return unicode_to_bytes(text);
    default: return std::string();  // unused / undefined / byte: suppressed like llama.cpp
    }
}

}  // namespace snapkv
