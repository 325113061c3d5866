#!/usr/bin/env python3
"""Prefill speed of Hugging Face transformers + PyTorch on the same GGUF file snapkv reads.

transformers dequantizes the GGUF to float32 at load (gguf_file=...); the timed call is one forward
pass over an N-token prompt with the KV cache on (use_cache=True), under torch.inference_mode, with
the given attention implementation (sdpa by default) and torch.set_num_threads(THREADS). One warm-up
pass first. Prints one line per length: "LENGTH TOK_PER_S".

    python3 hf_prefill.py MODEL.gguf --lengths 512,2048 [--threads 2] [--attn sdpa]

Needs torch, transformers, accelerate and gguf (pip). Used by scripts/bench_prefill_peers.sh; never by tests.
"""
import argparse
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lengths", default="512,2048")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--attn", default="sdpa")
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM
    import transformers.utils.logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(a.threads)
    path = os.path.abspath(a.model)
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), dtype=torch.float32, attn_implementation=a.attn
    )
    model.eval()
    vocab = model.config.vocab_size
    # Ordinary token ids (speed does not depend on which): a fixed pseudo-random sequence.
    g = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        model(torch.randint(100, vocab - 100, (1, 64), generator=g), use_cache=True)  # warm-up
        for n in [int(x) for x in a.lengths.split(",")]:
            ids = torch.randint(100, vocab - 100, (1, n), generator=g)
            t0 = time.perf_counter()
            model(ids, use_cache=True)
            dt = time.perf_counter() - t0
            print(f"{n} {n / dt:.1f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
