#!/usr/bin/env python3
"""Produces llama.cpp's reference data for KV cache types (f32, f16, bf16, q8_0; llama.cpp's -ctk/-ctv)
on the two bundled models: kv_type_refs.json in this folder. It only drives llama.cpp's llama-tokenize
and our libllama client dump_logits (../../qtypes/tools/dump_logits.cpp); it never runs SnapKV
Studio's code. Model files are not committed; their sha256 go into the JSON.

usage: make_kv_type_refs.py --llama-build BUILD --models DIR --docs DIR --out DIR --work DIR
                            [--llama-src SRC] [--threads 2]

Each model in two weight forms: the bundled file as it is ("native": llama.cpp multiplies its blocks
with activations quantized to 8 bits) and llama.cpp's own F32 dequantization of it ("f32": made in
--work by llama-quantize --allow-requantize IN OUT F32, not committed; our weights=f32 equals it bit
for bit), so a cache type's effect is not hidden under the activation quantization's.
For every model x weight form x prompt it runs greedy generation (32 ids) once per run of RUNS (cache
type of K and V, flash attention; see RUNS for why f32 runs without flash attention). Each run also
writes the full logits of the last prompt position; from those the script computes llama.cpp's own
f32-vs-type differences over ALL logits and over a fixed id set (the 256 largest of the f32 run),
and keeps only the fixed set's logits in the JSON.
"""

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys

import numpy as np

N_GEN = 32
TOP_N = 256  # size of the fixed id set whose last-position logits are kept for every type
THREADS = 2
TYPES = ["f32", "f16", "bf16", "q8_0"]
# run name -> (cache type of K and V, --flash-attn). llama.cpp casts an F32 K/V to F16 before its
# flash attention (src/llama-graph.cpp build_attn_mha: "if (k->type == GGML_TYPE_F32) k =
# ggml_cast(ctx0, k, GGML_TYPE_F16)"), so with flash attention on (auto, the default on the CPU) an
# f32 cache is attended as f16. The f32 reference therefore runs with flash attention off, the only
# way llama.cpp attends float32 keys and values; the other types run with llama.cpp's default
# (auto -> on; a q8_0 V needs it), and f16 also without it, for what flash attention alone adds.
RUNS = {
    "f32": ("f32", "off"),
    "f16": ("f16", "auto"),
    "bf16": ("bf16", "auto"),
    "q8_0": ("q8_0", "auto"),
    "f16_fa_off": ("f16", "off"),
}

MODELS = [
    ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ("gemma3", "gemma-3-270m-q4_k_m.gguf"),
]

# The chat prompt in each model's own chat template (rendered by hand, as the GGUF's Jinja template
# renders one user turn with add_generation_prompt; SmolLM2's adds its default system message).
CHAT_QUESTION = "Write a haiku about the sea."
CHAT_TEXT = {
    "smollm2": ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                "<|im_end|>\n<|im_start|>user\n" + CHAT_QUESTION + "<|im_end|>\n<|im_start|>assistant\n"),
    "gemma3": "<start_of_turn>user\n" + CHAT_QUESTION + "<end_of_turn>\n<start_of_turn>model\n",
}
SHORT_TEXT = "The capital of France is"
# About 1,000 tokens of glacier.md (cut at a character count, then back to the last whitespace),
# then a question about it.
DOC_FILE = "glacier.md"
DOC_CHARS = 4400
DOC_QUESTION = "\n\nQuestion: Why does a glacier flow downhill although it looks solid?\nAnswer:"


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(cmd: list) -> str:
    print("+", " ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-4000:]}")
    return res.stdout


def tokenize(build: str, model: str, text: str, path: str) -> list:
    # -f reads the file verbatim; --no-escape keeps backslashes as they are. BOS as the vocab says,
    # special tokens parsed (llama-tokenize's defaults).
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    out = run([f"{build}/bin/llama-tokenize", "-m", model, "-f", path, "--ids", "--no-escape", "--log-disable"])
    m = re.search(r"\[([0-9, ]*)\]\s*$", out)
    if not m:
        sys.exit(f"cannot parse llama-tokenize output: {out!r}")
    return [int(x) for x in m.group(1).split(",") if x.strip()]


