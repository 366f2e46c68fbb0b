#!/usr/bin/env python3
"""Keeps the sample outputs and quoted files of the README and docs/ true to the current code.

Two kinds of block in a markdown file (README.md and every docs/*.md that has one):

    <!-- sample: COMMAND -->
    ```
    $ COMMAND
    ...its output (stdout and stderr)...
    ```
    <!-- /sample -->

    <!-- include: PATH -->
    ```cpp
    ...the file, verbatim...
    ```
    <!-- /include -->

`--write` runs each COMMAND (bash, from the repository root, `build/` standing for the
build folder given with --build) and puts its output in the block; it copies each
included file. Without --write it checks: a block whose text differs from what the code
produces now is reported with a diff and the exit status is 1. Numbers with a decimal
point (timings, rates), with the spaces that right-align them in a column, process ids and
what PRISM_STATS says of the host's GPUs and SIMD target are compared as placeholders, so a
sample that prints a time stays checkable on any machine: its form is checked, not its
digits. A sample that plans names its thread count (`--threads`, PRISM_NUM_THREADS), so
that it reads the same whatever the host's cores.

    python3 scripts/readme-samples.py --write            # after changing what a sample prints
    python3 scripts/readme-samples.py --build build      # the check ctest runs (readme_samples;
                                                         # exit 77, a skip, on fewer than 2 CPUs)
    python3 scripts/readme-samples.py --file docs/planning.md --write   # one file only
"""
import argparse
import difflib
import glob
import os
import re
import subprocess
import sys

BLOCK = re.compile(r"<!-- (sample|include): (.*?) -->\n```([a-z]*)\n(.*?)```\n<!-- /\1 -->", re.S)
# Compared as placeholders: numbers with a decimal point (timings, rates), process ids, and
# what the drop-in's summary says of the host's own GPUs and SIMD target.
VOLATILE = re.compile(r" *\b\d+\.\d+\b|pid \d+|(?<=gpu: ).*|(?<=prism's own kernel \()\w+(?=\))")
# The variables that replace the machine's topology (prism's and hwloc's own).
TOPOLOGY_VARS = ["PRISM_TOPOLOGY", "HWLOC_SYNTHETIC", "HWLOC_XMLFILE"]


def produce(kind, arg, build, root):
    """The text a block should hold now."""
    if kind == "include":
        with open(os.path.join(root, arg)) as f:
            return f.read()
    command = arg.replace("build/", build.rstrip("/") + "/")
    env = dict(os.environ, PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))  # Debian's python3 (NumPy)
    # A sample shows this machine, or the example machine its command names: a topology the
    # caller forces (the suite's synthetic two-socket run, say) does not reach it.
    for v in TOPOLOGY_VARS:
        env.pop(v, None)
    run = subprocess.run(["bash", "-c", command], cwd=root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300)
    if run.returncode not in (0, 2):  # 2: the CLI's bad-input samples
        sys.exit("readme-samples: '%s' exited %d:\n%s" % (arg, run.returncode, run.stdout))
    return "$ " + arg + "\n" + run.stdout


def check_file(path, build, root, write):
    """Checks (or with write rewrites) one file's blocks; returns (blocks, stale blocks)."""
    text = open(path).read()
    stale = []

    def replace(m):
        kind, arg, lang, old = m.group(1), m.group(2), m.group(3), m.group(4)
        new = produce(kind, arg, build, root)
        if not new.endswith("\n"):
            new += "\n"
        if VOLATILE.sub("#", new) != VOLATILE.sub("#", old):
            stale.append((arg, old, new))
        return "<!-- %s: %s -->\n```%s\n%s```\n<!-- /%s -->" % (kind, arg, lang, new, kind)

    updated, count = BLOCK.subn(replace, text)
    name = os.path.relpath(path, root)
    if write:
        if count:
            open(path, "w").write(updated)
            print("readme-samples: %d blocks written in %s (%d changed)" % (count, name, len(stale)))
        return count, []
    for arg, old, new in stale:
        print("stale block in %s: %s" % (name, arg))
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), name, "now"))
    return count, stale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", action="append",
                    help="markdown file, repeatable (default: README.md and every docs/*.md)")
    ap.add_argument("--build", default="build", help="build folder the commands' build/ stands for")
    ap.add_argument("--write", action="store_true", help="rewrite the blocks instead of checking them")
    a = ap.parse_args()
    if not a.write and len(os.sched_getaffinity(0)) < 2:
        # The samples show a 2-core machine: a thread budget of 2 on one core is capped, and said.
        print("readme-samples: SKIPPED: the samples run 2 threads; this process may use 1 CPU")
        return 77
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = a.file or ["README.md"] + sorted(os.path.relpath(f, root) for f in glob.glob(os.path.join(root, "docs", "*.md")))
    total, stale = 0, []
    for f in files:
        count, bad = check_file(os.path.join(root, f), a.build, root, a.write)
        total += count
        stale += bad
    if total == 0:
        sys.exit("readme-samples: no sample or include blocks in " + ", ".join(files))
    if a.write:
        return 0
    print("readme-samples: %d blocks in %d files, %d stale" % (total, len(files), len(stale)))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
