#!/usr/bin/env bash
# Puts a benchmark run's table and plot into README.md (between the bench:begin/end
# markers). Usage: bash scripts/readme-figures.sh bench/results/full-YYYY-MM-DD
# (the prefix of the .md/.png that scripts/bench.sh wrote). Run bench.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: readme-figures.sh bench/results/<set>-<date>}
[ -f "$prefix.md" ] && [ -f "$prefix.png" ] || { echo "readme-figures: $prefix.md/.png not found" >&2; exit 1; }
mkdir -p docs
cp "$prefix.png" docs/bench.png
python3 - "$prefix.md" <<'PY'
import re, sys
table = open(sys.argv[1]).read().strip()
readme = open("README.md").read()
block = ("<!-- bench:begin (written by scripts/readme-figures.sh from a real run; do not edit) -->\n"
         + table + "\n\n![prism vs OpenBLAS and BLIS](docs/bench.png)\n<!-- bench:end -->")
new, n = re.subn(r"<!-- bench:begin.*?<!-- bench:end -->", lambda m: block, readme, flags=re.S)
if n != 1:
    sys.exit("readme-figures: README.md needs exactly one bench:begin/bench:end block")
open("README.md", "w").write(new)
PY
echo "readme-figures: README.md and docs/bench.png updated from $prefix"
