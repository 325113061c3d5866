#!/usr/bin/env bash
# tests/gpu/check.sh OUTDIR [--smollm2 FILE] [--stories FILE] [--deps DIR] [--jobs N]
#
# The GPU round (CUDA prefill and generation, the fused kernels, GPU benchmarks), from a clean
# tree, on a machine with an NVIDIA GPU, the CUDA toolkit
# (nvcc) and a Python `torch` with CUDA, without Qt and without network: configure core + CLI +
# kernels + GPU tests against that torch's LibTorch (SNAPKV_CUDA=ON, no GUI), build, run test_gpu
# (kernels vs the CPU references), the kernel benchmark (fused vs LibTorch ops, L = 4K..128K,
# W = 32/64/128) and `snapkv bench --device cuda` on SmolLM2 and stories260K. Then the CPU kernel
# paths on this machine's CPU (GPU hosts often have AVX-512, which the 2-core development machines
# lack): test_quant on every path it supports, the model-free llama.cpp / transformers reference
# tests of test_model on each x86 path, bench_qkernels and bench_attention. Writes to OUTDIR:
#   check.log          everything, step by step, with timings
#   results.json       environment, each step's status and seconds, test counts, benchmark rows
#   kernel_bench*.json the kernel benchmark's own rows (float32 and bfloat16 K/V)
#   cache_types.json   KV cache types f32/f16/bf16/q8_0 on CUDA against the CPU (compare_devices.py)
# Designed for under 8 minutes with 16 cores (each step has its own time limit). Installs nothing:
# when build dependencies are missing it lists them and exits 2. Catch2 v2, CLI11, nlohmann-json
# and PCRE2 are often absent from GPU images; `tests/gpu/fetch_deps.sh DIR` (on any Debian/Ubuntu
# machine with apt) unpacks them into DIR, and `--deps DIR` here uses them.
# Models: SmolLM2-135M-Instruct.Q4_1.gguf from --smollm2, $SNAPKV_SMOLLM2, models/ in the tree, or
# next to the tree; stories260K from --stories or tests/data/stories260K.gguf. A missing SmolLM2
# is reported as such in results.json (its steps say "skipped: ..."), never as a pass.
# Exit status: 0 when every step that ran passed, 1 when a step failed, 2 when it could not start.
set -uo pipefail

usage() { sed -n '2,3p' "$0" | sed 's/^# //'; exit 2; }
[[ $# -ge 1 ]] || usage
OUT=$1
shift
SMOLLM2=${SNAPKV_SMOLLM2:-}
STORIES=
DEPS=
JOBS=$(nproc 2>/dev/null || echo 4)
while [[ $# -gt 0 ]]; do
    case $1 in
    --smollm2) SMOLLM2=$2; shift 2 ;;
    --stories) STORIES=$2; shift 2 ;;
    --deps) DEPS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) usage ;;
    esac
done

SRC=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${SNAPKV_GPU_BUILD:-$SRC/build-gpu}
LOG=$OUT/check.log
STEPS=$BUILD/check-steps.tsv   # step <TAB> status <TAB> seconds <TAB> note
: >"$LOG"
T0=$(date +%s)

