#!/usr/bin/env bash
# Decode or prefill speed next to llama.cpp's on the same GGUF file: `snapkv bench` and `llama-bench`
# (which you build yourself from llama.cpp), run in turn REPS times with the same thread count,
# because a VM's speed can drift by 10-20 % within minutes. Prints each pair, its ratio and the means.
#
#   scripts/bench_llamacpp.sh LLAMA_BENCH MODEL.gguf DEPTH [REPS] [THREADS]
#
# DEPTH: tokens in the cache before the 128 timed decode steps (snapkv: --lengths DEPTH
# --decode 128; llama-bench: -p 0 -n 128 -d DEPTH). With MODE=prefill in the environment, DEPTH is
# the prompt length instead and the prefill is timed (snapkv: --lengths DEPTH --decode 0;
# llama-bench: -p DEPTH -n 0). SNAPKV_BIN overrides build/app/cli/snapkv (as in bench.sh);
# SNAPKV_WEIGHTS=native-q8 times snapkv with 8-bit inputs to decode's products (default: native);
# SNAPKV_CACHE_TYPE=f16 (or bf16, q8_0) its KV cache type (default f32; llama-bench's is f16).
set -euo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
llama=$1 model=$2 depth=$3 reps=${4:-5} threads=${5:-2}
snapkv=${SNAPKV_BIN:-"$(dirname "$0")/../build/app/cli/snapkv"}
weights=${SNAPKV_WEIGHTS:-native}
cache_type=${SNAPKV_CACHE_TYPE:-f32}
for f in "$llama" "$snapkv"; do
  [[ -x $f ]] || { echo "bench_llamacpp: $f is not an executable" >&2; exit 2; }
done
[[ -f $model ]] || { echo "bench_llamacpp: no model file $model" >&2; exit 2; }

mode=${MODE:-decode}
[[ $mode == decode || $mode == prefill ]] || { echo "bench_llamacpp: MODE is decode or prefill, not $mode" >&2; exit 2; }
ours_all=() theirs_all=()
for ((r = 1; r <= reps; ++r)); do
  if [[ $mode == decode ]]; then
    ours=$(SNAPKV_THREADS=$threads "$snapkv" bench --model "$model" --weights "$weights" --cache-type "$cache_type" --lengths "$depth" --decode 128 2>&1 |
           awk '$1 == "decode" { print $NF }')
    theirs=$("$llama" -m "$model" -t "$threads" -p 0 -n 128 -d "$depth" 2>/dev/null |
             awk -F'|' '/tg128/ { split($(NF-1), a, " "); print a[1] }')
  else
    ours=$(SNAPKV_THREADS=$threads "$snapkv" bench --model "$model" --weights "$weights" --cache-type "$cache_type" --lengths "$depth" --decode 0 2>&1 |
           awk '$1 == "prefill" { print $NF }')
    theirs=$("$llama" -m "$model" -t "$threads" -p "$depth" -n 0 -r 1 2>/dev/null |
             awk -F'|' -v t="pp$depth" '$0 ~ t { split($(NF-1), a, " "); print a[1] }')
  fi
  [[ -n $ours && -n $theirs ]] || { echo "bench_llamacpp: a run printed no $mode speed" >&2; exit 1; }
  printf 'pair %d: snapkv %8.1f tok/s   llama.cpp %8.1f tok/s   %.2fx\n' "$r" "$ours" "$theirs" \
    "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { print a / b }')"
  ours_all+=("$ours") theirs_all+=("$theirs")
done
awk -v o="${ours_all[*]}" -v t="${theirs_all[*]}" -v d="$depth" -v m="$mode" 'BEGIN {
  n = split(o, a, " "); split(t, b, " ");
  for (i = 1; i <= n; ++i) { sa += a[i]; sb += b[i] }
  what = m == "decode" ? "decode after " d " tokens" : "prefill of " d " tokens"
  printf "%s, mean of %d pairs: snapkv %.1f, llama.cpp %.1f tok/s (%.2fx)\n", what, n, sa / n, sb / n, sa / sb }'
