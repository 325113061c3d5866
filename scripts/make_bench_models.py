#!/usr/bin/env python3
"""Random-weight llama GGUF models in the shapes of Llama-3.2-1B and Llama-3.1-8B, for benchmarks.

Usage (needs numpy and the `gguf` package, e.g. the /work/venv-ref venv, and llama.cpp's
llama-quantize):
    python3 scripts/make_bench_models.py --out /work/ext/bench-models \
        --quantize /work/ext/llama-build/bin/llama-quantize
writes <out>/llama-3.2-1b-shape-F16.gguf, <out>/llama-3.1-8b-4of32-shape-F16.gguf and their
Q4_K_M versions (llama-quantize ... Q4_K_M); --no-quantize stops after the F16 files.

These are bench inputs only (retune and memory numbers at 8K-32K tokens on the shapes users run),
not fixtures: their outputs mean nothing and no test compares against them. Deterministic: numpy's
PCG64 with --seed, one stream per tensor. The 8B shape has 4 of Llama-3.1-8B's 32 layers so that
it fits a 24 GB, 2-core machine; everything else (widths, heads, FFN, RoPE) is the real model's.
The tokenizer (vocabulary, merges, special tokens, chat template) is copied from the bundled
SmolLM2 GGUF (49152 tokens instead of Llama 3's 128256: the embedding and output rows are fewer,
the layer stack is the real shape).

Weights: normal(0, 0.02) as Llama's initializer_range, norms 1: hidden states stay finite and the
attention logits have a standard deviation near 1 (q.k over head_dim with unit-RMS inputs), so
attention is far from uniform and the votes rank something.
"""
import argparse
import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import gguf

REPO = Path(__file__).resolve().parent.parent
TOKENIZER_SOURCE = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# The published configs (config.json of meta-llama/Llama-3.2-1B and Llama-3.1-8B), with the layer
# count this machine can hold for the 8B one.
SHAPES = {
    "llama-3.2-1b-shape": dict(
        name="Llama-3.2-1B shape (random weights)", n_layer=16, n_embd=2048, n_head=32, n_head_kv=8,
        head_dim=64, n_ff=8192, rope_theta=500000.0, n_ctx=131072, rms_eps=1e-5, tied_output=True,
        rope_scaling=dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original=8192)),
    "llama-3.1-8b-4of32-shape": dict(
        name="Llama-3.1-8B shape, 4 of 32 layers (random weights)", n_layer=4, n_embd=4096, n_head=32,
        n_head_kv=8, head_dim=128, n_ff=14336, rope_theta=500000.0, n_ctx=131072, rms_eps=1e-5,
        tied_output=False,
        rope_scaling=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original=8192)),
}

INIT_STD = 0.02  # transformers' LlamaConfig.initializer_range