log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
record() { mkdir -p "$BUILD"; printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$STEPS"; }

# run STEP LIMIT_S CMD...: runs CMD with a time limit, output into the log, records the result.
run() {
    local step=$1 limit=$2
    shift 2
    log "== $step (limit ${limit}s): $*"
    local t rc dt status=passed
    t=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
    rc=$?
    dt=$(($(date +%s) - t))
    [[ $rc -eq 0 ]] || status=failed
    [[ $rc -eq 124 || $rc -eq 137 ]] && status=timeout
    record "$step" "$status" "$dt" "exit $rc"
    log "== $step: $status (exit $rc, ${dt}s)"
    return $rc
}

finish() {
    local code=$1
    log "total $(($(date +%s) - T0))s"
    python3 - "$STEPS" "$OUT" "$SRC" "$code" <<'PY' || echo '{"status": "results.json could not be written"}' >"$OUT/results.json"
import json, os, re, subprocess, sys
steps_file, out, src, code = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"
steps = []
if os.path.exists(steps_file):
    for line in open(steps_file):
        name, status, secs, note = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
        steps.append({"step": name, "status": status, "seconds": int(secs or 0), "note": note})
log = open(os.path.join(out, "check.log"), errors="replace").read()
res = {
    "status": "passed" if code == 0 else ("failed" if code == 1 else "not started"),
    "commit": sh(f"git -C {src} rev-parse HEAD") + (" (dirty)" if sh(f"git -C {src} status --porcelain") else ""),
    "environment": {
        "gpu": sh("nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader"),
        "nvcc": sh("nvcc --version | tail -n 2 | head -n 1"),
        "torch": sh("python3 -c 'import torch;print(torch.__version__, \"cuda\", torch.version.cuda)'"),
        "cmake": sh("cmake --version | head -n 1"),
        "cpus": os.cpu_count(),
    },
    "steps": steps,
}
# Catch2 v2 console summaries of each test_gpu run, in order.
res["test_gpu"] = re.findall(r"^(?:All tests passed.*|test cases:.*|assertions:.*)$", log, re.M)
for name in ("kernel_bench.json", "kernel_bench_bf16.json", "cache_types.json"):
    p = os.path.join(out, name)
    if os.path.exists(p):
        try:
            res[name.replace(".json", "")] = json.load(open(p))
        except ValueError as e:
            res[name.replace(".json", "")] = f"unreadable: {e}"
# snapkv bench tables: lines of a name and three numbers (tokens, ms, tok/s) after each header.
cli = []
for block in re.split(r"^== ", log, flags=re.M):
    if not block.startswith("cli bench"):
        continue
    title = block.split(" (limit")[0]
    rows = []
    for line in block.splitlines():
        m = re.match(r"^(\S.*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if m and not line.startswith("["):
            rows.append({"test": m.group(1).strip(), "tokens": int(m.group(2)), "ms": float(m.group(3)),
                         "tok_s": float(m.group(4))})
    cli.append({"run": title, "rows": rows})
res["cli_bench"] = cli
json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=2)
PY
    log "wrote $OUT/results.json"
    exit "$code"
}

rm -f "$STEPS"
log "snapkv GPU check: source $SRC, build $BUILD, out $OUT, jobs $JOBS"

# ---- prerequisites -----------------------------------------------------------------------------
missing=()
for tool in cmake ninja nvcc python3 g++ timeout; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("command '$tool'")
done
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) ||
    missing+=("python3 module torch")
if [[ -n ${TORCH_PREFIX:-} ]] && ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    missing+=("a torch that sees a GPU (torch.cuda.is_available() is False: CPU-only torch or no GPU)")
fi
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >>"$LOG" 2>&1

PREFIXES="${TORCH_PREFIX:-}"
if [[ -n $DEPS ]]; then
    DEPS=$(cd "$DEPS" && pwd) || { log "--deps $DEPS is not a folder"; exit 2; }
    PREFIXES="$PREFIXES;$DEPS/usr"
    export PATH="$DEPS/usr/bin:$PATH"
    export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # Debian's .pc files say prefix=/usr: relocated copies point into DEPS.
    mkdir -p "$BUILD/pkgconfig"
    for pc in "$DEPS"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
        [[ -e $pc ]] && sed "s|^prefix=/usr\$|prefix=$DEPS/usr|" "$pc" >"$BUILD/pkgconfig/$(basename "$pc")"
    done
    export PKG_CONFIG_PATH="$BUILD/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
PKG_CONFIG=$(command -v pkg-config || command -v pkgconf || true)
[[ -n $PKG_CONFIG ]] || missing+=("command 'pkg-config' (or pkgconf)")
[[ -n $PKG_CONFIG ]] && ! "$PKG_CONFIG" --exists libpcre2-8 && missing+=("PCRE2 development files (pkg-config libpcre2-8)")
find_config() {   # a CMake package config under the system prefixes or DEPS
    local f
    for root in /usr /usr/local ${DEPS:+$DEPS/usr}; do
        f=$(find "$root/lib" "$root/share" "$root/lib64" -maxdepth 4 -name "$1" 2>/dev/null | head -n 1)
        [[ -n $f ]] && return 0
    done
    return 1
}
find_config Catch2Config.cmake || missing+=("Catch2 v2 (catch2/catch.hpp and Catch2Config.cmake)")
find_config CLI11Config.cmake || missing+=("CLI11 (CLI/CLI.hpp and CLI11Config.cmake)")
find_config nlohmann_jsonConfig.cmake || missing+=("nlohmann-json (nlohmann/json.hpp and nlohmann_jsonConfig.cmake)")

if [[ -z $STORIES ]]; then STORIES=$SRC/tests/data/stories260K.gguf; fi
if [[ -z $SMOLLM2 ]]; then
    for f in "$SRC/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$SRC/../SmolLM2-135M-Instruct.Q4_1.gguf" \
             "$SRC/../models/SmolLM2-135M-Instruct.Q4_1.gguf"; do
        [[ -f $f ]] && SMOLLM2=$f && break
    done
fi
[[ -f $STORIES ]] || missing+=("stories260K model file ($STORIES)")

if [[ ${#missing[@]} -gt 0 ]]; then
    log "cannot start, missing:"
    for m in "${missing[@]}"; do log "  - $m"; done
    log "build dependencies: run 'bash tests/gpu/fetch_deps.sh DIR' on a Debian/Ubuntu machine with apt, carry DIR, pass --deps DIR"
    record prerequisites failed 0 "missing: $(IFS=';'; echo "${missing[*]}")"
    finish 2
fi
record prerequisites passed 0 "torch cmake prefix $TORCH_PREFIX"
if [[ -f $SMOLLM2 ]]; then
    log "SmolLM2: $SMOLLM2"
else
    log "SmolLM2: NOT FOUND (pass --smollm2 FILE): its GPU test and benchmark are skipped and reported as skipped"
    SMOLLM2=
fi

# ---- configure and build ---------------------------------------------------------------------------
failed=0
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}   # LibTorch's own arch probe: quiet and quick
run configure 150 cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSNAPKV_BUILD_GUI=OFF -DSNAPKV_BUILD_TESTS=ON -DSNAPKV_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$PREFIXES" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    ${PKG_CONFIG:+-DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG"} || { failed=1; finish 1; }
if ! grep -q "core gets SNAPKV_HAVE_CUDA" "$LOG"; then
    log "configure did not enable the CUDA path (see 'kernels:' lines above)"
    record cuda-path failed 0 "SNAPKV_HAVE_CUDA is OFF"
    finish 1
fi
targets=(snapkv snapkv_kernel_bench test_quant test_model bench_qkernels bench_attention)
if ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q "^test_gpu:"; then
    targets+=(test_gpu)
else
    log "target test_gpu does not exist: tests/CMakeLists.txt must add tests/gpu (if(SNAPKV_HAVE_CUDA) add_subdirectory(gpu) endif())"
    record test_gpu-target failed 0 "tests/gpu not added by tests/CMakeLists.txt"
    failed=1
fi
run build 330 cmake --build "$BUILD" --target "${targets[@]}" -j "$JOBS" || finish 1

# ---- GPU tests -----------------------------------------------------------------------------------
if [[ -x $BUILD/tests/gpu/test_gpu ]]; then
    filter=()
    if [[ -n $SMOLLM2 ]]; then
        export SNAPKV_SMOLLM2=$SMOLLM2
    else
        filter=("~[smollm2]")
        record "test_gpu [smollm2]" skipped 0 "SmolLM2 model file not found"
    fi
    run test_gpu 240 "$BUILD/tests/gpu/test_gpu" --durations yes "${filter[@]}" || failed=1
fi

# ---- benchmarks ---------------------------------------------------------------------------------
run "kernel bench float32" 120 "$BUILD/tests/gpu/snapkv_kernel_bench" --json "$OUT/kernel_bench.json" || failed=1
run "kernel bench bfloat16" 90 "$BUILD/tests/gpu/snapkv_kernel_bench" --dtype bfloat16 --json "$OUT/kernel_bench_bf16.json" || failed=1
CLI=$BUILD/app/cli/snapkv
run "cli bench stories260K float32" 60 "$CLI" bench --model "$STORIES" --device cuda --lengths 128,512 --decode 32 || failed=1
run "cli bench stories260K f16 cache" 60 "$CLI" bench --model "$STORIES" --device cuda --cache-type f16 --lengths 128,512 --decode 32 || failed=1
# KV cache types on CUDA: analyze and compare of one prompt on the CPU and on CUDA for each type,
# then compare_devices.py (kept sets, greedy tokens, KL side by side; fails past float rounding).
CT=$BUILD/cache_types
mkdir -p "$CT"
story="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her \
friends. One day, she saw a big red ball under a tree. She ran to the ball and kicked it very hard. The ball \
flew over the fence and into the garden of an old man. Lily was sad because she wanted to play with the ball. \
She went to the old man and asked him nicely to give the ball back."
printf '%s %s %s' "$story" "$story" "$story" >"$CT/prompt.txt"
printf '%s' "$story" >"$CT/prompt_short.txt"
# stories260K (head_dim 8: f32, f16, bf16) and the qtypes test model (llama, head_dim 64, context
# 256: every type, q8_0 with llama.cpp's Hadamard rotation included).
TINY64=$SRC/tests/data/qtypes/tiny-Q5_0.gguf
labels=()
for spec in "stories:$STORIES:prompt.txt:f32 f16 bf16" "tiny64:$TINY64:prompt_short.txt:f32 f16 bf16 q8_0"; do
    IFS=: read -r tag model prompt types <<<"$spec"
    for t in $types; do
        labels+=("${tag}_$t")
        for dev in cpu cuda; do
            sel=(--window 16 --kernel 5 --pooling max --budget 48)
            run "cache type $t $tag $dev analyze" 60 "$CLI" analyze --model "$model" --device $dev --cache-type $t \
                --prompt-file "$CT/$prompt" "${sel[@]}" --json "$CT/analyze_${dev}_${tag}_$t.json" || failed=1
            run "cache type $t $tag $dev compare" 60 "$CLI" compare --model "$model" --device $dev --cache-type $t \
                --prompt-file "$CT/$prompt" "${sel[@]}" --max-tokens 48 --greedy \
                --json "$CT/compare_${dev}_${tag}_$t.json" || failed=1
        done
    done
done
# Compression while generating on CUDA (the selection re-run on the device's cache every interval).
for t in f32 f16; do
    labels+=("stories_decode_$t")
    for dev in cpu cuda; do
        sel=(--window 16 --kernel 5 --pooling max --budget 48 --decode-budget 40 --decode-interval 16)
        run "decoding compression $t $dev analyze" 60 "$CLI" analyze --model "$STORIES" --device $dev --cache-type $t \
            --prompt-file "$CT/prompt.txt" --window 16 --kernel 5 --pooling max --budget 48 \
            --json "$CT/analyze_${dev}_stories_decode_$t.json" || failed=1
        run "decoding compression $t $dev compare" 60 "$CLI" compare --model "$STORIES" --device $dev --cache-type $t \
            --prompt-file "$CT/prompt.txt" "${sel[@]}" --max-tokens 64 --greedy --no-stop \
            --json "$CT/compare_${dev}_stories_decode_$t.json" || failed=1
    done
done
run "cache types cpu vs cuda" 60 python3 "$SRC/tests/gpu/compare_devices.py" "$CT" "${labels[@]}" || failed=1
[[ -f $CT/cache_types.json ]] && cp "$CT/cache_types.json" "$OUT/cache_types.json"
# ---- CPU kernel paths on this CPU ----------------------------------------------------------------
log "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); AVX-512F: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)"
run "test_quant every CPU path" 180 "$BUILD/tests/test_quant" || failed=1
paths=(avx2)
grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && paths+=(avx512)
# Reference tests that need no bundled model (stories260K, the qtypes models, tiny transformers
# models): logits and tokens against llama.cpp and transformers, on each path.
ref_tests='[model][arch],[model][llamacpp],[model][golden],[model][quant],[model][kv],Models in Q5_0*'
for p in "${paths[@]}"; do
    run "test_model references on $p" 240 env SNAPKV_CPU_PATH=$p "$BUILD/tests/test_model" "$ref_tests" || failed=1
done
run "bench_qkernels" 240 "$BUILD/tests/bench_qkernels" Q8_0 Q4_0 Q4_1 Q5_0 Q4_K Q6_K F16 || failed=1
for p in "${paths[@]}"; do
    run "bench_attention $p 1 thread" 120 env SNAPKV_CPU_PATH=$p "$BUILD/tests/bench_attention" 1 512 2048 8192 || failed=1
    run "bench_attention $p all threads" 120 env SNAPKV_CPU_PATH=$p "$BUILD/tests/bench_attention" "$JOBS" 512 2048 8192 || failed=1
done
if [[ -n $SMOLLM2 ]]; then
    run "cli bench SmolLM2 f16 cache" 90 "$CLI" bench --model "$SMOLLM2" --device cuda --cache-type f16 --lengths 512,2048,8192 --decode 32 || failed=1
    run "cli bench SmolLM2 float32" 90 "$CLI" bench --model "$SMOLLM2" --device cuda --lengths 512,2048,8192 --decode 32 || failed=1
    run "cli bench SmolLM2 bfloat16" 90 "$CLI" bench --model "$SMOLLM2" --device cuda --dtype bfloat16 --lengths 512,2048,8192 --decode 32 || failed=1
else
    record "cli bench SmolLM2" skipped 0 "SmolLM2 model file not found"
fi
finish "$failed"