def doc_text(docs_dir: str) -> str:
    text = open(os.path.join(docs_dir, DOC_FILE), encoding="utf-8").read().strip()
    cut = text[:DOC_CHARS]
    return cut[:max(cut.rfind(" "), cut.rfind("\n"))] + DOC_QUESTION


def prompts_for(key: str, docs_dir: str) -> list:
    return [
        ("short", "literal", SHORT_TEXT),
        ("chat", "the model's chat template, one user turn", CHAT_TEXT[key]),
        ("document", f"{DOC_FILE}, first {DOC_CHARS} characters cut to whitespace, + question", doc_text(docs_dir)),
    ]


def greedy_run(args, model: str, ids_path: str, cache_type: str, fa: str, logits_path: str) -> dict:
    out = run([f"{args.llama_build}/bin/dump_logits", "-m", model, "--ids-file", ids_path, "--gen", str(N_GEN),
               "-t", str(args.threads), "--cache-type-k", cache_type, "--cache-type-v", cache_type,
               "--flash-attn", fa, "--last-logits", logits_path])
    return json.loads(out.strip().splitlines()[-1])


def first_difference(a: list, b: list) -> int:
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    return i


def f32list(values) -> list:
    # float32 values through Python's repr: exact, and read back to the same float32.
    return [float(np.float32(v)) for v in values]


def do_case(args, key: str, weights: str, model: str, name: str, source: str, text: str) -> dict:
    ids = tokenize(args.llama_build, model, text, os.path.join(args.work, "prompt.txt"))
    ids_path = os.path.join(args.work, f"ids-{key}-{weights}-{name}.txt")
    with open(ids_path, "w") as f:
        f.write(" ".join(map(str, ids)))
    runs, full = {}, {}
    for run_key, (cache_type, fa) in RUNS.items():
        logits_path = os.path.join(args.work, f"last-{key}-{weights}-{name}-{run_key}.bin")
        res = greedy_run(args, model, ids_path, cache_type, fa, logits_path)
        if res["prompt"] != ids:
            sys.exit(f"dump_logits echoed other prompt ids for {key}/{name}")
        full[run_key] = np.fromfile(logits_path, dtype="<f4")
        runs[run_key] = {"cache_type_k": res["cache_type_k"], "cache_type_v": res["cache_type_v"],
                         "flash_attn": res["flash_attn"], "generated": res["generated"],
                         "margin": f32list(res["margin"])}
        print(f"{key}/{weights}/{name} ({len(ids)} tokens) {run_key} fa={res['flash_attn']}: {res['generated'][:8]}...",
              file=sys.stderr)
    ref = full["f32"]
    # The fixed id set: the TOP_N largest logits of the f32 run, largest first (stable: ties by id).
    fixed = np.argsort(-ref, kind="stable")[:TOP_N]
    for run_key, logits in full.items():
        if logits.size != ref.size:
            sys.exit(f"{key}/{name}: {run_key} wrote {logits.size} logits, f32 wrote {ref.size}")
        runs[run_key]["last_logits_fixed"] = f32list(logits[fixed])
    own = {}
    for run_key, logits in full.items():
        if run_key == "f32":
            continue
        d = np.abs(logits.astype(np.float64) - ref.astype(np.float64))
        own[run_key] = {
            "max_abs_all": float(d.max()),
            "argmax_abs_all": int(d.argmax()),
            "max_abs_fixed": float(d[fixed].max()),
            "rms_all": float(np.sqrt(np.mean(d * d))),
            "first_greedy_difference": first_difference(runs[run_key]["generated"], runs["f32"]["generated"]),
            "same_top1_last": bool(int(np.argmax(logits)) == int(np.argmax(ref))),
        }
    return {"model": key, "weights": weights, "prompt": name, "source": source, "text": text, "n_prompt": len(ids),
            "prompt_ids": ids, "n_vocab": int(ref.size), "fixed_ids": [int(i) for i in fixed],
            "runs": runs, "llama_own_vs_f32": own}


