#!/usr/bin/env bash
# scripts/soak.sh [BUILD] [OUTDIR] — the long-run checks (docs/development.md, "Soak"):
#   1. scripts/soak_dropin.py: 10^5 drop-in calls (?gemm/?syrk/?herk, four types, 1-4
#      Python caller threads) under LD_PRELOAD=BUILD/libprism_blas.so, each checked against
#      the backend, RSS after every 10^4 calls; pass: no wrong result, RSS after call 10^5
#      within 5% of RSS after call 10^4;
#   2. BUILD/tests/soak_dist: 10^4 prism::dist::gemm and syrk calls on 4 ranks with changing shapes,
#      each checked, RSS of every rank after every 10^3 calls; pass: no wrong result, every
#      rank's RSS at the end within 5% of its RSS after the first 10^3 calls.
# Writes OUTDIR/soak-dropin-DATE.md and OUTDIR/soak-dist-DATE.md (default bench/results).
# glibc's malloc is pinned to a fixed mmap threshold (MALLOC_MMAP_THRESHOLD_=65536) and two
# arenas, so that freed large NumPy buffers go back to the system and RSS measures what
# the program keeps, not where glibc's adaptive threshold happened to move (the tables say
# so). SOAK_CALLS / SOAK_DIST_CALLS shorten the runs (for a try, not for the record).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-bench/results}
date=$(date -u +%Y-%m-%d)
mkdir -p "$out"
export MALLOC_MMAP_THRESHOLD_=65536 MALLOC_ARENA_MAX=2 OPENBLAS_NUM_THREADS=1 PRISM_NUM_THREADS=${PRISM_NUM_THREADS:-2}
status=0
LD_PRELOAD=$PWD/$build/libprism_blas.so /usr/bin/python3 scripts/soak_dropin.py --calls "${SOAK_CALLS:-100000}" \
  --out "$out/soak-dropin-$date.md" || status=1
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 PRISM_NUM_THREADS=1 \
  mpiexec -n 4 --oversubscribe --bind-to none "$build/tests/soak_dist" "${SOAK_DIST_CALLS:-10000}" "$out/soak-dist-$date.md" ||
  status=1
exit $status
