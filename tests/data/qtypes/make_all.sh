#!/bin/sh
# Regenerates the committed golden data in tests/data/qtypes/ and tests/data/reference/gemma3/
# from llama.cpp and gguf-py. It needs an already built llama.cpp (README: exact CMake command)
# and a Python venv with numpy and gguf; our own code is never run. Large intermediate files
# (F32 fixture, llama.cpp's dequantized copies, full logits) go to $WORK, not into the repo.
#
# usage: LLAMA_SRC=... LLAMA_BUILD=... VENV=... [WORK=...] [GEMMA_Q4=...] [GEMMA_F32=...] \
#        tests/data/qtypes/make_all.sh [qtypes|blocks|gemma3|all]
set -eu

: "${LLAMA_SRC:?set LLAMA_SRC to the llama.cpp source tree}"
: "${LLAMA_BUILD:?set LLAMA_BUILD to the llama.cpp build tree (bin/llama-quantize etc.)}"
: "${VENV:?set VENV to a venv with numpy and gguf}"
WORK=${WORK:-/tmp/snapkv-qtypes-work}
GEMMA_Q4=${GEMMA_Q4:-/work/ext/models/gemma-3-270m-q4_k_m.gguf}
GEMMA_F32=${GEMMA_F32:-/work/ext/models/gemma-3-270m-f32.gguf}
what=${1:-all}

here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/.." && pwd)
repo=$(cd "$data/../.." && pwd)
py="$VENV/bin/python"
bin="$LLAMA_BUILD/bin"
TYPES="Q5_0 Q5_1 Q2_K Q3_K IQ4_NL IQ4_XS"
# "Once upon a time, there was a little girl named Lily. She loved to" in the stories260K vocab
TEXT="Once upon a time, there was a little girl named Lily. She loved to"
mkdir -p "$WORK"

LLAMA_SRC="$LLAMA_SRC" LLAMA_BUILD="$LLAMA_BUILD" "$here/tools/build_dump_logits.sh"

qtypes() {
    mkdir -p "$here/ref"
    "$py" "$here/make_qtypes.py" --vocab-from "$data/stories260K.gguf" --out "$WORK/tiny-F32.gguf"
    printf '%s' "$TEXT" > "$WORK/text.txt"
    "$bin/llama-tokenize" -m "$WORK/tiny-F32.gguf" -f "$WORK/text.txt" --ids --no-escape \
        --log-disable > "$WORK/ids.txt"
    ids=$(tr -d '[] \n' < "$WORK/ids.txt")
    echo "token ids: $ids"
    "$bin/dump_logits" -m "$WORK/tiny-F32.gguf" --ids "$ids" -o "$here/ref/F32.logits.bin"
    for t in $TYPES; do
        # --pure: every tensor gets type $t, no per-tensor mixing; 1-D norms stay F32.
        "$bin/llama-quantize" --pure "$WORK/tiny-F32.gguf" "$here/tiny-$t.gguf" "$t" 2 \
            > "$WORK/quantize-$t.log" 2>&1
        # llama.cpp's own dequantization: requantize to F32.
        "$bin/llama-quantize" --allow-requantize "$here/tiny-$t.gguf" "$WORK/deq-$t.gguf" F32 2 \
            > "$WORK/dequantize-$t.log" 2>&1
        "$py" "$here/tensor_refs.py" --quant "$here/tiny-$t.gguf" --deq "$WORK/deq-$t.gguf" \
            --type "$t" --out "$here/ref/$t.tensors.json"
        "$bin/dump_logits" -m "$WORK/deq-$t.gguf" --ids "$ids" -o "$here/ref/$t.logits-deq.bin"
        "$bin/dump_logits" -m "$here/tiny-$t.gguf" --ids "$ids" -o "$here/ref/$t.logits-native.bin"
    done
    "$py" - "$here" "$WORK" "$ids" "$TEXT" <<'EOF'
import hashlib, json, os, sys
here, work, ids, text = sys.argv[1:5]
def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()
types = "Q5_0 Q5_1 Q2_K Q3_K IQ4_NL IQ4_XS".split()
m = {
    "text": text,
    "ids": [int(x) for x in ids.split(",")],
    "n_vocab": 512,
    "logits_format": "float32 little-endian, row-major [n_tokens, n_vocab], no header",
    "dump_logits": "dump_logits -m MODEL --ids IDS -o OUT.bin (one batch, all positions, n_ctx 256, "
                   "2 threads, F32 KV cache, flash attention off)",
    "f32_fixture": {"file": "tiny-F32.gguf (not committed)", "sha256": sha(f"{work}/tiny-F32.gguf"),
                    "bytes": os.path.getsize(f"{work}/tiny-F32.gguf"),
                    "logits": "ref/F32.logits.bin", "logits_sha256": sha(f"{here}/ref/F32.logits.bin")},
    "types": {},
}
for t in types:
    m["types"][t] = {
        "gguf": f"tiny-{t}.gguf", "gguf_sha256": sha(f"{here}/tiny-{t}.gguf"),
        "deq_gguf_sha256": sha(f"{work}/deq-{t}.gguf"),
        "logits_deq": f"ref/{t}.logits-deq.bin", "logits_deq_sha256": sha(f"{here}/ref/{t}.logits-deq.bin"),
        "logits_native": f"ref/{t}.logits-native.bin",
        "logits_native_sha256": sha(f"{here}/ref/{t}.logits-native.bin"),
        "tensors": f"ref/{t}.tensors.json",
    }
with open(f"{here}/ref/manifest.json", "w") as f:
    json.dump(m, f, indent=1)
    f.write("\n")
EOF
}

blocks() {
    "$py" "$here/make_blocks.py" --out-dir "$here/blocks"
    for t in $TYPES; do
        "$bin/check_blocks" "$here/blocks/$t.bin" || true   # reports bitwise differences
    done
}

gemma3() {
    if [ ! -f "$GEMMA_F32" ]; then
        "$bin/llama-quantize" --allow-requantize "$GEMMA_Q4" "$GEMMA_F32" F32 2
    fi
    # llama.cpp's F32 dequantization of each Gemma tensor, checked against gguf-py.
    "$py" "$here/tensor_refs.py" --quant "$GEMMA_Q4" --deq "$GEMMA_F32" --type any \
        --out "$data/reference/gemma3/tensors.json"
    "$py" "$data/reference/gemma3/make_gemma3_refs.py" --llama-build "$LLAMA_BUILD" \
        --f32 "$GEMMA_F32" --q4 "$GEMMA_Q4" --docs "$repo/datasets/documents" \
        --out "$data/reference/gemma3" --work "$WORK/gemma3"
}

case "$what" in
    qtypes) qtypes ;;
    blocks) blocks ;;
    gemma3) gemma3 ;;
    all) qtypes; blocks; gemma3 ;;
    *) echo "usage: $0 [qtypes|blocks|gemma3|all]" >&2; exit 2 ;;
esac
