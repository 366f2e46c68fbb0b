#!/usr/bin/env bash
# scripts/auto-vs-best.sh [--build DIR] [--reps R] [--confirm C] [--out FILE] [--no-tune] [--rows LIST]
#
# Does prism's `auto` choose well on this machine? For each shape it takes `auto` (the leaf
# rule and cache-cut rule as they stand) and every leaf kind (openblas, blis, streaming) at
# every cache-cut level (PRISM_CACHE_LEVEL 0 = no cache cuts, 1, 2, 3: leaves cut to that
# cache's share), and prints auto / best. It does this twice: with the model's values (no
# machine file: what prism measures at first use, in a cache folder of this run's own,
# measured before the table by `prism tune --first-use`), and
# after `prism tune` with the file it writes (skipped with --no-tune). A
# row passes when auto is within 5% of the best (>= 0.95); the exit status is 1 if any row
# fails. --rows 1,3 runs only those rows of the table (1-based), e.g. for a quick check.
#
# What is timed: the configurations' plans (`prism plan`, or `prism plan --syrk LN` for the
# Gram row) are compared first, and each distinct plan is timed once per round, in R rounds
# (default 3) over all of them, one process of `prism bench` (the Gram row:
# prism_gram_bench) each, best of the rounds. Configurations with the same plan run the
# same code, so they share one timing: when auto's plan is the best plan, auto / best is 1
# by construction, and the table says so ("auto's plan" column). Rounds put every plan
# under the same load, so the ratios compare like with like on a busy machine. The header
# says which machine, caches and environment the run saw; each row, the load average.
# Head to head: the best of several plans' noisy rates is above what that plan runs at (the
# plan picked for its luckiest rounds), so where auto's plan is not the best, the two are
# timed again, alternating, in C fresh rounds (default 5), and the verdict is the ratio of
# those (the "head to head" column); the rounds that picked the best are not reused for it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build reps=3 confirm=5 out="" tune=1 rows="" 
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --confirm) confirm=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-tune) tune=0; shift ;;
    --rows) rows=",$2,"; shift 2 ;;
    *) echo "usage: scripts/auto-vs-best.sh [--build DIR] [--reps R] [--confirm C] [--out FILE] [--no-tune] [--rows LIST]" >&2; exit 2 ;;
  esac
done
prism=$build/apps/prism gram=$build/bench/prism_gram_bench
[ -x "$prism" ] && [ -x "$gram" ] || { echo "auto-vs-best: build $build first (scripts/test.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$out" ] && exec > >(tee "$out")

# GF/s of one configuration: `prism bench` (its "prism (T threads) ... GFLOP/s" line) or the
# Gram bench's prism row, best of 1 in its own process. $1: shape id; the environment says
# the rest.
gflops() {
  case "$1" in
    gram) "$gram" --shapes=4194304x32 --reps=1 --impls=prism --no-probes 2>/dev/null |
            awk '$1 == "dsyrk" && $2 == "prism" { for (i = 1; i < NF; ++i) if ($(i + 1) == "GF/s") print $i }' ;;
    *) set -- $1
       "$prism" bench "$1" "$2" "$3" --trans "$4" --reps 1 2>/dev/null |
         awk '/^  prism \(/ { for (i = 1; i < NF; ++i) if ($(i + 1) == "GFLOP/s") print $i }' ;;
  esac
}

# GF/s of configuration $1 ("auto auto" or "LEAF LEVEL") on shape id $2.
rate_of() {
  set -- $1 "$2"
  if [ "$1" = auto ]; then PRISM_LEAF=auto gflops "$3"
  else PRISM_LEAF=$1 PRISM_CACHE_LEVEL=$2 gflops "$3"; fi
}

# The larger of two rates (an empty one, a failed run, counts 0).
best_of() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { print (b > a ? b : a) }'; }

