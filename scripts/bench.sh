#!/usr/bin/env bash
# Command 1 of the README: installs what is missing, builds (Release), and runs prism's
# main job: the benchmark of prism against threaded OpenBLAS and BLIS on the CARMA shapes,
# in one process, best of N, then prints the markdown table.
#
#   bash scripts/bench.sh              quick set (a few minutes on 2 cores)
#   bash scripts/bench.sh full         the full shape set of the README (much longer)
#   bash scripts/bench.sh dropin       the drop-in libprism_blas vs prism and its backend
#   PRISM_BENCH_REPS=7 bash scripts/bench.sh
#   PRISM_BENCH_MIN_TIME=0.3 bash scripts/bench.sh dropin   (seconds per repetition)
#
# Results land in bench/results/<set>-<date>.{json,md,png}.
set -euo pipefail
cd "$(dirname "$0")/.."
set_name=${1:-quick}
reps=${PRISM_BENCH_REPS:-5}
bash scripts/install-deps.sh
build=${PRISM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_TESTS=ON -DPRISM_WITH_BENCH=ON > /dev/null
cmake --build "$build" -j"$(nproc)" --target prism_bench prism_cli
mkdir -p bench/results
stamp=$(date -u +%Y-%m-%d)
out=bench/results/${set_name}-${stamp}
cpu=$(grep -m1 -E 'model name|^Model|^CPU part' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//' || true)
machine="${cpu:-$(uname -m)}, $(nproc) cores"
extra=()
[ -n "${PRISM_BENCH_MIN_TIME:-}" ] && extra+=(--min-time="$PRISM_BENCH_MIN_TIME")
"$build"/bench/prism_bench --set="$set_name" --reps="$reps" "${extra[@]}" \
  --benchmark_out="$out.json" --benchmark_out_format=json > "$out.log"
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's python3 has matplotlib
"$py" bench/report.py "$out.json" --md "$out.md" --png "$out.png" \
  --caption "Machine: ${machine}. Run: ${stamp} (UTC), set '${set_name}', best of ${reps}."
echo
echo "bench.sh: table $out.md, plot $out.png, raw $out.json"
