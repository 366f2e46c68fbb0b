#!/usr/bin/env bash
# The rank level's two planning targets, timed as a user would: each `prism plan` command
# run 5 times, one process at a time, under /usr/bin/time (wall seconds, user seconds,
# peak resident KB). Writes bench/results/rank-plan-targets-<UTC stamp>.txt with the
# machine, date, commit and environment. With --against OLD, each run of prism is followed
# by one of OLD (another build's prism tool), so the two compare under the same load.
# With --capped, instead: the cost of planning under a memory cap that forces many
# rank-level phases (each command once; writes rank-plan-capped-<UTC stamp>.txt).
#
#   bash scripts/rank-plan-targets.sh [--prism build/apps/prism] [--against OLD] [--capped]
set -euo pipefail
cd "$(dirname "$0")/.."
prism=build/apps/prism
against=
name=targets runs=5
cmds=("65536 65536 65536 --ranks 16384" "1024 1024 1024 --ranks 1024")
title="the two planning targets (5 runs each"
note="targets: 65536^3 on 16384 ranks under 1 s and 256 MB; 1024^3 on 1024 under 0.1 s"
while [ $# -gt 0 ]; do
  case $1 in
    --prism) prism=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    --capped)
      # 4096^2 x 1,000,003 complex: the floor (A, B, C over the ranks) is 64 MB at 1,024
      # ranks and 14.4 MB at 4,568; each cap above it needs more phases than the last.
      name=capped runs=1 title="planning under tight memory caps (1 run each"
      note="the cost of the phase ladder: each rung scores its plans exactly, O(phases x ranks)"
      cmds=()
      cmds+=("4096 4096 1000003 --type c --ranks 1024 --summary")
      for cap in 80M 70M 66M; do cmds+=("4096 4096 1000003 --type c --ranks 1024 --max-memory $cap --summary"); done
      cmds+=("4096 4096 1000003 --type c --ranks 4568 --summary")
      for cap in 30M 15500000; do cmds+=("4096 4096 1000003 --type c --ranks 4568 --max-memory $cap --summary"); done
      cmds+=("4096 4096 1000003 --type c --ranks 4568 --min-memory --summary")
      shift ;;
    *) echo "usage: $0 [--prism PATH] [--against OLD] [--capped]" >&2; exit 2 ;;
  esac
done
# One `prism plan $cmd` run of tool $1: wall, user and peak resident size (and, under a
# cap, the plan's reason: how many phases it took).
timed() {
  local t
  t=$(mktemp)
  if [ "$name" = capped ]; then
    /usr/bin/time -o "$t" -f "wall %e s  user %U s  peak %M KB" "$1" plan $cmd 2>/dev/null |
      { grep -o 'so [0-9]* rank-level dfs phases on [mnk]\|least footprint per rank[^;]*phases)' || true; } | tr '\n' ' '
  else
    /usr/bin/time -o "$t" -f "wall %e s  user %U s  peak %M KB" "$1" plan $cmd >/dev/null 2>&1 || true
  fi
  tail -n 1 "$t"
  rm -f "$t"
}
stamp=$(date -u +%Y-%m-%dT%H%MZ)
out=bench/results/rank-plan-$name-$stamp.txt
{
  echo "# prism plan --ranks: $title, /usr/bin/time: wall s, user s, peak KB)"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- lib include apps || echo ' (uncommitted changes)')"
  echo "# prism: $prism (checkout $(git -C "$(dirname "$prism")" rev-parse --show-toplevel 2>/dev/null || echo none) at $(git -C "$(dirname "$prism")" rev-parse --short HEAD 2>/dev/null || echo unknown), built $(date -u -r "$prism" +%Y-%m-%dT%H:%M:%SZ))"
  echo "# environment: $(env | grep -E '^(PRISM_|OPENBLAS_|OMP_|HWLOC_)' | tr '\n' ' ' || true)"
  [ -n "$against" ] && echo "# against: $against (checkout $(git -C "$(dirname "$against")" rev-parse --show-toplevel 2>/dev/null || echo none) at $(git -C "$(dirname "$against")" rev-parse --short HEAD 2>/dev/null || echo unknown)), each run right after prism's"
  for cmd in "${cmds[@]}"; do
    echo "## prism plan $cmd   ($note)"
    for ((i = 0; i < runs; ++i)); do
      echo "prism    $(timed "$prism")"
      [ -z "$against" ] || echo "against  $(timed "$against")"
    done
  done
} | tee "$out"
echo "wrote $out"
