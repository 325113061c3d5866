#!/usr/bin/env bash
# Run the whole test suite through CTest, after making sure packages, the default model and the
# build are in place (scripts/setup.sh --no-start). GUI tests run offscreen.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# clang + libFuzzer for tests/fuzz; Slurm, munge, desktop-file-utils, appstream for -L slurm / install
bash "$here/scripts/setup.sh" --no-start --fuzz-tools --test-tools
export QT_QPA_PLATFORM=offscreen
cd "$here/build"
ctest --output-on-failure -j2 "$@"
