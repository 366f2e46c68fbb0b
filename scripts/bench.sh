#!/usr/bin/env bash
# Command 1 of the README: installs what is missing, builds (Release), and runs prism's
# main job: the benchmark of prism against threaded OpenBLAS and BLIS on the CARMA shapes,
# best of N, then prints the markdown table.
#
#   bash scripts/bench.sh              quick set (a few minutes on 2 cores)
#   bash scripts/bench.sh full         the full shape set of the README (much longer)
#   bash scripts/bench.sh dropin       the drop-in libprism_blas vs prism and its backend
#   bash scripts/bench.sh dropin-cubes the dropin set's cubes <= 128 again: prism_blas and
#                                      openblas only, 15 repetitions in random interleaved order
#   bash scripts/bench.sh peers        the peers set's shapes, each peer library with its default
#                                      kernel set and with every other set this CPU runs
#                                      (one process per set, interleaved per shape; far
#                                      longer than quick)
#   bash scripts/bench.sh --clean-env peers
#                                      the same with OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE and
#                                      BLIS_ARCH_TYPE removed from the environment (as on a
#                                      machine that sets none of them)
#   bash scripts/bench.sh [--clean-env] gram
#                                      the gram set's A.T @ A shapes (?syrk / ?herk): prism against
#                                      OpenBLAS and BLIS at every kernel set (bench/gram.py)
# options (before the set):
#   --clean-env              remove those variables from every process (recorded in the JSON)
#   --kernel-sets[=SPEC]     run the peers' other kernel sets too (bench/run.py --kernel-sets):
#                            all (the default of the peers set, and of a bare --kernel-sets),
#                            best (the default of quick and full: each peer also at the set
#                            prism's leaves run here, where its default is another) or a list
#                            such as openblas:SkylakeX,blis:zen3
#   --no-kernel-sets         the default kernel sets only (the default of the dropin and gram sets)
#   PRISM_BENCH_REPS=7 bash scripts/bench.sh
#   PRISM_BENCH_MIN_TIME=0.3 bash scripts/bench.sh dropin   (seconds per repetition)
#   PRISM_BENCH_PICK=4x4x16777216,32x32x4194304:TN bash scripts/bench.sh --clean-env peers
#                            only those shapes of the set (bench/run.py --pick; needs the
#                            kernel sets, as peers has them), e.g. the streaming targets on
#                            a machine where the whole set takes too long
#   PRISM_BENCH_ROUNDS=3 bash scripts/bench.sh --clean-env peers
#                            every process of a shape 3 times, in alternating order, best kept
#                            (bench/run.py --rounds; needs the kernel sets): for a machine whose
#                            speed wanders between processes, at 3 times the run's length
#
# Each run lands in a folder of its own, bench/runs/<set>[-clean-env]-<UTC time>/ (ignored by
# git): bench.json (raw), bench.md (table), bench.png (plot), bench.log. A run never writes
# bench/results/, which holds the runs the README quotes; to keep one, record it:
#   bash scripts/record-bench.sh bench/runs/<set>-<UTC time>
set -euo pipefail
cd "$(dirname "$0")/.."
clean=0
sets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --clean-env) clean=1 ;;
    --kernel-sets) sets=all ;;
    --kernel-sets=*) sets=${1#--kernel-sets=} ;;
    --no-kernel-sets) sets=none ;;
    -*) echo "bench.sh: unknown option $1 (see the comment at the top of scripts/bench.sh)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
set_name=${1:-quick}
reps=${PRISM_BENCH_REPS:-5}
set_args=(--set="$set_name")
what="set '${set_name}', best of ${reps}"
if [ "$set_name" = dropin-cubes ]; then  # docs/performance.md "The drop-in"
  reps=${PRISM_BENCH_REPS:-15}
  set_args=(--shapes=16x16x16,32x32x32,64x64x64,96x96x96,128x128x128 --type=both
            --impls=prism_blas,openblas --no-fma --no-bandwidth --min-time=0.2
            --benchmark_enable_random_interleaving=true)
  what="cubes <= 128, prism_blas and openblas only, ${reps} repetitions each in random interleaved order (--benchmark_enable_random_interleaving), best kept"
