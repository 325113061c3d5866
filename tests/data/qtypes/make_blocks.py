#!/usr/bin/env python3
"""Writes blocks/<TYPE>.bin: random quantized blocks and gguf-py's dequantization of them, one
file per weight type (Q5_0 Q5_1 Q2_K Q3_K IQ4_NL IQ4_XS). Block bytes are random (numpy, fixed
seed) except the f16 scale fields, which are finite halves of moderate magnitude, so every float
is finite. The reference is gguf-py's `gguf.quants.dequantize`, not llama.cpp (see README for how
the two compare).

File layout (all little-endian):
  offset 0   char[4]  magic "QBLK"
  offset 4   u32      ggml type id (Q5_0=6, Q5_1=7, Q2_K=10, Q3_K=11, IQ4_NL=20, IQ4_XS=23)
  offset 8   u32      n_blocks
  offset 12  u32      block_bytes  (bytes per block)
  offset 16  u32      block_values (weights per block)
  offset 20  u8[n_blocks * block_bytes]     the blocks, back to back
  then       f32[n_blocks * block_values]   dequantized values, block by block

usage: make_blocks.py --out-dir blocks
"""

import argparse
import os
import struct

import numpy as np
import gguf
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as QT

SEED = 7026
# Byte offsets of the f16 scale fields inside one block (ggml-common.h block_* structs).
F16_FIELDS = {
    "Q5_0": [0],           # d, qh[4], qs[16]
    "Q5_1": [0, 2],        # d, m, qh[4], qs[16]
    "Q2_K": [80, 82],      # scales[16], qs[64], d, dmin
    "Q3_K": [108],         # hmask[32], qs[64], scales[12], d
    "IQ4_NL": [0],         # d, qs[16]
    "IQ4_XS": [0],         # d, scales_h (u16), scales_l[4], qs[128]
}
TYPES = list(F16_FIELDS)


def moderate_half(rng: np.random.Generator) -> np.float16:
    """A finite, normal f16 with |x| in [2^-10, 2] and a random sign."""
    mag = 2.0 ** rng.uniform(-10.0, 1.0)
    sign = -1.0 if rng.integers(0, 2) else 1.0
    return np.float16(sign * mag)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rng = np.random.default_rng(SEED)

    for name in TYPES:
        qt = QT[name]
        block_values, block_bytes = GGML_QUANT_SIZES[qt]
        n_blocks = 64 if block_values == 32 else 8
        raw = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
        for b in range(n_blocks):
            for off in F16_FIELDS[name]:
                raw[b, off:off + 2] = np.frombuffer(moderate_half(rng).tobytes(), dtype=np.uint8)
        deq = gguf.quants.dequantize(raw.reshape(-1), qt).astype(np.float32).reshape(-1)
        assert deq.size == n_blocks * block_values
        if not np.all(np.isfinite(deq)):
            raise SystemExit(f"{name}: non-finite dequantized value")
        path = os.path.join(args.out_dir, f"{name}.bin")
        with open(path, "wb") as f:
            f.write(b"QBLK")
            f.write(struct.pack("<4I", int(qt), n_blocks, block_bytes, block_values))
            f.write(raw.tobytes())
            f.write(deq.astype("<f4").tobytes())
        print(f"{path}: {n_blocks} blocks x {block_bytes} B, max|x| {np.abs(deq).max():.6g}")


if __name__ == "__main__":
    main()
