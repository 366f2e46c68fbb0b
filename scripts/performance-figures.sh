#!/usr/bin/env bash
# Puts a recorded benchmark run's table and plot into docs/performance.md (between the
# bench:begin/end markers). Usage: bash scripts/performance-figures.sh bench/results/<set>-<UTC time>
# (the prefix of the .md/.png that scripts/record-bench.sh copied from a bench.sh run).
# Only recorded (committed) results go into the docs, never a local bench/runs/ folder.
# A dropin-* run (bash scripts/bench.sh dropin) goes to the dropin:begin/end block and
# docs/bench-dropin.png instead (docs/performance.md "The drop-in").
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: performance-figures.sh bench/results/<set>-<UTC time>}
case "$prefix" in
  bench/results/*) ;;
  *) echo "performance-figures: '$prefix' is not under bench/results/; record the run first:" \
          "bash scripts/record-bench.sh bench/runs/<set>-<UTC time>" >&2; exit 2 ;;
esac
[ -f "$prefix.md" ] && [ -f "$prefix.png" ] || { echo "performance-figures: $prefix.md/.png not found" >&2; exit 1; }
tag=bench png=docs/bench.png alt="prism vs OpenBLAS and BLIS"
case "$(basename "$prefix")" in
  dropin-cubes-*) echo "performance-figures: $prefix has no README block (docs/performance.md quotes its cubes table)" >&2; exit 1 ;;
  dropin-*) tag=dropin png=docs/bench-dropin.png alt="libprism_blas (drop-in) vs prism and its backend" ;;
esac
mkdir -p docs
cp "$prefix.png" "$png"
python3 - "$prefix.md" "$tag" "$png" "$alt" <<'PY'
import re, sys
src, tag, png, alt = sys.argv[1:5]
table = open(src).read().strip()
readme = open("docs/performance.md").read()
block = ("<!-- %s:begin (written by scripts/performance-figures.sh from a real run; do not edit) -->\n" % tag
         + table + "\n\n![%s](%s)\n<!-- %s:end -->" % (alt, png.split("/")[-1], tag))
new, n = re.subn(r"<!-- %s:begin.*?<!-- %s:end -->" % (tag, tag), lambda m: block, readme, flags=re.S)
if n != 1:
    sys.exit("performance-figures: docs/performance.md needs exactly one %s:begin/%s:end block" % (tag, tag))
open("docs/performance.md", "w").write(new)
PY
echo "performance-figures: docs/performance.md and $png updated from $prefix"
