#!/usr/bin/env bash
# scripts/rank-k-first-use.sh [--build DIR] [--rounds R] [--out FILE]
#
# What the rank-k first use (lib/leaf/first_use.hpp: each type's streaming rank-k limits,
# measured by its first long call) changes on this machine, without a machine file: the Gram
# bench's prism row (prism::syrk / prism::herk on 2 threads) on five Gram shapes, each in a
# process of its own, with what the first use measured here (a cache folder of this run's
# own, measured once by `prism tune --first-use` first) and with the same folder but for the
# rank-k limits (their lines removed, their markers kept: the model's limits, the AVX-512
# host's, and the measured gemm crossovers). The two settings alternate in R rounds
# (default 3), best kept, so a busy spell falls on both; measured / model is the change.
# (default bench/results/rank-k-first-use-<host>-<UTC time>.md)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build rounds=3 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: scripts/rank-k-first-use.sh [--build DIR] [--rounds R] [--out FILE]" >&2; exit 2 ;;
  esac
done
prism=$build/apps/prism gram=$build/bench/prism_gram_bench
[ -x "$prism" ] && [ -x "$gram" ] || { echo "rank-k-first-use: build $build first (scripts/test.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$out" ] || out=bench/results/rank-k-first-use-$(hostname -s)-$(date -u +%Y-%m-%dT%H%MZ).md
exec > >(tee "$out")

# GF/s of the Gram bench's prism row on one shape, one call after its warm-up, in a process of its own.
rate() { "$gram" --shapes="$1" --reps=1 --impls=prism --no-probes 2>/dev/null | awk '/ prism /{for (i = 1; i <= NF; i++) if ($i == "GF/s") print $(i - 1)}'; }

dirty=$(git diff --quiet HEAD -- lib apps include bench ':!bench/results' 2>/dev/null || echo " (uncommitted changes)")
echo "# The rank-k first use: model limits against measured ones"
echo
echo "Machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); commit $(git rev-parse --short HEAD)$dirty."
echo "Environment: $(env | grep -E '^(OPENBLAS|BLIS|OMP|PRISM)_' | tr '\n' ' ' || true)(none if empty); no machine file (PRISM_MACHINE empty). Best of $rounds alternating rounds, one call a process."
echo
export PRISM_MACHINE=""
XDG_CACHE_HOME=$work/cache "$prism" tune --first-use > "$work/first-use.txt" 2>&1
mkdir -p "$work/model/prism"
for f in "$work"/cache/prism/first-use-*; do
  case "$f" in *.lock) continue ;; esac
  grep -v '^stream_rank_k_' "$f" > "$work/model/prism/$(basename "$f")"
done
echo "Measured first (\`prism tune --first-use\`, the limits only):"
echo
echo '```'
grep -E '^(# first use, rank-k|stream_rank_k_)' "$work/first-use.txt"
echo '```'
echo
echo "| shape (Gram bench) | call | model limits GF/s | measured limits GF/s | measured / model |"
echo "|---|---|---:|---:|---:|"
for s in 4194304x32 4194304x32:f 2097152x32:z 2097152x32:z:f 1048576x64:z; do
  case "$s" in
    *:z:f) call="zherk U C" ;; *:z) call="zherk L N" ;; *:f) call="dsyrk U T" ;; *) call="dsyrk L N" ;;
  esac
  model=0 measured=0
  for r in $(seq "$rounds"); do
    g=$(XDG_CACHE_HOME=$work/model rate "$s")
    model=$(awk -v g="${g:-0}" -v b="$model" 'BEGIN { print (g > b ? g : b) }')
    g=$(XDG_CACHE_HOME=$work/cache rate "$s")
    measured=$(awk -v g="${g:-0}" -v b="$measured" 'BEGIN { print (g > b ? g : b) }')
  done
  echo "| $s | $call | $model | $measured | $(awk -v a="$measured" -v b="$model" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') |"
done
echo
if grep -q '^stream_rank_k_' "$work"/model/prism/first-use-* 2>/dev/null; then
  echo "The model column's cache folder gained measured limits during the run: its rows are not the model's."
else
  echo "The model column's cache folder held no rank-k limits to the end (its processes read the model's)."
fi
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)."
