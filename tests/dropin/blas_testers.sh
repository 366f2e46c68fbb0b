#!/usr/bin/env bash
# tests/dropin/blas_testers.sh LIBPRISM_BLAS SKIP_CODE [--gpu] [DIR] — the reference BLAS level-3
# testers (LAPACK's BLAS/TESTING ?blat3.f, fetched into DIR by scripts/get-blas-testers.sh;
# default $PRISM_BLAS_TESTING_DIR, else /usr/local/share/prism/blas-testing) run with the
# drop-in preloaded and every call forced through prism's recursion:
#   LD_PRELOAD=LIBPRISM_BLAS PRISM_BLAS_ROUTE=prism PRISM_SMALL_FLOPS=0 PRISM_NUM_THREADS=2
# (route: no call to the backend; small flops 0: no one-leaf shortcut, so even the testers'
# 1 x 1 calls are planned; 2 threads: the plans cut). With --gpu every call goes to the GPU
# level instead, on an emulated device: PRISM_BLAS_ROUTE=gpu PRISM_GPU=emulate:1:64M (one:
# a call there costs about a millisecond of threads and buffers, and the testers make some
# 32,000; test_gpu_plan spreads products over 1-4 devices). Each tester is built with gfortran
# against the system BLAS (-lblas) and reads its .in file as shipped, except that only the
# routines prism takes over are switched on: ?GEMM and ?SYRK, and ?HERK for c and z (the
# others run in the system BLAS anyway). Passes when the summary says PASSED for the
# computational tests and the error exits of each of those routines, nothing failed or is
# suspect, and PRISM_STATS shows their calls in the recursion and none at the backend.
# Exits SKIP_CODE, saying why, when the tester sources or gfortran are missing.
set -uo pipefail
lib=${1:?usage: blas_testers.sh LIBPRISM_BLAS SKIP_CODE [--gpu] [DIR]}
skip=${2:?usage: blas_testers.sh LIBPRISM_BLAS SKIP_CODE [--gpu] [DIR]}
shift 2
route=prism where=recursion settings=(PRISM_BLAS_ROUTE=prism)
if [ "${1:-}" = "--gpu" ]; then
  route=gpu where=gpu settings=(PRISM_BLAS_ROUTE=gpu PRISM_GPU=emulate:1:64M)
  shift
fi
dir=${1:-${PRISM_BLAS_TESTING_DIR:-/usr/local/share/prism/blas-testing}}

for p in s d c z; do
  if [ ! -s "$dir/${p}blat3.f" ] || [ ! -s "$dir/${p}blat3.in" ]; then
    echo "blas_testers: SKIPPED: the reference BLAS testers (${p}blat3.f, ${p}blat3.in) are not in $dir;" \
         "scripts/install-deps.sh (as root) fetches them from Debian's lapack source package (scripts/get-blas-testers.sh)"
    exit "$skip"
  fi
done
command -v gfortran >/dev/null || { echo "blas_testers: SKIPPED: gfortran is not installed"; exit "$skip"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "blas_testers: FAIL: $*"; status=1; }

for p in s d c z; do
  P=$(echo "$p" | tr sdcz SDCZ)
  routines="${P}GEMM ${P}SYRK"
  [ "$p" = c ] || [ "$p" = z ] && routines="$routines ${P}HERK"
  if ! gfortran -O2 -w -o "$work/x${p}blat3" "$dir/${p}blat3.f" -lblas; then
    fail "gfortran could not build ${p}blat3.f against -lblas"
    continue
  fi
  # The .in file as shipped, with the routine lines ("DGEMM  T PUT F FOR NO TEST...")
  # switched to F for the routines prism does not take.
  awk -v keep=" $routines " '
    /^[SDCZ][A-Z0-9]+ +[TF] / { name = $1; flag = index(keep, " " name " ") ? "T" : "F"; sub(/ [TF] /, " " flag " "); }
    { print }' "$dir/${p}blat3.in" >"$work/${p}blat3.in"
  echo "== ${p}blat3: $routines through prism, route $route (the .in lines that run):"
  grep -E '^[SDCZ][A-Z0-9]+ +T ' "$work/${p}blat3.in"
  (cd "$work" && env LD_PRELOAD="$lib" "${settings[@]}" PRISM_SMALL_FLOPS=0 PRISM_NUM_THREADS=2 PRISM_STATS=1 \
     "./x${p}blat3" <"${p}blat3.in" >"${p}.stdout" 2>"${p}.stderr")
  rc=$?
  summary="$work/${p}blat3.out"
  [ -s "$summary" ] || summary="$work/${p}.stdout"
  cat "$summary" "$work/${p}.stderr"
  [ $rc -eq 0 ] || fail "x${p}blat3 exited with $rc"
  for r in $routines; do
    grep -Eq "^ *$r +PASSED THE COMPUTATIONAL TESTS" "$summary" || fail "$r: no 'PASSED THE COMPUTATIONAL TESTS'"
    grep -Eq "^ *$r +PASSED THE TESTS OF ERROR-EXITS" "$summary" || fail "$r: no 'PASSED THE TESTS OF ERROR-EXITS'"
  done
  grep -Eq "FAIL|SUSPECT|\*\*\*\*\*\*" "$summary" && fail "${p}blat3 reports a failure or a suspect result"
  grep -q "END OF TESTS" "$summary" || fail "${p}blat3 did not reach END OF TESTS"
  # PRISM_STATS rows: gemm as "recursion <p>gemm N" (or "gpu <p>gemm N"), syrk/herk as
  # "recursion <p>syrk N" (d, s) or "<p>syrk/<p>herk N" (c, z); no calls of either elsewhere.
  grep -Eq "$where +${p}gemm +[1-9]" "$work/${p}.stderr" || fail "PRISM_STATS shows no ${P}GEMM call on the $where path"
  grep -Eq "$where +${p}syrk(/${p}herk)? +[1-9]" "$work/${p}.stderr" || fail "PRISM_STATS shows no ${P}SYRK/${P}HERK call on the $where path"
  for other in backend recursion gpu; do
    [ "$other" = "$where" ] && continue
    grep -Eq "$other +$p(gemm|syrk(/${p}herk)?) +[1-9]" "$work/${p}.stderr" && fail "PRISM_STATS shows ${P} calls on the $other path"
  done
done
[ $status -eq 0 ] && echo "blas_testers: ?GEMM, ?SYRK, ?HERK passed the reference testers through prism's $where path"
exit $status
