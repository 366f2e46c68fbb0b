#!/usr/bin/env bash
# The measurement behind the streaming leaf's `auto` rule (streaming_preferred in
# lib/leaves/streaming.cpp): `prism leaves --streaming`, one thread, prism's streaming
# kernel against its OpenBLAS leaf (the private ILP64 copy) on leaves with m, n <= 16,
# double and complex double, NN, TN and NT. It runs twice: in the environment as it is
# (this project's machine sets OPENBLAS_CORETYPE=Haswell) and with OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE removed (OpenBLAS then picks its own, AVX-512, kernels), so the rule
# holds against OpenBLAS at its best.
#   bash scripts/leaf-streaming.sh [--out FILE]   (default bench/results/leaf-streaming-<UTC date>.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PRISM_BUILD_DIR:-build}
out=bench/results/leaf-streaming-$(date -u +%F).txt
[ "${1:-}" = "--out" ] && out=$2
prism=$build/apps/prism
[ -x "$prism" ] || { echo "leaf-streaming: build $build first (target prism_cli)" >&2; exit 2; }
dirty=$(git diff --quiet HEAD -- lib apps include 2>/dev/null || echo " (uncommitted changes)")
{
  echo "# streaming leaf vs OpenBLAS leaf, 1 thread: $prism leaves --streaming --reps 5"
  echo "# date (UTC): $(date -u '+%F %T'); commit $(git rev-parse --short HEAD)$dirty"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; caches (getconf, bytes): L1d $(getconf LEVEL1_DCACHE_SIZE), L2 $(getconf LEVEL2_CACHE_SIZE), L3 $(getconf LEVEL3_CACHE_SIZE)"
  echo "# other load: the machine is shared; each row times OpenBLAS and then the streaming leaf back to back, best of 5 each"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "## environment as set: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}"
  "$prism" leaves --streaming --reps 5
  echo
  echo "## OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed"
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$prism" leaves --streaming --reps 5
  echo
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"
cat "$out"
