#!/usr/bin/env python3
"""Reference kept positions of NVIDIA kvpress's DecodingPress (decoding-time compression).

For tests of decoding-time compression (tests/data/reference/decoding_press/README.md says what
kvpress does and what the data holds). Loads SmolLM2-135M-Instruct (models/SmolLM2-135M-Instruct.Q4_1.gguf,
dequantized to float32 by transformers, SDPA attention), prefills the first CHARS characters of three
bundled documents without compression, then greedily decodes STEPS tokens, one forward pass per token,
with a kvpress DecodingPress(base_press, compression_interval=INTERVAL, target_size=T) hooked on every
layer, for T in TARGETS and each base press in PRESSES. For every compression event it records, per
layer and KV head, the original positions (prompt index, or prompt length + index of the fed
generated token) still in the cache after the event.

Original positions are tracked here, not by kvpress: one position map per layer ([KV heads, cache
slots]), a column appended per decoding step (every layer appends the fed token), and at an event
the map is gathered with the indices of scores.topk(n_kept) -- the very call ScorerPress.compress
makes on the scores the press computed (the press's score method is wrapped to see them). After
every step the script checks that each layer's cache length equals its map's width and, at an
event, that the cache's keys are exactly the pre-event keys gathered at those indices.

"snapkv" runs with the per-token RoPE fix of kvpress's main branch (SnapKV's window queries rotated
at their own positions; kvpress 0.5.5 rotates them all at the current token's position): see the
README. The script also runs kvpress 0.5.5's stock DecodingPress with SnapKV and writes how many
kept sets differ from the fixed run (stock_0_5_5_differs), not the sets themselves.

Needs torch, kvpress 0.5.5 and transformers < 5.3 (kvpress 0.5.5 reads cache_position from the
attention kwargs, which later transformers no longer pass); the tests and the apps never run Python.

Usage: scripts/decoding_press_reference.py [--models models]
           [--out tests/data/reference/decoding_press/smollm2_decoding_press.json]
"""
import argparse
import copy
import importlib.metadata
import json
import os
import pathlib

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from kvpress import DecodingPress, KeyDiffPress, KnormPress, SnapKVPress, TOVAPress  # noqa: E402
from kvpress.presses.base_press import is_prefilling  # noqa: E402
from kvpress.utils import compute_n_kept, extract_keys_and_values  # noqa: E402

# The prefill reference's encoding and file writer (scripts/ is on sys.path when run as a script).
from kvpress_reference import bitmask_hex, write_json  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DOCUMENTS = ["glacier.md", "orchard.md", "salt_road.md"]
CHARS = 2000  # the prefill reference's prompts (scripts/kvpress_reference.py): ~450 tokens
TARGETS = [64, 128]
INTERVAL = 16
STEPS = 48  # decoding forward passes: events after steps 16, 32 and 48
SNAPKV_WINDOW = 8  # must be < INTERVAL: SnapKVPress asserts buffered hidden states > window
SNAPKV_KERNEL = 5  # SnapKVPress's default
TIE_RTOL = 1e-4  # relative distance to the cut's score reported as a boundary tie (the prefill test's)


class BufferedRopeDecodingPress(DecodingPress):
    """DecodingPress that hands the scorer the RoPE embeddings of the buffered tokens.

    kvpress 0.5.5 buffers only the hidden states and passes the current token's
    position_embeddings, so a window scorer rotates every buffered query at the current position.
    kvpress's main branch buffers (hidden_states, cos, sin) per step and passes the concatenated
    cos/sin, with attentions=None; this subclass does the same and is otherwise 0.5.5's hook.
    """

    def forward_hook(self, module, input, kwargs, output):
        hidden_states = kwargs["hidden_states"]
        cache = kwargs["past_key_values"]
        q_len = hidden_states.shape[1]
        layer = module.layer_idx
        if is_prefilling(kwargs["cache_position"], q_len):
            return output
        cos, sin = kwargs["position_embeddings"]
        self.hidden_states_buffer[layer].append((hidden_states.detach().clone(), cos, sin))
        self.layer_step_counts[layer] += 1
        if self.layer_step_counts[layer] >= self.compression_interval or q_len >= self.target_size:
            keys, values = extract_keys_and_values(cache, layer)
            buffered = [torch.cat(parts, dim=1) for parts in zip(*self.hidden_states_buffer[layer])]
            buffered_kwargs = {**kwargs, "position_embeddings": (buffered[1], buffered[2])}
            keys, values = self.compress(module, buffered[0], keys, values, None, buffered_kwargs)
            cache.layers[layer].keys = keys
            cache.layers[layer].values = values
            self.layer_step_counts[layer] = 0
            self.hidden_states_buffer[layer] = []
        size = self.hidden_states_buffer_size
        self.hidden_states_buffer[layer] = self.hidden_states_buffer[layer][-size:] if size > 0 else []
        return output


