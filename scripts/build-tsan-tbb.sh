#!/usr/bin/env bash
# scripts/build-tsan-tbb.sh [PREFIX] — builds oneTBB from Debian's source package of the
# installed libtbb-dev (Debian's patches applied) with -fsanitize=thread into the private
# PREFIX (default /usr/local/share/prism/tbb-tsan-VERSION), so that ThreadSanitizer sees
# TBB's own synchronisation instead of reporting every task hand-off as a race. The `tsan`
# preset (CMakePresets.json) finds it through CMAKE_PREFIX_PATH; docs/development.md
# ("ThreadSanitizer") says how the run goes. Only libtbb is built (no tbbmalloc, tbbbind,
# tests or examples). Idempotent: does nothing when PREFIX has the library. Needs root for
# apt (scripts/debian-source.sh) and dpkg-source (dpkg-dev); heavy on two cores (~20 min).
set -euo pipefail
version=$(dpkg-query -W -f='${Version}' libtbb-dev 2>/dev/null) || {
  echo "build-tsan-tbb: libtbb-dev is not installed" >&2
  exit 1
}
upstream=${version%%-*}
prefix=${1:-/usr/local/share/prism/tbb-tsan-$upstream}
if [ -s "$prefix/lib/cmake/TBB/TBBConfig.cmake" ] && ls "$prefix"/lib/libtbb*.so* >/dev/null 2>&1; then
  echo "build-tsan-tbb: present in $prefix"
  exit 0
fi
command -v dpkg-source >/dev/null || { echo "build-tsan-tbb: dpkg-source is missing (apt-get install dpkg-dev)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=debian-source.sh
. "$(dirname "$0")/debian-source.sh"
debian_source_download build-tsan-tbb "onetbb=$version" "$work/dl" || exit 1
dsc=$(ls "$work"/dl/onetbb_*.dsc 2>/dev/null | head -n1)
[ -n "$dsc" ] || { echo "build-tsan-tbb: the download has no onetbb_*.dsc" >&2; exit 1; }
dpkg-source --no-check -x "$dsc" "$work/src" >/dev/null
# TBB_SANITIZE=thread is oneTBB's own switch (-fsanitize=thread on every TBB object).
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DTBB_SANITIZE=thread -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF \
  -DTBBMALLOC_BUILD=OFF -DTBB_DISABLE_HWLOC_AUTOMATIC_SEARCH=ON -DTBB_STRICT=OFF
cmake --build "$work/build" -j"${PRISM_TSAN_TBB_JOBS:-$(nproc)}"
cmake --install "$work/build"
echo "onetbb $version ($(basename "$dsc"), Debian patches applied, TBB_SANITIZE=thread)" >"$prefix/SOURCE"
echo "build-tsan-tbb: libtbb of onetbb $version with -fsanitize=thread in $prefix"
