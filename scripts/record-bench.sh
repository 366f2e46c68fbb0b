#!/usr/bin/env bash
# Records one benchmark run for docs/performance.md: copies a run folder that scripts/bench.sh wrote,
# bench/runs/<set>-<UTC time>/bench.{json,md,png}, to bench/results/<set>-<UTC time>.{json,md,png}
# (commit those). A recorded result is never overwritten: the script refuses instead.
#   bash scripts/record-bench.sh bench/runs/quick-2026-11-22T083412Z
# then, to put its table and plot into docs/performance.md:
#   bash scripts/performance-figures.sh bench/results/quick-2026-11-22T083412Z
set -euo pipefail
usage="usage: record-bench.sh bench/runs/<set>-<UTC time>"
[ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }
run=$(cd "$1" 2>/dev/null && pwd) || { echo "record-bench: no folder '$1' ($usage)" >&2; exit 2; }
cd "$(dirname "$0")/.."
[ -f "$run/bench.json" ] && [ -f "$run/bench.md" ] ||
  { echo "record-bench: $run has no bench.json and bench.md (not a folder scripts/bench.sh wrote)" >&2; exit 2; }
dest=bench/results/$(basename "$run")
for ext in json md png; do
  [ -e "$dest.$ext" ] && { echo "record-bench: $dest.$ext exists; recorded results are never overwritten" >&2; exit 1; }
done
mkdir -p bench/results
for ext in json md png; do
  [ -f "$run/bench.$ext" ] && cp --no-clobber "$run/bench.$ext" "$dest.$ext"
done
echo "record-bench: recorded $dest.{json,md$([ -f "$dest.png" ] && echo ,png)}"
echo "record-bench: to show it in docs/performance.md: bash scripts/performance-figures.sh $dest"
