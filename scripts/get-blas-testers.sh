#!/usr/bin/env bash
# scripts/get-blas-testers.sh [DIR] — fetches the reference BLAS level-3 testers (sblat3.f,
# dblat3.f, cblat3.f, zblat3.f and their .in files, from LAPACK's BLAS/TESTING) into DIR
# (default /usr/local/share/prism/blas-testing), where the ctest entry dropin_blas_testers
# looks for them. Debian ships them in no binary package, so they come from the source
# package of lapack, downloaded by scripts/debian-source.sh (which adds a deb-src entry when
# apt has none). Idempotent: does nothing when DIR has all eight files. Needs root for apt;
# exits 1 (saying why) when the files cannot be had, and the ctest entry then reports
# Skipped with that reason.
set -euo pipefail
dir=${1:-/usr/local/share/prism/blas-testing}
files=(sblat3.f sblat3.in dblat3.f dblat3.in cblat3.f cblat3.in zblat3.f zblat3.in)

have_all() { for f in "${files[@]}"; do [ -s "$dir/$f" ] || return 1; done; }
if have_all; then
  echo "get-blas-testers: present in $dir"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "get-blas-testers: $dir lacks the BLAS testers; run as root (apt-get source lapack needs a deb-src entry and apt)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=debian-source.sh
. "$(dirname "$0")/debian-source.sh"
debian_source_download get-blas-testers lapack "$work" || exit 1
orig=$(ls "$work"/lapack_*.orig.tar.* 2>/dev/null | head -n1)
[ -n "$orig" ] || { echo "get-blas-testers: the lapack source package has no .orig tarball" >&2; exit 1; }
members=()
for f in "${files[@]}"; do members+=("--wildcards" "*/BLAS/TESTING/$f"); done
tar -xf "$orig" -C "$work" "${members[@]}"
mkdir -p "$dir"
for f in "${files[@]}"; do
  src=$(find "$work" -path "*/BLAS/TESTING/$f" | head -n1)
  [ -n "$src" ] || { echo "get-blas-testers: $f is not in $(basename "$orig")" >&2; exit 1; }
  install -m 644 "$src" "$dir/$f"
done
echo "get-blas-testers: ${files[*]} from $(basename "$orig") in $dir"
