#!/usr/bin/env python3
"""Reference kept sets of NVIDIA kvpress's score-based presses, for tests/snapkv/test_kvpress_reference.cpp.

Runs kvpress (SnapKVPress, TOVAPress, KnormPress, KeyDiffPress, ExpectedAttentionPress, each with
its defaults) on SmolLM2-135M-Instruct (models/SmolLM2-135M-Instruct.Q4_1.gguf, dequantized to
float32 by transformers) over the first characters of three bundled documents at two compression
ratios, and writes per layer and KV head the positions each press keeps: the indices of
scores.topk(n_kept), exactly the call ScorerPress.compress makes on the scores the press computed.
The token ids are written too, so the C++ test feeds the same ids. Needs the venv with torch,
transformers, gguf and kvpress (see /work/ext/venv); the tests and the apps never run Python.

Usage: scripts/kvpress_reference.py [--models models] [--out tests/data/kvpress/smollm2_presses.json]
"""
import argparse
import importlib.metadata
import json
import os
import pathlib

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from kvpress import (  # noqa: E402
    ExpectedAttentionPress,
    KeyDiffPress,
    KnormPress,
    SnapKVPress,
    TOVAPress,
)
from kvpress.utils import compute_n_kept  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Our policy names; each press with kvpress's defaults.
PRESSES = {
    "snapkv": lambda r: SnapKVPress(compression_ratio=r),
    "tova": lambda r: TOVAPress(compression_ratio=r),
    "knorm": lambda r: KnormPress(compression_ratio=r),
    "keydiff": lambda r: KeyDiffPress(compression_ratio=r),
    "expected_attention": lambda r: ExpectedAttentionPress(compression_ratio=r),
}
RATIOS = [0.25, 0.5]
DOCUMENTS = ["glacier.md", "orchard.md", "salt_road.md"]
CHARS = 2000  # ~450 tokens: several windows of 64, and fast on a CPU


def bitmask_hex(positions, n):
    """Kept positions as hex: character i holds positions 4i..4i+3, position 4i+j in bit j."""
    nibbles = [0] * ((n + 3) // 4)
    for p in positions:
        nibbles[p // 4] |= 1 << (p % 4)
    return "".join("0123456789abcdef"[v] for v in nibbles)


def write_json(out, path):
    """The reference file: indented JSON and a final newline, its folder made."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return path


def kept_sets(model, ids, press):
    """[layer][kv head] -> kept positions, recorded from the press's own scores."""
    recorded = {}
    score = press.score

    def recording_score(module, hidden_states, keys, values, attentions, kwargs):
        scores = score(module, hidden_states, keys, values, attentions, kwargs)  # [1, Hkv, L]
        n_kept = compute_n_kept(keys.shape[2], press.compression_ratio)
        indices = scores.topk(n_kept, dim=-1).indices  # ScorerPress.compress's call
        recorded[module.layer_idx] = [sorted(row.tolist()) for row in indices[0]]
        return scores

    press.score = recording_score  # the instance attribute shadows the method compress calls
    with torch.no_grad(), press(model):
        model(torch.tensor([ids]), past_key_values=DynamicCache(config=model.config), use_cache=True)
    return [recorded[layer] for layer in sorted(recorded)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(ROOT / "models"))
    ap.add_argument("--out", default=str(ROOT / "tests/data/kvpress/smollm2_presses.json"))
    args = ap.parse_args()
    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(args.models, gguf_file=MODEL_FILE, dtype=torch.float32)
    model.eval()
    tok = AutoTokenizer.from_pretrained(args.models, gguf_file=MODEL_FILE)

    documents, cases = [], []
    for d, name in enumerate(DOCUMENTS):
        text = (ROOT / "datasets/documents" / name).read_text(encoding="utf-8")[:CHARS]
        ids = tok(text).input_ids
        documents.append({"name": name, "chars": CHARS, "ids": ids})
        for press_name, make in PRESSES.items():
            for ratio in RATIOS:
                press = make(ratio)
                kept = kept_sets(model, ids, press)
                cases.append({
                    "document": d,
                    "press": press_name,
                    "press_class": type(press).__name__,
                    "ratio": ratio,
                    "n_tokens": len(ids),
                    "n_kept": compute_n_kept(len(ids), ratio),
                    "kept": [[bitmask_hex(h, len(ids)) for h in layer] for layer in kept],
                })
                print(f"{name}: {press_name} ratio {ratio}: {len(ids)} tokens, {len(kept)} layers")

    out = {
        "what": "kvpress kept sets per layer and KV head (hex bitmask: char i = positions 4i..4i+3, bit j = 4i+j)",
        "script": "scripts/kvpress_reference.py",
        "model": MODEL_FILE,
        "versions": {p: importlib.metadata.version(p) for p in ("kvpress", "transformers", "torch", "gguf")},
        "ratios": RATIOS,
        "documents": documents,
        "cases": cases,
    }
    path = write_json(out, args.out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
