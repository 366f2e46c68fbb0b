#!/usr/bin/env bash
# Regenerates every committed plot from the committed benchmark JSON (runs nothing, builds
# nothing; needs matplotlib: Debian's /usr/bin/python3 has it). Usage: bash scripts/plots.sh
#
#   docs/performance-ratio.png   prism / best peer per shape    (full set, report.py --png-ratio)
#   docs/performance-gflops.png  GF/s per shape class            (full set, report.py --png-gflops)
#   docs/dropin-ratio.png        drop-in / backend per shape     (dropin set, report.py --png-ratio)
#   bench/results/<run>.png      both charts in one image, for every recorded run that has a
#                                plot (report.py --png, as scripts/bench.sh writes it)
#   docs/bench.png, docs/bench-dropin.png   when present: copies of the full and dropin runs'
#                                plots, as scripts/performance-figures.sh puts them there
#
# To show a newer recorded run, change full= / dropin= below.
set -euo pipefail
cd "$(dirname "$0")/.."
full=bench/results/full-2026-11-22
dropin=bench/results/dropin-2026-11-22
py=/usr/bin/python3; [ -x "$py" ] || py=python3
report() { "$py" bench/report.py --quiet "$@"; }

report "$full.json" --png-ratio docs/performance-ratio.png --png-gflops docs/performance-gflops.png
report "$dropin.json" --png-ratio docs/dropin-ratio.png --ratio dropin
for png in bench/results/*.png; do
  if [ -f "${png%.png}.json" ]; then report "${png%.png}.json" --png "$png"; fi
done
if [ -f docs/bench.png ]; then cp "$full.png" docs/bench.png; fi
if [ -f docs/bench-dropin.png ]; then cp "$dropin.png" docs/bench-dropin.png; fi
echo "plots: regenerated docs/performance-ratio.png docs/performance-gflops.png docs/dropin-ratio.png" \
     "and the plots of bench/results/"
