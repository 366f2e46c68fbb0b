#!/usr/bin/env python3
"""The `gram` set: NumPy-shaped A.T @ A (?syrk / ?herk) with prism against OpenBLAS
and BLIS at every kernel set this CPU runs, in one run, as a markdown table and a plot; NumPy's
own call (column-major 'L', 'N' on the n x k view of a C-order array) and, in rows of their
own, the Fortran layout's ('U', 'T' on a column-major k x n A: bench/gram_bench.cpp).

    python3 bench/gram.py --out-dir DIR [--clean-env] [--reps N]
    (bash scripts/bench.sh [--clean-env] gram runs it and keeps DIR under bench/runs/)

One process of build/bench/prism_gram_bench measures prism, OpenBLAS and BLIS with the
environment as it is (or cleaned: --clean-env), and the machine's read bandwidth and FMA
peak; then, as bench/run.py does for gemm, one process per other kernel set of each peer
(same environments, same confirmation through prism_bench --print-kernel-sets), with
--label=SET --no-probes. The table keeps each library's default and its best set, prism over
OpenBLAS's default (what NumPy gets) and over the best peer, and the roofline:
max(bytes of A / read bandwidth, flops / FMA peak), with the read bandwidth the highest this
run saw (the probe before the first set, the probe after the last, the fastest row) and the
FMA peak the higher of the two probes."""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (bench/run.py: the kernel-set tables, environments and probes)

ROW = re.compile(r"^((?:dsyrk|zherk)(?:-f)?)\s+(\S+)\s+k=(\d+)\s+n=(\d+)\s+([\d.]+) ms\s+([\d.]+) GF/s.*?(\S+)$")


def parse(text):
    """{(routine, k, n): {impl: (ms, gflops, check)}} and the header line."""
    rows, header = {}, ""
    for line in text.splitlines():
        if line.startswith("# gram:"):
            header = line[2:]
        m = ROW.match(line.strip())
        if m:
            key = (m.group(1), int(m.group(3)), int(m.group(4)))
            rows.setdefault(key, {})[m.group(2)] = (float(m.group(5)), float(m.group(6)), m.group(7))
    return rows, header


