#!/usr/bin/env bash
# Prefill speed of snapkv next to Hugging Face transformers + PyTorch (float32, sdpa) and llama.cpp
# on the same GGUF file, the same thread count, runs interleaved (snapkv, transformers, llama.cpp,
# then again) because a VM's speed drifts 10-20 % within minutes. Prints every run, then per length
# the median tokens per second of each program and snapkv's ratio to each.
#
#   scripts/bench_prefill_peers.sh MODEL.gguf [LENGTHS] [REPS] [THREADS]
#
# LENGTHS: comma separated (default 512,2048,8192); REPS: rounds (default 3); THREADS: default 2.
# PYTHON: a python3 with torch, transformers, accelerate and gguf (default: python3); LLAMA_BENCH: llama.cpp's
# llama-bench (built from llama.cpp's source; skipped when unset); SNAPKV_BIN overrides
# build/app/cli/snapkv. Each snapkv run prefills 64 tokens first (page faults, thread start-up),
# as the other two warm up.
set -euo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model=$1 lengths=${2:-512,2048,8192} reps=${3:-3} threads=${4:-2}
snapkv=${SNAPKV_BIN:-"$here/../build/app/cli/snapkv"}
python=${PYTHON:-python3}
[[ -x $snapkv ]] || { echo "bench_prefill_peers: $snapkv is not an executable" >&2; exit 2; }
[[ -f $model ]] || { echo "bench_prefill_peers: no model file $model" >&2; exit 2; }
if [[ -n ${LLAMA_BENCH:-} && ! -x ${LLAMA_BENCH} ]]; then
  echo "bench_prefill_peers: LLAMA_BENCH=$LLAMA_BENCH is not an executable" >&2
  exit 2
fi
results=$(mktemp)
trap 'rm -f "$results"' EXIT
IFS=, read -r -a lens <<< "$lengths"
for ((r = 1; r <= reps; ++r)); do
  for n in "${lens[@]}"; do
    ours=$(SNAPKV_THREADS=$threads OMP_NUM_THREADS=$threads "$snapkv" bench --model "$model" --lengths "64,$n" \
           --decode 0 2>&1 | awk -v n="$n" '$1 == "prefill" && $2 == n { print $NF }')
    hf=$(OMP_NUM_THREADS=$threads "$python" "$here/peers/hf_prefill.py" "$model" --lengths "$n" \
         --threads "$threads" 2>/dev/null | awk -v n="$n" '$1 == n { print $2 }')
    llama=""
    if [[ -n ${LLAMA_BENCH:-} ]]; then
      llama=$("$LLAMA_BENCH" -m "$model" -t "$threads" -p "$n" -n 0 -r 1 2>/dev/null |
              awk -F'|' -v t="pp$n" '$0 ~ t { split($(NF-1), a, " "); print a[1] }')
    fi
    printf 'round %d, %5d tokens: snapkv %8s   transformers %8s   llama.cpp %8s tok/s\n' "$r" "$n" \
      "${ours:--}" "${hf:--}" "${llama:--}"
    echo "$n ${ours:-nan} ${hf:-nan} ${llama:-nan}" >> "$results"
  done
done
echo
printf '%7s %10s %14s %11s %12s %12s\n' tokens snapkv transformers llama.cpp "vs hf" "vs llama"
for n in "${lens[@]}"; do
  awk -v n="$n" '
    function median(a, k,   i, j, t) {
      for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return k == 0 ? "nan" : (k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2)
    }
    $1 == n { if ($2 != "nan") o[++ko] = $2; if ($3 != "nan") h[++kh] = $3; if ($4 != "nan") l[++kl] = $4 }
    END {
      mo = median(o, ko); mh = median(h, kh); ml = median(l, kl)
      printf "%7d %10s %14s %11s %12s %12s\n", n, mo, mh, ml,
        (mo != "nan" && mh != "nan") ? sprintf("%.2fx", mo / mh) : "-",
        (mo != "nan" && ml != "nan") ? sprintf("%.2fx", mo / ml) : "-"
    }' "$results"
done
