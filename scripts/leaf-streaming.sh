#!/usr/bin/env bash
# The measurement behind the streaming leaf's `auto` rule (streaming_preferred in
# lib/leaf/kernels/auto_rule.cpp): `prism leaves --streaming`, one thread, prism's streaming
# kernel against its OpenBLAS and BLIS leaves (the private copies, on the kernel sets prism
# chooses for the CPU: AVX-512 here, whatever OPENBLAS_CORETYPE / BLIS_ARCH_TYPE say) on
# leaves with m, n <= 128, all four types, NN, TN and NT; str/best divides by the faster
# BLAS leaf. The environment is cleared of PRISM_LEAF_KERNELS so the leaves run prism's
# own choice. --syrk measures the streaming rank-k leaf instead (`prism leaves --syrk`:
# ?syrk / ?herk triangles, upper and lower, trans N and T / C, against the BLAS leaves'
# own ?syrk / ?herk),
# the run behind streaming_rank_k_preferred.
#   bash scripts/leaf-streaming.sh [--syrk] [--types LETTERS] [--out FILE] [--reps R]
#   (default bench/results/leaf-streaming-<UTC date>.txt or leaf-syrk-<UTC date>.txt, best of 3)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PRISM_BUILD_DIR:-build}
out=
reps=3
table=--streaming
types=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift ;;
    --reps) reps=$2; shift ;;
    --syrk) table=--syrk ;;
    --types) types=(--types "$2"); shift ;;
    *) echo "leaf-streaming: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out=bench/results/leaf-${table#--}-$(date -u +%F).txt
prism=$build/apps/prism
[ -x "$prism" ] || { echo "leaf-streaming: build $build first (target prism_cli)" >&2; exit 2; }
dirty=$(git diff --quiet HEAD -- lib apps include 2>/dev/null || echo " (uncommitted changes)")
{
  echo "# streaming leaf vs the OpenBLAS and BLIS leaves, 1 thread: $prism leaves $table ${types[*]} --reps $reps"
  echo "# date (UTC): $(date -u '+%F %T'); commit $(git rev-parse --short HEAD)$dirty"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; caches (getconf, bytes): L1d $(getconf LEVEL1_DCACHE_SIZE), L2 $(getconf LEVEL2_CACHE_SIZE), L3 $(getconf LEVEL3_CACHE_SIZE)"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset} BLIS_ARCH_TYPE=${BLIS_ARCH_TYPE:-unset} (prism's leaf copies ignore them); PRISM_*: $(env | grep '^PRISM_' | grep -v '^PRISM_LEAF_KERNELS=' | sort | tr '\n' ' ' || true)(none if empty)"
  echo "# other load: the machine is shared; each row times OpenBLAS, BLIS and then the streaming leaf back to back, best of $reps each"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  env -u PRISM_LEAF_KERNELS "$prism" leaves "$table" "${types[@]}" --reps "$reps"
  echo
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out"
cat "$out"
