#!/usr/bin/env python3
"""Markdown tables of a `snapkv ruler` results file, as the README shows them.

    scripts/ruler_summary.py RESULTS.jsonl [--ratio 0.5]

Table 1: mean score (0-100) over tasks, per policy and compression ratio (kvpress's leaderboard
axes), the full cache on its own row. Table 2: per task at one ratio. A task's score is its mean
over samples; the average over tasks weighs each task once, as RULER does. Cells without rows are
'-'. (`snapkv ruler` itself prints the time a run took.) Standard library only.
"""
import argparse
import json
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--ratio", type=float, default=0.5)
    a = ap.parse_args()
    rows = []
    with open(a.results) as f:
        for line in f:
            r = json.loads(line)
            if "score" in r and "ruler_task" in r:
                rows.append(r)
    if not rows:
        raise SystemExit(f"{a.results}: no RULER rows")
    tasks = rows[0]["settings"]["ruler"]["tasks"] if "ruler" in rows[0].get("settings", {}) else None
    if not tasks:
        tasks = sorted({r["ruler_task"] for r in rows})
    scores = defaultdict(list)          # (policy, ratio, task) -> [score x100]
    for r in rows:
        policy = r.get("policy", "full")
        ratio = None if policy == "full" else r.get("ratio")
        scores[(policy, ratio, r["ruler_task"])].append(100.0 * r["score"])
    policies, ratios = [], set()
    for (p, q, _) in scores:
        if p != "full" and p not in policies:
            policies.append(p)
        if q is not None:
            ratios.add(q)
    ratios = sorted(ratios)

    def task_mean(p, q, t):
        v = scores.get((p, q, t))
        return sum(v) / len(v) if v else None

    def avg(p, q):
        m = [task_mean(p, q, t) for t in tasks]
        return None if any(x is None for x in m) else sum(m) / len(m)

    fmt = lambda x: "-" if x is None else f"{x:.1f}"
    n_samples = max(len(v) for v in scores.values())
    print(f"Mean RULER score over {len(tasks)} tasks (0-100), {n_samples} samples per task:\n")
    print("| policy | " + " | ".join(f"ratio {q:g}" for q in ratios) + " |")
    print("|---|" + "---|" * len(ratios))
    print("| full cache | " + " | ".join(fmt(avg("full", None)) for _ in ratios) + " |")
    for p in policies:
        print(f"| {p} | " + " | ".join(fmt(avg(p, q)) for q in ratios) + " |")
    print(f"\nPer task at ratio {a.ratio:g}:\n")
    print("| task | full | " + " | ".join(policies) + " |")
    print("|---|---|" + "---|" * len(policies))
    for t in tasks:
        print(f"| {t} | {fmt(task_mean('full', None, t))} | " +
              " | ".join(fmt(task_mean(p, a.ratio, t)) for p in policies) + " |")
    print(f"\n{len({r['cell'] for r in rows})} cells, {len(rows)} rows")

if __name__ == "__main__":
    main()