def probe_limits(header):
    """(read bandwidth in B/s, FMA peak in flop/s) from a '# gram:' probe line."""
    bw = re.search(r"read bandwidth ([\d.]+) GB/s", header).group(1)
    peak = re.search(r"FMA peak ([\d.]+) GF/s", header).group(1)
    return float(bw) * 1e9, float(peak) * 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--clean-env", action="store_true")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    gram = os.path.join(args.build, "bench", "prism_gram_bench")
    bench = os.path.join(args.build, "bench", "prism_bench")
    os.makedirs(args.out_dir, exist_ok=True)
    log = open(os.path.join(args.out_dir, "gram.log"), "w")
    base = run.base_environment(args.clean_env)
    default_cores, blis_ids, rc = run.probe(bench, base, 120)
    if rc != 0:
        sys.exit("gram.py: %s --print-kernel-sets failed" % bench)

    def go(cmd, env):
        log.write("$ %s\n" % " ".join(cmd))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        log.write(r.stdout + r.stderr)
        log.flush()
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.exit("gram.py: %s failed (status %d)" % (" ".join(cmd), r.returncode))
        return r.stdout

    # Which machine description prism planned with: a `prism tune` file or the model's values.
    show = subprocess.run([os.path.join(args.build, "apps", "prism"), "tune", "--show"], env=base,
                          capture_output=True, text=True).stdout.splitlines()
    machine_line = show[0].lstrip("# ") if show else "unknown (prism tune --show failed)"
    rows, header = parse(go([gram, "--reps=%d" % args.reps], base))
    sets = []
    flags = run.cpu_flags()
    for lib, name, skip in run.wanted_sets("all", flags):
        if skip or (lib == "blis" and name not in blis_ids):
            continue
        env = run.set_environment(base, lib, name, blis_ids)
        cores, _, rc = run.probe(bench, env, 120)
        core = cores.get("%s-pthread" % lib)
        if rc != 0 or core is None or (name != "auto" and core.lower() != name.lower()):
            continue
        if core == default_cores.get("%s-pthread" % lib) and all(
                base.get(v) == env.get(v) for v in run.LIBRARY_VARS[lib][1:]):
            continue  # the main process's default column has these kernels
        if any(l == lib and c == core for l, c, _ in sets):
            continue
        sets.append((lib, core, run.env_changes(base, env)))
        more, _ = parse(go([gram, "--reps=%d" % args.reps, "--impls=%s" % lib, "--label=%s" % core, "--no-probes"],
                           env))
        for key, impls in more.items():
            rows.setdefault(key, {}).update(impls)

    numpy_rows = numpy_lines(args, base, log)
    # The machine's limits: the bandwidth probe runs again after the last set, and the roofline
    # takes the highest read rate this run saw, whichever of the two probes or of the rows
    # (bytes of A / time) gave it. One probe taken while the shared machine was busy once read
    # 29.5 GB/s where prism itself then read A at 43 GB/s, which made the roofline column
    # flatter prism; the highest rate seen can only make the roofline harder to reach.
    # Likewise the FMA peak: this VM's clock wanders (185-219 GF/s between runs), so the
    # higher of the two probes.
    _, last = parse(go([gram, "--probes-only"], base))
    probes, peaks = zip(*(probe_limits(h) for h in (header, last)))
    peak = max(peaks)
    seen = max(((k * n * (16 if r.startswith("zherk") else 8) / (v[0] * 1e-3), i, r, k, n)
                for (r, k, n), impls in rows.items() for i, v in impls.items()), default=(0, "", "", 0, 0))
    bw = max(max(probes), seen[0])
    bw_note = "read bandwidth for the roofline %.1f GB/s: the highest of the probes (%.1f GB/s first, %.1f GB/s " \
              "after the last set) and the fastest read of A in a row (%.1f GB/s, %s on %s %dx%d); FMA peak %.1f " \
              "GF/s, the higher of the probes (%.1f first, %.1f after the last set)" % (
                  bw * 1e-9, probes[0] * 1e-9, probes[1] * 1e-9, seen[0] * 1e-9, seen[1], seen[2], seen[3], seen[4],
                  peak * 1e-9, peaks[0] * 1e-9, peaks[1] * 1e-9)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    host = {v: os.environ.get(v) for v in run.CLEAN_VARS}
    forced = ", ".join("%s=%s" % (k, v) for k, v in host.items() if v) or "none"
    table = ["| A.T @ A | prism ms | prism GF/s | openblas (default) ms | openblas_best ms | blis_best ms "
             "| prism / OpenBLAS default | prism / best peer | roofline ms | prism % of roofline |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    record = []
    # NumPy's layout first (dsyrk, zherk), then the Fortran layout's rows (-f); long k first.
    for (routine, k, n), impls in sorted(rows.items(), key=lambda kv: (kv[0][0].endswith("-f"), kv[0][0],
                                                                      -kv[0][1])):
        if "prism" not in impls or "openblas" not in impls:
            continue
        cx = routine.startswith("zherk")
        fortran = routine.endswith("-f")
        flops = (4.0 if cx else 1.0) * n * (n + 1) * k
        roof = max(k * n * (16 if cx else 8) / bw, flops / peak) * 1e3

        def best(lib):
            cand = {i: v for i, v in impls.items() if i == lib or i.startswith(lib + "@")}
            name = min(cand, key=lambda i: cand[i][0])
            return name, cand[name][0]

        ob, bl = best("openblas"), best("blis")
        peer = min((ob, bl), key=lambda x: x[1])
        t = impls["prism"][0]

        def label(x):
            return "%.1f (%s)" % (x[1], x[0].split("@")[1] if "@" in x[0] else "default")

        shape = "%s 2^%d x %d%s%s" % ("herk" if cx else "syrk", k.bit_length() - 1, n, " complex" if cx else "",
                                     ", Fortran layout" if fortran else "")
        table.append("| %s | **%.1f** | %.1f | %.1f | %s | %s | %.2f | %.2f (%s) | %.1f | %.0f %% |" % (
            shape, t, impls["prism"][1], impls["openblas"][0], label(ob), label(bl), impls["openblas"][0] / t,
            peer[1] / t, peer[0], roof, 100 * roof / t))
        record.append({"routine": routine, "k": k, "n": n, "roofline_ms": roof,
                       "impls": {i: {"ms": v[0], "gflops": v[1], "check": v[2]} for i, v in impls.items()}})
    if numpy_rows:
        table += ["", "NumPy's own `A.T @ A` (`numpy` %s, its BLAS as installed), in a fresh process each, best of %d, "
                  "without and with `LD_PRELOAD=%s/libprism_blas.so` (no PRISM_* variable set):" % (
                      numpy_rows[0][3], args.reps, args.build), "",
                  "| NumPy A.T @ A | plain ms | LD_PRELOAD ms | speed-up | same result |", "|---|---:|---:|---:|---|"]
        for shape, plain, pre, _, same in numpy_rows:
            table.append("| %s | %.1f | %.1f | %.2f | %s |" % (shape, plain, pre, plain / pre, same))
    checks = {i: v[2] for r in rows.values() for i, v in r.items() if i != "openblas" and "@" not in i}
    notes = [
        "",
        "*gram set: A.T @ A as NumPy calls it for a C-order k x n array, cblas_dsyrk(RowMajor, Upper, Trans), "
        "which is the column-major dsyrk('L', 'N') of the n x k view (zherk likewise, A A^H of that view); rows "
        "marked Fortran layout: a column-major k x n A, dsyrk('U', 'T') / zherk('U', 'C'), as a Fortran or "
        "LAPACK-style CholeskyQR code calls it. 2 threads; best of %d after one warm-up, "
        "every implementation in the same run. Machine: %s; run %s. %s.*" % (
            args.reps, run_machine(), when, header),
        "",
        "*Environment: %s; forced by the host: %s. Kernel sets: defaults %s; besides them, each in a process "
        "of its own: %s. prism's leaves run the kernel sets prism picks (docs/planning.md, \"Leaf kernels\"); "
        "prism's %s.*" % (
            "clean (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, BLIS_ARCH_TYPE removed)" if args.clean_env else "as set",
            forced, ", ".join("%s %s" % (l, c) for l, c in
                              (("openblas", default_cores.get("openblas-pthread")),
                               ("blis", default_cores.get("blis-pthread")))),
            ", ".join("%s@%s" % (l, c) for l, c, _ in sets) or "none", machine_line),
        "",
        "*Roofline = max(bytes of A / read bandwidth, real flops / FMA peak): A read once, n(n+1)k real "
        "flops (x4 complex); %s. Checks against OpenBLAS's result (upper triangle): %s.*" % (
            bw_note, ", ".join("%s %s" % kv for kv in sorted(checks.items())) or "-"),
    ]
    md = "\n".join(table + notes) + "\n"
    open(os.path.join(args.out_dir, "gram.md"), "w").write(md)
    json.dump({"when": when, "header": header, "header_last": last, "roofline_bandwidth_gbs": bw * 1e-9, "roofline_fma_gflops": peak * 1e-9,
               "bandwidth_note": bw_note, "clean_env": args.clean_env, "host_env": host,
               "kernel_sets": [{"library": l, "core": c, "env": e} for l, c, e in sets], "rows": record,
               "commit": run.git_commit(), "prism_machine": machine_line},
              open(os.path.join(args.out_dir, "gram.json"), "w"), indent=1)
    plot(record, os.path.join(args.out_dir, "gram.png"), when)
    print(md)


NUMPY = r"""
import sys, time
import numpy as np
k, n, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
A = np.random.default_rng(7).standard_normal((k, n))
G = A.T @ A
best = 1e30
for _ in range(reps):
    t = time.perf_counter(); G = A.T @ A; best = min(best, time.perf_counter() - t)
print(best * 1e3, float(np.abs(G).sum()), np.__version__)
"""


def numpy_lines(args, base, log):
    """[(shape, plain ms, preloaded ms, numpy version, results agree)] for A.T @ A in NumPy."""
    lib = os.path.join(args.build, "libprism_blas.so")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    out = []
    for k, n in ((1 << 22, 32), (1 << 20, 64)):
        res = []
        for preload in (False, True):
            env = {v: x for v, x in base.items() if not v.startswith("PRISM_") and v != "LD_PRELOAD"}
            if preload:
                env["LD_PRELOAD"] = lib
            r = subprocess.run([py, "-c", NUMPY, str(k), str(n), str(args.reps)], env=env, capture_output=True,
                               text=True)
            log.write("numpy A.T @ A %dx%d preload=%s: %s%s" % (k, n, preload, r.stdout, r.stderr))
            if r.returncode != 0:
                print("gram.py: NumPy A.T @ A failed (%s); no NumPy rows" % r.stderr.strip()[-200:])
                return []
            ms, total, version = r.stdout.split()
            res.append((float(ms), float(total), version))
        same = "yes" if abs(res[0][1] - res[1][1]) <= 1e-10 * abs(res[0][1]) else "NO (sum |G| %r vs %r)" % (
            res[0][1], res[1][1])
        out.append(("2^%d x %d" % (k.bit_length() - 1, n), res[0][0], res[1][0], res[0][2], same))
    return out


def run_machine():
    cpu = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return "%s, %d cores" % (cpu or "unknown CPU", os.cpu_count() or 0)


def plot(record, path, when):
    """Time per shape: prism, OpenBLAS default, each library's best set, and the roofline."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("gram.py: no matplotlib, no plot")
        return
    fig, ax = plt.subplots(figsize=(10, 4))
    labels, width = [], 0.2
    for x, r in enumerate(record):
        impls = r["impls"]
        ob = min(v["ms"] for i, v in impls.items() if i.split("@")[0] == "openblas")
        bl = min(v["ms"] for i, v in impls.items() if i.split("@")[0] == "blis")
        bars = [("prism", impls["prism"]["ms"], "C0"), ("OpenBLAS default", impls["openblas"]["ms"], "C1"),
                ("OpenBLAS best set", ob, "C2"), ("BLIS best set", bl, "C3")]
        for j, (name, ms, color) in enumerate(bars):
            ax.bar(x + (j - 1.5) * width, ms, width, color=color, label=name if x == 0 else None)
        ax.plot([x - 2 * width, x + 2 * width], [r["roofline_ms"]] * 2, "k--", label="roofline" if x == 0 else None)
        labels.append("%s\n2^%d x %d%s" % ("herk" if r["routine"].startswith("zherk") else "syrk",
                                           r["k"].bit_length() - 1, r["n"],
                                           "\nFortran" if r["routine"].endswith("-f") else ""))
    ax.set_xticks(range(len(record)))
    ax.set_xticklabels(labels)
    ax.set_ylabel("ms (lower is better)")
    ax.set_title("A.T @ A: prism vs OpenBLAS and BLIS (%s)" % when, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
