#!/usr/bin/env bash
# tests/scalapack/pblas_coexistence.sh — loading prism changes nothing in a ScaLAPACK host
# (ctest entry pblas_coexistence; docs/development.md, "Coexistence with host programs").
#
#   pblas_coexistence.sh SKIP_CODE MPIEXEC CLEAN_STACK_LIB INPUT_DIR OUTDIR LIB...
#
# 1. Footprint: no LIB (libprism.so, libprism_blas.so, libprism_scalapack.so) needs
#    libhwy.so.1 or libmpi_cxx.so (whose initializers would run in every host) or exports a
#    symbol of Highway's (hwy::).
# 2. Debian's PBLAS level-3 testers (package scalapack-mpi-test; dpb3tst, zpb3tst, in
#    $PRISM_PBLAS_TESTER_DIR or /usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests/PBLAS), each
#    on Debian's own input (P?BLAS3TST.dat next to it: every routine) and on INPUT_DIR's (the
#    reproduction: PZBLAS3TST.dat tests only PZSYRK and PZHERK, with offsets, odd blocks and
#    complex alpha, beta, on a 2 x 2, 1 x 4, 3 x 1 and 2 x 3 grid; PDBLAS3TST.dat is its real
#    translation for PDSYRK), on as many ranks as the largest grid, run plainly and with each
#    LIB preloaded: the table of passed / failed / skipped per routine must be the plain one,
#    and so must the verdicts the table leaves out, line for line: the error-exit checks
#    ("ERROR CODE RETURNED = X SHOULD HAVE BEEN Y", printed when every process saw a wrong
#    INFO for a bad argument) and the input-only argument checks ("Input-only parameter
#    check: ROUTINE PASSED / FAILED").
#    The testers read one local uninitialized (IERR(5) of p?blas3tst.f, when no routine taking
#    a B operand ran before in that test), so a table can depend on what was left on the
#    stack before main. Each pair therefore also runs with CLEAN_STACK_LIB preloaded (it zeroes
#    that stack, as prism does); where that table differs from the plain one, the plain table
#    is not the tester's to give and the clean-stack one is the reference, and the script
#    says so.
# Exits SKIP_CODE, saying why, when a tester or its input is missing; 0 when every table
# matches (prints "pblas_coexistence: PASS"); 1 naming each mismatch otherwise.
set -uo pipefail
skip=$1 mpiexec=$2 clean=$3 inputs=$4 out=$5
shift 5
libs=()
for lib in "$@"; do  # a static libprism (BUILD_SHARED_LIBS=OFF) lives in its programs, not in a host
  case "$lib" in
    *.a) echo "pblas_coexistence: $(basename "$lib") is a static library: nothing to preload or load, left out" ;;
    *) libs+=("$lib") ;;
  esac
done
testers=${PRISM_PBLAS_TESTER_DIR:-/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests/PBLAS}
status=0
fail() { echo "pblas_coexistence: FAIL: $*"; status=1; }

# 1. What each library brings into a host.
for lib in "${libs[@]}"; do
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  echo "$(basename "$lib") needs: $needed"
  case " $needed" in
    *" libhwy.so"*) fail "$(basename "$lib") needs libhwy (Highway's dispatch must be compiled in, hidden)" ;;
  esac
  case " $needed" in
    *" libmpi_cxx.so"*) fail "$(basename "$lib") needs libmpi_cxx (MPI's C++ bindings)" ;;
  esac
  if nm -D --defined-only "$lib" | grep -q ' _ZN3hwy'; then
    fail "$(basename "$lib") exports Highway symbols: $(nm -D --defined-only "$lib" | grep ' _ZN3hwy' | head -3 | awk '{print $3}' | tr '\n' ' ')"
  fi
done

# 2. The testers.
for p in d z; do
  P=$(echo "$p" | tr dz DZ)
  for f in "$testers/${p}pb3tst" "$testers/P${P}BLAS3TST.dat" "$inputs/P${P}BLAS3TST.dat"; do
    if [ ! -s "$f" ]; then
      echo "pblas_coexistence: SKIPPED: $f is missing (Debian's PBLAS testers are in the package" \
           "scalapack-mpi-test, which scripts/install-deps.sh installs)"
      exit "$skip"
    fi
  done
done

# ranks INPUT: the largest P x Q among the process grids the input file lists.
ranks() {
  awk '/number of process grids/ { n = $1; getline; for (i = 1; i <= n; i++) p[i] = $i;
       getline; for (i = 1; i <= n; i++) if (p[i] * $i > m) m = p[i] * $i }
       END { print m }' "$1"
}

