#!/usr/bin/env bash
# scripts/get-blas-testers.sh [DIR] — fetches the reference BLAS level-3 testers (sblat3.f,
# dblat3.f, cblat3.f, zblat3.f and their .in files, from LAPACK's BLAS/TESTING) into DIR
# (default /usr/local/share/prism/blas-testing), where the ctest entry dropin_blas_testers
# looks for them. Debian ships them in no binary package, so they come from the source
# package of lapack: a deb-src entry mirroring this machine's first Debian `deb` source is
# added (/etc/apt/sources.list.d/prism-deb-src.sources) when apt has none, then
# `apt-get source --download-only lapack`. Idempotent: does nothing when DIR has all eight
# files. Needs root for apt; exits 1 (saying why) when the files cannot be had, and the
# ctest entry then reports Skipped with that reason.
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

# A deb-src entry for the Debian archive this machine installs from, unless apt has one.
has_deb_src() {
  grep -rqsE '^\s*(deb-src\s|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}
if ! has_deb_src; then
  uri="" suite=""
  # deb822 (.sources: "URIs:" / "Suites:") first, then one-line "deb URI SUITE main".
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ { print $2; exit }' "$f")
    suite=$(awk '/^Suites:/ { print $2; exit }' "$f")
    [ -n "$uri" ] && [ -n "$suite" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    read -r uri suite < <(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { print $i, $(i + 1); exit } }' /etc/apt/sources.list) || true
  fi
  if [ -z "$uri" ] || [ -z "$suite" ]; then
    echo "get-blas-testers: no Debian 'deb' source found in /etc/apt to mirror as deb-src" >&2
    exit 1
  fi
  echo "get-blas-testers: adding deb-src $uri $suite main (/etc/apt/sources.list.d/prism-deb-src.sources)"
  cat >/etc/apt/sources.list.d/prism-deb-src.sources <<EOF
Types: deb-src
URIs: $uri
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -q
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # apt's _apt user writes the download here
chown _apt "$work" 2>/dev/null || true
if ! (cd "$work" && apt-get source --download-only -q lapack); then
  echo "get-blas-testers: 'apt-get source --download-only lapack' failed (no network, or no deb-src for lapack)" >&2
  exit 1
fi
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
