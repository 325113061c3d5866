"""Checks that a merged sharded run has the rows of the unsharded one, timings aside.

    python3 tests/cluster/same_rows.py WHOLE.jsonl MERGED.jsonl EXPECTED_ROWS NAME

Exits non-zero naming the first sorted row that differs; prints one line when they agree.
"""
import json
import sys


def rows(path):
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            r.pop("timing", None)
            out.append(json.dumps(r, sort_keys=True))
    return sorted(out)


whole, merged, expected, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
a, b = rows(whole), rows(merged)
if len(a) != expected or a != b:
    diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    sys.exit(f"{name}: merged rows differ from the unsharded run: {len(b)} vs {len(a)} rows "
             f"(expected {expected}), first difference at sorted row {diff}")
print(f"{name}: {len(b)} merged rows equal the unsharded run (timings aside)")
