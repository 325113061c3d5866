#!/usr/bin/env python3
"""tests/gpu/compare_devices.py DIR LABEL...: CPU and CUDA runs of one model and cache type side by side.

check.sh's "cache types" step writes, for each label (MODEL_TYPE: a model and a KV cache type),
DIR/analyze_{cpu,cuda}_LABEL.json (`snapkv analyze --json`) and DIR/compare_{cpu,cuda}_LABEL.json
(`snapkv compare --json`) of the same prompt. Prints, per label: kept sets equal per (layer, head) and their mean Jaccard overlap, the
largest vote difference, the greedy tokens of the full and the compressed run (first divergence),
and the KL of the compressed run against the full one on each device. Writes DIR/cache_types.json.
Exit 1 when a label's CUDA run differs from its CPU run by more than float rounding explains: mean
Jaccard under 0.95, or a greedy run differing within its first 8 tokens; 2 when a file is missing.
Standard library only (the GPU image's python3).
"""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {path}: {e}")
        sys.exit(2)


def first_divergence(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def kept_overlap(a, b):
    equal = total = 0
    jaccard = []
    max_vote = 0.0
    for la, lb in zip(a["layers"], b["layers"]):
        for ha, hb in zip(la["heads"], lb["heads"]):
            sa, sb = set(ha["kept"]), set(hb["kept"])
            total += 1
            equal += sa == sb
            union = sa | sb
            jaccard.append(len(sa & sb) / len(union) if union else 1.0)
            va, vb = ha.get("votes", []), hb.get("votes", [])
            if va and vb:
                scale = max(max(abs(v) for v in va), 1e-30)
                max_vote = max(max_vote, max(abs(x - y) for x, y in zip(va, vb)) / scale)
    return equal, total, sum(jaccard) / max(len(jaccard), 1), min(jaccard or [1.0]), max_vote


def main():
    if len(sys.argv) < 3:
        print(__doc__.splitlines()[0])
        return 2
    d, types = sys.argv[1], sys.argv[2:]
    rows, bad = [], []
    print(f"{'label':12} {'kept equal':>12} {'jaccard mean/min':>17} {'max vote diff':>13} "
          f"{'full ids div':>12} {'comp ids div':>12} {'KL cpu':>9} {'KL cuda':>9}")
    for t in types:
        a_cpu = load(os.path.join(d, f"analyze_cpu_{t}.json"))
        a_gpu = load(os.path.join(d, f"analyze_cuda_{t}.json"))
        c_cpu = load(os.path.join(d, f"compare_cpu_{t}.json"))
        c_gpu = load(os.path.join(d, f"compare_cuda_{t}.json"))
        equal, total, jmean, jmin, vdiff = kept_overlap(a_cpu, a_gpu)
        fdiv = first_divergence(c_cpu["full"]["ids"], c_gpu["full"]["ids"])
        cdiv = first_divergence(c_cpu["compressed"]["ids"], c_gpu["compressed"]["ids"])
        kl = [sum(s["kl"] for s in c["steps"]) / max(len(c["steps"]), 1) for c in (c_cpu, c_gpu)]
        # Compression while generating: the same events (step, sizes, evictions) and cache sizes.
        dc = [c.get("decode_compression", {}) for c in (c_cpu, c_gpu)]
        events = [[(e["step"], e["positions_before"], e["positions_after"], e["evicted"]) for e in d.get("events", [])]
                  for d in dc]
        caches = [[s.get("cache_tokens") for s in c["steps"]] for c in (c_cpu, c_gpu)]
        if events[0] or events[1]:
            print(f"{'':12} decoding compression: {len(events[0])} events on the CPU, {len(events[1])} on CUDA, "
                  f"{'the same' if events[0] == events[1] else 'DIFFERENT'}; cache per step "
                  f"{'the same' if caches[0] == caches[1] else 'DIFFERENT'}")
            if events[0] != events[1] or caches[0] != caches[1]:
                bad.append(f"{t}: decoding compression events or cache sizes differ between the CPU and CUDA")
        row = {"label": t, "decode_events_cpu": len(events[0]), "decode_events_cuda": len(events[1]),
               "decode_same": events[0] == events[1] and caches[0] == caches[1], "kept_equal": equal, "heads": total, "jaccard_mean": jmean, "jaccard_min": jmin,
               "max_vote_rel_diff": vdiff, "full_ids_first_divergence": fdiv,
               "compressed_ids_first_divergence": cdiv, "tokens": len(c_cpu["full"]["ids"]),
               "mean_kl_cpu": kl[0], "mean_kl_cuda": kl[1]}
        rows.append(row)
        print(f"{t:12} {equal:>5}/{total:<6} {jmean:>8.4f}/{jmin:<8.4f} {vdiff:>13.2e} "
              f"{str(fdiv):>12} {str(cdiv):>12} {kl[0]:>9.2e} {kl[1]:>9.2e}")
        if jmean < 0.95:
            bad.append(f"{t}: kept sets overlap {jmean:.3f} on average (under 0.95)")
        for name, div in (("full", fdiv), ("compressed", cdiv)):
            if div is not None and div < 8:
                bad.append(f"{t}: the {name} run's greedy tokens differ from the CPU's at token {div}")
    with open(os.path.join(d, "cache_types.json"), "w") as f:
        json.dump({"rows": rows, "problems": bad}, f, indent=2)
    for b in bad:
        print("PROBLEM:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
