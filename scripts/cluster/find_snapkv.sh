# Sourced by local.sh and submit.sh: sets `snapkv` to $SNAPKV, else the source tree's build, else
# the installed one (<prefix>/share/snapkv-studio/cluster -> <prefix>/bin), else snapkv on PATH;
# empty when none is executable. Expects `here` to be this folder.
snapkv="${SNAPKV:-}"
if [ -z "$snapkv" ]; then
  for c in "$here/../../build/app/cli/snapkv" "$here/../../../bin/snapkv" "$(command -v snapkv || true)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then snapkv="$c"; break; fi
  done
fi
[ -z "$snapkv" ] || [ -x "$snapkv" ] || snapkv=""
