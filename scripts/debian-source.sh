#!/usr/bin/env bash
# scripts/debian-source.sh — sourced (never run) by the scripts that take files from Debian
# source packages: get-blas-testers.sh (LAPACK's BLAS testers) and get-highway-source.sh
# (Highway's runtime dispatch). Defines one function:
#
#   debian_source_download WHO PACKAGE[=VERSION] DIR
#     downloads the source package into DIR with `apt-get source --download-only` (the .dsc,
#     the .orig tarball and Debian's changes), first adding a deb-src entry that mirrors this
#     machine's first Debian `deb` source (/etc/apt/sources.list.d/prism-deb-src.sources)
#     when apt has none. WHO prefixes the messages. Needs root for the deb-src entry and
#     apt-get update; returns 1, saying why, when the package cannot be had.

# has_deb_src: whether apt already has a deb-src entry.
debian_source_has_deb_src() {
  grep -rqsE '^\s*(deb-src\s|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}

# debian_source_download WHO PACKAGE[=VERSION] DIR: see the header.
debian_source_download() {
  local who=$1 package=$2 dir=$3 uri="" suite="" f
  if ! debian_source_has_deb_src; then
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
      echo "$who: no Debian 'deb' source found in /etc/apt to mirror as deb-src" >&2
      return 1
    fi
    echo "$who: adding deb-src $uri $suite main (/etc/apt/sources.list.d/prism-deb-src.sources)"
    cat >/etc/apt/sources.list.d/prism-deb-src.sources <<SOURCES
Types: deb-src
URIs: $uri
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    apt-get update -q
  fi
  mkdir -p "$dir"
  chmod 755 "$dir"  # apt's _apt user writes the download here
  chown _apt "$dir" 2>/dev/null || true
  if ! (cd "$dir" && apt-get source --download-only -q "$package"); then
    echo "$who: 'apt-get source --download-only $package' failed (no network, or no deb-src for it)" >&2
    return 1
  fi
}
