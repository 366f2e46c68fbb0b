#!/usr/bin/env python3
"""Cache misses measured by valgrind's cache simulator against prism's cache model.

    python3 scripts/cachegrind_study.py --build build --shapes 64x64x524288,2048x2048x64 \
        --md out.md --json out.json --png out.png [--check 20] [--D1 S,A,L] [--LL S,A,L]

For each shape (M x N x K, double, NN) and implementation (prism on one thread; the plain
OpenBLAS call on one thread) it runs build/bench/prism_cachegrind_driver under

    valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --I1=D1 --D1=... --LL=...

(cachegrind's simulator as callgrind carries it: valgrind 3.19's cachegrind cannot limit the
count to one call; the driver's CALLGRIND_START/STOP_INSTRUMENTATION around the multiply
does, from cold caches) and reports D1 and LL misses (lines brought in, reads and writes)
beside the prediction of prism/traffic.hpp for the same caches and the sequential lower
bound max{mk + kn + mn, 2mnk/sqrt(S) - 2S} (prism::bounds::sequential_io), in lines of the cache.

Caches: --D1 and --LL as valgrind takes them (bytes,ways,line); by default the topology's
first and last levels (build/bench/prism_cachegrind_driver --caches; PRISM_TOPOLOGY
honoured), the ways changed where valgrind needs a power-of-two number of sets.
--check P: exit 1 unless every measured count is within P% of its prediction.
The PNG needs matplotlib (Debian python3-matplotlib; /usr/bin/python3).
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"cachegrind_study: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout


def valgrind_cache(size, ways, line):
    """size,ways,line with a power-of-two number of sets, keeping the size (valgrind's rule)."""
    lines = size // line
    if ways > 0 and lines % ways == 0 and (lines // ways) & (lines // ways - 1) == 0:
        return size, ways, line
    sets = lines & -lines  # the largest power of two dividing the line count
    return size, lines // sets, line


def topology_caches(driver):
    caches = []
    for row in run([driver, "--caches"]).splitlines():
        _, level, size, ways, line, sharing = row.split()
        caches.append((int(level), int(size), int(ways), int(line), int(sharing)))
    if not caches:
        sys.exit("cachegrind_study: the topology reports no caches; pass --D1 and --LL")
    return caches


def parse_cache(text):
    parts = [int(x) for x in text.split(",")]
    if len(parts) != 3:
        sys.exit(f"cachegrind_study: a cache is SIZE,WAYS,LINE, got '{text}'")
    return tuple(parts)


def measure(driver, shape, impl, d1, ll, plan=None):
    m, n, k = shape
    spec = lambda c: f"{c[0]},{c[1]},{c[2]}"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--instr-atstart=no",
               f"--callgrind-out-file={out}", f"--I1={spec(d1)}", f"--D1={spec(d1)}", f"--LL={spec(ll)}",
               driver, str(m), str(n), str(k), "--impl", impl, "--D1", spec(d1), "--LL", spec(ll)]
        if plan:
            cmd += ["--plan", plan]
        text = run(cmd)
        events = totals = None
        with open(out) as f:
            for row in f:
                if row.startswith("events:"):
                    events = row.split()[1:]
                elif row.startswith("totals:") or row.startswith("summary:"):
                    totals = [int(x) for x in row.split()[1:]]
        if not events or not totals:
            sys.exit(f"cachegrind_study: no totals in callgrind's output for {shape} {impl}")
        ev = dict(zip(events, totals + [0] * (len(events) - len(totals))))
    r = {"shape": f"{m}x{n}x{k}", "impl": impl, "plan": [], "library": ""}
    for row in text.splitlines():
        if row.startswith("# plan: "):
            r["plan"].append(row[len("# plan: "):])
        elif row.startswith("# library: ") or row.startswith("# leaf library: "):
            r["library"] = (r["library"] + "; " if r["library"] else "") + row.split(": ", 1)[1]
        elif not row.startswith("#") and row.strip():
            key, *value = row.split()
            if key.startswith("predicted_") or key.startswith("bound_"):
                r[key] = float(value[0])
    r["D1_measured"] = ev.get("D1mr", 0) + ev.get("D1mw", 0)
    r["LL_measured"] = ev.get("DLmr", 0) + ev.get("DLmw", 0)
    r["Ir"] = ev.get("Ir", 0)
    words_per_line = lambda c: c[2] / 8  # doubles
    for lvl, c in (("D1", d1), ("LL", ll)):
        r[f"{lvl}_predicted"] = r.get(f"predicted_{lvl}_words", 0) / words_per_line(c)
        b = r.get(f"bound_{lvl}_words")
        r[f"{lvl}_bound"] = b / words_per_line(c) if b is not None else None
    return r


def fmt(x):
    if x is None:
        return "—"
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.3e}".replace("e+0", "e").replace("e+", "e")


