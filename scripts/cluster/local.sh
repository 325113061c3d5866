#!/usr/bin/env bash
# The same sharded run on one machine: N `snapkv` processes with GNU parallel, then the merge.
#   scripts/cluster/local.sh 4 runs/needle needle --model models/SmolLM2-135M-Instruct.Q4_1.gguf --lengths 1024,2048
# It is this one line (each process gets cores/N LibTorch threads):
#   SNAPKV_THREADS=$(( $(nproc) / 4 )) parallel -q -j 4 build/app/cli/snapkv needle --model M --shard {}/4 \
#     --out out/part-{}.jsonl ::: 0 1 2 3 && build/app/cli/snapkv merge --out out/all.jsonl out/part-*.jsonl
set -euo pipefail
if (( $# < 3 )); then
  echo "usage: $0 N OUTDIR needle|sweep|ruler OPTIONS...   (without --shard and --out)" >&2
  exit 2
fi
n="$1" out="$2"
shift 2
command -v parallel >/dev/null || { echo "local.sh needs GNU parallel (apt-get install parallel)" >&2; exit 1; }
# $SNAPKV, else the source tree's build, else the installed one (<prefix>/share/snapkv-studio/cluster
# -> <prefix>/bin), else snapkv on PATH.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/find_snapkv.sh"
[ -n "$snapkv" ] || { echo "local.sh: no snapkv binary found; set SNAPKV to it" >&2; exit 1; }
threads=$(( $(nproc) / n ))
export SNAPKV_THREADS="${SNAPKV_THREADS:-$(( threads > 0 ? threads : 1 ))}"
mkdir -p "$out"
parallel -q --halt now,fail=1 -j "$n" "$snapkv" "$@" --quiet --shard "{}/$n" --out "$out/part-{}.jsonl" ::: $(seq 0 $((n - 1)))
"$snapkv" merge --out "$out/all.jsonl" "$out"/part-*.jsonl
