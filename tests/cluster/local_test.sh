#!/usr/bin/env bash
# scripts/cluster/local.sh on this machine: a RULER grid on stories260K as 4 snapkv processes
# (GNU parallel) and the merge, against the same grid unsharded: the rows must be equal, timings
# aside. Fails, never passes, when GNU parallel is missing (scripts/test.sh installs it).
#   tests/cluster/local_test.sh --snapkv build/app/cli/snapkv
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
snapkv="$here/build/app/cli/snapkv"
while [ $# -gt 0 ]; do
  case "$1" in
    --snapkv) snapkv="$2"; shift ;;
    *) echo "local_test: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
command -v parallel >/dev/null || { echo "local_test: GNU parallel is missing (apt-get install parallel)" >&2; exit 1; }
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
grid=(ruler --model "$here/tests/data/stories260K.gguf" --tasks niah_single_1,niah_multikey_2,fwe --lengths 700 --samples 2
      --policies snapkv,streaming,tova --ratios 0.5 --query-agnostic)
SNAPKV_THREADS=1 "$snapkv" "${grid[@]}" --quiet --out "$T/whole.jsonl" >/dev/null
SNAPKV="$snapkv" bash "$here/scripts/cluster/local.sh" 4 "$T/sharded" "${grid[@]}" >/dev/null
for i in 0 1 2 3; do
  [ -s "$T/sharded/part-$i.jsonl" ] || { echo "local_test: shard $i wrote no rows" >&2; exit 1; }
done
# 3 tasks x 2 samples = 6 cells, x (full cache + 3 policies at one ratio) = 24 rows.
python3 "$here/tests/cluster/same_rows.py" "$T/whole.jsonl" "$T/sharded/all.jsonl" 24 local_test
