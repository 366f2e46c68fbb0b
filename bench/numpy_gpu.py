#!/usr/bin/env python3
"""bench/numpy_gpu.py LIBPRISM_BLAS [--quick | --small] [--reps R] [--out FILE] — NumPy through the
preloaded drop-in against the same NumPy without it, in the same run (docs/gpu.md, "Checking
it on a GPU"). Each case runs in a child process of this interpreter twice: once with
LD_PRELOAD=LIBPRISM_BLAS (PRISM_GPU and PRISM_BLAS_ROUTE as this process has them) and once
without. The child builds its operands from a seed, times the product (best of R), checks
sampled entries of C against exact sums within the componentwise bound
|C - C_ref| <= c k eps (|A||B|), and says which BLAS its process mapped and, with prism,
which path PRISM_STATS counted its calls on. Prints a markdown table; exit 1 on a wrong
result, else 0 (a missed target is a figure, not a failure).

Cases (--quick: 8192^2 and 2^22 x 64, a shorter visit; --small: the same kinds at sizes a
host without a GPU runs in seconds, for a dry run on an emulated device):
  A @ B, 16384 x 16384 doubles      target >= 20 x NumPy without prism
  A.T @ A, A 2^24 x 64 doubles      target >= 5 x (NumPy calls dsyrk for it)
  A @ B, 64 x 64, many calls        with a GPU present no slower than with PRISM_GPU=off
"""
import json
import os
import subprocess
import sys
import time

CHILD = "--child"


def child(case, n, k, reps, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    if case == "gram":
        a = rng.random((k, n)) - 0.5
        run = lambda: a.T @ a
        pairs = [(i, j) for i, j in zip(range(0, n, max(1, n // 8)), range(n - 1, -1, -max(1, n // 8)))]
        exact = lambda i, j: (a[:, i].astype(np.longdouble) * a[:, j]).sum()
        scale = lambda i, j: (np.abs(a[:, i]).astype(np.longdouble) * np.abs(a[:, j])).sum()
        depth = k
    else:
        a = rng.random((n, n)) - 0.5
        b = rng.random((n, n)) - 0.5
        run = lambda: a @ b
        pairs = [(i, (7 * i + 3) % n) for i in range(0, n, max(1, n // 16))]
        exact = lambda i, j: (a[i, :].astype(np.longdouble) * b[:, j]).sum()
        scale = lambda i, j: (np.abs(a[i, :]).astype(np.longdouble) * np.abs(b[:, j])).sum()
        depth = n
    c = run()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        c = run()
        best = min(best, time.perf_counter() - t0)
    eps = np.finfo(np.float64).eps
    wrong = [(i, j) for i, j in pairs if not abs(np.longdouble(c[i, j]) - exact(i, j)) <= 4 * depth * eps * scale(i, j)]
    with open("/proc/self/maps") as maps:
        blas = sorted({os.path.basename(line.split()[-1]) for line in maps if "blas" in line and "/" in line})
    print(json.dumps({"seconds": best, "checked": len(pairs), "wrong": len(wrong), "blas": blas}))


def run_child(case, n, k, reps, env):
    out = subprocess.run([sys.executable, __file__, CHILD, case, str(n), str(k), str(reps)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{case} {n} {k}: exit {out.returncode}: {out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # PRISM_STATS rows "prism:   PATH TYPE CALLS ...": e.g. "gpu dsyrk" for NumPy's A.T @ A.
    paths = [" ".join(line.split()[1:3]) for line in out.stderr.splitlines()
             if line.startswith("prism:   ") and len(line.split()) > 3 and line.split()[1] in ("gpu", "recursion", "backend")
             and line.split()[3].isdigit()]
    result["paths"] = sorted(set(paths))
    result["stderr"] = out.stderr
    return result


def main(argv):
    if argv and argv[0] == CHILD:
        return child(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), 48)
    args = list(argv)
    if not args or args[0].startswith("-"):
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    lib = os.path.abspath(args.pop(0))
    small, quick = "--small" in args, "--quick" in args
    reps = int(args[args.index("--reps") + 1]) if "--reps" in args else 3
    out = args[args.index("--out") + 1] if "--out" in args else None
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    with_prism = dict(base, LD_PRELOAD=lib, PRISM_STATS="1")
    without = {k: v for k, v in base.items() if not k.startswith("PRISM_")}
    big, gram_k, tiny_reps = (512, 1 << 16, 200) if small else (8192, 1 << 22, 500) if quick else (16384, 1 << 24, 1000)
    rows, wrong = [], False
    for case, n, k, target, name in (("gemm", big, big, 20.0, f"NumPy A @ B, {big}^2 doubles"),
                                     ("gram", 64, gram_k, 5.0, f"NumPy A.T @ A, A {gram_k} x 64 doubles")):
        p = run_child(case, n, k, reps, with_prism)
        q = run_child(case, n, k, 1 if not small else reps, without)  # the slow side: once at full size
        ratio = q["seconds"] / p["seconds"]
        bad = p["wrong"] > 0 or q["wrong"] > 0
        wrong = wrong or bad
        rows.append((name, f"{p['seconds']:.3f} s ({', '.join(p['paths']) or '?'})", f"{q['seconds']:.3f} s ({', '.join(q['blas'])})",
                     f"{ratio:.1f}", f">= {target:g}", "WRONG RESULT" if bad else "met" if ratio >= target else "missed"))
    # A small call: with the GPU present (PRISM_GPU as given) against PRISM_GPU=off, both with
    # prism routing as it does by default (auto).
    auto = {k: v for k, v in with_prism.items() if k != "PRISM_BLAS_ROUTE"}  # the drop-in's own choice
    present = run_child("gemm", 64, 64, tiny_reps, auto)
    off = run_child("gemm", 64, 64, tiny_reps, dict(auto, PRISM_GPU="off"))
    ratio = present["seconds"] / off["seconds"]
    bad = present["wrong"] > 0 or off["wrong"] > 0
    wrong = wrong or bad
    rows.append(("NumPy A @ B, 64^2, through the drop-in", f"{present['seconds'] * 1e6:.1f} us with the GPU present "
                 f"({', '.join(present['paths']) or '?'})", f"{off['seconds'] * 1e6:.1f} us with PRISM_GPU=off",
                 f"{ratio:.2f}", "<= 1.05 (stays on the CPU)", "WRONG RESULT" if bad else "met" if ratio <= 1.05 else "missed"))
    table = ["| case | with prism | without | ratio | target | |", "|---|---|---|---:|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(table) + "\n"
    text += (f"\nNumPy {__import__('numpy').__version__} from {sys.executable}; its BLAS without prism: "
             f"{', '.join(q['blas'])}; with prism: {', '.join(p['blas'])}. PRISM_GPU={os.environ.get('PRISM_GPU', '(unset)')}, "
             f"PRISM_BLAS_ROUTE={os.environ.get('PRISM_BLAS_ROUTE', '(unset: auto)')}.\n")
    print(text, end="")
    if out:
        with open(out, "w") as f:
            f.write(text)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
