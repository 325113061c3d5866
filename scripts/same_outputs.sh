#!/usr/bin/env bash
# Runs one snapkv binary over a fixed set of commands on both bundled models and writes every output,
# with timing fields removed, into a folder, so that two builds (before and after a refactoring)
# can be compared byte for byte:
#
#   scripts/same_outputs.sh OLD/snapkv /tmp/out-old
#   scripts/same_outputs.sh build/app/cli/snapkv /tmp/out-new
#   diff -r /tmp/out-old /tmp/out-new && echo identical
#
# What it runs, per model: analyze --json for every policy (query-aware, and query-agnostic for
# snapkv), compare --json for three policies (greedy), a needle grid (2 lengths x 2 depths x 3
# policies x 2 budgets), a RULER grid (2 tasks at 768 tokens, 1 sample), perplexity (plain and --compress). It
# does not judge anything: the diff does. Needs models/ filled (scripts/setup.sh) and ~10 minutes
# on 2 cores.
set -euo pipefail

BIN=$(realpath "$1")
OUT=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p "$OUT"

DOC=$(mktemp)
trap 'rm -f "$DOC"' EXIT
head -c 3000 datasets/sample_document.md >"$DOC"
QUESTION=$(cat datasets/sample_question.txt)
DATE=2026-01-01

# Keys that measure time or the machine, dropped before the diff (recursively).
normalize() {
    python3 - "$1" <<'EOF'
import json, re, sys
path = sys.argv[1]
drop = re.compile(r"(_ms|_s|tok_s|ms_per_token|seconds|elapsed|wall|timestamp|started|finished|host|hostname|threads|cpu_path|blas|when)$")
def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items() if not drop.search(k)}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x
text = open(path).read()
try:
    docs = [json.loads(text)]
    jsonl = False
except json.JSONDecodeError:
    docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    jsonl = True
with open(path, "w") as f:
    for d in docs:
        f.write(json.dumps(clean(d), sort_keys=True, indent=None if jsonl else 1) + "\n")
EOF
}

for MODEL in models/SmolLM2-135M-Instruct.Q4_1.gguf models/gemma-3-270m-q4_k_m.gguf; do
    tag=$(basename "$MODEL" .gguf)
    for policy in snapkv streaming h2o random pyramid adakv tova knorm keydiff expected_attention; do
        f="$OUT/$tag.analyze.$policy.json"
        "$BIN" analyze -m "$MODEL" --doc "$DOC" --question "$QUESTION" --budget 96 --policy "$policy" --json "$f" 2>/dev/null
        normalize "$f"
    done
    f="$OUT/$tag.analyze.snapkv-agnostic.json"
    "$BIN" analyze -m "$MODEL" --doc "$DOC" --question "$QUESTION" --budget 96 --query-agnostic --json "$f" 2>/dev/null
    normalize "$f"
    for policy in snapkv h2o expected_attention; do
        f="$OUT/$tag.compare.$policy.json"
        "$BIN" compare -m "$MODEL" --doc "$DOC" --question "$QUESTION" --budget 96 --policy "$policy" --greedy -n 12 \
            --json "$f" 2>/dev/null
        normalize "$f"
    done
    f="$OUT/$tag.needle.jsonl"
    rm -f "$f"
    "$BIN" needle -m "$MODEL" --lengths 256,384 --depths 0,50 --policies snapkv,h2o,expected_attention --budgets 64,128 \
        -n 6 --kl-steps 6 --chat-date "$DATE" -q -o "$f" 2>/dev/null
    normalize "$f"
    f="$OUT/$tag.ruler.jsonl"
    rm -f "$f"
    "$BIN" ruler -m "$MODEL" --tasks niah_single_1,vt --lengths 768 --samples 1 --policies snapkv,h2o --ratios 0.5 \
        --kl-steps 6 --chat-date "$DATE" -q -o "$f" 2>/dev/null
    normalize "$f"
    "$BIN" perplexity -m "$MODEL" -f "$DOC" --ctx 128 --json >"$OUT/$tag.ppl.json" 2>/dev/null
    normalize "$OUT/$tag.ppl.json"
    "$BIN" perplexity -m "$MODEL" -f "$DOC" --ctx 256 --compress --budget 64 --json >"$OUT/$tag.ppl-compress.json" 2>/dev/null
    normalize "$OUT/$tag.ppl-compress.json"
done
echo "outputs in $OUT"