fi
# The main job times each peer also at its best kernel set when its default is another
# (bench/run.py --kernel-sets best): a peer on weaker kernels than the CPU allows (Debian's
# OpenBLAS 0.3.21 on a CPU newer than it, OPENBLAS_CORETYPE forcing an older set) is named
# in the table and the plot, and the headline ratios divide by its best.
[ -n "$sets" ] || case "$set_name" in peers) sets=all ;; dropin|dropin-cubes|gram) sets=none ;; *) sets=best ;; esac
[ "$sets" = none ] || what="$what, peers also with kernel sets: ${sets} (one process per set, interleaved per shape)"
[ "$clean" = 1 ] && what="$what, clean environment (--clean-env)"
bash scripts/install-deps.sh
build=${PRISM_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPRISM_WITH_TESTS=ON -DPRISM_WITH_BENCH=ON > /dev/null
cmake --build "$build" -j"$(nproc)" --target prism_bench prism_cli $([ "$set_name" = gram ] && echo prism_gram_bench)
now=$(date -u +%s)
run=bench/runs/${set_name}$([ "$clean" = 1 ] && echo -clean-env)-$(date -u -d "@$now" +%Y-%m-%dT%H%M%SZ)
when=$(date -u -d "@$now" '+%Y-%m-%d %H:%M')
mkdir -p bench/runs
mkdir "$run"  # fails rather than reuse the folder of another run started the same second
py=/usr/bin/python3; [ -x "$py" ] || py=python3   # Debian's python3 has matplotlib
if [ "$set_name" = gram ]; then  # the gram set: A.T @ A (?syrk / ?herk), its own driver (bench/gram.py)
  "$py" bench/gram.py --build "$build" --out-dir "$run" --reps "$reps" $([ "$clean" = 1 ] && echo --clean-env)
  for f in "$run"/gram.*; do mv "$f" "$run/bench.${f##*.}"; done
  echo "bench.sh: table $run/bench.md, plot $run/bench.png, raw $run/bench.json"
  echo "bench.sh: to keep this run for docs/performance.md: bash scripts/record-bench.sh $run"
  exit 0
fi
out=$run/bench
cpu=$(grep -m1 -E 'model name|^Model|^CPU part' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//' || true)
machine="${cpu:-$(uname -m)}, $(nproc) cores"
extra=() run_pick=()
[ -n "${PRISM_BENCH_MIN_TIME:-}" ] && extra+=(--min-time="$PRISM_BENCH_MIN_TIME")
[ -n "${PRISM_BENCH_PICK:-}" ] && run_pick=(--pick "$PRISM_BENCH_PICK") && what="$what, shapes ${PRISM_BENCH_PICK} only"
rounds=${PRISM_BENCH_ROUNDS:-1}
[ "$rounds" = 1 ] || { run_pick+=(--rounds "$rounds"); what="$what, ${rounds} rounds per shape (best kept)"; }
run_args=(--bench "$build"/bench/prism_bench --out "$out.json" --log "$out.log" --kernel-sets "$sets" "${run_pick[@]}")
[ "$clean" = 1 ] && run_args+=(--clean-env)
status=0
"$py" bench/run.py "${run_args[@]}" -- "${set_args[@]}" --reps="$reps" "${extra[@]}" || status=$?
[ -f "$out.json" ] || { echo "bench.sh: no $out.json (bench/run.py status $status)" >&2; exit "$status"; }
"$py" bench/report.py "$out.json" --md "$out.md" --png "$out.png" \
  --caption "Machine: ${machine}. Run: ${when} UTC, ${what}."
echo
echo "bench.sh: table $out.md, plot $out.png, raw $out.json"
[ "$status" = 0 ] || echo "bench.sh: the benchmark exited with status $status (3: prism's check against OpenBLAS failed; see the table's notes)" >&2
echo "bench.sh: to keep this run for docs/performance.md: bash scripts/record-bench.sh $run"
exit "$status"
