// Hugging Face tokenizer.json (+ tokenizer_config.json) -> VocabData, so that HF folders tokenize
// with the same code as GGUF files. Handles model.type "BPE" only: byte-level (GPT-2 / SmolLM2 /
// Llama 3 / Qwen2) and SentencePiece-style (byte_fallback, "▁" spaces). No Unigram, no WordPiece.
#pragma once

#include <string>

#include "core/io/model_config.h"

namespace snapkv {

// tokenizer_config_json_path may be empty or name a file that does not exist: BOS/EOS and
// add_bos then come from tokenizer.json's post_processor, else from the family's defaults.
// Throws FileError: Io (cannot read), BadJson (malformed, or a key missing or of the wrong type;
// the message names the file and the key), Unsupported (a model type or family we do not handle),
// BadValue (a special token named in the config that the vocab lacks).
VocabData read_tokenizer_json(const std::string& tokenizer_json_path, const std::string& tokenizer_config_json_path);

}  // namespace snapkv
