#!/usr/bin/env bash
# The .deb on a fresh Debian 12: debootstraps bookworm (minbase) into a folder, installs the package
# with `apt-get install ./snapkv-studio_*.deb` (dependencies from the Debian mirror), then runs, from
# PATH inside the root: snapkv --version, snapkv info on stories260K, snapkv-studio --help
# (offscreen), desktop-file-validate, appstreamcli validate and man snapkv. Needs root, debootstrap
# and the network; not part of ctest (minutes and ~1 GB). Unmounts and removes what it made, unless
# --root DIR names a folder to keep (reused on the next run: the root is made once).
#   tests/install/deb_test.sh build/snapkv-studio_0.1.0_amd64.deb [--root /var/tmp/bookworm]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deb="" root="" keep=0
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="$2"; keep=1; shift ;;
    -*) echo "deb_test: unknown option $1" >&2; exit 2 ;;
    *) deb="$1" ;;
  esac
  shift
done
[ -f "$deb" ] || { echo "usage: deb_test.sh PACKAGE.deb [--root DIR]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "deb_test: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "deb_test: apt-get install debootstrap" >&2; exit 1; }
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
[ -n "$root" ] || root="$(mktemp -d /var/tmp/snapkv-deb.XXXXXX)"
mkdir -p "$root"
mounted=()
cleanup() {
  local rc=$?
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R -l "${mounted[i]}" 2>/dev/null || true; done
  if [ "$keep" = 0 ]; then rm -rf --one-file-system "$root"; fi
  exit "$rc"
}
trap cleanup EXIT
start=$SECONDS
if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "== debootstrap bookworm (minbase) into $root"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
    || { tail -20 "$root.debootstrap.log" >&2; exit 1; }
  echo "== debootstrap done in $((SECONDS - start)) s"
fi
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
EOF
# Recursive binds with their submounts (/sys/fs/cgroup, /dev/pts), as a real machine has them.
for m in proc sys dev; do
  mount --rbind "/$m" "$root/$m"
  mount --make-rslave "$root/$m"
  mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
cp "$here/tests/data/stories260K.gguf" "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
              DEBIAN_FRONTEND=noninteractive "$@"; }
t0=$SECONDS
in_root apt-get update -qq
in_root apt-get install -y -qq "/tmp/$(basename "$deb")" >"$root/tmp/install.log" 2>&1 \
  || { tail -30 "$root/tmp/install.log" >&2; exit 1; }
echo "== apt-get install ./$(basename "$deb") (with Recommends) in $((SECONDS - t0)) s"
in_root apt-get install -y -qq appstream man-db >/dev/null 2>&1   # the validators and man, not the package's
echo "== snapkv --version";        in_root snapkv --version
echo "== snapkv info";             in_root sh -c 'cd /tmp && snapkv info --model stories260K.gguf' | head -8
echo "== snapkv-studio --help";    in_root env QT_QPA_PLATFORM=offscreen snapkv-studio --help | head -4
echo "== desktop-file-validate";   in_root desktop-file-validate /usr/share/applications/org.snapkv.Studio.desktop
echo "== appstreamcli validate";   in_root appstreamcli validate --no-net /usr/share/metainfo/org.snapkv.Studio.metainfo.xml
echo "== MIME";                    in_root sh -c 'grep -h "gguf\|snapkv" /usr/share/mime/globs2'
echo "== man snapkv";              in_root env MANWIDTH=90 MANPAGER=cat man snapkv | head -12
in_root man -w snapkv-studio >/dev/null
echo "== installed size: $(in_root dpkg-query -W -f='${Installed-Size}' snapkv-studio) KiB;" \
     "package: $(du -k "$deb" | cut -f1) KiB; root with dependencies: $(du -sh --one-file-system "$root" | cut -f1)"
echo "deb_test: passed in $((SECONDS - start)) s"
