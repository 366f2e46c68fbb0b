#!/usr/bin/env bash
# prism's own time per call (`prism bench`, its "prism" line) under two builds, A and B run
# in turn five times per shape, on the benchmark table's shapes: the median of the five
# A/B ratios says whether a change moved the table beyond the machine's noise (the pairs
# keep drift out of the ratio; the spread of the five says how noisy the machine was).
#   bash scripts/ab-builds.sh NEW_PRISM OLD_PRISM > bench/results/ab-<what>-<UTC time>.txt
set -euo pipefail
new=${1:?usage: ab-builds.sh NEW_PRISM OLD_PRISM}
old=${2:?usage: ab-builds.sh NEW_PRISM OLD_PRISM}
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores,"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
echo "# A = $new ($("$new" --version)), B = $old ($("$old" --version))"
for shape in "2048 2048 2048" "4096 4096 64" "64 64 4194304" "32 32 4194304 --trans TN" "128 128 128" "8 8 16777216"; do
  ratios=()
  for r in 1 2 3 4 5; do
    a=$("$new" bench $shape --reps 3 2>&1 | awk '/^  prism/{print $4}')
    b=$("$old" bench $shape --reps 3 2>&1 | awk '/^  prism/{print $4}')
    ratios+=("$(echo "$a / $b" | bc -l | awk '{printf "%.3f", $1}')")
  done
  med=$(printf "%s\n" "${ratios[@]}" | sort -g | sed -n 3p)
  echo "$shape: A/B prism ms per call, median of 5 pairs $med (pairs: ${ratios[*]})"
done
