#!/usr/bin/env python3
"""Tables and a plot from a run of scripts/bench-dist.sh (bench/dist/README.md).

    /usr/bin/python3 bench/dist/report.py bench/results/dist-<date>.json \
        --md bench/results/dist-<date>.md --png bench/results/dist-<date>.png

Markdown (stdout, and --md):
  * volume, one table per shape: per-rank max received MB of `prism run` (measured by prism's
    counter, and prism's own prediction) at each P beside COSMA's figure (quoted from issue 11,
    not rerun) and the bound prism reports, prism / COSMA, P' (ranks prism used) and its grid;
  * time at np = 2: best seconds and GF/s of `prism run` and of ScaLAPACK pdgemm per shape,
    best over the rounds, and pdgemm s / prism s (above 1: prism is faster).
PNG (--png; needs matplotlib): per shape, max received MB against P for prism (measured and
predicted), COSMA and the bound; 8 x 3.4 inches at 200 dpi, drawn for ~800 px width.
A run whose records carry "fixture": true (bench/dist/testdata) is marked as a fixture
everywhere: its prism numbers are made up.
MB = 1e6 bytes.
"""

import argparse
import json
import sys

# COSMA 2.8.4, per-rank max MB received, native layout, PMPI counter (issue 11, item 7).
# Not rerun here: COSMA is not packaged in Debian.
COSMA_MB = {
    (2048, 2048, 2048): {2: 16.78, 4: 16.78, 7: 28.77, 8: 12.58, 12: 11.19, 13: 30.21, 16: 10.49},
    (256, 256, 262144): {2: 0.26, 4: 0.39, 7: 0.45, 8: 0.46, 12: 0.48, 13: 0.49, 16: 0.49},
    (4096, 4096, 256): {2: 4.19, 4: 4.19, 7: 7.21, 8: 4.19, 12: 3.50, 13: 7.77, 16: 3.15},
}
SHAPES = list(COSMA_MB)


def shape_name(s, unicode=True):
    m, n, k = s
    x = "×" if unicode else "x"
    if m == n == k:
        return f"{m}³" if unicode else f"{m}^3"
    return f"{m}{x}{n}{x}{k}"


