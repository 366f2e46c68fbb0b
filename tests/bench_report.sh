#!/usr/bin/env bash
# report.py on a committed run of bench/run.py (bench/testdata/kernel-sets-smoke.json: two shapes,
# one repetition, every kernel set of the project's 2-core AVX-512 VM, host environment with
# OPENBLAS_CORETYPE=Haswell): the table keeps its columns and caption, and the roofline
# formula gives what its comment works out.
#   bench_report.sh <source dir> <output dir>
set -euo pipefail
root=$1 out=$2
mkdir -p "$out"
python3 "$root/bench/report.py" "$root/bench/testdata/kernel-sets-smoke.json" --md "$out/report.md" --quiet
for want in "openblas_best" "blis_best" "roofline GF/s" "prism % of roofline" "prism / best peer" \
            "### Every kernel set, double" "Kernel sets: defaults" "Environment: the host's" \
            "OPENBLAS_CORETYPE=Haswell" "Read bandwidth" "commit "; do
  grep -qF -- "$want" "$out/report.md" || { echo "bench_report: the table lacks '$want'" >&2; exit 1; }
done
python3 - "$root/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import report
# 8x8x2^24 in double: 2^31 flop over (2^28 + 128) * 8 bytes, about 1 flop/byte: memory-bound.
limit, bound, intensity = report.roofline("8x8x16777216", "d", 200.0, 50.0)
assert bound == "memory" and abs(intensity - 2.0**31 / ((2**28 + 128) * 8)) < 1e-12, (bound, intensity)
assert abs(limit - 50.0 * intensity) < 1e-9
# 2048^3: I = 2 * 2048^3 / (4 * 2048^2 * 8) = 128 flop/byte: FMA-bound.
limit, bound, intensity = report.roofline("2048x2048x2048", "d", 200.0, 50.0)
assert bound == "FMA" and limit == 200.0 and intensity == 128.0, (limit, bound, intensity)
# float halves the bytes: 4x4x2^24 goes from about 0.5 to about 1 flop/byte.
assert abs(report.roofline("4x4x16777216", "s", 400.0, 50.0)[2] - 2 * report.roofline("4x4x16777216", "d", 200.0, 50.0)[2]) < 1e-12
# Operands that fit in one L2: the FMA peak, whatever the intensity.
assert report.roofline("16x16x16", "d", 200.0, 50.0, cache_bytes=1 << 20) == (200.0, "FMA, in cache", 1.0)
print("bench_report: roofline formula ok")
PY
echo "bench_report: ok"
