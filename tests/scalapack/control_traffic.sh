#!/usr/bin/env bash
# tests/scalapack/control_traffic.sh — ctest control_traffic: what MPI carries for prism,
# counted from outside, is what prism counts, and its collective part does not grow with P.
#
#   control_traffic.sh MPIEXEC PROGRAM COUNTER_LIB
#
# Runs PROGRAM (control_traffic.cpp: one measured pdgemm_ of libprism_scalapack and one
# prism::dist::gemm, each checked against the PMPI counter COUNTER_LIB preloaded) on 2 and on
# 8 ranks. Each run must pass its own checks (point-to-point bytes = prism's count,
# collective bytes = prism's control bytes, every rank); then the collective bytes per rank
# of one call must be the same at np 8 as at np 2, for each routine: the argument
# agreement, the failure checks and PRISM_STATS's reductions are a fixed number of words
# whatever P, where an allgather of a few words per process would grow by those words for
# every process added. Prints "control_traffic: PASS" and exits 0, or names what failed and
# exits 1.
set -uo pipefail
mpiexec=$1 program=$2 counter=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
declare -A per_call
for np in 2 8; do
  out=$("$mpiexec" -n "$np" --oversubscribe --bind-to none -x LD_PRELOAD="$counter" -x PRISM_STATS=1 \
        -x PRISM_SCALAPACK_ROUTE=prism -x PRISM_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
        -x OMPI_MCA_mpi_yield_when_idle=1 "$program" 2>&1)
  rc=$?
  echo "$out" | grep '^control_traffic:'
  last=$(echo "$out" | grep -E "^control_traffic: np $np: pdgemm_ [0-9]+ dist [0-9]+ collective bytes per rank per call: PASS$")
  if [ "$rc" -ne 0 ] || [ -z "$last" ]; then
    echo "control_traffic: FAIL: the run on $np ranks did not pass (exit status $rc); its last lines:"
    echo "$out" | tail -20
    status=1
    continue
  fi
  per_call[$np]=$(echo "$last" | sed -E 's/.*pdgemm_ ([0-9]+) dist ([0-9]+) .*/\1 \2/')
done
if [ "$status" -eq 0 ]; then
  read -r g2 d2 <<<"${per_call[2]}"
  read -r g8 d8 <<<"${per_call[8]}"
  echo "control_traffic: collective bytes per rank per call: pdgemm_ $g2 at np 2, $g8 at np 8; prism::dist::gemm $d2 at np 2, $d8 at np 8"
  [ "$g8" = "$g2" ] || { echo "control_traffic: FAIL: pdgemm_'s collective bytes per rank grow with P"; status=1; }
  [ "$d8" = "$d2" ] || { echo "control_traffic: FAIL: prism::dist::gemm's collective bytes per rank grow with P"; status=1; }
fi
[ "$status" -eq 0 ] && echo "control_traffic: PASS"
exit "$status"
