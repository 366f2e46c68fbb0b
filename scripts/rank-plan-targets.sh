#!/usr/bin/env bash
# The rank level's two planning targets, timed as a user would: each `prism plan` command
# run 5 times, one process at a time, under /usr/bin/time (wall seconds, user seconds,
# peak resident KB). Writes bench/results/rank-plan-targets-<UTC stamp>.txt with the
# machine, date, commit and environment. With --against OLD, each run of prism is followed
# by one of OLD (another build's prism tool), so the two compare under the same load.
#
#   bash scripts/rank-plan-targets.sh [--prism build/apps/prism] [--against OLD]
set -euo pipefail
cd "$(dirname "$0")/.."
prism=build/apps/prism
against=
while [ $# -gt 0 ]; do
  case $1 in
    --prism) prism=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    *) echo "usage: $0 [--prism PATH] [--against OLD]" >&2; exit 2 ;;
  esac
done
# One `prism plan $cmd` run of tool $1: wall, user and peak resident size.
timed() { /usr/bin/time -f "wall %e s  user %U s  peak %M KB" "$1" plan $cmd 2>&1 >/dev/null | tail -n 1; }
stamp=$(date -u +%Y-%m-%dT%H%MZ)
out=bench/results/rank-plan-targets-$stamp.txt
{
  echo "# prism plan --ranks: the two planning targets (5 runs each, /usr/bin/time: wall s, user s, peak KB)"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- lib include apps || echo ' (uncommitted changes)')"
  echo "# prism: $prism (checkout $(git -C "$(dirname "$prism")" rev-parse --show-toplevel 2>/dev/null || echo none) at $(git -C "$(dirname "$prism")" rev-parse --short HEAD 2>/dev/null || echo unknown), built $(date -u -r "$prism" +%Y-%m-%dT%H:%M:%SZ))"
  echo "# environment: $(env | grep -E '^(PRISM_|OPENBLAS_|OMP_|HWLOC_)' | tr '\n' ' ' || true)"
  [ -n "$against" ] && echo "# against: $against (checkout $(git -C "$(dirname "$against")" rev-parse --show-toplevel 2>/dev/null || echo none) at $(git -C "$(dirname "$against")" rev-parse --short HEAD 2>/dev/null || echo unknown)), each run right after prism's"
  for cmd in "65536 65536 65536 --ranks 16384" "1024 1024 1024 --ranks 1024"; do
    echo "## prism plan $cmd   (targets: 65536^3 on 16384 ranks under 1 s and 256 MB; 1024^3 on 1024 under 0.1 s)"
    for i in 1 2 3 4 5; do
      echo "prism    $(timed "$prism")"
      [ -z "$against" ] || echo "against  $(timed "$against")"
    done
  done
} | tee "$out"
echo "wrote $out"
