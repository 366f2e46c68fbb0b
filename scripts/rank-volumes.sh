#!/usr/bin/env bash
# The rank level's volumes and plan time without MPI (bench/rank_volumes.py; docs/distributed-volumes.md).
#
#   bash scripts/rank-volumes.sh [--prism PATH] [--quick] [other options of bench/rank_volumes.py]
#
#   (no mode)   volume table: 5 shapes x P in {192, 768, 1021, 3001, 3072, 12288}
#               -> bench/results/rank-volumes-<UTC stamp>.{md,csv,json,png}
#   --sweep     plan time and peak memory against P (every P <= 64, 100 log-spaced values and the
#               prime below each up to 100,000, on the same shapes, plus the two planning targets)
#               -> bench/results/rank-plan-time-<UTC stamp>.{md,csv,json,png}
#   --full S    every P in 1..100,000 for shape S (--list-shapes); prints a time estimate first
#               (--estimate-only stops there)
#   --quick     2 shapes x 2 P (with --sweep: a sparse sample) -> bench/runs/ (ignored by git)
#   --check     the yardstick code against its reference values
#   --timeout S seconds per prism run (default 120; a run past it is killed and recorded as a timeout)
#
# PATH defaults to build/apps/prism. Runs one prism process at a time. Needs Debian's
# /usr/bin/python3 (NumPy, matplotlib); without matplotlib the PNG is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

prism="build/apps/prism"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prism) prism="$2"; shift 2 ;;
    --prism=*) prism="${1#--prism=}"; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exec /usr/bin/python3 bench/rank_volumes.py --help ;;
    *) args+=("$1"); shift ;;
  esac
done
exec /usr/bin/python3 bench/rank_volumes.py --prism "$prism" "${args[@]+"${args[@]}"}"