def fmt(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:.2f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def load(path):
    with open(path) as f:
        doc = json.load(f)
    recs = doc.get("records", [])
    is_fixture = any(r.get("fixture") for r in recs)
    volume, time = {}, {}
    for r in recs:
        if "m" not in r:
            continue
        s = (int(r["m"]), int(r["n"]), int(r["k"]))
        if r.get("phase") == "volume":
            volume[(s, int(r["np"]))] = r  # one per (shape, P); a repeat replaces it
        elif r.get("phase") == "time":
            key = (s, r.get("tool"))
            old = time.get(key)
            ok = "error" not in r and r.get("best_s")
            if old is None or (ok and ("error" in old or r["best_s"] < old["best_s"])):
                time[key] = r
    shapes = SHAPES + sorted({s for s, _ in volume} - set(SHAPES))
    shapes += sorted({s for s, _ in time} - set(shapes))
    return doc, is_fixture, volume, time, shapes


def caption(doc, is_fixture):
    mach = doc.get("machine", {})
    env = doc.get("environment", {})
    git = doc.get("git", {})
    envtxt = ", ".join(f"{k}={v}" for k, v in env.items()) or "no OPENBLAS_/PRISM_/OMP_ variables set"
    parts = [
        f"Machine: {mach.get('cpu_model', '?')}, {mach.get('cpus', '?')} CPUs "
        f"({mach.get('sockets', '?')} socket(s) × {mach.get('cores_per_socket', '?')} cores, "
        f"{mach.get('threads_per_core', '?')} thread(s)/core), {mach.get('mem_gb', '?')} GB.",
        f"Run: {doc.get('started_utc', '?')} – {doc.get('finished_utc', '?')} UTC, "
        f"git {git.get('commit', '?')[:12]}{' (uncommitted changes)' if git.get('dirty') else ''}"
        f"{', quick run' if doc.get('quick') else ''}.",
        f"Environment: {envtxt}; every rank got OPENBLAS_NUM_THREADS=1. "
        f"{doc.get('mpi', {}).get('mpirun', 'mpirun ?')}.",
    ]
    if is_fixture:
        parts.insert(0, "**FIXTURE: the prism numbers are made up by bench/dist/testdata/fake_prism_run.sh; "
                        "this is not a measurement.**")
    return " ".join(parts)


def md_volume(doc, volume, shapes):
    procs = sorted({p for (_, p) in volume} | set(doc.get("options", {}).get("procs", [])))
    out = ["## Per-rank max received MB (volume)", "",
           "`mpirun --oversubscribe -np P prism run M N K --threads 1 --reps 1 --json` "
           "(oversubscribed: its times are not reported). "
           "prism = measured by prism's counter, predicted = prism's own model, COSMA = COSMA 2.8.4 "
           "(native layout, PMPI counter; quoted from issue 11, not rerun), bound = the bound prism "
           "reports for (shape, P). P' = ranks prism used. MB = 1e6 bytes.", ""]
    for s in shapes:
        rows = [(p, volume.get((s, p))) for p in procs]
        cosma = COSMA_MB.get(s, {})
        if not any(r for _, r in rows) and not cosma:
            continue
        out += [f"### {shape_name(s)}", "",
                "| P | P' | grid | prism MB | predicted MB | COSMA MB | bound MB | prism / COSMA | prism / bound | msgs max | check |",
                "|--:|--:|------|---------:|-------------:|---------:|---------:|--------------:|--------------:|---------:|-------|"]
        for p, r in rows:
            c = cosma.get(p)
            if r is None and c is None:
                continue
            if r is None:
                out.append(f"| {p} | – | not run | – | – | {fmt(c)} | – | – | – | – | – |")
                continue
            if "error" in r:
                out.append(f"| {p} | – | failed: {r['error']} | – | – | {fmt(c)} | – | – | – | – | – |")
                continue
            meas = r.get("recv_max_MB")
            out.append(
                f"| {p} | {r.get('ranks_used', '–')} | {r.get('grid', '–')} | {fmt(meas)} | "
                f"{fmt(r.get('pred_max_MB'))} | {fmt(c)} | {fmt(r.get('bound_MB'))} | "
                f"{fmt(ratio(meas, c), 3)} | {fmt(ratio(meas, r.get('bound_MB')), 3)} | "
                f"{r.get('msgs_max', '–')} | {r.get('check', '–')} |")
        out.append("")
    return out


def md_time(doc, time, shapes):
    opts = doc.get("options", {})
    out = ["## Time at np = 2 (not oversubscribed)", "",
           f"`mpirun -np 2 prism run M N K --threads 1 --reps {opts.get('reps_time', '?')} --json` against "
           f"`mpirun -np 2 prism_pdgemm_bench M N K --reps {opts.get('reps_time', '?')}` (Debian's ScaLAPACK "
           f"pdgemm, block-cyclic, NB 256 clamped to the matrix), alternating per shape, "
           f"{opts.get('rounds', '?')} round(s), the order swapped every round; best time kept. "
           "pdgemm s / prism s above 1: prism is faster.", "",
           "| shape | prism s | prism GF/s | prism grid | pdgemm s | pdgemm GF/s | pdgemm grid, NB | pdgemm s / prism s | prism check |",
           "|-------|--------:|-----------:|------------|---------:|------------:|-----------------|-------------------:|-------------|"]
    blas = set()
    for s in shapes:
        pr, sc = time.get((s, "prism_run")), time.get((s, "scalapack_pdgemm"))
        if pr is None and sc is None:
            continue

        def cell(r, key):
            if r is None:
                return "not run"
            if "error" in r:
                return "failed"
            return fmt(r.get(key))
        if sc is not None and sc.get("blas"):
            blas.add(sc["blas"])
        ok = pr is not None and sc is not None and "error" not in pr and "error" not in sc
        out.append(
            f"| {shape_name(s)} | {cell(pr, 'best_s')} | {cell(pr, 'gflops')} | "
            f"{pr.get('grid', '–') if pr and 'error' not in pr else '–'} | {cell(sc, 'best_s')} | "
            f"{cell(sc, 'gflops')} | "
            f"{(sc.get('grid', '?') + ', ' + str(sc.get('nb', '?'))) if sc and 'error' not in sc else '–'} | "
            f"{fmt(ratio(sc['best_s'], pr['best_s'])) if ok else '–'} | "
            f"{pr.get('check', '–') if pr and 'error' not in pr else '–'} |")
    out.append("")
    if blas:
        out += ["pdgemm's BLAS (as loaded): " + "; ".join(sorted(blas)), ""]
    return out


def markdown(doc, is_fixture, volume, time, shapes):
    title = "# Distributed benchmark: prism's rank level"
    if is_fixture:
        title += " — FIXTURE, not a measurement"
    out = [title, "", caption(doc, is_fixture), ""]
    if volume:
        out += md_volume(doc, volume, shapes)
    if time:
        out += md_time(doc, time, shapes)
    failed = [r for r in doc.get("records", []) if "error" in r]
    if failed:
        out += ["## Failed runs", ""] + [f"- `{r.get('cmd', '?')}`: {r['error']}" for r in failed] + [""]
    return "\n".join(out)


def plot(doc, is_fixture, volume, shapes, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 8})
    panel_shapes = [s for s in shapes if s in COSMA_MB or any(k[0] == s and "error" not in r for k, r in volume.items())]
    fig, axes = plt.subplots(1, len(panel_shapes), figsize=(8, 3.4), squeeze=False)
    procs_all = sorted({p for (_, p) in volume} | {p for s in panel_shapes for p in COSMA_MB.get(s, {})})
    handles = {}
    # P is a short discrete list (2, 4, 7, 8, 12, 13, 16): equally spaced categories read better
    # at this width than a numeric axis, where 7/8 and 12/13 collide.
    xpos = {p: i for i, p in enumerate(procs_all)}

    def xs(ps):
        return [xpos[p] for p in ps]

    for ax, s in zip(axes[0], panel_shapes):
        ok = {p: r for (sh, p), r in volume.items() if sh == s and "error" not in r}
        ps = sorted(ok)
        cosma = COSMA_MB.get(s, {})
        if cosma:
            cp = sorted(cosma)
            handles["COSMA 2.8.4 (issue 11)"] = ax.plot(xs(cp), [cosma[p] for p in cp], "s-", color="#1f77b4",
                                                        ms=4, lw=1.2)[0]
        bp = [p for p in ps if ok[p].get("bound_MB") is not None]
        if bp:
            handles["bound"] = ax.plot(xs(bp), [ok[p]["bound_MB"] for p in bp], ":", color="black", lw=1.4)[0]
        pp = [p for p in ps if ok[p].get("pred_max_MB") is not None]
        if pp:
            handles["prism predicted"] = ax.plot(xs(pp), [ok[p]["pred_max_MB"] for p in pp], "--",
                                                 color="#d62728", lw=1.0, alpha=0.7)[0]
        mp = [p for p in ps if ok[p].get("recv_max_MB") is not None]
        if mp:
            handles["prism measured"] = ax.plot(xs(mp), [ok[p]["recv_max_MB"] for p in mp], "-",
                                                color="#d62728", lw=1.6)[0]
            full = [p for p in mp if ok[p].get("ranks_used", p) >= p]
            part = [p for p in mp if ok[p].get("ranks_used", p) < p]
            ax.plot(xs(full), [ok[p]["recv_max_MB"] for p in full], "o", color="#d62728", ms=4.5)
            if part:
                handles["prism, P' < P ranks used"] = ax.plot(
                    xs(part), [ok[p]["recv_max_MB"] for p in part], "o", mfc="white", mec="#d62728", ms=4.5)[0]
        ax.set_xticks(range(len(procs_all)))
        ax.set_xticklabels([str(p) for p in procs_all])
        ax.set_xlim(-0.4, len(procs_all) - 0.6)
        ax.set_ylim(bottom=0)
        ax.set_title(shape_name(s))
        ax.set_xlabel("P (ranks)")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("max MB received per rank")
    order = ["prism measured", "prism predicted", "prism, P' < P ranks used", "COSMA 2.8.4 (issue 11)", "bound"]
    names = [n for n in order if n in handles]
    fig.legend([handles[n] for n in names], names, loc="upper center", ncol=len(names), frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    mach = doc.get("machine", {})
    env = doc.get("environment", {})
    note = (f"{mach.get('cpu_model', '?')}, {mach.get('cpus', '?')} CPUs, oversubscribed · "
            f"{doc.get('date_utc', '?')} · git {doc.get('git', {}).get('commit', '?')[:10]}"
            f"{' · OPENBLAS_CORETYPE=' + env['OPENBLAS_CORETYPE'] if 'OPENBLAS_CORETYPE' in env else ''}"
            " · MB = 1e6 bytes")
    if is_fixture:
        note = "FIXTURE: prism numbers made up, not a measurement\n" + note
        fig.text(0.5, 0.5, "FIXTURE", fontsize=40, color="red", alpha=0.15, ha="center", va="center",
                 rotation=20)
    fig.text(0.5, 0.01, note, ha="center", va="bottom", fontsize=7, color="#444444")
    bottom = 0.09 if is_fixture else 0.05
    fig.tight_layout(rect=(0, bottom, 1, 0.92))
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="bench/results/dist-<date>.json written by scripts/bench-dist.sh")
    ap.add_argument("--md", help="write the markdown here too")
    ap.add_argument("--png", help="write the plot here (needs matplotlib)")
    args = ap.parse_args()
    doc, is_fixture, volume, time, shapes = load(args.json)
    text = markdown(doc, is_fixture, volume, time, shapes)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    if args.png:
        try:
            plot(doc, is_fixture, volume, shapes, args.png)
        except ImportError as e:
            print(f"report.py: no PNG ({e}); run with /usr/bin/python3", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
