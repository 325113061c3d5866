#!/usr/bin/env bash
# Peak resident memory of `snapkv analyze` and `snapkv compare` with each KV cache type, against
# what the run must hold: the weights (the GGUF file, mapped) and the full KV cache (kv_bytes of
# analyze's JSON). One document of about N tokens (the bundled documents concatenated, 4.1 bytes a
# token); compare generates 16 tokens. Peak RSS from /usr/bin/time (GNU time, %M).
#
# Usage: scripts/bench_kv_memory.sh MODEL.gguf [TOKENS] [TYPES]
#   e.g. scripts/bench_kv_memory.sh /work/ext/bench-models/llama-3.2-1b-shape-Q4_K_M.gguf 4096 f32,f16,q8_0
# Environment: SNAPKV (default build/app/cli/snapkv), NICE (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:?usage: $0 MODEL.gguf [TOKENS] [TYPES]}"
n="${2:-4096}"
types="${3:-f32,f16,bf16,q8_0}"
bin="${SNAPKV:-build/app/cli/snapkv}"
[[ -f "$model" ]] || { echo "model '$model' does not exist" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time: apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat datasets/sample_document.md datasets/documents/*.md >"$tmp/pool.md"
bytes=$((n * 41 / 10))
: >"$tmp/doc.md"
while [ "$(wc -c <"$tmp/doc.md")" -lt "$bytes" ]; do cat "$tmp/pool.md" >>"$tmp/doc.md"; done
head -c "$bytes" "$tmp/doc.md" >"$tmp/doc_n.md"

mb() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1e6 }'; }
weights=$(stat -c %s "$model")
echo "$(basename "$model") ~$n tokens; weights (file) $(mb "$weights") MB; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
printf '%-6s %7s %11s %14s %14s %16s %16s\n' type tokens "KV full MB" "analyze RSS MB" "compare RSS MB" "analyze - w - KV" "compare - w - KV"
IFS=',' read -r -a list <<<"$types"
for t in "${list[@]}"; do
    /usr/bin/time -f "%M" -o "$tmp/a.time" nice -n "${NICE:-10}" "$bin" analyze -m "$model" --doc "$tmp/doc_n.md" \
        --question "What is the document about?" --cache-type "$t" --json "$tmp/a.json" >/dev/null 2>"$tmp/a.err" ||
        { echo "$t: analyze failed: $(tail -1 "$tmp/a.err")"; continue; }
    /usr/bin/time -f "%M" -o "$tmp/c.time" nice -n "${NICE:-10}" "$bin" compare -m "$model" --doc "$tmp/doc_n.md" \
        --question "What is the document about?" --cache-type "$t" --max-tokens 16 --json "$tmp/c.json" \
        >/dev/null 2>"$tmp/c.err" || { echo "$t: compare failed: $(tail -1 "$tmp/c.err")"; continue; }
    read -r tokens kv < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        for v in o.values():
            r = find(v, k)
            if r is not None: return r
    return None
kv = find(j, "kv_bytes")
full = kv.get("full") if isinstance(kv, dict) else kv
print(find(j, "n_tokens"), full)' "$tmp/a.json")
    a=$(( $(tail -1 "$tmp/a.time") * 1024 ))
    c=$(( $(tail -1 "$tmp/c.time") * 1024 ))
    printf '%-6s %7s %11s %14s %14s %16s %16s\n' "$t" "$tokens" "$(mb "$kv")" "$(mb "$a")" "$(mb "$c")" \
        "$(mb $((a - weights - kv)))" "$(mb $((c - weights - kv)))"
done
