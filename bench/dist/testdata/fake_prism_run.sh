#!/usr/bin/env bash
# TEST FIXTURE, NOT prism: stands in for `prism run M N K --threads T --reps R --json` under
# mpirun so scripts/bench-dist.sh and bench/dist/report.py can be exercised before the real
# `prism run` exists:
#   bash scripts/bench-dist.sh --quick --prism bench/dist/testdata/fake_prism_run.sh
# Rank 0 prints one line with the fields `prism run --json` will have, made-up numbers from
# simple formulas, and "fixture":true so the report marks the whole run as a fixture.
set -euo pipefail
[ "${1:-}" = run ] || { echo "fake_prism_run: only 'run M N K ...'" >&2; exit 2; }
m=$2 n=$3 k=$4
threads=1 reps=1
shift 4
while [ $# -gt 0 ]; do
  case "$1" in --threads) threads=$2; shift ;; --reps) reps=$2; shift ;; esac
  shift
done
np=${OMPI_COMM_WORLD_SIZE:-1}
rank=${OMPI_COMM_WORLD_RANK:-0}
sleep 0.2
[ "$rank" = 0 ] || exit 0
awk -v m="$m" -v n="$n" -v k="$k" -v P="$np" -v T="$threads" 'BEGIN {
  # P prime above 3: pretend one rank idles
  Pu = P; prime = (P > 3); for (d = 2; d * d <= P; d++) if (P % d == 0) prime = 0
  if (prime) Pu = P - 1
  small = m * n; if (m * k < small) small = m * k; if (n * k < small) small = n * k
  b3 = 3 * (m * n * k / P) ^ (2 / 3) - (m * n + m * k + n * k) / P
  b1 = small * (P - 1) / P
  bound = 8e-6 * (b3 > 0 ? b3 : b1)   # made up: not the bound prism will report
  pred = bound * (prime ? 1.9 : 1.25)
  recv = pred * 1.02
  s = 2 * m * n * k / (P * 30e9)
  printf "{\"tool\":\"prism_run\",\"np\":%d,\"ranks_used\":%d,\"grid\":\"fake %dx1x1\",\"type\":\"d\",", P, Pu, Pu
  printf "\"m\":%d,\"n\":%d,\"k\":%d,\"threads\":%d,\"best_s\":%.4g,\"gflops\":%.4g,", m, n, k, T, s, 2 * m * n * k / s * 1e-9
  printf "\"recv_max_MB\":%.4g,\"recv_mean_MB\":%.4g,\"pred_max_MB\":%.4g,\"pred_mean_MB\":%.4g,", recv, recv * 0.9, pred, pred * 0.9
  printf "\"bound_MB\":%.4g,\"msgs_max\":%d,\"check\":\"skipped\",\"fixture\":true}\n", bound, 2 * Pu
}'
