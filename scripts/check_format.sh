#!/usr/bin/env bash
# Format check: every tracked C++/CUDA file (git ls-files *.cpp *.h *.cu *.cuh *.c) against
# .clang-format with clang-format 14 (--dry-run --Werror): prints each file and line that would
# change and exits 1 if any would. Changes nothing; `--fix` formats the files in place instead.
# .ci/run runs it before building.
set -euo pipefail
cd "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cf="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}"
if [ -z "$cf" ]; then
  echo "check_format: clang-format 14 not found (apt-get install clang-format-14, or set CLANG_FORMAT)" >&2
  exit 2
fi
case "$("$cf" --version)" in
  *"version 14."*) ;;
  *) echo "check_format: $cf is not clang-format 14 ($("$cf" --version)); other versions format differently" >&2 ;;
esac
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.cuh' '*.c')
if [ "${1:-}" = "--fix" ]; then
  "$cf" -i --style=file "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
if "$cf" --dry-run --Werror --style=file "${files[@]}"; then
  echo "check_format: ${#files[@]} files follow .clang-format"
else
  echo "check_format: files above differ from .clang-format (scripts/check_format.sh --fix formats them)" >&2
  exit 1
fi
