// Tokenizer::create: picks the implementation for VocabData::model. The two families live in
// spm_tokenizer.cpp and bpe_tokenizer.cpp; nothing here reads files.
#include "core/tokenizer/tokenizer.h"

#include "core/common/clip_text.h"
#include "core/common/errors.h"
#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/spm_tokenizer.h"

namespace snapkv {

std::unique_ptr<Tokenizer> Tokenizer::create(const VocabData& vocab) {
    if (vocab.model == "llama") return std::make_unique<SpmTokenizer>(vocab);
    if (vocab.model == "gpt2") return std::make_unique<BpeTokenizer>(vocab);
    throw FileError(FileError::Kind::Unsupported,
                    "vocab: tokenizer model '" + clip_text(vocab.model) +
                        "': unsupported; supported: llama (SentencePiece BPE), gpt2 (byte-level BPE)");
}

}  // namespace snapkv
