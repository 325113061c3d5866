#!/bin/sh
# Builds dump_logits (libllama) and check_blocks (libggml-base) against an existing llama.cpp
# CMake build tree with shared libraries. It does not build llama.cpp itself (see ../README.md).
# Usage: LLAMA_SRC=/path/to/llama.cpp LLAMA_BUILD=/path/to/build tools/build_dump_logits.sh
# Writes $LLAMA_BUILD/bin/dump_logits and $LLAMA_BUILD/bin/check_blocks.
set -eu
: "${LLAMA_SRC:?set LLAMA_SRC to the llama.cpp source tree}"
: "${LLAMA_BUILD:?set LLAMA_BUILD to the llama.cpp build tree}"
here=$(cd "$(dirname "$0")" && pwd)
${CXX:-g++} -std=c++17 -O2 -Wall -Wextra \
    -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" \
    "$here/dump_logits.cpp" -o "$LLAMA_BUILD/bin/dump_logits" \
    -L"$LLAMA_BUILD/bin" -lllama -lggml -lggml-base \
    -Wl,-rpath,"$LLAMA_BUILD/bin"
echo "built $LLAMA_BUILD/bin/dump_logits"
${CC:-gcc} -std=c11 -O2 -Wall -Wextra -I"$LLAMA_SRC/ggml/include" \
    "$here/check_blocks.c" -o "$LLAMA_BUILD/bin/check_blocks" \
    -L"$LLAMA_BUILD/bin" -lggml-base -lm -Wl,-rpath,"$LLAMA_BUILD/bin"
echo "built $LLAMA_BUILD/bin/check_blocks"
