#!/usr/bin/env python3
"""Writes tiny-F32.gguf: a random-weight, llama-architecture, all-F32 GGUF that make_all.sh then
quantizes with llama-quantize to each new weight type. It is a fixture generator only: the weights
are random (numpy, fixed seed) and the model is not meant to produce sensible text.

Every matrix has rows whose length is a multiple of 256, so the 256-wide k-quant and IQ4_XS
super-blocks are really used. The tokenizer keys are copied verbatim from stories260K.gguf.

usage: make_qtypes.py --vocab-from stories260K.gguf --out tiny-F32.gguf
"""

import argparse

import numpy as np
import gguf

SEED = 20261202
N_EMBD = 256
N_LAYER = 1
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = 64
N_FF = 512
N_CTX = 256
WEIGHT_STD = 0.08   # gives logits with a std of roughly 1 (see README)
EMBD_STD = 0.5
NORM_STD = 0.1      # norm weights are 1 + N(0, NORM_STD)


def copy_tokenizer(src_path: str, w: gguf.GGUFWriter) -> int:
    """Copies every tokenizer.ggml.* key with its exact value type. Returns n_vocab."""
    r = gguf.GGUFReader(src_path)
    n_vocab = 0
    for name, field in r.fields.items():
        if not name.startswith("tokenizer.ggml."):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == gguf.GGUFValueType.STRING:
                vals = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                vals = [field.parts[i][0].item() for i in field.data]
            # add_array infers the element type from the first value; keep the source's types
            # explicit instead, so float32 scores stay float32 and int32 types stay int32.
            w.add_key_value(name, vals, vtype, sub_type=sub)
            if name == "tokenizer.ggml.tokens":
                n_vocab = len(vals)
        elif vtype == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(field.parts[field.data[0]]).decode("utf-8"), vtype)
        else:
            w.add_key_value(name, field.parts[field.data[0]][0].item(), vtype)
    if n_vocab == 0:
        raise SystemExit(f"{src_path}: no tokenizer.ggml.tokens")
    return n_vocab


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab-from", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    rng = np.random.default_rng(SEED)
    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("snapkv-qtypes-tiny")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    n_vocab = copy_tokenizer(args.vocab_from, w)
    assert n_vocab % 256 == 0

    def mat(rows: int, cols: int, std: float) -> np.ndarray:
        # numpy shape [rows, cols] is GGUF ne [cols, rows]: each row has `cols` values.
        assert cols % 256 == 0, cols
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + rng.standard_normal(n) * NORM_STD).astype(np.float32)

    w.add_tensor("token_embd.weight", mat(n_vocab, N_EMBD, EMBD_STD))
    for il in range(N_LAYER):
        p = f"blk.{il}."
        w.add_tensor(p + "attn_norm.weight", norm(N_EMBD))
        w.add_tensor(p + "attn_q.weight", mat(N_HEAD * HEAD_DIM, N_EMBD, WEIGHT_STD))
        w.add_tensor(p + "attn_k.weight", mat(N_HEAD_KV * HEAD_DIM, N_EMBD, WEIGHT_STD))
        w.add_tensor(p + "attn_v.weight", mat(N_HEAD_KV * HEAD_DIM, N_EMBD, WEIGHT_STD))
        w.add_tensor(p + "attn_output.weight", mat(N_EMBD, N_HEAD * HEAD_DIM, WEIGHT_STD))
        w.add_tensor(p + "ffn_norm.weight", norm(N_EMBD))
        w.add_tensor(p + "ffn_gate.weight", mat(N_FF, N_EMBD, WEIGHT_STD))
        w.add_tensor(p + "ffn_up.weight", mat(N_FF, N_EMBD, WEIGHT_STD))
        w.add_tensor(p + "ffn_down.weight", mat(N_EMBD, N_FF, WEIGHT_STD))
    w.add_tensor("output_norm.weight", norm(N_EMBD))
    w.add_tensor("output.weight", mat(n_vocab, N_EMBD, WEIGHT_STD))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
