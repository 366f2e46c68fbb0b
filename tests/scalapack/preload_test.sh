#!/usr/bin/env bash
# tests/scalapack/preload_test.sh — libprism_scalapack.so as a drop-in for an unmodified
# ScaLAPACK program (ctest entry scalapack_preload).
#
#   preload_test.sh MPIEXEC UNMODIFIED_PDGEMM LIBPRISM_SCALAPACK OUTDIR
#
# Runs unmodified_pdgemm (linked only to MPI and Debian's ScaLAPACK) on 4 ranks twice:
#   1. plainly: ScaLAPACK's pdgemm_, no "prism-scalapack:" line on stderr;
#   2. with LD_PRELOAD=LIBPRISM_SCALAPACK PRISM_STATS=1 PRISM_SCALAPACK_ROUTE=prism (given to
#      the ranks with -x, not to mpiexec itself): pdgemm_ comes from that library, and stderr
#      has one "prism-scalapack: route=prism" line per call and no route=backend line.
#   3. as 2 with PRISM_TOPOLOGY malformed on every rank, then PRISM_NUM_THREADS=0 on world
#      rank 2 alone: those ranks say so once, every call goes to ScaLAPACK's pdgemm_;
#   5. PRISM_STATS on one rank: grid rank 0's setting decides;
#   6. PRISM_SCALAPACK_ROUTE=backend PRISM_VERBOSE=1: one "route backend" line per signature;
#   7. the default route, every call small, with a memory cap no plan fits: each call goes to
#      ScaLAPACK's pdgemm_ as small, decided before any planning (a plan costs milliseconds).
# Each run checks C against a serial loop itself (exit 1 on a mismatch). The two dumps of C
# must be identical: every value is a small integer, so every sum is exact in any order
# (the componentwise error bound is 0). Prints "scalapack_preload: PASS" and exits 0, or
# names what failed and exits 1.
set -u
mpiexec=$1 prog=$2 lib=$3 out=$4
mkdir -p "$out"
rm -f "$out"/plain.* "$out"/prism.*
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run=("$mpiexec" -n 4 --oversubscribe --bind-to none -x OMPI_MCA_mpi_yield_when_idle=1 -x OPENBLAS_NUM_THREADS=1)
fail=0

# fail MESSAGE: reports one failed check.
fail() { echo "scalapack_preload: FAIL: $*"; fail=1; }
# show NAME: prints a run's stdout and stderr (for the log).
show() { echo "--- $1 stdout:"; cat "$out/$1.out"; echo "--- $1 stderr (route lines elided):"; grep -v '^prism-scalapack: route=' "$out/$1.err"; }

env -u LD_PRELOAD -u PRISM_STATS -u PRISM_SCALAPACK_ROUTE \
  "${run[@]}" "$prog" "$out/plain.dump" >"$out/plain.out" 2>"$out/plain.err"
rc=$?
show plain
[ $rc -eq 0 ] || fail "plain run exited $rc"
grep -q 'pdgemm_ from .*libscalapack' "$out/plain.out" || fail "plain run: pdgemm_ is not ScaLAPACK's"
! grep -q 'prism-scalapack:' "$out/plain.err" || fail "plain run printed prism-scalapack lines"

"${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_STATS=1 -x PRISM_SCALAPACK_ROUTE=prism \
  "$prog" "$out/prism.dump" >"$out/prism.out" 2>"$out/prism.err"
rc=$?
show prism
[ $rc -eq 0 ] || fail "preloaded run exited $rc"
grep -q "pdgemm_ from .*$(basename "$lib")" "$out/prism.out" || fail "preloaded run: pdgemm_ is not from $(basename "$lib")"
calls=$(sed -n 's/^unmodified_pdgemm: \([0-9]*\) calls.*/\1/p' "$out/prism.out")
routes=$(grep -c '^prism-scalapack: route=prism' "$out/prism.err")
backends=$(grep -c 'prism-scalapack: route=backend' "$out/prism.err")
echo "--- preloaded run: ${calls:-?} calls, $routes route=prism lines, $backends route=backend; first:"
grep -m1 '^prism-scalapack: route=prism' "$out/prism.err"
[ "$routes" -ge 1 ] || fail "no 'prism-scalapack: route=prism' line on the preloaded run's stderr"
[ "$routes" = "${calls:-x}" ] || fail "$routes route=prism lines for ${calls:-?} calls (one per call expected)"
[ "$backends" -eq 0 ] || fail "$backends calls went to the backend despite PRISM_SCALAPACK_ROUTE=prism"

if [ -s "$out/plain.dump" ] && [ -s "$out/prism.dump" ]; then
  if ! cmp -s "$out/plain.dump" "$out/prism.dump"; then
    fail "C differs between ScaLAPACK and prism (integer data: they must be identical); first differences:"
    diff "$out/plain.dump" "$out/prism.dump" | head -c 2000
  fi
else
  fail "a dump is missing or empty"
fi

