#!/usr/bin/env bash
# tests/fault/run_fault.sh MPIEXEC NP PROGRAM MODE FAULT — one fault test: runs
# PROGRAM (fault_rank) on NP oversubscribed ranks in MODE (dist: prism::dist::gemm; pgemm:
# the ScaLAPACK drop-in's prism route) with FAULT:
#   rank:P:alloc|setup|nan      the test-only hook PRISM_TEST_FAULT fails process P's local
#                               step (lib/mpi/rank_exchange.cpp);
#   kill:P:S                    process S stalls in its local step (hook rank:S:stall) and,
#                               once every rank is in the call, process P gets SIGKILL
#                               (S = 0: rank 0 has work in every plan, so it stalls).
# Passes when every rank has ended within 30 s of the fault (launch for a hook, the kill
# for SIGKILL), the launcher exits non-zero, no rank returned "ok", and:
#   dist + hook: every rank recorded the same agreed error naming process P;
#   pgemm + hook: process P printed prism-scalapack's one line before MPI_Abort;
#   kill: the launcher reports the killed process.
set -uo pipefail
mpiexec=$1 np=$2 program=$3 mode=$4 fault=$5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
log=$dir/log
fail() { echo "run_fault: FAIL: $*"; cat "$log"; exit 1; }
export FAULT_DIR=$dir OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OPENBLAS_NUM_THREADS=1 PRISM_NUM_THREADS=1 PRISM_SCALAPACK_ROUTE=prism
case $fault in
  rank:*) export PRISM_TEST_FAULT=$fault; victim=${fault#rank:}; victim=${victim%%:*}; calls=3 ;;
  kill:*) victim=${fault#kill:}; victim=${victim%%:*}; stall=${fault##*:}; export PRISM_TEST_FAULT=rank:$stall:stall; calls=3 ;;
  *) echo "run_fault: FAULT must be rank:P:alloc|setup|nan or kill:P:S" >&2; exit 2 ;;
esac
start=$(date +%s%N)
# The launcher gets 60 s before the script's own timeout ends it (a hang shows as > 30 s).
timeout -s KILL 60 "$mpiexec" -n "$np" --oversubscribe --bind-to none "$program" "$mode" "$calls" >"$log" 2>&1 &
launcher=$!
if [[ $fault == kill:* ]]; then
  for _ in $(seq 600); do  # every rank in its first call (up to 30 s)
    n=$(ls "$dir"/incall.* 2>/dev/null | wc -l)
    [ "$n" -eq "$np" ] && break
    sleep 0.05
  done
  [ "$n" -eq "$np" ] || { kill -9 $launcher; fail "only $n of $np ranks reached the call"; }
  sleep 0.5
  pid=$(cat "$dir/pid.$victim")
  kill -9 "$pid" || fail "could not kill rank $victim (pid $pid)"
  start=$(date +%s%N)
fi
wait $launcher
rc=$?
pids=()
for r in $(seq 0 $((np - 1))); do
  [ -f "$dir/pid.$r" ] || fail "rank $r never started"
  pids+=("$(cat "$dir/pid.$r")")
done
# Every rank's process has ended (a zombie counts as ended); the launcher may return a
# moment before the last of them is gone, so they get until 30 s after the fault.
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
while :; do
  left=()
  for r in $(seq 0 $((np - 1))); do alive "${pids[$r]}" && left+=("$r"); done
  [ ${#left[@]} -eq 0 ] && break
  (( $(date +%s%N) - start < 30000000000 )) || fail "ranks ${left[*]} still running 30 s after the fault"
  sleep 0.05
done
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
secs=$((ms / 1000)).$(printf '%03d' $((ms % 1000)))
cat "$log"
echo "run_fault: $mode $fault on $np ranks: launcher exit $rc after ${secs} s"
[ "$rc" -ne 0 ] || fail "the launcher exited 0"
(( ms < 30000 )) || fail "the ranks took ${secs} s (> 30 s) to end"
for r in $(seq 0 $((np - 1))); do
  if [ -f "$dir/exit.$r" ] && grep -q '^ok' "$dir/exit.$r"; then fail "rank $r returned normally"; fi
done
case $mode/$fault in
  dist/rank:*)
    for r in $(seq 0 $((np - 1))); do
      [ -f "$dir/exit.$r" ] || fail "rank $r ended without recording the error"
      grep -q "process $victim's local step failed" "$dir/exit.$r" || fail "rank $r: $(cat "$dir/exit.$r")"
    done ;;
  pgemm/rank:*)
    grep -Eiq "^prism-scalapack: pdgemm failed on grid process $victim: process $victim's local step failed: .*; ending the job \\(MPI_Abort\\)$" "$log" ||
      fail "no prism-scalapack line from process $victim" ;;
  */kill:*)
    grep -Eq "signal 9|Killed" "$log" || fail "the launcher did not report the killed rank" ;;
esac
echo "run_fault: PASS: every rank ended within ${secs} s"
