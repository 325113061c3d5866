#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then, from a folder with no datasets/ in it: the
# installed snapkv prints its version and runs a needle cell on stories260K with the bundled
# needles and haystack (found through the install prefix, not the source tree), snapkv-studio
# answers --help offscreen, the man pages render, and the desktop entry, AppStream metainfo and
# MIME definitions validate. It does not build the .deb (tests/install/deb_test.sh does that in a fresh
# Debian root). Needs desktop-file-utils and appstream (scripts/test.sh installs them).
#   tests/install/install_test.sh --build-dir build
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$here/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    *) echo "install_test: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
for tool in desktop-file-validate appstreamcli xmllint; do
  command -v "$tool" >/dev/null || { echo "install_test: '$tool' is missing (apt-get install desktop-file-utils appstream libxml2-utils)" >&2; exit 1; }
done
T="$(mktemp -d /tmp/snapkv-install.XXXXXX)"
trap 'rm -rf "$T"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$T/prefix" >"$T/install.log" || { cat "$T/install.log" >&2; fail "cmake --install failed"; }
P="$T/prefix"
for f in bin/snapkv bin/snapkv-fetch-model share/snapkv-studio/datasets/needles.jsonl \
         share/snapkv-studio/datasets/sample_document.md share/snapkv-studio/datasets/qa/qa.jsonl \
         share/snapkv-studio/datasets/fetch_model.sh share/snapkv-studio/cluster/submit.sh \
         share/man/man1/snapkv.1.gz share/man/man1/snapkv-fetch-model.1.gz; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
[ -z "$(find "$P" -name '*.gguf')" ] || fail "a model was installed: $(find "$P" -name '*.gguf')"

# The installed CLI from an empty folder, with nothing pointing at the source tree.
mkdir "$T/cwd"
cd "$T/cwd"
unset SNAPKV_DATASETS SNAPKV_MODEL
"$P/bin/snapkv" --version | grep -qx "snapkv [0-9.]*" || fail "snapkv --version: $("$P/bin/snapkv" --version 2>&1)"
"$P/bin/snapkv" info --model "$here/tests/data/stories260K.gguf" >"$T/info.txt" || fail "snapkv info failed"
grep -q llama "$T/info.txt" || fail "snapkv info printed no architecture"
# Default needles and haystack: the installed copy, found from the executable (the source tree,
# also compiled in as a fallback, comes after it). A broken installed needles file proves which one
# is read: the error must name the prefix.
SNAPKV_THREADS=1 "$P/bin/snapkv" needle --model "$here/tests/data/stories260K.gguf" --lengths 96 --depths 50 \
  --policies snapkv --budgets 48 --window 16 --kernel 5 --max-tokens 3 --quiet --out "$T/needle.jsonl" >/dev/null \
  || fail "installed snapkv needle with the bundled data failed"
[ "$(wc -l <"$T/needle.jsonl")" -ge 2 ] || fail "needle wrote no rows"
needles="$P/share/snapkv-studio/datasets/needles.jsonl"
cp "$needles" "$T/needles.bak"
echo '{"broken' >"$needles"
if "$P/bin/snapkv" needle --model "$here/tests/data/stories260K.gguf" --lengths 96 --depths 50 --out "$T/n2.jsonl" \
     >/dev/null 2>"$T/err.txt"; then
  fail "a broken installed needles file was not read (another copy was used)"
fi
cp "$T/needles.bak" "$needles"
grep -qF "$needles" "$T/err.txt" || fail "the needles came from elsewhere than the prefix: $(cat "$T/err.txt")"

# Man pages: roff that man (or groff) renders, with every subcommand and its options.
zcat "$P/share/man/man1/snapkv.1.gz" >"$T/snapkv.1"
for want in '.SH "SNAPKV needle"' '\-\-model' '\-\-shard' '.SH "SNAPKV info"'; do
  grep -qF -- "$want" "$T/snapkv.1" || fail "snapkv.1 lacks $want"
done
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$T/snapkv.1" 2>"$T/man.err" | grep -q "needle" || fail "man -l snapkv.1: $(cat "$T/man.err")"
  [ ! -s "$T/man.err" ] || fail "man warns on snapkv.1: $(cat "$T/man.err")"
fi

# The app, the desktop entry, the metainfo, the MIME types.
if [ -x "$P/bin/snapkv-studio" ]; then
  QT_QPA_PLATFORM=offscreen "$P/bin/snapkv-studio" --help | grep -q -- "--get-model" || fail "snapkv-studio --help"
  zcat "$P/share/man/man1/snapkv-studio.1.gz" | grep -qF '\-\-screenshot' || fail "snapkv-studio.1 lacks --screenshot"
  desktop-file-validate "$P/share/applications/org.snapkv.Studio.desktop" || fail "desktop-file-validate"
  appstreamcli validate --no-net "$P/share/metainfo/org.snapkv.Studio.metainfo.xml" >"$T/as.txt" 2>&1 \
    || { cat "$T/as.txt" >&2; fail "appstreamcli validate"; }
  xmllint --noout "$P/share/mime/packages/org.snapkv.Studio.xml" || fail "MIME XML"
  if command -v update-mime-database >/dev/null; then
    cp -r "$P/share/mime" "$T/mime"
    update-mime-database "$T/mime" >/dev/null 2>&1 || fail "update-mime-database"
    grep -q "application/x-gguf" "$T/mime/globs2" || fail "no *.gguf glob after update-mime-database"
  fi
  for s in 16 32 48 64 128 256; do
    [ -f "$P/share/icons/hicolor/${s}x${s}/apps/org.snapkv.Studio.png" ] || fail "no ${s}px icon"
  done
  [ -f "$P/share/icons/hicolor/scalable/apps/org.snapkv.Studio.svg" ] || fail "no SVG icon"
fi
echo "install_test: passed ($(du -sh "$P" | cut -f1) installed)"
