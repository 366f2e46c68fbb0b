#!/usr/bin/env bash
# The whole test suite as it runs on other hosts: ctest once per emulated host, each an hwloc
# synthetic topology declared to be this machine (HWLOC_THISSYSTEM=1: prism binds threads and
# prints no "not this machine" warning, as on a real host of that shape), or this machine with
# the environment a user's has. A test that holds only on the host it was written on fails here.
#
#   bash scripts/other-hosts.sh [BUILD] [HOST...] [-- CTEST_ARGS...]   (e.g. -- -R cli_errors)
#
# Hosts (each names 2 processors, so it needs a machine with at least 2):
#   two_socket  two packages of one core, one NUMA domain each (8 MB L3, 256 KB L2, 32 KB L1d)
#   smt         one core of two hardware threads (16 MB L3, 1 MB L2, 48 KB L1d)
#   big_cache   one package of two cores, 2 MB L2 each, 96 MB L3, 48 KB L1d
#   clean_env   this machine, OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed
# Default: all four, one after another (each takes as long as the suite, ~17 min on 2 cores).
# Prints each host's ctest summary and failed tests; the logs stay in a temporary folder it
# names. Exit status 1 when any test failed on any host, 2 on bad arguments.
set -uo pipefail
build=build
if [ $# -gt 0 ] && [ -d "$1" ]; then build=$(cd "$1" && pwd); shift; fi
cd "$(dirname "$0")/.."
[ -f "$build/CTestTestfile.cmake" ] || { echo "other-hosts: $build has no tests (configure with -DPRISM_WITH_TESTS=ON)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "other-hosts: the emulated hosts name 2 processors; this machine has $(nproc)" >&2; exit 2; }

declare -A synthetic=(
  [two_socket]="Package:2 NUMANode:1 L3Cache:1(size=8MB) L2Cache:1(size=256KB) L1dCache:1(size=32KB) Core:1 PU:1"
  [smt]="Package:1 NUMANode:1 L3Cache:1(size=16MB) L2Cache:1(size=1MB) L1dCache:1(size=48KB) Core:1 PU:2"
  [big_cache]="Package:1 NUMANode:1 L3Cache:1(size=96MB) L2Cache:2(size=2MB) L1dCache:1(size=48KB) Core:1 PU:1"
)
hosts=() extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
  hosts+=("$1"); shift
done
[ ${#hosts[@]} -gt 0 ] || hosts=(two_socket smt big_cache clean_env)
for h in "${hosts[@]}"; do
  [ "$h" = clean_env ] || [ -n "${synthetic[$h]:-}" ] || { echo "other-hosts: unknown host '$h' (two_socket, smt, big_cache, clean_env)" >&2; exit 2; }
done

logs=$(mktemp -d /tmp/prism-other-hosts.XXXXXX)
echo "# other-hosts: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), build $build; logs in $logs"
status=0
for h in "${hosts[@]}"; do
  if [ "$h" = clean_env ]; then
    run=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
  else  # (a topology or machine file of the caller's would override the emulated host)
    run=(env -u PRISM_TOPOLOGY -u PRISM_MACHINE -u HWLOC_XMLFILE HWLOC_THISSYSTEM=1 "HWLOC_SYNTHETIC=${synthetic[$h]}")
  fi
  start=$(date +%s)
  "${run[@]}" ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "${extra[@]}" > "$logs/$h.log" 2>&1
  rc=$?
  echo "## $h ($(( $(date +%s) - start )) s): $(grep -E 'tests passed|No tests were found' "$logs/$h.log" | tail -n 1)"
  sed -n '/^The following tests FAILED:/,$p' "$logs/$h.log" | grep -E '^\s+[0-9]+ - ' | sed 's/^/   /'
  [ "$rc" -eq 0 ] || status=1
done
exit $status