# Our policy names -> (base press factory, its parameters as written, DecodingPress class).
PRESSES = {
    "knorm": (KnormPress, {}, DecodingPress),
    "keydiff": (KeyDiffPress, {}, DecodingPress),
    "tova": (TOVAPress, {}, DecodingPress),
    "snapkv": (SnapKVPress, {"window_size": SNAPKV_WINDOW, "kernel_size": SNAPKV_KERNEL}, BufferedRopeDecodingPress),
}


def run_case(model, prompt_len, prefill, base_press, decoding_cls, target):
    """Greedy decoding with the press; returns generated ids and the events with kept positions."""
    press = decoding_cls(base_press=base_press, compression_interval=INTERVAL, target_size=target)
    recorded = {}
    score = base_press.score

    def recording_score(module, hidden_states, keys, values, attentions, kwargs):
        scores = score(module, hidden_states, keys, values, attentions, kwargs)  # [1, Hkv, L]
        n_kept = compute_n_kept(keys.shape[2], base_press.compression_ratio)
        top = scores.topk(n_kept, dim=-1)  # ScorerPress.compress's call
        recorded[module.layer_idx] = {
            "indices": top.indices[0].clone(),
            "threshold": top.values[0, :, -1].clone(),
            "scores": scores[0].detach().clone(),
            "keys": keys.detach().clone(),
            "buffered": hidden_states.shape[1],
        }
        return scores

    base_press.score = recording_score  # the instance attribute shadows the method compress calls
    cache, logits = copy.deepcopy(prefill[0]), prefill[1]
    n_layers = len(cache.layers)
    n_kv = cache.layers[0].keys.shape[1]
    maps = [torch.arange(prompt_len).repeat(n_kv, 1) for _ in range(n_layers)]
    generated = [int(logits.argmax())]
    events = []
    with torch.no_grad(), press(model):
        for step in range(1, STEPS + 1):
            position = prompt_len + step - 1  # the fed token: generated[step - 1]
            maps = [torch.cat([m, torch.full((n_kv, 1), position)], dim=1) for m in maps]
            recorded.clear()
            out = model(
                torch.tensor([[generated[-1]]]),
                past_key_values=cache,
                position_ids=torch.tensor([[position]]),
                use_cache=True,
            )
            generated.append(int(out.logits[0, -1].argmax()))
            fires = step % INTERVAL == 0
            before = maps[0].shape[1]
            if recorded:
                assert fires and sorted(recorded) == list(range(n_layers)), (step, sorted(recorded))
            if fires:
                event = {"step": step, "fed_position": position, "positions_before": before,
                         "compressed": bool(recorded), "n_kept": before, "buffered_hidden_states": None,
                         "kept": None, "boundary_ties": []}
            for layer, rec in sorted(recorded.items()):
                idx = rec["indices"]
                gathered = rec["keys"][0].gather(1, idx.unsqueeze(-1).expand(-1, -1, rec["keys"].shape[-1]))
                assert torch.equal(cache.layers[layer].keys[0], gathered), (step, layer)
                for h in range(n_kv):
                    # Scores equal to the cut's score (the n_kept-th largest) up to TIE_RTOL: when some
                    # are kept and some dropped, which ones is float rounding or top-k's tie order.
                    thr = rec["threshold"][h]
                    band = (rec["scores"][h] - thr).abs() <= TIE_RTOL * thr.abs()
                    exact = rec["scores"][h] == thr
                    n_band_kept = int(band[idx[h]].sum())
                    if int(band.sum()) > n_band_kept:
                        event["boundary_ties"].append({
                            "layer": layer, "kv_head": h, "kept_of_tied": n_band_kept,
                            "tied_positions": sorted(maps[layer][h][band].tolist()),
                            "exactly_equal_positions": sorted(maps[layer][h][exact].tolist()),
                        })
                maps[layer] = maps[layer].gather(1, idx)
                event["n_kept"] = idx.shape[1]
                event["buffered_hidden_states"] = rec["buffered"]
            for layer in range(n_layers):
                assert cache.layers[layer].keys.shape[2] == maps[layer].shape[1], (step, layer)
            if fires:
                event["kept_sorted"] = [[sorted(row.tolist()) for row in m] for m in maps]
                events.append(event)
    base_press.score = score
    return generated, events


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(ROOT / "models"))
    ap.add_argument("--out", default=str(ROOT / "tests/data/reference/decoding_press/smollm2_decoding_press.json"))
    args = ap.parse_args()
    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(
        args.models, gguf_file=MODEL_FILE, dtype=torch.float32, attn_implementation="sdpa")
    model.eval()
    tok = AutoTokenizer.from_pretrained(args.models, gguf_file=MODEL_FILE)

    documents, cases = [], []
    for d, name in enumerate(DOCUMENTS):
        text = (ROOT / "datasets/documents" / name).read_text(encoding="utf-8")[:CHARS]
        ids = tok(text).input_ids
        documents.append({"name": name, "chars": CHARS, "ids": ids})
        with torch.no_grad():
            cache = DynamicCache(config=model.config)
            out = model(torch.tensor([ids]), past_key_values=cache, use_cache=True)
        prefill = (cache, out.logits[0, -1])
        n = len(ids) + STEPS  # positions 0 .. len(ids) + STEPS - 1
        for target in TARGETS:
            for press_name, (make, params, decoding_cls) in PRESSES.items():
                generated, events = run_case(model, len(ids), prefill, make(**params), decoding_cls, target)
                case = {
                    "document": d,
                    "press": press_name,
                    "press_class": make.__name__,
                    "press_params": params,
                    "decoding_press": decoding_cls.__name__,
                    "target_size": target,
                    "compression_interval": INTERVAL,
                    "prompt_len": len(ids),
                    "n_positions": n,
                    "generated": generated,
                    "events": [],
                }
                if press_name == "snapkv":  # how far kvpress 0.5.5's stock hook is from the fixed one
                    _, stock = run_case(model, len(ids), prefill, make(**params), DecodingPress, target)
                    case["stock_0_5_5_differs"] = sum(
                        a != b for e, s in zip(events, stock)
                        for la, lb in zip(e["kept_sorted"], s["kept_sorted"]) for a, b in zip(la, lb))
                for e in events:
                    kept = e.pop("kept_sorted")
                    e["kept"] = [[bitmask_hex(h, n) for h in layer] for layer in kept]
                    case["events"].append(e)
                cases.append(case)
                ties = sum(len(e["boundary_ties"]) for e in events)
                print(f"{name}: {press_name} target {target}: prompt {len(ids)}, events at "
                      f"{[e['step'] for e in events]}, sizes {[(e['positions_before'], e['n_kept']) for e in events]}, "
                      f"boundary ties {ties}" + (f", stock 0.5.5 differs in {case['stock_0_5_5_differs']} sets"
                                                 if "stock_0_5_5_differs" in case else ""), flush=True)

    out = {
        "what": "kvpress DecodingPress kept positions per compression event, layer and KV head "
                "(hex bitmask over positions 0..n_positions-1: char i = positions 4i..4i+3, bit j = 4i+j); "
                "see README.md in this folder",
        "script": "scripts/decoding_press_reference.py",
        "model": MODEL_FILE,
        "attn_implementation": "sdpa",
        "dtype": "float32",
        "versions": {"kvpress": importlib.metadata.version("kvpress"), "transformers": transformers.__version__,
                     "torch": torch.__version__, "gguf": importlib.metadata.version("gguf")},
        "settings": {
            "compression_interval": INTERVAL,
            "decode_steps": STEPS,
            "target_sizes": TARGETS,
            "hidden_states_buffer_size": 256,
            "tie_rtol": TIE_RTOL,
            "prompt": "first CHARS characters of the document, tokenized as tok(text).input_ids, prefilled "
                      "in one forward pass without compression",
            "generation": "generated[0] = argmax of the prefill's last logits; step k (1..decode_steps) feeds "
                          "generated[k-1] at position prompt_len + k - 1 and appends generated[k]",
        },
        "documents": documents,
        "cases": cases,
    }
    path = write_json(out, args.out)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
