#!/usr/bin/env bash
# tests/scalapack/lapack_testers.sh SKIP_CODE MPIEXEC LIBPRISM_SCALAPACK DIR — ScaLAPACK's
# own LAPACK-level testers (Debian's scalapack-mpi-test, in DIR, e.g.
# /usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests) through libprism_scalapack (ctest entry
# scalapack_lapack_testers). The factorizations and reductions they test call p?gemm_,
# p?syrk_ and p?herk_ on submatrices (IA, JA > 1), of many shapes, block sizes and grids:
# Cholesky (x?llt: p?syrk_ / p?herk_), LU (x?lu), inversion (x?inv), least squares (x?ls),
# tridiagonal, Hessenberg and bidiagonal reduction (x?trd, x?hrd, x?brd), for d and z.
# Each runs on a 2 x 2 grid (its shipped .dat, with that one grid and the condition
# estimators and iterative refinement off: Debian's pdporfs_ hangs in some runs there, with
# or without prism), plainly and with LIBPRISM_SCALAPACK preloaded, PRISM_SCALAPACK_ROUTE=
# prism (every call through prism's rank level) and PRISM_STATS=1 (its lines on stderr,
# apart). Passes when every preloaded run exits 0, reaches "END OF TESTS", runs and skips as
# many tests as the plain run and fails no more of them, and PRISM_STATS shows calls taken
# by prism. Exits SKIP_CODE, saying why, when the testers are not installed.
set -uo pipefail
usage="usage: lapack_testers.sh SKIP_CODE MPIEXEC LIBPRISM_SCALAPACK DIR"
skip=${1:?$usage} mpiexec=${2:?$usage} lib=${3:?$usage} testers=${4:?$usage}
names=(xdllt xzllt xdlu xzlu xdinv xzinv xdls xzls xdtrd xztrd xdhrd xzhrd xdbrd xzbrd)
for t in "${names[@]}"; do
  if [ ! -x "$testers/$t" ]; then
    echo "scalapack_lapack_testers: SKIPPED: $testers/$t is missing (ScaLAPACK's testers are in the package" \
         "scalapack-mpi-test, which scripts/install-deps.sh installs)"
    exit "$skip"
  fi
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run=("$mpiexec" -n 4 --oversubscribe --bind-to none -x OMPI_MCA_mpi_yield_when_idle=1 -x OPENBLAS_NUM_THREADS=1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "scalapack_lapack_testers: FAIL: $*"; status=1; }

# The tester's input: its shipped .dat with one 2 x 2 grid and refinement off. E.g. LLT.dat's
# "4 number of process grids" / "1 2 1 4 2 3 8 values of P" / "1 2 4 1 3 2 1 values of Q"
# becomes "1" / "2" / "2", and "T (T or F) Test Cond. Est. and Iter. Ref." becomes "F".
grid_2x2() {
  awk 'tolower($0) ~ /number of process(or)? grids/ { print "1\t\tnumber of process grids"; print "2\t\tvalues of P";
                                                     print "2\t\tvalues of Q"; getline; getline; next }
       /\(T or F\) Test Cond/ { sub(/^[ \t]*T/, "F") }
       { print }' "$1"
}
# The tester's summary: "<passed> <failed> <skipped>" summed over its result blocks.
counts() {
  awk '/tests completed and passed residual checks/ { p += $1 } /tests completed and failed residual checks/ { f += $1 }
       /tests skipped because of illegal input values/ { s += $1 } END { print p + 0, f + 0, s + 0 }' "$1"
}

taken=0
for t in "${names[@]}"; do
  case $t in
    x?llt) dat=LLT ;; x?lu) dat=LU ;; x?inv) dat=INV ;; x?ls) dat=LS ;; x?trd) dat=TRD ;; x?hrd) dat=HRD ;; x?brd) dat=BRD ;;
  esac
  [ -s "$testers/$dat.dat" ] || { fail "$testers/$dat.dat is missing"; continue; }
  for way in plain prism; do
    mkdir -p "$work/$way-$t"
    grid_2x2 "$testers/$dat.dat" >"$work/$way-$t/$dat.dat"
  done
  (cd "$work/plain-$t" && timeout 120 "${run[@]}" "$testers/$t" >out.txt 2>&1)
  rc_plain=$?
  (cd "$work/prism-$t" && timeout 120 "${run[@]}" -x LD_PRELOAD="$lib" -x PRISM_SCALAPACK_ROUTE=prism -x PRISM_STATS=1 \
     "$testers/$t" >out.txt 2>err.txt)
  rc=$?
  plain=$work/plain-$t/out.txt mine=$work/prism-$t/out.txt
  n=$(grep -c '^prism-scalapack: route=prism' "$work/prism-$t/err.txt")
  taken=$((taken + n))
  echo "scalapack_lapack_testers: $t ($dat.dat, 2 x 2): passed, failed, skipped plainly $(counts "$plain") (exit $rc_plain)," \
       "through prism $(counts "$mine") (exit $rc), $n calls taken by prism"
  [ $rc_plain -eq 0 ] && grep -q "END OF TESTS" "$plain" || { echo "--- $t plainly:"; tail -n 20 "$plain"; fail "$t does not end plainly"; continue; }
  [ $rc -eq 0 ] || fail "$t exits $rc through prism"
  grep -q "END OF TESTS" "$mine" || fail "$t does not reach END OF TESTS through prism"
  read -r p0 f0 s0 <<<"$(counts "$plain")"
  read -r p1 f1 s1 <<<"$(counts "$mine")"
  [ $((p1 + f1)) -eq $((p0 + f0)) ] && [ "$s1" -eq "$s0" ] && [ "$f1" -le "$f0" ] ||
    fail "$t: passed, failed, skipped $p1 $f1 $s1 through prism, $p0 $f0 $s0 plainly"
  [ $status -eq 0 ] || { echo "--- $t through prism:"; tail -n 40 "$mine"; }
done
[ "$taken" -gt 0 ] || fail "PRISM_STATS shows no call taken by prism"
[ $status -eq 0 ] && echo "scalapack_lapack_testers: PASS (${#names[@]} testers on 2 x 2, no more failures through prism than plainly; $taken calls taken by prism)"
exit $status
