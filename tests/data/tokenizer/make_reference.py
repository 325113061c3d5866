#!/usr/bin/env python3
"""Reference token ids for the byte-level BPE tests, from Hugging Face `tokenizers` (not our code).

Builds a tokenizer.json from the SmolLM2 GGUF's own vocab + merges (read with gguf-py), using the
pre-tokenizer of SmolLM2's real tokenizer.json: Sequence[Digits(individual_digits=True),
ByteLevel(add_prefix_space=False, use_regex=True)]. The GGUF's control tokens become special
added tokens, as in the real file. With the same vocab it also builds the GPT-2, Llama 3 and
Qwen2 pre-tokenizer variants (their tokenizer.json Split regexes, verbatim), so the other `pre`
paths are checked against HF too, and records the raw pre-token pieces of each Split regex.

    pip install gguf tokenizers
    python3 tests/data/tokenizer/make_reference.py [MODEL.gguf] [OUT.json]
"""
import json
import os
import sys

import tokenizers
from gguf import GGUFReader
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "smollm2_reference.json")

# The Split patterns exactly as Meta-Llama-3 and Qwen2 tokenizer.json files write them.
LLAMA3_REGEX = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2_REGEX = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

TEXTS = [
    "Hello world",
    "Hello, we can use",
    "  multiple   spaces  ",
    "tabs\tand\nnewlines\n\n\r\nend",
    "12345 3.14 and 1,000,000",
    "emoji \U0001F642\U0001F44D\U0001F3FD!",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002 \u4e2d\u6587",
    "def f(x):\n    return x**2  # sq",
    "I'm sure they've said WE'LL go, can't you?",
    "Caf\u00e9 d\u00e9j\u00e0 vu. na\u00efve \u00fcber",
    "trailing spaces   ",
    "\n",
    " ",
    "a\u00a0b\u2003c",
    "x=1;y=22;z=333;w=4444",
    "<|im_start|>user\nHi<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
]


def gguf_vocab(path):
    r = GGUFReader(path)
    f = r.fields

    def strings(key):
        fl = f[key]
        return [bytes(fl.parts[i]).decode("utf-8") for i in fl.data]

    tokens = strings("tokenizer.ggml.tokens")
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    merges = strings("tokenizer.ggml.merges")
    pre = bytes(f["tokenizer.ggml.pre"].parts[f["tokenizer.ggml.pre"].data[0]]).decode()
    return tokens, types, merges, pre


def build(tokens, types, merges, pre_tokenizer, ignore_merges=False):
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges],
                     fuse_unk=False, byte_fallback=False, ignore_merges=ignore_merges)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty == 3])
    return tok


def main():
    tokens, types, merges, pre = gguf_vocab(MODEL)
    byte_level_split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    variants = {
        # name -> (our VocabData.pre, HF pre-tokenizer, ignore_merges)
        "smollm": ("smollm", pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]), False),
        "gpt2": ("gpt-2", pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), False),
        "llama3": ("llama-bpe", pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
            byte_level_split]), True),
        "qwen2": ("qwen2", pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
            byte_level_split]), False),
    }
    out = {
        "what": "Token ids from Hugging Face tokenizers " + tokenizers.__version__ +
                " for a tokenizer.json built from the GGUF's vocab and merges (see make_reference.py)",
        "model_file": os.path.basename(MODEL),
        "gguf_pre": pre,
        "n_vocab": len(tokens),
        "variants": {},
        "pre_token_pieces": {},
    }
    for name, (our_pre, hf_pre, ignore_merges) in variants.items():
        tok = build(tokens, types, merges, hf_pre, ignore_merges)
        cases = []
        for text in TEXTS:
            ids = tok.encode(text, add_special_tokens=False).ids
            cases.append({"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
        out["variants"][name] = {"pre": our_pre, "ignore_merges": ignore_merges, "cases": cases}
    for name, regex in [("llama3", LLAMA3_REGEX), ("qwen2", QWEN2_REGEX)]:
        split = pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False)
        out["pre_token_pieces"][name] = [
            {"text": t, "pieces": [p for p, _ in split.pre_tokenize_str(t)]} for t in TEXTS]
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(out, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
