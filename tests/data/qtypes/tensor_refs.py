#!/usr/bin/env python3
"""Per-tensor reference data for one quantized fixture: checks that llama-quantize really wrote
every 2-D tensor of tiny-T.gguf as type T, records for every tensor of deq-T.gguf (llama.cpp's own
F32 dequantization) the sha256 of its float32 bytes and float64 sum / sum of squares / max |x|,
and compares gguf-py's `gguf.quants.dequantize` of tiny-T.gguf with it bit for bit.
It reads GGUF files only; it runs no model.

usage: tensor_refs.py --quant tiny-T.gguf --deq deq-T.gguf --type T --out T.tensors.json
       (--type any skips the type check, for mixed-type models such as Gemma 3 Q4_K_M)
"""

import argparse
import hashlib
import json
import sys

import numpy as np
import gguf


def tensors_by_name(path: str) -> dict:
    return {t.name: t for t in gguf.GGUFReader(path).tensors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quant", required=True)
    ap.add_argument("--deq", required=True)
    ap.add_argument("--type", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    want = None if args.type == "any" else gguf.GGMLQuantizationType[args.type]
    quant = tensors_by_name(args.quant)
    deq = tensors_by_name(args.deq)
    if list(quant) != list(deq):
        sys.exit(f"{args.quant} and {args.deq} list different tensors")

    rows = []
    wrong_type = []
    n_py_diff = 0
    for name, qt in quant.items():
        dt = deq[name]
        if dt.tensor_type != gguf.GGMLQuantizationType.F32:
            sys.exit(f"{args.deq}: tensor '{name}' is {dt.tensor_type.name}, expected F32")
        ne = [int(x) for x in qt.shape]  # GGUF order, innermost first
        if want is not None and len(ne) >= 2 and qt.tensor_type != want:
            wrong_type.append(f"{name}: {qt.tensor_type.name}")
        ref = np.ascontiguousarray(dt.data, dtype="<f4").reshape(-1)
        d64 = ref.astype(np.float64)
        py = gguf.quants.dequantize(np.asarray(qt.data), qt.tensor_type)
        py = np.ascontiguousarray(py, dtype="<f4").reshape(-1)
        if py.size != ref.size:
            sys.exit(f"{name}: gguf-py gives {py.size} values, llama.cpp {ref.size}")
        diff = py.view(np.uint32) != ref.view(np.uint32)
        n_diff = int(diff.sum())
        n_py_diff += n_diff
        row = {
            "name": name,
            "ne": ne,
            "quant_type": qt.tensor_type.name,
            "sha256_f32": hashlib.sha256(ref.tobytes()).hexdigest(),
            "sum": float(d64.sum()),
            "sum_sq": float((d64 * d64).sum()),
            "max_abs": float(np.abs(d64).max()),
            "gguf_py_values_differing": n_diff,
        }
        if n_diff:
            row["gguf_py_max_abs_diff"] = float(np.abs(py.astype(np.float64) - d64)[diff].max())
            row["gguf_py_first_diff_index"] = int(np.argmax(diff))
        rows.append(row)

    out = {
        "type": args.type,
        "every_2d_tensor_has_type": not wrong_type,
        "tensors_with_other_type": wrong_type,
        "gguf_py_equals_llamacpp_bitwise": n_py_diff == 0,
        "tensors": rows,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"{args.type}: wrong-type tensors {wrong_type or 'none'}; "
          f"gguf-py vs llama.cpp F32: {n_py_diff} values differ")


if __name__ == "__main__":
    main()
