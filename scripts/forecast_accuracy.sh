#!/usr/bin/env bash
# The run forecast (core/session/run_forecast.h) against the real prefill: `snapkv analyze` on the
# bundled models at about 1K, 4K and 8K tokens, printing each run's plan line (forecast) and its
# prefill line (measured, capture and scorers included). The documents are the bundled ones
# concatenated to length (4.1 bytes a token on these tokenizers); their words do not change the
# arithmetic. Usage: scripts/forecast_accuracy.sh [snapkv binary] [lengths in tokens...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/app/cli/snapkv}
shift || true
lengths=("$@")
[ ${#lengths[@]} -gt 0 ] || lengths=(1024 4096 8192)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat datasets/sample_document.md datasets/documents/*.md >"$tmp/pool.md"
for model in models/SmolLM2-135M-Instruct.Q4_1.gguf models/gemma-3-270m-q4_k_m.gguf; do
    for n in "${lengths[@]}"; do
        bytes=$((n * 41 / 10))
        : >"$tmp/doc.md"
        while [ "$(wc -c <"$tmp/doc.md")" -lt "$bytes" ]; do cat "$tmp/pool.md" >>"$tmp/doc.md"; done
        head -c "$bytes" "$tmp/doc.md" >"$tmp/doc_n.md"
        echo "== $(basename "$model") ~$n tokens (load $(cut -d' ' -f1 /proc/loadavg))"
        "$bin" analyze -m "$model" --doc "$tmp/doc_n.md" --question "What is the document about?" \
            --json "$tmp/out.json" 2>&1 | grep -E '^(plan|prefill):' || true
    done
done