# table TESTER DIR NAME [PRELOAD]: runs TESTER in DIR (which holds its input) with PRELOAD,
# keeps the whole output as DIR/NAME.out and prints the summary table, one line per routine
# ("PZSYRK 32 16 0 16": total, passed, failed, skipped); returns 1 if the run did not finish.
table() {
  local tester=$1 dir=$2 name=$3 pre=${4:-} np
  np=$(ranks "$dir"/P?BLAS3TST.dat)
  local run=("$mpiexec" -n "$np" --oversubscribe --bind-to none
             -x OMPI_MCA_mpi_yield_when_idle=1 -x OPENBLAS_NUM_THREADS=1)
  [ -n "$pre" ] && run+=(-x LD_PRELOAD="$pre")
  (cd "$dir" && env -u LD_PRELOAD -u PRISM_STATS -u PRISM_VERBOSE -u PRISM_BLAS_ROUTE -u PRISM_SCALAPACK_ROUTE \
     "${run[@]}" "$tester" >"$name.out" 2>&1)
  if grep -q 'cannot be preloaded' "$dir/$name.out"; then
    echo "pblas_coexistence: $pre could not be preloaded" >&2
    return 1
  fi
  grep -q 'End of Tests' "$dir/$name.out" || return 1
  grep -E '^ +\| +P[SDCZ][A-Z0-9]+ ' "$dir/$name.out" | tr -d '|' | tr -s ' ' | sed 's/^ //'
}

# verdicts OUTPUT: the error-exit and input-only check lines of a tester's output, in order,
# blanks squeezed.
verdicts() {
  grep -E 'ERROR CODE RETURNED|Input-only parameter check' "$1" | tr -s ' ' | sed 's/^ //'
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$out"
for p in d z; do
  P=$(echo "$p" | tr dz DZ)
  for input in debian reproduction; do
    dir=$out/${p}-$input
    mkdir -p "$dir"
    if [ "$input" = debian ]; then cp "$testers/P${P}BLAS3TST.dat" "$dir/"; else cp "$inputs/P${P}BLAS3TST.dat" "$dir/"; fi
    tester=$testers/${p}pb3tst
    what="${p}pb3tst on $input's input ($(ranks "$dir/P${P}BLAS3TST.dat") ranks)"
    if ! plain=$(table "$tester" "$dir" plain); then
      fail "$what: the plain run did not finish; its output:"; tail -20 "$dir/plain.out"; continue
    fi
    if ! cleaned=$(table "$tester" "$dir" clean "$clean"); then
      fail "$what: the clean-stack run did not finish; its output:"; tail -20 "$dir/clean.out"; continue
    fi
    echo "--- $what, plain:"
    echo "$plain" | grep -v ' 0 0 0 0$'
    reference=$plain
    if [ "$plain" != "$cleaned" ]; then
      echo "--- $what depends on uninitialized stack: the plain table is not the tester's to give;"
      echo "    the reference is the clean-stack one:"
      echo "$cleaned" | grep -v ' 0 0 0 0$'
      reference=$cleaned
    fi
    said=$(verdicts "$dir/plain.out")
    echo "    plain: $(echo "$said" | grep -c 'Input-only') input-only checks ($(echo "$said" | grep -c 'Input-only.*PASSED') passed)," \
         "$(echo "$said" | grep -c 'ERROR CODE') error-exit checks with a wrong INFO"
    if [ "$said" != "$(verdicts "$dir/clean.out")" ]; then
      fail "$what: the clean-stack run gives other error-exit or input-only verdicts than the plain one:"
      diff <(echo "$said") <(verdicts "$dir/clean.out") | grep '^[<>]' | head -20
    fi
    for lib in "${libs[@]}"; do
      name=$(basename "$lib" .so)
      if ! got=$(table "$tester" "$dir" "$name" "$lib"); then
        fail "$what with $name preloaded did not finish; its output:"; tail -20 "$dir/$name.out"; continue
      fi
      if [ "$got" = "$reference" ]; then
        echo "    $name preloaded: the same table"
      else
        fail "$what with $name preloaded gives another table:"
        diff <(echo "$reference") <(echo "$got") | grep '^[<>]'
      fi
      if [ "$(verdicts "$dir/$name.out")" = "$said" ]; then
        echo "    $name preloaded: the same error-exit and input-only verdicts"
      else
        fail "$what with $name preloaded gives other error-exit or input-only verdicts (first 20 differences):"
        diff <(echo "$said") <(verdicts "$dir/$name.out") | grep '^[<>]' | head -20
      fi
    done
  done
done
[ $status -eq 0 ] && echo "pblas_coexistence: PASS"
exit $status
