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
# --rounds 2: every process of the shape runs twice (the second round in reverse order), each
# implementation's repetitions from both rounds land in the JSON, and the caption says so.
rm -f "$out/rounds.json" "$out/rounds.log"
python3 "$root/bench/run.py" --bench "$bench" --out "$out/rounds.json" --log "$out/rounds.log" \
  --kernel-sets=openblas:SkylakeX --rounds 2 -- --shapes=64x64x64 --reps=1 --min-time=0.01 \
  --no-fma --no-bandwidth --impls=prism,openblas
python3 - "$out/rounds.json" "$out/rounds.log" <<'PY'
import json, re, sys
data = json.load(open(sys.argv[1]))
assert data["context"]["rounds"] == 2, data["context"].get("rounds")
runs = {}
for b in data["benchmarks"]:
    if b.get("run_type", "iteration") == "iteration" and b["name"].startswith("gemm/"):
        key = b["name"].split("/real_time")[0]
        runs[key] = runs.get(key, 0) + 1
assert runs and all(n == 2 for n in runs.values()), runs
heads = [l for l in open(sys.argv[2]) if l.startswith("=== shape")]
order = ["main" if "main process" in l else "set" for l in heads]
want = ["main", "set", "set", "main"] if len(heads) == 4 else ["main", "main"]  # no SkylakeX here: main only
assert order == want, order
PY
python3 "$root/bench/report.py" "$out/rounds.json" --md "$out/rounds.md" --quiet
grep -qF "every process of a shape run 2 times over" "$out/rounds.md" || {
  echo "bench_kernel_sets: the --rounds table does not say it ran 2 rounds" >&2; exit 1; }
if python3 "$root/bench/run.py" --bench "$bench" --out "$out/bad.json" --rounds 2 -- --shapes=64x64x64 2>/dev/null; then
  echo "bench_kernel_sets: --rounds without --kernel-sets was accepted" >&2; exit 1
fi
echo "bench_kernel_sets: ok"
