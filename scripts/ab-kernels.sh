#!/usr/bin/env bash
# scripts/ab-kernels.sh BASE_BUILD NEW_BUILD [--rounds N] [--reps R] [--out FILE] — A/B of
# prism's streaming leaves between two builds in one run: prism_bench's block-Krylov and
# Gram rows (the streaming gemm kernel; prism only, double and float) and prism_gram_bench's
# rows (the streaming rank-k kernel; prism only). The builds alternate, BASE then NEW, N
# rounds (default 5), each process best of R (default 3) after its warm-up; per row the best
# and the median over the rounds of each build's times and the ratios NEW / BASE (below 1:
# NEW faster; under load the median is the steadier of the two). First it
# compares the two libprism.so's kernels instruction by instruction (every function of
# prism::detail::streaming::N_<target>, addresses and PLT slots masked): on a shared machine
# the times carry the load, the code does not. Writes FILE (default
# bench/results/ab-kernels-<UTC time>.txt) with the host, the environment and the load
# average. Both builds need the targets prism, prism_bench and prism_gram_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: ab-kernels.sh BASE_BUILD NEW_BUILD [--rounds N] [--reps R] [--out FILE]}
new=${2:?usage: ab-kernels.sh BASE_BUILD NEW_BUILD [--rounds N] [--reps R] [--out FILE]}
shift 2
rounds=5 reps=3 out=
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --reps) reps=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "ab-kernels: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for b in "$base" "$new"; do
  for t in prism_bench prism_gram_bench; do
    [ -x "$b/bench/$t" ] || { echo "ab-kernels: $b/bench/$t is missing (build its target $t)" >&2; exit 2; }
  done
  [ -e "$b/libprism.so" ] || { echo "ab-kernels: $b/libprism.so is missing (build its target prism)" >&2; exit 2; }
done
[ -n "$out" ] || out=bench/results/ab-kernels-$(date -u +%Y-%m-%dT%H%MZ).txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Block-Krylov m = n in {4, 8, 16, 32, 64} (k = 2^24 up to 8, else 2^22) and the Gram TN shape.
shapes=4x4x16777216:NN,8x8x16777216:NN,16x16x4194304:NN,32x32x4194304:NN,64x64x4194304:NN,32x32x4194304:TN