# a / b to two decimals (0 when b is 0).
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# The plan of one configuration, without its comment lines (the context line names the
# settings, not the plan). The Gram bench calls the column-major dsyrk('L', 'N', 32, 2^22).
plan_of() {
  case "$1" in
    gram) "$prism" plan 32 32 4194304 --syrk LN 2>/dev/null | grep -v '^#' || true ;;
    *) set -- $1
       "$prism" plan "$1" "$2" "$3" --trans "$4" 2>/dev/null | grep -v '^#' || true ;;
  esac
}

# Rows 7 and 8 check the leaf library's rule on the squares the peers set times (BLIS where
# its kernels are as wide as OpenBLAS's, for double leaves of m, n >= 128).
shapes=("4 4 16777216 NN" "8 8 16777216 NN" "32 32 4194304 TN" "64 64 4194304 NN" "gram" "4096 4096 64 NN"
        "2048 2048 2048 NN" "128 128 128 NN")
names=("4×4×2^24" "8×8×2^24" "32×32×2^22 TN" "64×64×2^22" "2^22×32 Gram (syrk)" "4096×4096×64" "2048³" "128³")

# One table: $1 names the machine file situation; PRISM_MACHINE is already set for it.
table() {
  echo
  echo "### $1"
  echo
  echo "| shape | auto GF/s | best GF/s | best is | auto's plan | plans timed | load | auto / best | head to head | |"
  echo "|---|---:|---:|---|---|---:|---:|---:|---:|---|"
  local i failed=0
  for i in "${!shapes[@]}"; do
    [ -z "$rows" ] || [[ "$rows" == *",$((i + 1)),"* ]] || continue
    local s=${shapes[$i]} leaf level c p
    # Configurations (auto first) and their plans; plan_id[c]: index of c's plan in plans.
    local configs=("auto auto") plans=() plan_id=() rate=() names_of=()
    for leaf in openblas blis streaming; do
      for level in 0 1 2 3; do configs+=("$leaf $level"); done
    done
    for c in "${!configs[@]}"; do
      set -- ${configs[$c]}
      local text
      if [ "$1" = auto ]; then text=$(PRISM_LEAF=auto plan_of "$s")
      else text=$(PRISM_LEAF=$1 PRISM_CACHE_LEVEL=$2 plan_of "$s"); fi
      plan_id[$c]=-1
      for p in "${!plans[@]}"; do [ "${plans[$p]}" = "$text" ] && plan_id[$c]=$p && break; done
      if [ "${plan_id[$c]}" = -1 ]; then plan_id[$c]=${#plans[@]}; plans+=("$text"); rate+=(0); names_of+=("${configs[$c]}"); fi
    done
    # Rounds: every distinct plan once a round, best of the rounds.
    local round
    for round in $(seq "$reps"); do
      for p in "${!plans[@]}"; do rate[$p]=$(best_of "${rate[$p]}" "$(rate_of "${names_of[$p]}" "$s")"); done
    done
    local best_p=0 best_is="" same=""
    for p in "${!plans[@]}"; do
      if awk -v g="${rate[$p]}" -v b="${rate[$best_p]}" 'BEGIN { exit !(g > b) }'; then best_p=$p; fi
    done
    for c in "${!configs[@]}"; do
      [ "$c" -gt 0 ] && [ "${plan_id[$c]}" = "$best_p" ] || continue
      set -- ${configs[$c]}
      best_is+="${best_is:+; }$1 $2"
    done
    [ -z "$best_is" ] && best_is="auto only"
    [ "${plan_id[0]}" = "$best_p" ] && same="the best's"
    if [ -z "$same" ]; then
      for c in "${!configs[@]}"; do
        [ "$c" -gt 0 ] && [ "${plan_id[$c]}" = "${plan_id[0]}" ] || continue
        set -- ${configs[$c]}
        same+="${same:+; }$1 $2"
      done
      [ -z "$same" ] && same="its own"
    fi
    local auto=${rate[${plan_id[0]}]} best=${rate[$best_p]} ratio verdict head="—" judged
    ratio=$(ratio_of "$auto" "$best")
    judged=$ratio
    if [ "${plan_id[0]}" != "$best_p" ]; then  # fresh rounds, auto's plan and the best one alternating
      local a2=0 b2=0
      for round in $(seq "$confirm"); do
        a2=$(best_of "$a2" "$(rate_of "auto auto" "$s")")
        b2=$(best_of "$b2" "$(rate_of "${names_of[$best_p]}" "$s")")
      done
      head=$(ratio_of "$a2" "$b2") judged=$head
    fi
    verdict=$(awk -v r="$judged" 'BEGIN { print (r >= 0.95 ? "ok" : "FAIL") }')
    [ "$verdict" = ok ] || failed=1
    echo "| ${names[$i]} | $auto | $best | leaf, cache level: $best_is | $same | ${#plans[@]} | $(cut -d' ' -f1 /proc/loadavg) | $ratio | $head | $verdict |"
  done
  return $failed
}

echo "# auto against the best leaf kind and cache-cut level"
echo
dirty=$(git diff --quiet HEAD -- lib apps include bench ':!bench/results' 2>/dev/null || echo " (uncommitted changes)")
echo "Machine: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$dirty."
caches=$(lscpu | sed -n 's/^\(L[0-9][di]* cache\): *\(.*\)/\1 \2;/p' | tr '\n' ' ')
echo "Caches (lscpu): ${caches:-none listed here; the caches hwloc reports are in the description below}"
echo "Environment: $(env | grep -E '^(OPENBLAS|BLIS|OMP|PRISM)_' | tr '\n' ' ' || true)(OPENBLAS_, BLIS_, OMP_ and PRISM_ variables; none if empty). Each distinct plan timed once a round in $reps rounds, best kept; where auto's plan is not the best, the two timed again alternating in $confirm fresh rounds ('head to head', best of each; the verdict's ratio); 'auto' runs with PRISM_LEAF=auto and the default cache level. Compare the ratios, not the rates with another run. 'load': the 1-minute load average when the row ended (this machine has $(nproc) cores; other users' processes count)."
echo
echo "The machine description the model gives (\`prism tune --show\` without a machine file):"
echo
echo '```'
PRISM_MACHINE="" XDG_CACHE_HOME="$work/none" "$prism" tune --show
echo '```'
status=0
export PRISM_MACHINE=""  XDG_CACHE_HOME="$work/cache"  # no machine file: the model's values
# What the first long calls measure, measured before the table: every plan compared and
# timed then reads the same values (a row's first auto process would otherwise measure in
# the middle of its row, after its plans were compared with the model's).
"$prism" tune --first-use > /dev/null 2>&1 || true
table "Model values (no machine file)" || status=1
# What prism measured at first use (the leaf libraries' kernel probe, the streaming
# crossovers and each type's rank-k limits), as the cache folder kept it.
echo
echo "Measured at first use before that table (\`$XDG_CACHE_HOME\` is this run's own, empty at the start):"
echo
echo '```'
cat "$XDG_CACHE_HOME"/prism/first-use-* 2>/dev/null | grep -v '^#' || echo "(nothing kept)"
echo '```'
if [ "$tune" = 1 ]; then
  "$prism" tune --out "$work/machine" >"$work/tune.txt"
  export PRISM_MACHINE="$work/machine"
  echo
  echo "After \`prism tune\` ($(sed -n 's/^# wrote .* in \([0-9]*\) s:$/\1 s/p' "$work/tune.txt")):"
  echo
  echo '```'
  grep -v '^#' "$work/machine"
  echo '```'
  echo
  echo "The kernel sizes as tune timed them (ms for each candidate size, all threads):"
  echo
  echo '```'
  grep -E '^#   (stream_[a-z]*_bytes|syrk_chunk_bytes) ' "$work/tune.txt" || true
  echo '```'
  table "After prism tune" || status=1
fi
exit $status
