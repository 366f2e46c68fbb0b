#!/usr/bin/env bash
# The measurement behind libprism_scalapack's auto routing floor (docs/distributed.md,
# "Behind ScaLAPACK's p?gemm_"): at np 2 (one rank per core, 1 x 2 grid, NB 32, OPENBLAS_NUM_THREADS=1),
# the unmodified ScaLAPACK program prism_pdgemm_bench with prism preloaded, once with
# PRISM_SCALAPACK_ROUTE=backend (Debian's pdgemm_ behind prism's argument check) and once
# with =prism, best of 20 repetitions, on small and medium shapes, alternating per shape.
#   bash scripts/scalapack-route.sh [--out FILE]   (default bench/results/scalapack-route-<UTC date>.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PRISM_BUILD_DIR:-build}
out=bench/results/scalapack-route-$(date -u +%F).txt
[ "${1:-}" = "--out" ] && out=$2
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
lib=$PWD/$build/libprism_scalapack.so
bench=$build/bench/prism_pdgemm_bench
[ -f "$lib" ] && [ -x "$bench" ] || { echo "scalapack-route: build $build first (prism_scalapack, prism_pdgemm_bench)" >&2; exit 2; }
{
  echo "# libprism_scalapack routing measurement: pdgemm_ at np 2, 1 x 2 grid, NB 32, best of 20"
  echo "# date (UTC): $(date -u '+%F %T'); commit $(git rev-parse --short HEAD)"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}"
  printf '%-18s %14s %14s %8s\n' shape backend_s prism_s prism/backend
} > "$out"
for shape in "64 64 64" "128 128 128" "256 256 256" "384 384 384" "512 512 512" "64 64 8192" "32 32 65536" "1024 1024 1024"; do
  t() {
    mpirun -np 2 --bind-to core -x OPENBLAS_NUM_THREADS=1 -x PRISM_NUM_THREADS=1 -x LD_PRELOAD="$lib" \
      -x PRISM_SCALAPACK_ROUTE="$1" "$bench" $shape --nb 32 --grid 1x2 --reps 20 2>/dev/null |
      sed -n 's/.*"best_s":\([0-9.e-]*\).*/\1/p'
  }
  b=$(t backend); p=$(t prism)
  # prism_s / backend_s (awk: the times come in scientific notation, which bc cannot read)
  printf '%-18s %14s %14s %8s\n' "${shape// /x}" "$b" "$p" "$(awk -v p="$p" -v b="$b" 'BEGIN { printf "%.2f", p / b }')" >> "$out"
done
cat "$out"