{
  echo "# A/B of the streaming leaves: BASE $base, NEW $new; $rounds rounds alternating BASE, NEW; best of $reps per process"
  echo "# date (UTC): $(date -u '+%F %T'); commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lib include CMakeLists.txt cmake 2>/dev/null || echo ' (uncommitted changes)')"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB; kernel $(uname -r)"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-unset} BLIS_ARCH_TYPE=${BLIS_ARCH_TYPE:-unset} PRISM_*: $(env | grep '^PRISM_' | sort | tr '\n' ' ' || true)(none if empty); THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared)"
} >"$work/header"
# kernels BUILD: the streaming kernels' instructions in BUILD's libprism.so, one line each,
# addresses, RIP-relative offsets and PLT slot numbers masked.
kernels() {
  objdump -d --no-show-raw-insn -C "$1/libprism.so" | awk '
    /^[0-9a-f]+ <.*>:$/ { keep = ($0 ~ /prism::detail::streaming::N_/ && $0 !~ /@plt>:$/); if (keep) { sub(/^[0-9a-f]+ /, ""); print "FUNC " $0 }; next }
    keep && NF { sub(/^ *[0-9a-f]+:\t/, ""); gsub(/[0-9a-f]+ <[^>]*>/, "ADDR"); gsub(/0x[0-9a-f]+\(%rip\)/, "RIP");
                 gsub(/# .*/, ""); if ($0 ~ /^push +\$0x[0-9a-f]+ *$/) $0 = "push PLTSLOT"; print }'
}
kernels "$base" >"$work/kernels.base"
kernels "$new" >"$work/kernels.new"
nf=$(grep -c '^FUNC' "$work/kernels.new")
ni=$(grep -vc '^FUNC' "$work/kernels.new")
if cmp -s "$work/kernels.base" "$work/kernels.new"; then
  echo "# kernel code: the $nf functions of prism::detail::streaming::N_* ($ni instructions) are identical in both libprism.so" >>"$work/header"
else
  echo "# kernel code: the streaming kernels differ between the two libprism.so ($(diff "$work/kernels.base" "$work/kernels.new" | grep -c '^[<>]') lines of diff)" >>"$work/header"
fi
cat "$work/header"

for r in $(seq 1 "$rounds"); do
  for side in base new; do
    b=$base; [ "$side" = new ] && b=$new
    echo "ab-kernels: round $r, $side ($b)" >&2
    "$b/bench/prism_bench" --shapes=$shapes --impls=prism --type=both --reps="$reps" --no-fma --no-bandwidth \
      --benchmark_out="$work/gemm-$side-$r.json" --benchmark_out_format=json >/dev/null 2>"$work/gemm-$side-$r.err"
    "$b/bench/prism_gram_bench" --impls=prism --reps="$reps" --no-probes >"$work/gram-$side-$r.txt" 2>&1
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/header"

python3 - "$work" "$rounds" >"$work/table" <<'EOF'
import json, re, sys, glob, os
work, rounds = sys.argv[1], int(sys.argv[2])
best = {}  # (row, side) -> [ms per round]
for side in ("base", "new"):
    for r in range(1, rounds + 1):
        with open(f"{work}/gemm-{side}-{r}.json") as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("run_type") != "iteration":
                    continue
                _, t, trans, shape = b["name"].split("/")[:4]
                row = f"gemm {t} {shape}:{trans}"
                ms = b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
                d = best.setdefault((row, side), {})
                d[r] = min(d.get(r, ms), ms)
        for line in open(f"{work}/gram-{side}-{r}.txt"):
            m = re.match(r"(\S+)\s+prism\s+k=(\d+)\s+n=(\d+)\s+([\d.]+) ms", line)
            if m:
                row = f"{m.group(1)} k={m.group(2)} n={m.group(3)}"
                d = best.setdefault((row, side), {})
                d[r] = min(d.get(r, float(m.group(4))), float(m.group(4)))
rows = sorted({row for row, _ in best}, key=lambda s: (not s.startswith("gemm"), s))
import math, statistics
print(f"{'row':<34} {'BASE best':>10} {'NEW best':>10} {'ratio':>6} {'BASE med':>10} {'NEW med':>10} {'ratio':>6}"
      "   per round BASE | NEW (ms)")
best_ratios, median_ratios = [], []
for row in rows:
    b, n = best.get((row, "base"), {}), best.get((row, "new"), {})
    if not b or not n:
        continue
    rb, rn = min(b.values()), min(n.values())
    mb, mn = statistics.median(b.values()), statistics.median(n.values())
    best_ratios.append(rn / rb)
    median_ratios.append(mn / mb)
    per = " ".join(f"{b[r]:.1f}" for r in sorted(b)) + " | " + " ".join(f"{n[r]:.1f}" for r in sorted(n))
    print(f"{row:<34} {rb:10.2f} {rn:10.2f} {rn / rb:6.3f} {mb:10.2f} {mn:10.2f} {mn / mb:6.3f}   {per}")
for name, rs in (("best", best_ratios), ("median", median_ratios)):
    if rs:
        g = math.exp(sum(math.log(x) for x in rs) / len(rs))
        print(f"NEW/BASE of the {name} times: geometric mean {g:.3f} over {len(rs)} rows, range {min(rs):.3f} .. {max(rs):.3f}")
EOF
mkdir -p "$(dirname "$out")"
cat "$work/header" "$work/table" >"$out"
cat "$work/table"
echo "ab-kernels: wrote $out"
