#!/usr/bin/env bash
# prism's own time per call (`prism bench`, its "prism" line) under two builds, A and B run
# in turn five times per shape, on the benchmark table's shapes: the median of the five
# A/B ratios says whether a change moved the table beyond the machine's noise (the pairs
# keep drift out of the ratio; the spread of the five says how noisy the machine was).
# --shape "M N K [prism bench options]" (repeatable) times those instead, e.g. one leaf kind
# on one thread: --shape "64 64 262144 --trans TN --threads 1 --leaf streaming".
#   bash scripts/ab-builds.sh NEW_PRISM OLD_PRISM [--shape S]... > bench/results/ab-<what>-<UTC time>.txt
set -euo pipefail
new=${1:?usage: ab-builds.sh NEW_PRISM OLD_PRISM [--shape "M N K [options]"]...}
old=${2:?usage: ab-builds.sh NEW_PRISM OLD_PRISM [--shape "M N K [options]"]...}
shift 2
shapes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shapes+=("$2"); shift 2 ;;
    *) echo "ab-builds: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#shapes[@]} -gt 0 ] || shapes=("2048 2048 2048" "4096 4096 64" "64 64 4194304" "32 32 4194304 --trans TN" "128 128 128" "8 8 16777216")
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores,"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; PRISM_*: $(env | grep '^PRISM_' | sort | tr '\n' ' ' || true)(none if empty)"
echo "# A = $new ($("$new" --version)), B = $old ($("$old" --version))"
for shape in "${shapes[@]}"; do
  ratios=()
  for r in 1 2 3 4 5; do
    a=$("$new" bench $shape --reps 3 2>&1 | awk '/^  prism/{print $4}')
    b=$("$old" bench $shape --reps 3 2>&1 | awk '/^  prism/{print $4}')
    ratios+=("$(echo "$a / $b" | bc -l | awk '{printf "%.3f", $1}')")
  done
  med=$(printf "%s\n" "${ratios[@]}" | sort -g | sed -n 3p)
  echo "$shape: A/B prism ms per call, median of 5 pairs $med (pairs: ${ratios[*]})"
done
