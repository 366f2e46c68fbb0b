#!/usr/bin/env bash
# scripts/cachegrind-study.sh [--l2] [BUILD] — regenerates docs/data-movement.md "Cache misses: prism vs OpenBLAS, measured":
# CARMA's Fig. 3 shape (m = n = 64, k = 524288), one two-large shape and one square, each run
# by prism (one thread) and by plain OpenBLAS (one thread) under valgrind's cache simulator
# (scripts/cachegrind_study.py), measured D1 and LL misses beside prism's prediction and the
# sequential lower bound, with D1 and LL = the topology's first and last levels as hwloc
# reports them. Writes bench/results/cache-misses-DATE.{md,json,png}. Takes ~15 minutes on
# this machine when idle (valgrind runs ~50x slower). With --l2 it also simulates the L2 as
# LL (valgrind has two levels) into cache-misses-DATE-l2.*, as long again.
set -euo pipefail
cd "$(dirname "$0")/.."
l2=0
if [ "${1:-}" = "--l2" ]; then l2=1; shift; fi
build=${1:-build}
bash scripts/install-deps.sh
if [ ! -x "$build/bench/prism_cachegrind_driver" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_BENCH=ON
  cmake --build "$build" -j"$(nproc)" --target prism_cachegrind_driver
fi
shapes=${PRISM_STUDY_SHAPES:-64x64x524288,2000x2000x64,1000x1000x1000}
out=bench/results/cache-misses-$(date -u +%Y-%m-%d)
/usr/bin/python3 scripts/cachegrind_study.py --build "$build" --shapes "$shapes" \
  --md "$out.md" --json "$out.json" --png "$out.png"
echo "cachegrind-study: wrote $out.{md,json,png}"
if [ "$l2" = 1 ]; then
  /usr/bin/python3 scripts/cachegrind_study.py --build "$build" --shapes "$shapes" --ll-level 2 \
    --md "$out-l2.md" --json "$out-l2.json" --png "$out-l2.png"
  echo "cachegrind-study: wrote $out-l2.{md,json,png}"
fi