def llama_version(src: str) -> dict:
    info = {"source": src}
    try:
        info["commit"] = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True,
                                        check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        info["tree"] = "modified" if dirty else "clean"
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = "unknown"
    cm = os.path.join(src, "ggml", "CMakeLists.txt")
    if os.path.exists(cm):
        txt = open(cm).read()
        parts = [re.search(rf"set\(GGML_VERSION_{p}\s+(\d+)\)", txt) for p in ("MAJOR", "MINOR", "PATCH")]
        if all(parts):
            info["ggml_version"] = ".".join(m.group(1) for m in parts)
    return info


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def dumps_compact(obj, indent: int = 0) -> str:
    # JSON with dicts indented and lists of plain values on one line, so the file stays small and
    # a diff still shows which case changed.
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f'{pad} {json.dumps(k)}: {dumps_compact(v, indent + 1).lstrip()}' for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        return pad + "[\n" + ",\n".join(dumps_compact(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return pad + json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, help="llama.cpp build tree with bin/dump_logits")
    ap.add_argument("--llama-src", default="", help="llama.cpp source tree (for its commit)")
    ap.add_argument("--models", required=True, help="folder with the two bundled GGUF files")
    ap.add_argument("--docs", required=True, help="datasets/documents")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", type=int, default=THREADS)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    models, cases = {}, []
    for key, file in MODELS:
        path = os.path.join(args.models, file)
        if not os.path.exists(path):
            sys.exit(f"model file missing: {path} (scripts/setup.sh fetches it)")
        deq = os.path.join(args.work, file.replace(".gguf", ".llama-f32.gguf"))
        if not os.path.exists(deq):
            run([f"{args.llama_build}/bin/llama-quantize", "--allow-requantize", path, deq, "F32", "2"])
        models[key] = {
            "native": {"file": file, "sha256": sha256_file(path), "bytes": os.path.getsize(path)},
            "f32": {"file": os.path.basename(deq), "sha256": sha256_file(deq), "bytes": os.path.getsize(deq),
                    "made_by": f"llama-quantize --allow-requantize {file} {os.path.basename(deq)} F32 2"},
        }
        for weights, model in (("native", path), ("f32", deq)):
            for name, source, text in prompts_for(key, args.docs):
                cases.append(do_case(args, key, weights, model, name, source, text))

    doc = {
        "models": models,
        "llama_cpp": llama_version(args.llama_src) if args.llama_src else {},
        "cpu": cpu_name(),
        "threads": args.threads,
        "command": (f"dump_logits -m MODEL --ids-file PROMPT_IDS --gen {N_GEN} -t {args.threads} "
                    "--cache-type-k TYPE --cache-type-v TYPE --flash-attn off|auto --last-logits LAST.bin"),
        "runs": {k: {"cache_type": t, "flash_attn": fa} for k, (t, fa) in RUNS.items()},
        "notes": ("prompt_ids: llama-tokenize (BOS as the vocabulary says, special tokens parsed) of text. "
                  "The prompt is one batch, then one token per step; plain argmax (ties to the lowest id), no "
                  "early stop; n_ctx = 256 doubled until prompt + 32 fit. runs[NAME]: K and V cache of "
                  "cache_type_k/v, flash attention as flash_attn says (what auto resolved to): f32 with it off "
                  "(llama.cpp casts an f32 cache to f16 for flash attention), f16/bf16/q8_0 with llama.cpp's "
                  "default auto (on), f16_fa_off with it off. margin[k] = top1 - top2 logit at step k. "
                  "fixed_ids: the 256 largest last-prompt-position logits of runs.f32, largest first; "
                  "last_logits_fixed: each run's logits at those ids (float32, exact). llama_own_vs_f32: "
                  "computed from the FULL last-position logit vectors, each run against runs.f32."),
        "n_gen": N_GEN,
        "top_n": TOP_N,
        "types": TYPES,
        "cases": cases,
    }
    out_path = os.path.join(args.out, "kv_type_refs.json")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(dumps_compact(doc) + "\n")
    print(f"wrote {out_path} ({os.path.getsize(out_path)} bytes)", file=sys.stderr)
    for c in cases:
        own = " ".join(f"{k}: all {v['max_abs_all']:.4f} fixed {v['max_abs_fixed']:.4f} "
                       f"greedy@{v['first_greedy_difference']}" for k, v in c["llama_own_vs_f32"].items())
        print(f"{c['model']}/{c['weights']}/{c['prompt']} n={c['n_prompt']}: {own}", file=sys.stderr)


if __name__ == "__main__":
    main()
