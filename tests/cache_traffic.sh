#!/usr/bin/env bash
# tests/cache_traffic.sh SOURCE BUILD prism|openblas — the cache model of prism/traffic.hpp
# against valgrind's cache simulator: on small shapes, the predicted elements received by a
# 48 KiB 12-way D1 and a 1 MiB 8-way LL (this project's machine's L1 and L2: the LL column
# checks the model's L2 prediction) agree within 20% with the misses valgrind counts for the
# same call (scripts/cachegrind_study.py --check 20).
#   prism: prism running hand-written plans whose DFS steps share an operand (tests/plans/).
#   openblas: the plain OpenBLAS call (one leaf) on one tall-skinny, one square and one
#     two-large shape. The model's leaf blocking is that of OpenBLAS's Haswell kernels, which
#     it runs under valgrind where the CPU has AVX2 and FMA; OPENBLAS_CORETYPE=Haswell pins
#     them (a caller's OPENBLAS_CORETYPE would pick others). Skipped on a CPU without them.
# Skipped (exit 77, ctest "Skipped") without valgrind.
set -uo pipefail
usage="usage: cache_traffic.sh SOURCE BUILD prism|openblas"
src=${1:?$usage} build=${2:?$usage} part=${3:?$usage}
if ! command -v valgrind >/dev/null 2>&1; then
  echo "cache_traffic: SKIPPED: valgrind is not installed (Debian: apt-get install valgrind)"
  exit 77
fi
study=("$src/scripts/cachegrind_study.py" --build "$build" --D1 49152,12,64 --LL 1048576,8,64 --check 20)
status=0
case $part in
  openblas)
    if ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
      echo "cache_traffic: SKIPPED: the model's OpenBLAS blocking is its Haswell kernels', which need AVX2 and FMA"
      exit 77
    fi
    OPENBLAS_CORETYPE=Haswell python3 "${study[@]}" --impls openblas --shapes 64x64x32768,240x240x240,1000x1000x64 || status=1
    ;;
  prism)
    python3 "${study[@]}" --impls prism --shapes 64x64x32768 --plan "$src/tests/plans/dfs-k-64x64x32768.plan" || status=1
    python3 "${study[@]}" --impls prism --shapes 240x960x240 --plan "$src/tests/plans/dfs-n-240x960x240.plan" || status=1
    ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
exit $status
