#!/usr/bin/env bash
# tests/gpu/fetch_deps.sh DIR: the small build dependencies a GPU machine without network may lack
# (Catch2 v2, CLI11, nlohmann-json, PCRE2's dev files, pkgconf) as Debian packages unpacked under
# DIR with dpkg -x, for `tests/gpu/check.sh OUTDIR --deps DIR`. Run it on a Debian/Ubuntu machine
# with apt (downloads only, installs nothing); carry DIR to the GPU machine (a few MB).
set -euo pipefail
if [[ $# -ne 1 ]]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
mkdir -p "$1"
dir=$(cd "$1" && pwd)
pkgs=(catch2 libcli11-dev nlohmann-json3-dev libpcre2-dev libpcre2-8-0 pkgconf pkgconf-bin libpkgconf3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "${pkgs[@]}")
for deb in "$tmp"/*.deb; do
    dpkg -x "$deb" "$dir"
done
echo "unpacked ${#pkgs[@]} packages under $dir ($(du -sh "$dir" | cut -f1))"