def llama3_rope_factors(head_dim, theta, rs):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: rope_freqs.weight."""
    freqs = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    low_wavelen = rs["original"] / rs["low_freq_factor"]
    high_wavelen = rs["original"] / rs["high_freq_factor"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(rs["factor"])
        else:
            smooth = (rs["original"] / wavelen - rs["low_freq_factor"]) / (rs["high_freq_factor"] - rs["low_freq_factor"])
            out.append(1.0 / ((1 - smooth) / rs["factor"] + smooth))
    return np.array(out, dtype=np.float32)


def field_value(reader, key):
    f = reader.fields[key]
    return f.contents()


def copy_tokenizer(w, src):
    """The SmolLM2 tokenizer as it is in its GGUF: model, pre, tokens, types, merges, ids, template."""
    r = gguf.GGUFReader(str(src))
    w.add_tokenizer_model(field_value(r, "tokenizer.ggml.model"))
    w.add_tokenizer_pre(field_value(r, "tokenizer.ggml.pre"))
    w.add_token_list(field_value(r, "tokenizer.ggml.tokens"))
    w.add_token_types(field_value(r, "tokenizer.ggml.token_type"))
    w.add_token_merges(field_value(r, "tokenizer.ggml.merges"))
    w.add_bos_token_id(field_value(r, "tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(field_value(r, "tokenizer.ggml.eos_token_id"))
    w.add_unk_token_id(field_value(r, "tokenizer.ggml.unknown_token_id"))
    w.add_pad_token_id(field_value(r, "tokenizer.ggml.padding_token_id"))
    w.add_add_bos_token(bool(field_value(r, "tokenizer.ggml.add_bos_token")))
    w.add_add_space_prefix(bool(field_value(r, "tokenizer.ggml.add_space_prefix")))
    w.add_chat_template(field_value(r, "tokenizer.chat_template"))
    return len(field_value(r, "tokenizer.ggml.tokens"))


def write_f16(path, key, s, seed):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(s["name"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(s["n_ctx"])
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_rope_dimension_count(s["head_dim"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    n_vocab = copy_tokenizer(w, TOKENIZER_SOURCE)
    w.add_vocab_size(n_vocab)

    # One generator per tensor, keyed by (seed, tensor index): regenerating one shape or changing
    # another never shifts the stream of a tensor.
    index = [0]

    def normal(*shape):  # torch order [rows, cols]; GGUFWriter flips to ggml's innermost-first
        rng = np.random.Generator(np.random.PCG64([seed, index[0]]))
        index[0] += 1
        return (rng.standard_normal(shape, dtype=np.float32) * INIT_STD).astype(np.float16)

    E, F, H, Hkv, D = s["n_embd"], s["n_ff"], s["n_head"], s["n_head_kv"], s["head_dim"]
    ones = lambda n: np.ones(n, dtype=np.float32)  # norms stay float32, as llama.cpp writes them
    w.add_tensor("token_embd.weight", normal(n_vocab, E))
    w.add_tensor("rope_freqs.weight", llama3_rope_factors(D, s["rope_theta"], s["rope_scaling"]))
    for l in range(s["n_layer"]):
        p = f"blk.{l}."
        w.add_tensor(p + "attn_norm.weight", ones(E))
        w.add_tensor(p + "attn_q.weight", normal(H * D, E))
        w.add_tensor(p + "attn_k.weight", normal(Hkv * D, E))
        w.add_tensor(p + "attn_v.weight", normal(Hkv * D, E))
        w.add_tensor(p + "attn_output.weight", normal(E, H * D))
        w.add_tensor(p + "ffn_norm.weight", ones(E))
        w.add_tensor(p + "ffn_gate.weight", normal(F, E))
        w.add_tensor(p + "ffn_up.weight", normal(F, E))
        w.add_tensor(p + "ffn_down.weight", normal(E, F))
    w.add_tensor("output_norm.weight", ones(E))
    if not s["tied_output"]:  # Llama-3.2-1B ties output to token_embd (no output.weight), 8B does not
        w.add_tensor("output.weight", normal(n_vocab, E))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/work/ext/bench-models", help="output folder (outside the repository)")
    ap.add_argument("--quantize", help="path of llama.cpp's llama-quantize (default: the path in /tmp/llama-quantize-ready)")
    ap.add_argument("--no-quantize", action="store_true", help="write the F16 files only")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--only", choices=sorted(SHAPES), help="one shape only")
    ap.add_argument("--keep-f16", action="store_true", help="keep the F16 files after quantizing")
    a = ap.parse_args()
    out = Path(a.out)
    if out.resolve().is_relative_to(REPO):
        sys.exit(f"--out {out}: inside the repository; bench models are not fixtures, write them elsewhere")
    out.mkdir(parents=True, exist_ok=True)
    quantize = a.quantize
    if not a.no_quantize and not quantize:
        ready = Path("/tmp/llama-quantize-ready")
        if not ready.exists():
            sys.exit("no --quantize given and /tmp/llama-quantize-ready does not exist; give llama-quantize's path")
        quantize = ready.read_text().strip()
    for key, s in SHAPES.items():
        if a.only and key != a.only:
            continue
        f16 = out / f"{key}-F16.gguf"
        print(f"writing {f16}", flush=True)
        write_f16(f16, key, s, a.seed)
        outputs = [f16]
        if not a.no_quantize:
            q = out / f"{key}-Q4_K_M.gguf"
            cmd = [quantize, str(f16), str(q), "Q4_K_M"]
            print(" ".join(cmd), flush=True)
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:  # llama-quantize logs every tensor: show only the end
                sys.exit(f"llama-quantize failed ({done.returncode}):\n" + "\n".join(done.stderr.splitlines()[-20:]))
            outputs.append(q)
            if not a.keep_f16:
                f16.unlink()
                outputs.remove(f16)
        for p in outputs:
            print(f"{p}  {os.path.getsize(p)} bytes  sha256 {sha256(p)}", flush=True)


if __name__ == "__main__":
    main()
