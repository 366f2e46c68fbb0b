#!/usr/bin/env python3
"""The tree's three structural rules, checked (ctest `tree_rules`; docs/development.md "The ladder").

1. The folders of lib/ form a one-way ladder: no folder includes, directly or through
   others, a folder that includes it back. An include of another folder is written
   `#include "../name/file.hpp"` (or "name/file.hpp" from lib/); public headers
   (<prism/...>) are the API and not counted.
2. No function in lib/ is longer than 100 lines (universal-ctags' function extents).
3. Environment variables are read in one place: no file of lib/ outside lib/environment/
   calls getenv, setenv or unsetenv (lib/environment/environment.hpp reads every variable
   prism takes, once, and hands the values on; ENV_EXCEPTIONS lists what may differ, with why).

  /usr/bin/python3 scripts/check_tree.py            check all three; exit 1 naming what breaks them
  /usr/bin/python3 scripts/check_tree.py --ladder   print the folders floor by floor (ground first)

Exit 77 (a ctest skip) when universal-ctags is missing, after the ladder check has passed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "lib")
INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:\.\./)?([A-Za-z_0-9]+)/')
MAX_LINES = 100
ENV_MODULE = "environment"
ENV_CALL = re.compile(r'\b(?:secure_)?(?:getenv|setenv|unsetenv|putenv)\s*\(')
# (path under lib/, reason): files allowed to touch the environment themselves. None today:
# even the BLAS libraries' own variables (OPENBLAS_CORETYPE, BLIS_ARCH_TYPE), which prism
# must read live from the host's world, are read through environment.hpp's backend_variable.
ENV_EXCEPTIONS = {}


def folder_graph():
    """{folder: {folders it includes}} over lib/'s folders."""
    folders = sorted(d for d in os.listdir(LIB) if os.path.isdir(os.path.join(LIB, d)))
    graph = {f: set() for f in folders}
    for f in folders:
        for dirpath, _, files in os.walk(os.path.join(LIB, f)):
            for name in files:
                if not name.endswith((".cpp", ".hpp", ".h", ".c")):
                    continue
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        m = INCLUDE.match(line)
                        if m and m.group(1) in graph and m.group(1) != f:
                            graph[f].add(m.group(1))
    return graph


def cycles(graph):
    """Strongly connected components with more than one folder (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def floors(graph):
    """Floor of each folder: 1 + the highest floor it includes (ground = 1). Acyclic only."""
    floor = {}

    def of(v):
        if v not in floor:
            floor[v] = 1 + max((of(w) for w in graph[v]), default=0)
        return floor[v]

    for v in graph:
        of(v)
    return floor


def environment_reads():
    """["path:line: text"] of getenv/setenv calls in lib/ outside lib/environment/."""
    found = []
    for dirpath, _, files in os.walk(LIB):
        rel_dir = os.path.relpath(dirpath, LIB)
        if rel_dir.split(os.sep)[0] == ENV_MODULE:
            continue
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp", ".h", ".c")):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel in ENV_EXCEPTIONS:
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as fh:
                for number, line in enumerate(fh, 1):
                    code = line.split("//", 1)[0]
                    if ENV_CALL.search(code):
                        found.append(f"lib/{rel}:{number}: {line.strip()}")
    return found


def long_functions():
    """[(lines, name, path:line)] of lib/ functions over MAX_LINES, or None without ctags."""
    ctags = shutil.which("ctags")
    if ctags is None:
        return None
    version = subprocess.run([ctags, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        return None
    out = subprocess.run([ctags, "-R", "--languages=C++", "--kinds-C++=f", "--fields=+ne", "-x",
                          "--_xformat=%{end} %{line} %N %F", LIB], capture_output=True, text=True, check=True).stdout
    found = []
    for row in out.splitlines():
        parts = row.split(" ", 3)
        if len(parts) < 4 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        length = int(parts[0]) - int(parts[1]) + 1
        if length > MAX_LINES:
            found.append((length, parts[2], os.path.relpath(parts[3], ROOT) + ":" + parts[1]))
    return sorted(found, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ladder", action="store_true", help="print the folders floor by floor")
    args = ap.parse_args()
    graph = folder_graph()
    loops = cycles(graph)
    if args.ladder:
        if loops:
            print("no ladder: folders include each other: " + "; ".join(" <-> ".join(c) for c in loops))
            return 1
        floor = floors(graph)
        for f in sorted(graph, key=lambda v: (floor[v], v)):
            below = ", ".join(sorted(graph[f])) or "nothing of lib/"
            print(f"floor {floor[f]}  lib/{f}/  includes {below}")
        return 0
    failed = False
    for c in loops:
        edges = [f"{a} -> {b}" for a in c for b in sorted(graph[a]) if b in c]
        print(f"check_tree: folders that include each other: {', '.join(c)} ({'; '.join(edges)})")
        failed = True
    for where in environment_reads():
        print(f"check_tree: {where}: reads the environment outside lib/{ENV_MODULE}/ "
              f"(take the value from lib/{ENV_MODULE}/environment.hpp)")
        failed = True
    longs = long_functions()
    if longs is None:
        if failed:
            return 1
        print("check_tree: SKIPPED the function-length rule: universal-ctags is not installed "
              "(scripts/install-deps.sh installs it); the ladder holds")
        return 77
    for length, name, where in longs:
        print(f"check_tree: {where}: {name} is {length} lines (at most {MAX_LINES})")
        failed = True
    if failed:
        return 1
    print(f"check_tree: lib/'s {len(graph)} folders form a one-way ladder; no function is over {MAX_LINES} lines; "
          f"only lib/{ENV_MODULE}/ reads the environment")
    return 0


if __name__ == "__main__":
    sys.exit(main())
