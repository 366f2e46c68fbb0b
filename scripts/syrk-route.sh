#!/usr/bin/env bash
# The measurement behind the drop-in's ?syrk / ?herk routing rule (choose_rank_k in
# lib/dropin/dispatch.cpp: prism takes a rank-k update when k >= n). NumPy's A.T @ A on a
# C-order k x n array calls cblas_dsyrk (RowMajor, Upper, Trans: the column-major dsyrk('L',
# 'N') of the n x k view); this times it with
# libprism_blas.so preloaded, once forced to the backend (PRISM_BLAS_ROUTE=backend: the
# threaded OpenBLAS NumPy would use) and once forced to prism (PRISM_BLAS_ROUTE=prism), best
# of 5, for n from 16 to 1024 and k/n from 1/4 to 32 (k < n: the side the rule leaves to
# the backend), 2 threads, and prints prism's speed-up.
#   bash scripts/syrk-route.sh [--out FILE]   (default bench/results/syrk-route-<UTC date>.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PRISM_BUILD_DIR:-build}
out=bench/results/syrk-route-$(date -u +%F).txt
[ "${1:-}" = "--out" ] && out=$2
lib=$build/libprism_blas.so
[ -f "$lib" ] || { echo "syrk-route: build $build first (libprism_blas.so)" >&2; exit 2; }
py=/usr/bin/python3; [ -x "$py" ] || py=python3
time_one() {  # route n k -> best seconds of A.T @ A
  PRISM_BLAS_ROUTE=$1 LD_PRELOAD=$lib "$py" - "$2" "$3" <<'PY'
import sys, time
import numpy as np
n, k = int(sys.argv[1]), int(sys.argv[2])
A = np.random.default_rng(1).standard_normal((k, n))
best = 1e30
for _ in range(6):
    t = time.perf_counter(); G = A.T @ A; best = min(best, time.perf_counter() - t)
print("%.6g" % best)
PY
}
{
  echo "# drop-in dsyrk routing: NumPy A.T @ A (A k x n, C order) with $lib preloaded, best of 5 after a warm-up"
  echo "# date (UTC): $(date -u '+%F %T'); commit $(git rev-parse --short HEAD); machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset} (the backend OpenBLAS obeys them; prism's leaves do not)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf "%6s %8s %6s %12s %12s %10s\n" n k k/n "backend ms" "prism ms" "speed-up"
  for n in 16 64 256 1024; do
    for r in 1/4 1/2 1 2 4 8 32; do
      num=${r%/*} den=1; [ "$r" = "${r#*/}" ] || den=${r#*/}
      k=$((n * num / den))  # r = 1/4: k = n / 4; r = 8: k = 8 n
      [ $((n * n * k)) -ge 2000000 ] || continue  # below PRISM_SMALL_FLOPS' scale: always the backend
      tb=$(time_one backend $n $k); tp=$(time_one prism $n $k)
      "$py" -c "import sys; n,k,r,b,p=sys.argv[1:]; print('%6s %8s %6s %12.3f %12.3f %10.2f' % (n,k,r,float(b)*1e3,float(p)*1e3,float(b)/float(p)))" $n $k $r "$tb" "$tp"
    done
  done
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
