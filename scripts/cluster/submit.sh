#!/usr/bin/env bash
# Submits a sharded evaluation to Slurm: an array of N tasks (one `--shard i/N` each), then a merge
# job that runs once all of them succeeded. Run from the source folder (the jobs find
# build/app/cli/snapkv there, or set SNAPKV to the binary).
#   scripts/cluster/submit.sh 8 runs/needle-smollm2 needle --model models/SmolLM2-135M-Instruct.Q4_1.gguf \
#       --lengths 1024,2048,4096 --policies snapkv,streaming --budgets 256,1024
# Extra sbatch options (partition, account) go in SBATCH_* environment variables, e.g. SBATCH_PARTITION.
set -euo pipefail
if (( $# < 3 )); then
  echo "usage: $0 N OUTDIR needle|sweep OPTIONS...   (without --shard and --out)" >&2
  exit 2
fi
n="$1" out="$2"
shift 2
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then echo "submit: N must be a positive whole number, got '$n'" >&2; exit 2; fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
array=$(SNAPKV_OUT="$out" sbatch --parsable --export=ALL --array="0-$((n - 1))" "$here/eval_array.sbatch" "$@")
array="${array%%;*}"
merge=$(SNAPKV_OUT="$out" sbatch --parsable --export=ALL --dependency="afterok:$array" "$here/merge.sbatch")
echo "array job $array ($n shards), merge job $merge -> $out/all.jsonl"
