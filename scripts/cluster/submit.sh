#!/usr/bin/env bash
# Submits a sharded evaluation to Slurm: an array of N tasks (one `--shard i/N` each), then a merge
# job that runs once all of them succeeded. Resources per task are this script's own options
# (defaults fit a small node: 1 CPU, 2 GB, 2 hours), passed to sbatch on its command line, so they
# override the #SBATCH lines of eval_array.sbatch. Logs go to OUTDIR/logs/.
#   scripts/cluster/submit.sh --cpus 4 --mem 8G 8 runs/needle-smollm2 needle \
#       --model models/SmolLM2-135M-Instruct.Q4_1.gguf --lengths 1024,2048,4096 --budgets 256,1024
# The jobs run the snapkv binary found here, at submit time: $SNAPKV, else the source tree's
# build/app/cli/snapkv, else the installed one next to these scripts, else `snapkv` on PATH.
set -euo pipefail
usage() {
  cat <<'EOF'
usage: submit.sh [OPTIONS] N OUTDIR needle|sweep|ruler SNAPKV-OPTIONS...   (without --shard and --out)
  --cpus N          CPUs per array task (default 1); the task's snapkv uses that many threads
  --mem SIZE        memory per array task, sbatch's units (default 2G)
  --time T          time limit per array task, sbatch's format (default 02:00:00)
  --partition P     partition for the array and the merge job (default: the cluster's default)
  --account A       account for both jobs
  --qos Q           quality of service for both jobs
  --sbatch OPT      one more sbatch option for both jobs, e.g. --sbatch=--constraint=avx2 (repeatable)
  --merge-mem SIZE  memory of the merge job (default 1G)
  --dry-run         print the sbatch commands instead of running them
EOF
}
cpus=1 mem=2G time_limit=02:00:00 merge_mem=1G dry=0
common=()
while [ $# -gt 0 ]; do
  opt="$1" val=""
  case "$opt" in
    --*=*) val="${opt#*=}"; opt="${opt%%=*}" ;;
  esac
  case "$opt" in
    --cpus|--mem|--time|--partition|--account|--qos|--sbatch|--merge-mem)
      if [ -z "$val" ]; then
        [ $# -ge 2 ] || { echo "submit: $opt needs a value" >&2; exit 2; }
        val="$2"; shift
      fi ;;
  esac
  case "$opt" in
    --cpus) cpus="$val" ;;
    --mem) mem="$val" ;;
    --time) time_limit="$val" ;;
    --merge-mem) merge_mem="$val" ;;
    --partition) common+=(--partition="$val") ;;
    --account) common+=(--account="$val") ;;
    --qos) common+=(--qos="$val") ;;
    --sbatch) common+=("$val") ;;
    --dry-run) dry=1 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "submit: unknown option $opt" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
if (( $# < 3 )); then usage >&2; exit 2; fi
n="$1" out="$2"
shift 2
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then echo "submit: N must be a positive whole number, got '$n'" >&2; exit 2; fi
if ! [[ "$cpus" =~ ^[1-9][0-9]*$ ]]; then echo "submit: --cpus must be a positive whole number, got '$cpus'" >&2; exit 2; fi
case "$1" in needle|sweep|ruler) ;; *) echo "submit: the command must be needle, sweep or ruler, got '$1'" >&2; exit 2 ;; esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

. "$here/find_snapkv.sh"
[ -n "$snapkv" ] && [ -x "$snapkv" ] || { echo "submit: no snapkv binary found; set SNAPKV to it" >&2; exit 1; }
snapkv="$(cd "$(dirname "$snapkv")" && pwd)/$(basename "$snapkv")"

out="$(realpath -m "$out")"
[ "$dry" = 1 ] || mkdir -p "$out/logs"
export SNAPKV="$snapkv" SNAPKV_OUT="$out"
array_cmd=(sbatch --parsable --export=ALL --array="0-$((n - 1))" --cpus-per-task="$cpus" --mem="$mem"
           --time="$time_limit" --output="$out/logs/eval-%A_%a.log" "${common[@]}"
           "$here/eval_array.sbatch" "$@")
merge_cmd=(sbatch --parsable --export=ALL --cpus-per-task=1 --mem="$merge_mem" --time=00:20:00
           --output="$out/logs/merge-%j.log" "${common[@]}")
if [ "$dry" = 1 ]; then
  printf '%q ' "${array_cmd[@]}"; echo
  printf '%q ' "${merge_cmd[@]}" --dependency=afterok:ARRAY "$here/merge.sbatch"; echo
  exit 0
fi
array=$("${array_cmd[@]}")
array="${array%%;*}"
merge=$("${merge_cmd[@]}" --dependency="afterok:$array" "$here/merge.sbatch")
merge="${merge%%;*}"
echo "array job $array ($n shards, $cpus CPU, $mem each), merge job $merge -> $out/all.jsonl (logs in $out/logs)"
