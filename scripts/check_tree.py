#!/usr/bin/env python3
"""The tree's three structural rules, checked (ctest `tree_rules`; docs/development.md "The ladder").

1. The folders of lib/ form a one-way ladder: no folder includes, directly or through
   others, a folder that includes it back. Every include counts: a private one
   (`#include "../name/file.hpp"`, "name/file.hpp" from lib/, or a file in a sub-folder,
   resolved to the folder of lib/ it lands in) and a public one (`<prism/X.hpp>`), which
   counts as the interface of the folder that implements it (PUBLIC_HEADERS: an explicit
   map, checked; a public header missing from it fails the tree).
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
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PUBLIC_INCLUDE = re.compile(r'^\s*#\s*include\s+<prism/([A-Za-z_0-9]+\.hpp)>')
PUBLIC = os.path.join(ROOT, "include", "prism")
# Each public header, as the interface of the lib/ folder whose .cpp files define what it
# declares (that folder must include it from one of its .cpp files; the check says so when
# it does not). prism.hpp, the umbrella, maps to None: lib/ never includes it.
PUBLIC_HEADERS = {
    "bounds.hpp": "bounds",
    "context.hpp": "runtime",
    "dist.hpp": "dist",
    "error.hpp": "types",
    "gemm.hpp": "recursive",
    "gpu.hpp": "recursive",
    "machine.hpp": "machine",
    "placement.hpp": "recursive",
    "plan.hpp": "recursive",
    "prism.hpp": None,
    "rank_model.hpp": "ranks",
    "syrk.hpp": "recursive",
    "topology.hpp": "numa",
    "traffic.hpp": "bounds",
    "types.hpp": "types",
    "version.hpp": "recursive",
}
MAX_LINES = 100
ENV_MODULE = "environment"
ENV_CALL = re.compile(r'\b(?:secure_)?(?:getenv|setenv|unsetenv|putenv)\s*\(')
# (path under lib/, reason): files allowed to touch the environment themselves. None today:
# even the BLAS libraries' own variables (OPENBLAS_CORETYPE, BLIS_ARCH_TYPE), which prism
# must read live from the host's world, are read through environment.hpp's backend_variable.
ENV_EXCEPTIONS = {}


def lib_files():
    """[(folder, path)] of every C/C++ source and header under lib/."""
    out = []
    for f in sorted(d for d in os.listdir(LIB) if os.path.isdir(os.path.join(LIB, d))):
        for dirpath, _, files in os.walk(os.path.join(LIB, f)):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp", ".h", ".c")):
                    out.append((f, os.path.join(dirpath, name)))
    return out


def included_folder(path, target):
    """The folder of lib/ that `#include "target"` in file `path` lands in, or None."""
    for base in (os.path.dirname(path), LIB):
        full = os.path.normpath(os.path.join(base, target))
        if os.path.exists(full) and full.startswith(LIB + os.sep):
            return os.path.relpath(full, LIB).split(os.sep)[0]
    return None


def public_header_problems():
    """["what is wrong"] with PUBLIC_HEADERS against include/prism/ and lib/."""
    headers = sorted(n for n in os.listdir(PUBLIC) if n.endswith(".hpp"))
    found = [f"include/prism/{h}: not in check_tree.py's PUBLIC_HEADERS (name the lib/ folder that implements it)"
             for h in headers if h not in PUBLIC_HEADERS]
    found += [f"PUBLIC_HEADERS names {h}, which include/prism/ does not have" for h in PUBLIC_HEADERS if h not in headers]
    includers = {}
    for folder, path in lib_files():
        if not path.endswith(".cpp"):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = PUBLIC_INCLUDE.match(line)
                if m:
                    includers.setdefault(m.group(1), set()).add(folder)
    for h, folder in sorted(PUBLIC_HEADERS.items()):
        if folder is None and h in includers:
            found.append(f"<prism/{h}> is the umbrella header; lib/{', lib/'.join(sorted(includers[h]))} includes it")
        elif folder is not None and folder not in includers.get(h, set()):
            found.append(f"PUBLIC_HEADERS says lib/{folder}/ implements <prism/{h}>, but no .cpp there includes it")
    return found


def folder_graph(why=None):
    """{folder: {folders it includes}} over lib/'s folders; `why`, when given, collects
    {(folder, included folder): ["path: include"]}."""
    folders = sorted(d for d in os.listdir(LIB) if os.path.isdir(os.path.join(LIB, d)))
    graph = {f: set() for f in folders}
    for f, path in lib_files():
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                to = None
                m = INCLUDE.match(line)
                if m:
                    to = included_folder(path, m.group(1))
                else:
                    p = PUBLIC_INCLUDE.match(line)
                    if p:
                        to = PUBLIC_HEADERS.get(p.group(1))
                if to is not None and to in graph and to != f:
                    graph[f].add(to)
                    if why is not None:
                        why.setdefault((f, to), []).append(os.path.relpath(path, ROOT) + ": " + line.strip())
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
    why = {}
    graph = folder_graph(why)
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
    for problem in public_header_problems():
        print(f"check_tree: {problem}")
        failed = True
    for c in loops:
        edges = [f"{a} -> {b}" for a in c for b in sorted(graph[a]) if b in c]
        print(f"check_tree: folders that include each other: {', '.join(c)} ({'; '.join(edges)})")
        for a in c:
            for b in sorted(graph[a]):
                if b in c:
                    for where in why[(a, b)]:
                        print(f"check_tree:   {a} -> {b}: {where}")
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
