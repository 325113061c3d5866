// Text <-> token ids for the two vocab families llama.cpp knows: SentencePiece-style BPE ("llama":
// scores, byte fallback, leading space) and byte-level BPE ("gpt2": merges, byte-to-unicode map,
// a PCRE2 pre-tokenizer regex chosen by VocabData::pre). Built from VocabData, so GGUF and
// tokenizer.json share the code. No model, no LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/io/model_config.h"

namespace snapkv {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Throws FileError(Unsupported) for an unknown vocab model or pre-tokenizer name.
    static std::unique_ptr<Tokenizer> create(const VocabData& vocab);

    // add_special: prepend BOS (and append EOS) as the vocab's add_bos/add_eos say.
    // parse_special: text like "<|im_start|>" or "<s>" becomes its control token.
    // Both true matches llama.cpp's llama-tokenize defaults.
    virtual std::vector<int32_t> encode(const std::string& text, bool add_special = true,
                                        bool parse_special = true) const = 0;
    // The bytes a token stands for ("▁" -> " ", "<0x0A>" -> "\n", byte-level map undone);
    // control tokens render as their text ("<s>") when render_special is true, else "".
    virtual std::string token_to_piece(int32_t id, bool render_special = true) const = 0;
    // Concatenated pieces; for SentencePiece vocabs the leading space added by encode is removed
    // when strip_leading_space is true, so decode(encode(s)) == s.
    virtual std::string decode(const std::vector<int32_t>& ids, bool render_special = false,
                               bool strip_leading_space = true) const = 0;
    // The vocabulary string itself ("▁He", "Ġworld"), for display.
    virtual const std::string& token_text(int32_t id) const = 0;

    virtual int32_t n_vocab() const = 0;
    virtual int32_t bos_id() const = 0;
    virtual int32_t eos_id() const = 0;
    virtual bool add_bos() const = 0;
    virtual bool is_eog(int32_t id) const = 0;  // eos or any end-of-generation token
    virtual bool is_control(int32_t id) const = 0;
    virtual std::string kind() const = 0;  // "SentencePiece BPE" / "byte-level BPE (smollm)"
};

}  // namespace snapkv
