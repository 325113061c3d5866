#!/usr/bin/env bash
# Retune latency at long prompts: `snapkv bench --retune` on one model at each length (default
# 8192, 16384 and 32768 tokens; the prompt is README.md's text repeated), each run's full table
# kept in OUT_DIR, then one summary: per length the prefill, the slowest first call and the
# slowest median over the SnapKV retunes (kernel, pooling, budget, window, GQA mode) and over every
# step (the other policies included). Bench models: scripts/make_bench_models.py.
#
# Usage: scripts/bench_retune_long.sh MODEL.gguf [LENGTHS] [OUT_DIR]
#   e.g. scripts/bench_retune_long.sh /work/ext/bench-models/llama-3.1-8b-4of32-shape-Q4_K_M.gguf 8192,16384
# Environment: SNAPKV (the binary; default build/app/cli/snapkv), NICE (default 10).
# A 32K-token prefill of the 8B-shaped model takes many minutes on 2 cores: lengths run in order,
# and each table is written as soon as its run ends.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:?usage: $0 MODEL.gguf [LENGTHS] [OUT_DIR]}"
lengths="${2:-8192,16384,32768}"
out="${3:-$root/build/bench_retune_long}"
snapkv="${SNAPKV:-$root/build/app/cli/snapkv}"
[[ -f "$model" ]] || { echo "model '$model' does not exist" >&2; exit 2; }
[[ -x "$snapkv" ]] || { echo "snapkv binary '$snapkv' not found (build it or set SNAPKV)" >&2; exit 2; }
mkdir -p "$out"
name="$(basename "$model" .gguf)"

IFS=',' read -r -a list <<<"$lengths"
for n in "${list[@]}"; do
    table="$out/$name-$n.txt"
    echo "== $name at $n tokens -> $table" >&2
    nice -n "${NICE:-10}" "$snapkv" bench --retune -m "$model" --lengths "$n" \
        --prompt-file "$root/README.md" >"$table"
done

# Summary from the tables: rows are "step  first ms  select median ms  positions ms  kept".
printf '\n%s (%s)\n' "$name" "$(grep -m1 'CPU features' "$out/$name-${list[0]}.txt" | sed 's/  */ /g')"
printf '%7s %11s %11s %14s %15s %14s %15s\n' tokens "prefill s" "scorer s" "snapkv first" "snapkv median" "all first" "all median"
for n in "${list[@]}"; do
    awk -v n="$n" '
        /^prompt [0-9]+ tokens: prefill/ { prefill = $5 / 1000; scorer = $10 / 1000 }
        /^step / { table = 1; next }
        table && NF >= 5 && $0 !~ /skipped/ {
            # The step name may have spaces: the numbers are the last four fields before "kept".
            first = $(NF - 3); med = $(NF - 2)
            if ($0 ~ /\(not compressed\)/) { first = $(NF - 5); med = $(NF - 4) }
            policy = ($1 == "policy" && $2 != "snapkv")
            if (!policy) { if (first > sf) sf = first; if (med > sm) sm = med }
            if (first > af) af = first; if (med > am) am = med
        }
        END { printf "%7d %11.1f %11.1f %11.1f ms %12.1f ms %11.1f ms %12.1f ms\n", n, prefill, scorer, sf, sm, af, am }
    ' "$out/$name-$n.txt"
done
