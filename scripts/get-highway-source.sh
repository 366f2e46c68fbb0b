#!/usr/bin/env bash
# scripts/get-highway-source.sh [DIR] — takes Google Highway's runtime dispatch (hwy/targets.cc
# and hwy/per_target.cc, with Highway's LICENSE) from Debian's source package of the installed
# libhwy-dev, Debian's patches applied, into DIR (default
# /usr/local/share/prism/highway-VERSION, VERSION as `pkg-config --modversion libhwy` says).
# prism's build (cmake/PrismHighway.cmake, cache variable PRISM_HWY_SOURCE_DIR) compiles the
# two files with hidden visibility into each prism library, so that no prism library loads
# libhwy.so.1 into a host program (docs/development.md, "Coexistence with host programs").
# Idempotent: does nothing when DIR has the files. Needs root for apt (the source package is
# downloaded by scripts/debian-source.sh) and dpkg-source (dpkg-dev); exits 1, saying why,
# when the files cannot be had.
set -euo pipefail
version=$(pkg-config --modversion libhwy 2>/dev/null) || {
  echo "get-highway-source: libhwy-dev is not installed (pkg-config knows no libhwy)" >&2
  exit 1
}
dir=${1:-/usr/local/share/prism/highway-$version}
files=(hwy/targets.cc hwy/per_target.cc LICENSE)

have_all() { for f in "${files[@]}"; do [ -s "$dir/$f" ] || return 1; done; }
if have_all; then
  echo "get-highway-source: present in $dir"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "get-highway-source: $dir lacks Highway's dispatch sources; run as root (apt-get source highway needs a deb-src entry and apt)" >&2
  exit 1
fi
command -v dpkg-source >/dev/null || { echo "get-highway-source: dpkg-source is missing (apt-get install dpkg-dev)" >&2; exit 1; }

# The exact Debian version of the installed headers, so the .cc files match them.
debver=$(dpkg-query -W -f='${Version}' libhwy-dev)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=debian-source.sh
. "$(dirname "$0")/debian-source.sh"
debian_source_download get-highway-source "highway=$debver" "$work/dl" || exit 1
dsc=$(ls "$work"/dl/highway_*.dsc 2>/dev/null | head -n1)
[ -n "$dsc" ] || { echo "get-highway-source: the download has no highway_*.dsc" >&2; exit 1; }
dpkg-source --no-check -x "$dsc" "$work/src" >/dev/null
mkdir -p "$dir/hwy"
for f in "${files[@]}"; do
  [ -s "$work/src/$f" ] || { echo "get-highway-source: $f is not in $(basename "$dsc")" >&2; exit 1; }
  install -m 644 "$work/src/$f" "$dir/$f"
done
echo "highway $debver ($(basename "$dsc"), Debian patches applied)" >"$dir/SOURCE"
echo "get-highway-source: ${files[*]} of highway $debver in $dir"
