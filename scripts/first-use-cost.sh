#!/usr/bin/env bash
# scripts/first-use-cost.sh [--build DIR] [--runs N] [--out FILE]
#
# What the first-use measurements cost (docs/planning.md, "Without a machine file: measured
# at first use"): N times (default 10), in a fresh cache folder each, `prism tune
# --first-use` measures what the first long call would (the streaming crossovers; the leaf
# libraries load first, with their own kernel probe), and this prints each run's own figure
# ("measured in X s"), each type's rank-k limits' own ("rank-k s 0.12 d 0.09 ..."), the
# BLAS leaf classes' own (where the leaf libraries' kernels are equally wide), the
# whole process's wall time (loading the leaf libraries and their probe included) and what
# it decided; then once more in the last folder, where nothing is
# measured. The header names the machine, the date, the environment and the load.
# Default output: bench/results/first-use-<UTC time>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build runs=10 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: scripts/first-use-cost.sh [--build DIR] [--runs N] [--out FILE]" >&2; exit 2 ;;
  esac
done
prism=$build/apps/prism
[ -x "$prism" ] || { echo "first-use-cost: build $build first (scripts/test.sh)" >&2; exit 2; }
[ -n "$out" ] || out=bench/results/first-use-$(date -u +%Y-%m-%dT%H%MZ).txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exec > >(tee "$out")
echo "# prism's first-use measurements: what they cost ($runs runs, a fresh cache folder each)"
echo "# machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores; $("$prism" tune --show | sed -n 's/^cpu: //p')"
echo "# date: $(date -u +%Y-%m-%dT%H:%MZ); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# environment: $(env | grep -E '^(OPENBLAS|BLIS|OMP|PRISM)_' | tr '\n' ' ' || true)(PRISM_MACHINE unset for the runs)"
echo "# load at the start: $(cat /proc/loadavg)"
echo "# run  measured (s)  rank-k, each type (s)             blas leaves (s)  process wall (s)  decided"
for i in $(seq "$runs"); do
  export XDG_CACHE_HOME=$work/run$i
  t0=$(date +%s.%N)
  text=$(env -u PRISM_MACHINE "$prism" tune --first-use 2>&1)
  t1=$(date +%s.%N)
  secs=$(sed -nE 's/^# first use: measured in ([0-9.]+) s, ([0-4]) of 4 decided.*/\1/p' <<<"$text")
  rank_k=$(sed -nE 's/^# first use, rank-k (.): measured in ([0-9.]+) s.*/\1 \2/p' <<<"$text" | tr '\n' ' ')
  leaves=$(sed -nE 's/^# first use, blas leaves: measured in ([0-9.]+) s.*/\1/p' <<<"$text")
  verdict=$(sed -nE 's/^#   ((square|wide) d .*)$/\1/p' <<<"$text" | sed -E 's/[^;]*(-> ([a-z]+)|undecided[^;]*)(;|$)/\2 /g')
  decided=$(grep -E '^stream_[a-z_]+: ' <<<"$text" | awk '{ printf "%s=%s(%s) ", $1, $2, $3 == "first" ? "first use" : $3 }')
  printf "%4d  %12s  %-32s  %15s  %16.3f  %s\n" "$i" "${secs:-?}" "${rank_k:-?}" "${leaves:-none}" "$(echo "$t1 - $t0" | bc)" \
    "$decided blas_leaf_square,wide:=${verdict:-?}"
done
echo "# the BLAS leaf classes' kernel sets and the last run's timings: $(grep -h '^blas_leaf_kernels: ' "$work/run$runs"/prism/first-use-* 2>/dev/null | sed 's/^blas_leaf_kernels: //' || true); $(grep -h '^blas_leaves: ' "$work/run$runs"/prism/first-use-* 2>/dev/null | sed 's/^blas_leaves: //' || true)"
echo "# the same folder again (run $runs's): nothing is measured"
t0=$(date +%s.%N)
again=$(env -u PRISM_MACHINE "$prism" tune --first-use 2>&1 | grep '^# first use:')
t1=$(date +%s.%N)
echo "$again; process wall $(echo "$t1 - $t0" | bc) s"
echo "# load at the end: $(cat /proc/loadavg)"
