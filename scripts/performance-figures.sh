#!/usr/bin/env bash
# Puts a recorded benchmark run's table and plot into docs/performance.md (between the
# bench:begin/end markers). Usage: bash scripts/performance-figures.sh bench/results/<set>-<UTC time>
# (the prefix of the .md/.png that scripts/record-bench.sh copied from a bench.sh run).
# Only recorded (committed) results go into the docs, never a local bench/runs/ folder.
# A dropin-* run (bash scripts/bench.sh dropin) goes to the dropin:begin/end block and
# docs/bench-dropin.png instead (docs/performance.md "The drop-in"). A dist-* run
# (scripts/bench-dist.sh) goes to README.md's dist:begin/end block and docs/bench-dist.png;
# a dist-clean-env-* run (its timing part without OPENBLAS_CORETYPE) to docs/performance.md's
# dist-clean block.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: performance-figures.sh bench/results/<set>-<UTC time>}
case "$prefix" in
  bench/results/*) ;;
  *) echo "performance-figures: '$prefix' is not under bench/results/; record the run first:" \
          "bash scripts/record-bench.sh bench/runs/<set>-<UTC time>" >&2; exit 2 ;;
esac
[ -f "$prefix.md" ] && [ -f "$prefix.png" ] || { echo "performance-figures: $prefix.md/.png not found" >&2; exit 1; }
tag=bench png=docs/bench.png alt="prism vs OpenBLAS and BLIS" target=docs/performance.md
case "$(basename "$prefix")" in
  dist-clean-env-*) tag=dist-clean png=docs/bench-dist-clean-env.png alt="prism vs ScaLAPACK pdgemm, clean environment" ;;
  dist-*) tag=dist png=docs/bench-dist.png alt="per-rank volume: prism, COSMA and the bound" target=README.md ;;
  dropin-cubes-*) echo "performance-figures: $prefix has no README block (docs/performance.md quotes its cubes table)" >&2; exit 1 ;;
  dropin-*) tag=dropin png=docs/bench-dropin.png alt="libprism_blas (drop-in) vs prism and its backend" ;;
esac
mkdir -p docs
cp "$prefix.png" "$png"
python3 - "$prefix.md" "$tag" "$png" "$alt" "$target" <<'PY'
import re, sys
src, tag, png, alt, target = sys.argv[1:6]
table = open(src).read().strip()
if tag.startswith("dist"):  # its own title goes; its sections sit under the README's
    lines = [l for l in table.splitlines() if not l.startswith("# ")]
    table = "\n".join("##" + l if l.startswith("##") else l for l in lines).strip()
readme = open(target).read()
link = png if target == "README.md" else png.split("/")[-1]
block = ("<!-- %s:begin (written by scripts/performance-figures.sh from a real run; do not edit) -->\n" % tag
         + table + "\n\n![%s](%s)\n<!-- %s:end -->" % (alt, link, tag))
new, n = re.subn(r"<!-- %s:begin.*?<!-- %s:end -->" % (tag, tag), lambda m: block, readme, flags=re.S)
if n != 1:
    sys.exit("performance-figures: %s needs exactly one %s:begin/%s:end block" % (target, tag, tag))
open(target, "w").write(new)
PY
echo "performance-figures: $target and $png updated from $prefix"
