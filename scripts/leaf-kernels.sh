#!/usr/bin/env bash
# The measurement behind prism's leaf kernel choice and the PRISM_LEAF=auto rule (README
# "Leaf backends"): `prism leaves` (single-threaded OpenBLAS against BLIS on leaf shapes)
# under prism's own choice of kernels, then under each other kernel-set pair prism knows
# for this CPU, one process each, on an idle machine.
#   bash scripts/leaf-kernels.sh [--out FILE] [--reps R]
#   (default bench/results/leaf-kernels-<UTC date>.txt, best of 5)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PRISM_BUILD_DIR:-build}
out=bench/results/leaf-kernels-$(date -u +%F).txt
reps=5
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "leaf-kernels: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
prism=$build/apps/prism
[ -x "$prism" ] || { echo "leaf-kernels: build $build first (target prism_cli)" >&2; exit 2; }
{
  echo "# prism leaf kernels: single-threaded OpenBLAS vs BLIS per kernel set (scripts/leaf-kernels.sh)"
  echo "# date (UTC): $(date -u '+%F %T'); commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lib apps || echo ' (uncommitted changes)')"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset} BLIS_ARCH_TYPE=${BLIS_ARCH_TYPE:-unset}"
  echo "# (prism's leaf copies ignore these unless PRISM_LEAF_KERNELS says host)"
} > "$out"
run() {  # run LABEL TYPES PRISM_LEAF_KERNELS-value
  {
    echo
    echo "## $1: PRISM_LEAF_KERNELS=${3:-unset}, types $2"
    PRISM_LEAF_KERNELS=$3 "$prism" leaves --reps "$reps" --types "$2"
  } >> "$out"
}
run "prism's choice" sdcz ""
run "the libraries' own detection, clean environment" d "openblas=detect,blis=detect"
run "AVX-512 sets" sd "openblas=SkylakeX,blis=skx"
run "AVX2 sets" d "openblas=Haswell,blis=haswell"
run "zen sets" d "openblas=Zen,blis=zen2"
cat "$out"
