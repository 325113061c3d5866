#!/usr/bin/env bash
# Fuzzes every parser of untrusted files (GGUF reader, safetensors header, tokenizer.json,
# config.json, session JSON, chat templates) for a fixed number of executions each: builds the
# libFuzzer targets with clang + ASan + UBSan in a build folder of their own, seeds them from the
# test suite's file builders and tests/data, prints execs/s per target and fails on any crash,
# sanitizer report, leak or timeout (the reproducer is kept in BUILD/findings/).
# Usage: tests/fuzz/run.sh [--runs N] [--build-dir DIR] [--jobs N]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
runs=20000
build="$here/build-fuzz"
jobs="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift ;;
    --build-dir) build="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  echo "fuzz: clang is not installed; the fuzzers need it (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
fuzzer_lib="$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)"
if [ ! -f "$fuzzer_lib" ]; then
  echo "fuzz: clang's libFuzzer runtime is missing (Debian: apt-get install libclang-rt-14-dev)" >&2
  exit 1
fi

if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DSNAPKV_FUZZ=ON -DSNAPKV_BUILD_GUI=OFF -DSNAPKV_BUILD_TESTS=OFF \
    -DSNAPKV_CUDA=OFF >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
fi
cmake --build "$build" --target snapkv_fuzzers -j"$jobs"

seeds="$build/seeds"
rm -rf "$seeds" "$build/findings"
mkdir -p "$build/findings"
"$build/tests/fuzz/snapkv_fuzz_seeds" "$seeds"
cp "$here/tests/data/stories260K-Q4_0.gguf" "$seeds/gguf/"   # a real file; the tiny ones run faster
mkdir -p "$seeds/jinja"
cp "$here"/tests/data/chat_templates/templates/*.jinja "$seeds/jinja/"   # real chat templates

fail=0
summary=""
for pair in gguf:gguf safetensors:safetensors tokenizer_json:tokenizer config_json:config session_json:session \
  jinja:jinja; do
  target="${pair%%:*}"
  corpus="$build/corpus/$target"   # grows across runs; the seeds stay as they are
  mkdir -p "$corpus"
  log="$build/fuzz_$target.log"
  start=$(date +%s%N)
  set +e
  # -max_total_time only bounds a slow machine's CI time; fewer runs than asked are reported.
  "$build/tests/fuzz/fuzz_$target" -runs="$runs" -max_total_time=300 -timeout=20 -rss_limit_mb=2048 \
    -print_final_stats=1 \
    -artifact_prefix="$build/findings/$target-" "$corpus" "$seeds/${pair##*:}" >"$log" 2>&1
  rc=$?
  set -e
  ms=$(( ($(date +%s%N) - start) / 1000000 + 1 ))
  done_runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  line=$(printf '%-16s %8s runs %6d.%01d s %8d execs/s' "$target" "$done_runs" $((ms / 1000)) \
    $((ms % 1000 / 100)) $((done_runs * 1000 / ms)))
  if [ $rc -eq 0 ] && [ "$done_runs" -lt "$runs" ]; then line="$line  (time limit: $done_runs of $runs runs)"; fi
  if [ $rc -ne 0 ]; then
    line="$line  FAILED (exit $rc; see $log)"
    fail=1
    tail -n 40 "$log" >&2
  fi
  echo "$line"
  summary="$summary$line"$'\n'
done
echo
echo "fuzz summary ($runs runs each, ASan+UBSan):"
printf '%s' "$summary"
exit $fail
