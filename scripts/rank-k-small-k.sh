#!/usr/bin/env bash
# The rank-k leaf on small k: `prism bench N N K --syrk/--herk ... --threads 1` with the
# streaming leaf forced, then the OpenBLAS leaf, per type and form, n = 8, 16, 32 and k from
# 16 up (one leaf: the calls are below the small-call threshold or on one thread), and the
# leaf the rule (PRISM_LEAF=auto) picks. The rule's limits come from long k
# (bench/results/leaf-syrk-*.txt); this shows where they hold on short k.
#   bash scripts/rank-k-small-k.sh [PRISM [NAME...]] > bench/results/rank-k-small-k-<UTC time>.txt
# NAMEs (e.g. zsyrk-UT) pick rows of the list at the end; none: every row.
set -euo pipefail
prism=${1:-build/apps/prism}
shift || true
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $("$prism" --version), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}; PRISM_*: $(env | grep '^PRISM_' | sort | tr '\n' ' ' || true)(none if empty)"
echo "# per k: streaming / openblas leaf time per call (best of 3 timings), openblas/streaming (> 1: streaming faster),"
echo "# and [S] or [B]: the leaf PRISM_LEAF=auto picks for the call (\`prism plan\`: streaming or a BLAS leaf)"
time_of() { "$prism" bench "$@" --reps 3 --threads 1 | awk '/^  prism/{print $4, $5}'; }
while read -r name flags; do
  [ -n "$name" ] || continue
  if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
  for n in 8 16 32; do
    line="$name n $n:"
    for k in 16 64 128 256 512 1024 4096 16384; do
      read -r s su < <(time_of $n $n $k $flags --leaf streaming)
      read -r o ou < <(time_of $n $n $k $flags --leaf openblas)
      ratio=$(awk -v s="$s" -v su="$su" -v o="$o" -v ou="$ou" 'function ns(x, u) { return u == "ns" ? x : u == "us" ? x * 1e3 : u == "ms" ? x * 1e6 : x * 1e9 }
                BEGIN { printf "%.2f", ns(o, ou) / ns(s, su) }')
      pick=$("$prism" plan $n $n $k $flags --threads 1 --leaf auto | awk '/^leaf /{print ($2 == "streaming" ? "S" : "B")}')
      line="$line  k $k $s $su / $o $ou $ratio [$pick];"
    done
    echo "$line"
  done
done <<'SHAPES'
dsyrk-UT --syrk UT
dsyrk-UN --syrk UN
ssyrk-UT --syrk UT --type s
zherk-LC --herk LC --type z
cherk-LC --herk LC --type c
zherk-UN --herk UN --type z
cherk-UN --herk UN --type c
zsyrk-UT --syrk UT --type z
csyrk-UT --syrk UT --type c
zsyrk-UN --syrk UN --type z
csyrk-UN --syrk UN --type c
SHAPES
