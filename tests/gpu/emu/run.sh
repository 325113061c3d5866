#!/usr/bin/env bash
# tests/gpu/emu/run.sh BUILD [test_gpu arguments...]: test_gpu with the kernels run by a CPU
# emulation of CUDA threads (emu_cuda.h), for checking kernel logic where no GPU is lent. BUILD
# is a build tree configured with -DSNAPKV_CUDA=ON (a CPU-only LibTorch will do) in which
# test_gpu has been built; its link command is reused with the emulated kernels and runtime in
# place of libsnapkv_kernels.a and cudart. Slow (minutes): no substitute for tests/gpu/check.sh,
# and not part of CTest. The host-pointer check cannot fail here, so the argument test is left out
# unless arguments are given.
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n '2,3p' "$0" | sed 's/^# //'; exit 2; }
BUILD=$(cd "$1" && pwd)
shift
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
CUDA_INC=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/../include
EMU=$BUILD/emu
mkdir -p "$EMU"
[[ -f $BUILD/tests/gpu/CMakeFiles/test_gpu.dir/test_kernels.cpp.o ]] ||
    { echo "build test_gpu in $BUILD first (configure with -DSNAPKV_CUDA=ON)" >&2; exit 2; }
objs=()
for cu in "$SRC"/kernels/*.cu; do
    name=$(basename "$cu" .cu)
    python3 "$HERE/prep.py" "$cu" "$EMU/$name.cpp"
    g++ -std=c++20 -O2 -w -I"$CUDA_INC" -I"$SRC" -include "$HERE/emu_cuda.h" -c "$EMU/$name.cpp" -o "$EMU/$name.o"
    objs+=("$EMU/$name.o")
done
g++ -std=c++17 -O2 -I"$CUDA_INC" -c "$HERE/emu_runtime.cpp" -o "$EMU/emu_runtime.o"
objs+=("$EMU/emu_runtime.o")
# test_gpu's own link line (up to the test discovery step), with the emulated pieces swapped in.
link=$(ninja -C "$BUILD" -t commands tests/gpu/test_gpu | tail -n 1 | sed 's/^: && //; s/ && cd .*$//')
link=${link/ kernels\/libsnapkv_kernels.a / ${objs[*]} }
link=$(sed -E 's# [^ ]*libcudart_static\.a # #; s# -o tests/gpu/test_gpu # -o emu/test_gpu_emu #' <<<"$link")
(cd "$BUILD" && eval "$link")
if [[ $# -eq 0 ]]; then set -- "~*argument errors*"; fi
exec "$EMU/test_gpu_emu" "$@"
