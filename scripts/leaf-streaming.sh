#!/usr/bin/env bash
# The measurement behind the streaming leaf's `auto` rule (streaming_preferred in
# lib/leaves/streaming.cpp): `prism leaves --streaming`, one thread, prism's streaming
# kernel against its OpenBLAS leaf (the private ILP64 copy) on leaves with m, n <= 16,
# all four types, NN, TN and NT. It runs twice: with prism's OpenBLAS copy on its AVX2
# kernels (PRISM_LEAF_KERNELS=openblas=Haswell, what this project's machine sets through
# OPENBLAS_CORETYPE) and on the set prism chooses for the CPU (AVX-512 here), so the rule
# holds against OpenBLAS at its best. prism's copies ignore OPENBLAS_CORETYPE, so the
# variable no longer selects the kernels here.
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
  echo "## PRISM_LEAF_KERNELS=openblas=Haswell,blis=auto (the AVX2 kernels)"
  PRISM_LEAF_KERNELS=openblas=Haswell,blis=auto "$prism" leaves --streaming --reps 5
  echo
  echo "## PRISM_LEAF_KERNELS unset: the OpenBLAS set prism chooses for this CPU"
  env -u PRISM_LEAF_KERNELS "$prism" leaves --streaming --reps 5
  echo
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"
cat "$out"
