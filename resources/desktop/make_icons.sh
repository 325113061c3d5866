#!/usr/bin/env bash
# Renders the hicolor PNG sizes of the app icon from resources/icons/snapkv-studio.svg into
# resources/desktop/icons/ (committed, so a build needs no SVG renderer). Re-run after editing the
# SVG. Needs rsvg-convert (apt-get install librsvg2-bin).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for s in 16 22 24 32 48 64 128 256 512; do
  rsvg-convert -w "$s" -h "$s" -o "$here/icons/${s}.png" "$here/../icons/snapkv-studio.svg"
done
