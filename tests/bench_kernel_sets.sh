#!/usr/bin/env bash
# bench/run.py end to end on two small shapes: the main process and one process per peer
# kernel set this machine runs (interleaved per shape), the probes before and after, one merged
# JSON, then report.py's table. Checks that every set run.py says it ran has its columns in the
# JSON and that the table has the default, best and roofline columns.
#   bench_kernel_sets.sh <prism_bench> <source dir> <output dir>
set -euo pipefail
bench=$1 root=$2 out=$3
mkdir -p "$out"
rm -f "$out/kernel_sets.json" "$out/kernel_sets.log"
python3 "$root/bench/run.py" --bench "$bench" --out "$out/kernel_sets.json" --log "$out/kernel_sets.log" \
  --kernel-sets=all -- --shapes=64x64x64,33x17x500:TN --reps=1 --min-time=0.01 --bandwidth-mib=64 \
  --impls=prism,openblas,openblas_1t,blis,blis_1t
python3 - "$out/kernel_sets.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
ctx, names = data["context"], [b["name"] for b in data["benchmarks"]]
ran = [e for e in ctx["kernel_sets"] if e["status"].startswith("ran")]
assert ctx["run_mode"].startswith("per shape"), ctx["run_mode"]
for probe in ("fma_peak/d/first", "fma_peak/d/last", "bandwidth/read/first", "bandwidth/read/last"):
    assert any(n.startswith(probe) for n in names), "no " + probe
for e in ran:
    for impl in {"openblas": ("openblas", "openblas_1t"), "blis": ("blis", "blis_1t")}[e["library"]]:
        for shape in ("NN/64x64x64", "TN/33x17x500"):
            want = "gemm/d/%s/%s@%s" % (shape, impl, e["label"])
            assert any(n.startswith(want) for n in names), "missing " + want
print("bench_kernel_sets: %d kernel sets ran: %s" % (len(ran), ", ".join(
    "%s@%s" % (e["library"], e["label"]) for e in ran)))
PY
python3 "$root/bench/report.py" "$out/kernel_sets.json" --md "$out/kernel_sets.md" --quiet
for want in "| shape | type | prism GF/s |" "roofline GF/s" "prism % of roofline" "Environment:"; do
  grep -qF "$want" "$out/kernel_sets.md" || { echo "bench_kernel_sets: the table lacks '$want'" >&2; exit 1; }
done
if grep -q '"status": "ran' "$out/kernel_sets.json"; then
  for want in "Kernel sets: defaults" "### Every kernel set"; do
    grep -qF "$want" "$out/kernel_sets.md" || { echo "bench_kernel_sets: the table lacks '$want'" >&2; exit 1; }
  done
fi
echo "bench_kernel_sets: ok"