# 3. and 4. A bad PRISM_* setting, on every process (PRISM_TOPOLOGY) or on one (PRISM_NUM_THREADS
#    on world rank 2): each such process says so once, every call goes to ScaLAPACK's own
#    pdgemm_ (route=backend), C the same.
for bad in topology threads; do
  if [ $bad = topology ]; then
    "${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_STATS=1 -x PRISM_SCALAPACK_ROUTE=prism -x PRISM_TOPOLOGY='garbage:::' \
      "$prog" "$out/$bad.dump" >"$out/$bad.out" 2>"$out/$bad.err"
    rc=$? want=4 var=PRISM_TOPOLOGY
  else
    "${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_STATS=1 -x PRISM_SCALAPACK_ROUTE=prism \
      sh -c '[ "$OMPI_COMM_WORLD_RANK" = 2 ] && export PRISM_NUM_THREADS=0; exec "$0" "$@"' "$prog" "$out/$bad.dump" \
      >"$out/$bad.out" 2>"$out/$bad.err"
    rc=$? want=1 var=PRISM_NUM_THREADS
  fi
  show $bad
  [ $rc -eq 0 ] || fail "bad $var: exited $rc"
  said=$(grep -c "^prism: $var: .*; recursion off, every call of its grids goes to ScaLAPACK's own routine" "$out/$bad.err")
  [ "$said" = $want ] || fail "bad $var: said by $said processes, $want expected"
  backend=$(grep -c '^prism-scalapack: route=backend .*reason=".*a bad PRISM_\* setting on a grid process"' "$out/$bad.err")
  [ "$backend" = "${calls:-x}" ] || fail "bad $var: $backend route=backend lines for ${calls:-?} calls"
  ! grep -q '^prism-scalapack: route=prism' "$out/$bad.err" || fail "bad $var: a call took route=prism"
  cmp -s "$out/plain.dump" "$out/$bad.dump" || fail "bad $var: C differs from ScaLAPACK's"
done

# 5. PRISM_STATS on world rank 2 alone (its line's reductions are collective): grid rank 0's
#    setting decides for every process, so no line, no abort, C the same.
"${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_SCALAPACK_ROUTE=prism \
  sh -c '[ "$OMPI_COMM_WORLD_RANK" = 2 ] && export PRISM_STATS=1; exec "$0" "$@"' "$prog" "$out/stats.dump" \
  >"$out/stats.out" 2>"$out/stats.err"
rc=$?
show stats
[ $rc -eq 0 ] || fail "PRISM_STATS on one rank: exited $rc"
! grep -q '^prism-scalapack: route=' "$out/stats.err" || fail "PRISM_STATS on rank 2 only: a route line (rank 0's setting decides)"
cmp -s "$out/plain.dump" "$out/stats.dump" || fail "PRISM_STATS on one rank: C differs from ScaLAPACK's"

# 6. PRISM_SCALAPACK_ROUTE=backend with PRISM_VERBOSE=1: grid process 0 names the route once
#    per call signature, as on the prism route; C the same.
"${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_SCALAPACK_ROUTE=backend -x PRISM_VERBOSE=1 \
  "$prog" "$out/verbose.dump" >"$out/verbose.out" 2>"$out/verbose.err"
rc=$?
show verbose
[ $rc -eq 0 ] || fail "ROUTE=backend VERBOSE=1: exited $rc"
lines=$(grep -c '^prism-scalapack: PDGEMM .* grid: route backend (PRISM_SCALAPACK_ROUTE=backend)$' "$out/verbose.err")
[ "$lines" -ge 1 ] || fail "ROUTE=backend VERBOSE=1: no 'route backend' line"
[ -z "$(grep '^prism-scalapack: PDGEMM' "$out/verbose.err" | sort | uniq -d)" ] || fail "ROUTE=backend VERBOSE=1: a signature named twice"
cmp -s "$out/plain.dump" "$out/verbose.dump" || fail "ROUTE=backend VERBOSE=1: C differs from ScaLAPACK's"

# 7. The default route (auto) with PRISM_MAX_MEMORY=1K, under which planning refuses every
#    call: these calls are below the route's 5e7 flops, so each is sent to ScaLAPACK's own
#    pdgemm_ as small without being planned (the reason says "small", never "no plan"); C the same.
"${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_STATS=1 -x PRISM_SCALAPACK_ROUTE=auto -x PRISM_MAX_MEMORY=1K \
  "$prog" "$out/auto.dump" >"$out/auto.out" 2>"$out/auto.err"
rc=$?
show auto
[ $rc -eq 0 ] || fail "route auto, small calls: exited $rc"
small=$(grep -c '^prism-scalapack: route=backend .*reason="small: ' "$out/auto.err")
others=$(grep '^prism-scalapack: route=backend ' "$out/auto.err" | grep -vc 'reason="small: ')
[ "$small" -ge 1 ] && [ "$others" -eq 0 ] ||
  fail "route auto, small calls: $small route=backend lines say small, $others another reason (planned first?)"
cmp -s "$out/plain.dump" "$out/auto.dump" || fail "route auto, small calls: C differs from ScaLAPACK's"

if [ $fail -eq 0 ]; then
  echo "scalapack_preload: PASS ($(wc -l <"$out/plain.dump") dump lines identical, $routes calls on route=prism)"
fi
exit $fail
