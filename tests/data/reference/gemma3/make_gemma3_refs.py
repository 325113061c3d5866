#!/usr/bin/env python3
"""Produces the llama.cpp reference data for Gemma 3 270M in this folder: tokenizer ids,
greedy generations, perplexity and logits. It only drives llama.cpp's tools (llama-tokenize,
llama-perplexity) and our libllama client dump_logits; it never computes a model output itself.
Neither model file is committed; their sha256 go into the JSON.

usage: make_gemma3_refs.py --llama-build BUILD --f32 gemma-3-270m-f32.gguf
                           --q4 gemma-3-270m-q4_k_m.gguf --docs DIR --out DIR --work DIR
                           [--only tokenize,greedy,ppl,logits]
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

import numpy as np

# Strings for the tokenizer table: unicode, whitespace runs, code, numbers, special tokens.
TOKENIZE_STRINGS = [
    ("hello", "Hello world"),
    ("empty", ""),
    ("one_space", " "),
    ("four_spaces", "    "),
    ("leading_spaces", "   leading spaces"),
    ("trailing_spaces", "trailing spaces   "),
    ("space_run", "a" + " " * 20 + "b"),
    ("tabs", "tabs\tand\t\ttabs\t"),
    ("newlines", "line one\nline two\n\n\nline five\r\n"),
    ("only_newlines", "\n\n\n\n"),
    ("mixed_whitespace", "\t \n \t\n  \r\n x"),
    ("cjk", "你好，世界！日本語のテキストです。한국어 문장입니다."),
    ("emoji", "I love 🍕 and 🚀🚀 👩‍👩‍👧‍👦 ❤️ 🇫🇷"),
    ("accents", "Crème brûlée à la façon de Zoë, naïve résumé — Ångström"),
    ("combining", "cafe\u0301 e\u0301 zero\u200bwidth \ufeffbom"),
    ("rtl", "مرحبا بالعالم שלום עולם"),
    ("indic_thai", "नमस्ते दुनिया สวัสดีชาวโลก"),
    ("python", "def f(x):\n    return x**2 + 1  # square\n\nfor i in range(10):\n\tprint(f(i))\n"),
    ("json", "{\"key\": [1, 2.5e-3, null], \"s\": \"a\\\"b\", 'k': {}}"),
    ("cpp", "template <typename T> T* f(std::vector<T>& v) { return v.empty() ? nullptr : &v[0]; }"),
    ("numbers", "3.14159 2718281828 1,000,000 0x1F 1e-9 -42 2026-12-02 12:34:56 ½ ⅓ ²"),
    ("chat_turn", "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n"),
    ("bos_eos_text", "<bos>Hello<eos>"),
    ("partial_special", "<start_of_turn <end_of_turn> <pad> <unk> <mask> <start_of_image>"),
    ("url_email", "https://example.com/path?q=1&r=two#frag user@example.org"),
    ("punctuation", "HELLO!!! ...??? -- — – ''' \"\"\" `backticks` ***"),
    ("long_word", "Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism"),
    ("repeats", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa !!!!!!!!!!!!!!!! 0000000000"),
    ("markdown", "# Title\n\n* item one\n* item two\n\n| a | b |\n|---|---|\n"),
]

# Greedy prompts: (name, how to build the text). Documents are cut at a character count and then
# to the last whitespace, so the prompt is plain text that llama-tokenize turns into the ids.
GREEDY_PROMPTS = [
    ("short", {"text": "The capital of France is"}),
    ("chat", {"text": "<start_of_turn>user\nWrite a haiku about the sea.<end_of_turn>\n"
                      "<start_of_turn>model\n"}),
    ("orchard_300", {"docs": ["orchard.md"], "chars": 1300}),
    ("glacier_1000", {"docs": ["glacier.md"], "chars": 4400}),
    ("salt_glacier_2300", {"docs": ["salt_road.md", "glacier.md"], "chars": 10400}),
    ("four_docs_3500", {"docs": ["dry_stone_wall.md", "glacier.md", "orchard.md", "salt_road.md"],
                        "chars": 16000}),
]
N_GEN = 48
N_CTX_GREEDY = 4096
LOGITS_TOP_K = 20
LOGITS_PROMPT_CHARS = 280   # about 64 tokens of orchard.md


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(cmd: list, **kw) -> str:
    print("+", " ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-4000:]}")
    return res.stdout


def tokenize(build: str, model: str, text: str, path: str, extra: list) -> list:
    # -f reads the file verbatim; --no-escape keeps backslashes in the text as they are.
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    out = run([f"{build}/bin/llama-tokenize", "-m", model, "-f", path, "--ids", "--no-escape",
               "--log-disable"] + extra)
    m = re.search(r"\[([0-9, ]*)\]\s*$", out)
    if not m:
        sys.exit(f"cannot parse llama-tokenize output: {out!r}")
    return [int(x) for x in m.group(1).split(",") if x.strip()]


def cut_text(docs_dir: str, spec: dict) -> str:
    if "text" in spec:
        return spec["text"]
    text = "\n\n".join(open(os.path.join(docs_dir, d), encoding="utf-8").read().strip()
                       for d in spec["docs"])
    cut = text[:spec["chars"]]
    return cut[:max(cut.rfind(" "), cut.rfind("\n"))]


def model_info(args) -> dict:
    return {
        "f32": {"file": os.path.basename(args.f32), "sha256": sha256_file(args.f32),
                "bytes": os.path.getsize(args.f32)},
        "q4_k_m": {"file": os.path.basename(args.q4), "sha256": sha256_file(args.q4),
                   "bytes": os.path.getsize(args.q4)},
    }


def do_tokenize(args) -> dict:
    rows = []
    tmp = os.path.join(args.work, "tok.txt")
    for name, text in TOKENIZE_STRINGS:
        row = {"name": name, "text": text, "utf8_hex": text.encode("utf-8").hex()}
        row["ids"] = tokenize(args.llama_build, args.q4, text, tmp, [])
        row["ids_no_bos"] = tokenize(args.llama_build, args.q4, text, tmp, ["--no-bos"])
        row["ids_no_parse_special"] = tokenize(args.llama_build, args.q4, text, tmp,
                                               ["--no-parse-special"])
        # Both model files carry the same vocabulary; check that the tool agrees.
        if tokenize(args.llama_build, args.f32, text, tmp, []) != row["ids"]:
            sys.exit(f"tokenizations of '{name}' differ between the model files")
        rows.append(row)
    return {
        "command": "llama-tokenize -m MODEL -f TEXT_FILE --ids --no-escape --log-disable [--no-bos | --no-parse-special]",
        "notes": "ids: llama-tokenize defaults (BOS added, special tokens parsed). ids_no_bos: --no-bos. "
                 "ids_no_parse_special: BOS added, special-token text tokenized as plain text. "
                 "TEXT_FILE holds exactly the UTF-8 bytes of text (utf8_hex), no trailing newline.",
        "strings": rows,
    }


def do_greedy(args) -> dict:
    rows = []
    for name, spec in GREEDY_PROMPTS:
        text = cut_text(args.docs, spec)
        ids = tokenize(args.llama_build, args.q4, text, os.path.join(args.work, "prompt.txt"), [])
        ids_path = os.path.join(args.work, f"ids-{name}.txt")
        with open(ids_path, "w") as f:
            f.write(" ".join(map(str, ids)))
        row = {"name": name, "source": spec.get("docs", "literal"), "text": text,
               "n_prompt": len(ids), "prompt_ids": ids}
        for key, model in (("f32", args.f32), ("q4_k_m", args.q4)):
            out = run([f"{args.llama_build}/bin/dump_logits", "-m", model, "--ids-file", ids_path,
                       "--gen", str(N_GEN), "-c", str(N_CTX_GREEDY), "-t", "2"])
            res = json.loads(out.strip().splitlines()[-1])
            assert res["prompt"] == ids
            row[key] = {"generated": res["generated"], "margin": res["margin"]}
            print(f"greedy {name} ({len(ids)} tokens) {key}: {res['generated'][:8]}...",
                  file=sys.stderr)
        rows.append(row)
    return {
        "command": f"dump_logits -m MODEL --ids-file PROMPT_IDS --gen {N_GEN} -c {N_CTX_GREEDY} -t 2",
        "notes": "prompt_ids come from llama-tokenize (BOS added, special tokens parsed) on text. "
                 "Whole prompt in one batch, then one token per step; plain argmax (ties to the lowest "
                 "id), no penalties, no early stop on <eos>/<end_of_turn>. KV cache F32, flash "
                 "attention off, n_ctx 4096 (so the 512-token sliding window of the local layers "
                 "matters for the longer prompts). margin[i] = top1 - top2 logit at step i.",
        "n_gen": N_GEN,
        "prompts": rows,
    }


def parse_ppl(log: str, n_ctx: int) -> dict:
    # --ppl-output-type 1 prints "<offset>  <running ppl>  <running mean nll>  <stderr>" per chunk.
    pat = re.compile(r"^\s*(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\S+)\s*$")
    running_ppl, running_nll = [], []
    for line in log.splitlines():
        m = pat.match(line)
        if m:
            running_ppl.append(float(m.group(2)))
            running_nll.append(float(m.group(3)))
    fin = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    ntok = re.search(r"tokenizing the input \.\.\.\s*\n.*?(\d+) tokens", log, re.S)
    n_scored = n_ctx // 2 - 1   # llama.cpp scores the second half of each chunk, minus one
    chunk_nll = []
    for i, av in enumerate(running_nll):
        prev = running_nll[i - 1] * i * n_scored if i else 0.0
        chunk_nll.append(av * (i + 1) * n_scored - prev)
    return {
        "final_ppl": float(fin.group(1)) if fin else None,
        "final_ppl_stderr": float(fin.group(2)) if fin else None,
        "n_chunks": len(running_ppl),
        "tokens_scored_per_chunk": n_scored,
        "running_ppl_after_chunk": running_ppl,
        "running_mean_nll_after_chunk": running_nll,
        "chunk_ppl": [float(np.exp(x / n_scored)) for x in chunk_nll],
    }


def do_ppl(args) -> dict:
    text_path = os.path.join(args.out, "ppl-essays.txt")
    out = {
        "command": "llama-perplexity -m MODEL -f ppl-essays.txt -c 512 -b 512 -t 2 --ppl-output-type 1",
        "notes": "llama.cpp defaults otherwise (F16 KV cache, flash attention auto). Each 512-token "
                 "chunk starts with BOS and is evaluated from an empty cache; the last 255 tokens "
                 "of each chunk are scored. chunk_ppl is derived from the printed cumulative mean "
                 "NLL (6 decimals), so it is good to about 1e-5 relative.",
        "text_file": "ppl-essays.txt",
        "text_sha256": sha256_file(text_path),
    }
    for key, model in (("f32", args.f32), ("q4_k_m", args.q4)):
        res = subprocess.run([f"{args.llama_build}/bin/llama-perplexity", "-m", model, "-f", text_path,
                              "-c", "512", "-b", "512", "-t", "2", "--ppl-output-type", "1"],
                             capture_output=True, text=True)
        log = res.stdout + res.stderr
        with open(os.path.join(args.work, f"ppl-{key}.log"), "w") as f:
            f.write(log)
        if res.returncode != 0:
            sys.exit(f"llama-perplexity failed on {model}:\n{log[-3000:]}")
        out[key] = parse_ppl(log, 512)
        print(f"ppl {key}: {out[key]['final_ppl']}", file=sys.stderr)
    return out


def do_logits(args) -> dict:
    text = cut_text(args.docs, {"docs": ["orchard.md"], "chars": LOGITS_PROMPT_CHARS})
    ids = tokenize(args.llama_build, args.q4, text, os.path.join(args.work, "prompt.txt"), [])
    ids_path = os.path.join(args.work, "ids-logits.txt")
    with open(ids_path, "w") as f:
        f.write(" ".join(map(str, ids)))
    bin_path = os.path.join(args.work, "logits-f32.bin")
    run([f"{args.llama_build}/bin/dump_logits", "-m", args.f32, "--ids-file", ids_path,
         "-o", bin_path, "--format", "bin", "-t", "2"])
    raw = np.fromfile(bin_path, dtype="<f4")
    n_tok = len(ids)
    n_vocab = raw.size // n_tok
    assert raw.size == n_tok * n_vocab
    logits = raw.reshape(n_tok, n_vocab)
    top = []
    for p in range(n_tok):
        row = logits[p]
        # stable sort on -logit: equal logits keep ascending id order
        order = np.argsort(-row, kind="stable")[:LOGITS_TOP_K]
        top.append({"ids": [int(i) for i in order], "logits": [float(row[i]) for i in order]})
    last_path = os.path.join(args.out, "logits-last-f32.bin")
    logits[-1].astype("<f4").tofile(last_path)
    return {
        "command": "dump_logits -m gemma-3-270m-f32.gguf --ids-file PROMPT_IDS -o OUT.bin --format bin -t 2",
        "notes": "All positions evaluated in one batch; KV cache F32, flash attention off, n_ctx 256. "
                 "top[p] lists the 20 largest logits at position p (predicting token p+1), "
                 "largest first; logit values are float32 printed via Python repr (exact). "
                 "logits-last-f32.bin holds all n_vocab float32 little-endian logits of the last "
                 "position, no header.",
        "text": text,
        "prompt_ids": ids,
        "n_tokens": n_tok,
        "n_vocab": n_vocab,
        "top_k": LOGITS_TOP_K,
        "top": top,
        "last_position_file": "logits-last-f32.bin",
        "last_position_sha256": sha256_file(last_path),
        "full_logits_sha256": sha256_file(bin_path),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True)
    ap.add_argument("--f32", required=True)
    ap.add_argument("--q4", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="tokenize,greedy,ppl,logits")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    parts = args.only.split(",")

    def dump(name: str, obj: dict) -> None:
        obj = {"models": MODELS, **obj}
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
            f.write("\n")

    global MODELS
    MODELS = model_info(args)
    if "tokenize" in parts:
        dump("tokenize.json", do_tokenize(args))
    if "logits" in parts:
        dump("logits.json", do_logits(args))
    if "greedy" in parts:
        dump("greedy.json", do_greedy(args))
    if "ppl" in parts:
        dump("perplexity.json", do_ppl(args))


MODELS: dict = {}

if __name__ == "__main__":
    main()