def table(rows, d1, ll):
    out = ["| shape (m×n×k) | impl | D1 measured | D1 predicted | meas/pred | D1 bound | meas/bound "
           "| LL measured | LL predicted | meas/pred | LL bound | meas/bound |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = [r["shape"], r["impl"]]
        for lvl in ("D1", "LL"):
            meas, pred, b = r[f"{lvl}_measured"], r[f"{lvl}_predicted"], r[f"{lvl}_bound"]
            cells += [fmt(meas), fmt(pred), f"{meas / pred:.2f}" if pred else "—", fmt(b),
                      f"{meas / b:.2f}" if b else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=150)
    colors = {"prism": "#d62728", "openblas": "#1f77b4"}
    for ax, lvl in zip(axes, ("D1", "LL")):
        width = 0.2
        for s_i, shape in enumerate(shapes):
            for i_i, impl in enumerate(("prism", "openblas")):
                r = next((r for r in rows if r["shape"] == shape and r["impl"] == impl), None)
                if r is None:
                    continue
                x = s_i + (i_i - 0.5) * 2 * width
                ax.bar(x - width / 2, r[f"{lvl}_measured"], width, color=colors[impl],
                       label=f"{impl} measured" if s_i == 0 else None)
                ax.bar(x + width / 2, r[f"{lvl}_predicted"], width, color="white", edgecolor=colors[impl],
                       hatch="//", label=f"{impl} predicted" if s_i == 0 else None)
            b = next((r[f"{lvl}_bound"] for r in rows if r["shape"] == shape and r[f"{lvl}_bound"]), None)
            if b:
                ax.hlines(b, s_i - 0.45, s_i + 0.45, colors="black", linestyles="dashed",
                          label="lower bound" if s_i == 0 else None)
        ax.set_yscale("log")
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes, fontsize=8)
        ax.set_title(f"{lvl} misses (lines)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--shapes", required=True, help="MxNxK,... (double, NN)")
    ap.add_argument("--impls", default="prism,openblas")
    ap.add_argument("--plan", help="a one-thread plan file for prism (its shape must match)")
    ap.add_argument("--D1", help="bytes,ways,line (default: the topology's first level)")
    ap.add_argument("--LL", help="bytes,ways,line (default: the topology's last level)")
    ap.add_argument("--ll-level", type=int, help="simulate the topology's cache of this level as LL (e.g. 2)")
    ap.add_argument("--check", type=float, help="fail unless measured is within this %% of predicted")
    ap.add_argument("--md")
    ap.add_argument("--json")
    ap.add_argument("--png")
    a = ap.parse_args()

    driver = os.path.join(a.build, "bench", "prism_cachegrind_driver")
    if not os.access(driver, os.X_OK):
        sys.exit(f"cachegrind_study: {driver} is missing: build with -DPRISM_WITH_BENCH=ON")
    caches = topology_caches(driver) if not (a.D1 and a.LL) else []
    d1 = parse_cache(a.D1) if a.D1 else valgrind_cache(*caches[0][1:4])
    if a.LL:
        ll = parse_cache(a.LL)
    else:
        chosen = [c for c in caches if a.ll_level is None or c[0] == a.ll_level]
        if not chosen:
            sys.exit(f"cachegrind_study: the topology has no level-{a.ll_level} cache")
        ll = valgrind_cache(*chosen[-1][1:4])
    shapes = []
    for s in a.shapes.split(","):
        if not re.fullmatch(r"\d+x\d+x\d+", s):
            sys.exit(f"cachegrind_study: a shape is MxNxK, got '{s}'")
        shapes.append(tuple(int(x) for x in s.split("x")))

    rows = []
    for shape in shapes:
        for impl in a.impls.split(","):
            r = measure(driver, shape, impl, d1, ll, a.plan if impl == "prism" else None)
            rows.append(r)
            print(f"{r['shape']:>16} {impl:8} D1 {r['D1_measured']:.4g} vs {r['D1_predicted']:.4g} predicted; "
                  f"LL {r['LL_measured']:.4g} vs {r['LL_predicted']:.4g}", flush=True)

    vg = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "PRISM_", "BLIS_"))}
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
        "path": f"{vg} --tool=callgrind --cache-sim=yes (cachegrind's simulator), one thread, cold caches",
        "D1": d1, "LL": ll, "topology_caches": caches, "environment": env,
    }
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    text = table(rows, d1, ll)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(f"# Cache misses: prism vs OpenBLAS ({meta['date']})\n\n")
            f.write(f"- machine: {meta['cpu']}, {os.cpu_count()} CPUs ({platform.platform()})\n")
            f.write(f"- measured by: {meta['path']}\n")
            f.write(f"- simulated caches: D1 {d1[0]} B, {d1[1]}-way, {d1[2]} B lines; "
                    f"LL {ll[0]} B, {ll[1]}-way, {ll[2]} B lines\n")
            f.write(f"- topology's caches (level, bytes, ways, line, PUs sharing): {caches}\n")
            f.write(f"- environment: {env or 'no OPENBLAS_/PRISM_/BLIS_ variables'}\n")
            libs = sorted({(r['impl'], r['library']) for r in rows})
            f.write("- libraries: " + "; ".join(f"{i}: {l}" for i, l in libs) + "\n")
            f.write("- counts are cache lines brought in (misses, reads + writes); predicted = prism/traffic.hpp; "
                    "bound = prism::bounds::sequential_io with S = the cache in elements\n\n")
            f.write(text + "\n\n")
            for r in rows:
                if r["impl"] == "prism":
                    f.write(f"prism's plan for {r['shape']}: `{' / '.join(l.split('#')[0].strip() for l in r['plan'][3:])}`\n\n")
    if a.png:
        plot(rows, a.png, f"cache misses, one thread, valgrind cache simulation: D1 {d1[0] // 1024} KiB, "
                          f"LL {ll[0] // 1024} KiB ({meta['date']})")
    if a.check is not None:
        bad = [f"{r['shape']} {r['impl']} {lvl}: measured {r[f'{lvl}_measured']:.4g}, predicted "
               f"{r[f'{lvl}_predicted']:.4g}" for r in rows for lvl in ("D1", "LL")
               if not r[f"{lvl}_predicted"] or abs(r[f"{lvl}_measured"] / r[f"{lvl}_predicted"] - 1) > a.check / 100]
        if bad:
            print(f"cachegrind_study: {len(bad)} counts off by more than {a.check:g}%:\n  " + "\n  ".join(bad))
            return 1
        print(f"cachegrind_study: every count within {a.check:g}% of its prediction")
    return 0


if __name__ == "__main__":
    sys.exit(main())
