#!/usr/bin/env bash
# Run the whole test suite through CTest, after making sure packages, the default model and the
# build are in place (scripts/setup.sh --no-start). GUI tests run offscreen.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/scripts/setup.sh" --no-start --fuzz-tools   # clang + libFuzzer for tests/fuzz
export QT_QPA_PLATFORM=offscreen
cd "$here/build"
ctest --output-on-failure -j2 "$@"
