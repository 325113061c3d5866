#!/usr/bin/env bash
# The speed and memory numbers that show whether SnapKV pays off, on the default model: runtime
# prefill/decode speed, SnapKV retune latency on an 8K-token prompt, and full vs compressed decode
# speed and KV bytes at 2K/4K/8K tokens with C = 1024. Prints tables; takes a few minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
B="${SNAPKV_BIN:-$here/build/app/cli/snapkv}"
M="${1:-$here/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
text="$(mktemp)"
trap 'rm -f "$text"' EXIT
# Real prose (the bundled essay and the TinyStories perplexity text), repeated where needed.
cat "$here/datasets/sample_document.md" "$here/tests/data/reference/ppl-text.txt" > "$text"

echo "== runtime: prefill and decode"
"$B" bench --model "$M" --lengths 512,2048 --decode 32
echo
echo "== SnapKV retune latency, 8K-token prompt"
long="$(mktemp)"
cp "$text" "$long"
"$B" bench --model "$M" --retune --lengths 8000 --prompt-file "$long" --window 32 --kernel 7 --budget 1024 \
  --gqa query-head
rm -f "$long"
echo
echo "== full vs compressed decode, C = 1024: per query head (official), then per KV head (the default)"
"$B" bench --model "$M" --compress --prompt-file "$text" --lengths 2048,4096,8000 --window 32 --kernel 7 \
  --pooling max --budget 1024 --gqa query-head --decode 32
echo
"$B" bench --model "$M" --compress --prompt-file "$text" --lengths 2048,4096,8000 --window 32 --kernel 7 \
  --pooling max --budget 1024 --gqa kv-head --decode 32
