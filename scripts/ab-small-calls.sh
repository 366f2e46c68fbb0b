#!/usr/bin/env bash
# What a small call costs through prism's C++ API under two builds: bench/small_calls.cpp
# compiled against each build (its source tree's include/ and its libprism.so), the two run
# in turn five times; each run times prism and threaded OpenBLAS on tiny gemm / syrk / herk
# in one process. The median of the five A/B ratios of prism's time per call says whether a
# change moved it beyond the machine's noise.
#   bash scripts/ab-small-calls.sh NEW_SOURCE NEW_BUILD OLD_SOURCE OLD_BUILD > bench/results/ab-small-calls-<UTC time>.txt
set -euo pipefail
usage="usage: ab-small-calls.sh NEW_SOURCE NEW_BUILD OLD_SOURCE OLD_BUILD"
new_src=${1:?$usage} new_build=${2:?$usage} old_src=${3:?$usage} old_build=${4:?$usage}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in new old; do
  src=${side}_src build=${side}_build
  src=$(cd "${!src}" && pwd)
  build=$(cd "${!build}" && pwd)
  g++ -O2 -std=c++20 "$here/bench/small_calls.cpp" -I"$src/include" -I"$build/include" -L"$build" -lprism \
    -Wl,-rpath,"$build" -ldl -o "$work/$side"
  echo "# $side = $src ($(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- lib include || echo ', uncommitted changes')), $build"
done
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores,"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}; PRISM_*: $(env | grep '^PRISM_' | sort | tr '\n' ' ' || true)(none if empty)"
for r in 1 2 3 4 5; do
  "$work/new" > "$work/new.$r"
  "$work/old" > "$work/old.$r"
done
echo "# each line: A (new) / B (old) prism ns per call, median of 5 pairs (the pairs); then A's and B's"
echo "# last run against OpenBLAS in the same process (openblas/prism > 1: prism faster)"
while read -r line; do
  key=${line%%:*}
  ratios=()
  for r in 1 2 3 4 5; do
    a=$(grep -m1 -F "$key:" "$work/new.$r" | awk '{print $6}')
    b=$(grep -m1 -F "$key:" "$work/old.$r" | awk '{print $6}')
    ratios+=("$(echo "$a / $b" | bc -l | awk '{printf "%.3f", $1}')")
  done
  med=$(printf "%s\n" "${ratios[@]}" | sort -g | sed -n 3p)
  echo "$key: A/B $med (pairs: ${ratios[*]})"
  echo "    A: $(grep -m1 -F "$key:" "$work/new.5" | cut -d: -f2-)"
  echo "    B: $(grep -m1 -F "$key:" "$work/old.5" | cut -d: -f2-)"
done < <(awk '!seen[$0]++' "$work/new.1")
