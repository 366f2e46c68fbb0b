#!/usr/bin/env bash
# Puts a recorded benchmark run's table and plot into docs/performance.md (between the
# bench:begin/end markers). Usage: bash scripts/performance-figures.sh bench/results/<set>-<UTC time>
# (the prefix of the .md/.png that scripts/record-bench.sh copied from a bench.sh run).
# Only recorded (committed) results go into the docs, never a local bench/runs/ folder.
# A dropin-* run (bash scripts/bench.sh dropin) goes to the dropin:begin/end block and
# docs/bench-dropin.png instead (docs/performance.md "The drop-in"). A dist-* run
# (scripts/bench-dist.sh) goes to docs/performance.md's dist:begin/end block and docs/bench-dist.png;
# a dist-clean-env-* run (its timing part without OPENBLAS_CORETYPE) to docs/performance.md's
# dist-clean block. A dist-* run's pdgemm part (its "## pdgemm" sections) goes to the
# dist-pdgemm:begin/end block, with <prefix>.pdgemm.png as docs/bench-dist-pdgemm.png, when
# the page has that block; without it, those sections stay in the dist block.
# A peers-clean-env-* run (bash scripts/bench.sh --clean-env peers) goes to the peers:begin/end
# block and docs/bench-peers.png; a peers-* run (the same under the host's environment,
# OPENBLAS_CORETYPE=Haswell here) to the peers-host block and docs/bench-peers-host.png.
# A gram-clean-env-* run (bash scripts/bench.sh --clean-env gram) goes to the gram:begin/end
# block and docs/bench-gram.png. The README's small table is written by hand from the peers
# and gram blocks (docs/performance.md names them).
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
  dist-*) tag=dist png=docs/bench-dist.png alt="per-rank volume: prism, COSMA and the bound" ;;
  dropin-cubes-*) echo "performance-figures: $prefix has no block of its own (docs/performance.md quotes its cubes table)" >&2; exit 1 ;;
  dropin-*) tag=dropin png=docs/bench-dropin.png alt="libprism_blas (drop-in) vs prism and its backend" ;;
  gram-clean-env-*) tag=gram png=docs/bench-gram.png alt="A.T @ A: prism vs OpenBLAS and BLIS at their best kernel sets" ;;
  gram-*) echo "performance-figures: the gram block takes a clean-environment run (bench.sh --clean-env gram)" >&2; exit 1 ;;
  peers-clean-env-*) tag=peers png=docs/bench-peers.png alt="prism vs each peer at its best kernel set, clean environment" ;;
  peers-*) tag=peers-host png=docs/bench-peers-host.png alt="prism vs each peer at its best kernel set, OPENBLAS_CORETYPE=Haswell as the host sets it" ;;
esac
mkdir -p docs
pdgemm_png=""
split_pdgemm=0
keep_main=0
if [ "$tag" = dist ]; then
  # A run of the pdgemm part alone (bench-dist.sh --pdgemm-only) has no sections of its own
  # for the dist block: that block and its figure stay as they are.
  grep -qE '^## ' "$prefix.md" && ! grep -E '^## ' "$prefix.md" | grep -qvE '^## (pdgemm|Failed runs)' && keep_main=1
  if grep -q '<!-- dist-pdgemm:begin' "$target"; then
    split_pdgemm=1
    if [ -f "$prefix.pdgemm.png" ]; then pdgemm_png=docs/bench-dist-pdgemm.png; cp "$prefix.pdgemm.png" "$pdgemm_png"; fi
  elif [ "$keep_main" = 1 ]; then
    echo "performance-figures: $prefix is a pdgemm-only run and $target has no dist-pdgemm:begin/end block for it" >&2
    exit 1
  fi
fi
[ "$keep_main" = 1 ] || cp "$prefix.png" "$png"
python3 - "$prefix.md" "$tag" "$png" "$alt" "$target" "$split_pdgemm" "$pdgemm_png" "$keep_main" <<'PY'
import re, sys
src, tag, png, alt, target, split_pdgemm, pdgemm_png, keep_main = sys.argv[1:9]
table = open(src).read().strip()
pdgemm = None
if tag.startswith("dist"):  # its own title goes; its sections sit under the page's
    lines = [l for l in table.splitlines() if not l.startswith("# ")]
    if split_pdgemm == "1":
        # "## pdgemm..." sections (up to the next "## " heading that is not one) go to their own block.
        main, part, into = [], [], None
        for l in lines:
            if l.startswith("## "):
                into = part if l.startswith("## pdgemm") else main
            (into if into is not None else main).append(l)
        lines = main
        pdgemm = "\n".join("##" + l if l.startswith("##") else l for l in part).strip()
    table = "\n".join("##" + l if l.startswith("##") else l for l in lines).strip()
readme = open(target).read()


def put(text, tag, png, alt):
    """Replaces the tag:begin/end block of the page's text with the table and its figure."""
    link = png if target == "README.md" else png.split("/")[-1]
    figure = "\n\n![%s](%s)" % (alt, link) if png else ""
    block = ("<!-- %s:begin (written by scripts/performance-figures.sh from a real run; do not edit) -->\n" % tag
             + table_of[tag] + figure + "\n<!-- %s:end -->" % tag)
    new, n = re.subn(r"<!-- %s:begin.*?<!-- %s:end -->" % (tag, tag), lambda m: block, text, flags=re.S)
    if n != 1:
        sys.exit("performance-figures: %s needs exactly one %s:begin/%s:end block" % (target, tag, tag))
    return new


table_of = {tag: table}
if keep_main != "1":
    readme = put(readme, tag, png, alt)
if pdgemm is not None:
    table_of["dist-pdgemm"] = pdgemm or "(this run has no pdgemm part)"
    readme = put(readme, "dist-pdgemm", pdgemm_png, "per-rank volume through pdgemm_: ScaLAPACK, prism, prism native")
open(target, "w").write(readme)
PY
if [ "$keep_main" = 1 ]; then
  echo "performance-figures: $target's dist-pdgemm block${pdgemm_png:+ and $pdgemm_png} updated from $prefix"
else
  echo "performance-figures: $target and $png${pdgemm_png:+ and $pdgemm_png} updated from $prefix"
fi
