#!/usr/bin/env python3
"""A table and a plot from a run of scripts/bench-syrk.sh (issue 28, item 6; bench/dist/README.md).

    /usr/bin/python3 bench/dist/report_syrk.py bench/results/dist-syrk-<host>-<date>.json \
        --md bench/results/dist-syrk-<host>-<date>.md --png bench/results/dist-syrk-<host>-<date>.png

Markdown (stdout, and --md):
  * volume, one table per shape n x k (C = A^T A, C n x n, A k x n): for each P, the SYRK lower
    bound per rank (prism bound --syrk), Debian's pdsyrk_ per-rank max and mean received MB
    (PMPI counter, one call), prism's syrk and prism's gemm of the full square (per-rank max MB;
    "to be filled" until the records' prism_syrk / prism_gemm_full hooks hold numbers), and the
    ratios pdsyrk / bound, prism syrk / bound, prism syrk / pdsyrk, prism syrk / prism gemm;
    a failed or timed-out run shows its error instead of numbers, it is never dropped;
  * time at np = 2: pdsyrk's best seconds and GF/s per shape (best over the rounds), and
    prism syrk's beside it with pdsyrk s / prism s once filled.
PNG (--png; needs matplotlib): per shape, max received MB against P on a log scale: pdsyrk
(measured, each point labelled with its grid), the SYRK bound, gemm's bound for the full
square, and prism syrk / prism gemm when filled; 8 x 3.4 inches at 200 dpi.
MB = 1e6 bytes; the bound's words are converted at 8 bytes (double).
"""

import argparse
import json
import sys

WORD_BYTES = 8  # pdsyrk_ is double precision


def fmt(v, digits=3):
    """A table cell: 3 significant digits below 1, 2 decimals above, 1 above 100; – for None."""
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
    """a / b, or None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def shape_name(n, k):
    """4096×4096, 256×1048576 (n × k)."""
    return f"{n}×{k}"


def words_mb(w):
    """Words of doubles as MB, None stays None."""
    return None if w is None else w * WORD_BYTES / 1e6


def hook_mb(r, key, field="recv_max_MB"):
    """The lead's figure from a record's hook (prism_syrk / prism_gemm_full), or None."""
    h = r.get(key)
    return h.get(field) if isinstance(h, dict) else None


def load(path):
    """The run's document, its volume records by (n, k, P), time records by (n, k), its shapes."""
    with open(path) as f:
        doc = json.load(f)
    volume, time = {}, {}
    for r in doc.get("records", []):
        if r.get("tool") != "scalapack_pdsyrk":
            continue
        n, k = r.get("n"), r.get("k")
        if n is None or k is None:  # a failed run printed no line: take the shape from its command
            words = r.get("cmd", "").split()
            try:
                at = next(i for i, w in enumerate(words) if w.endswith("prism_pdsyrk_bench"))
                n, k = int(words[at + 1]), int(words[at + 2])
            except (StopIteration, IndexError, ValueError):
                continue
        if r.get("phase") == "volume":
            volume[(n, k, r["np"])] = r
        elif r.get("phase") == "time":
            time.setdefault((n, k), []).append(r)
    shapes = [(s["n"], s["k"]) for s in doc.get("options", {}).get("shapes", [])]
    return doc, volume, time, shapes


def caption(doc):
    """One paragraph: what ran where, and when."""
    m = doc.get("machine", {})
    env = doc.get("environment", {})
    envs = ", ".join(f"{k}={v}" for k, v in env.items()) or "none"
    opts = doc.get("options", {})
    return (f"Run of {doc.get('started_utc', '?')} to {doc.get('finished_utc', '?')} on {doc.get('host', '?')} "
            f"({m.get('cpu_model', '?')}, {m.get('cpus', '?')} CPUs, {m.get('mem_gb', '?')} GB; "
            f"{m.get('scalapack', 'ScaLAPACK')}), commit {doc.get('git', {}).get('commit', '?')[:10]}. "
            f"pdsyrk_ uplo {opts.get('uplo', 'U')}, trans {opts.get('trans', 'T')} (C = AᵀA, A k×n), most square "
            f"grid, NB {opts.get('nb', '?')}, OPENBLAS_NUM_THREADS=1 per rank; environment: {envs}. "
            "Volume runs are oversubscribed (P ranks on this machine's cores), one counted call each; "
            "MB = 1e6 bytes received per rank, by the PMPI counter (bench/dist/mpi_counter.c).")


def md_volume(volume, shapes, procs):
    """One table per shape: bound, pdsyrk (max, mean), the prism hooks and the ratios."""
    out = []
    for n, k in shapes:
        out.append(f"### {shape_name(n, k)}: C {n}×{n}, A {k}×{n}\n")
        out.append("| P | grid | bound case | bound MB | pdsyrk MB max | pdsyrk MB mean | prism syrk MB | "
                   "prism gemm full-square MB | gemm bound MB | pdsyrk / bound | prism syrk / bound | "
                   "prism syrk / pdsyrk | prism syrk / prism gemm |")
        out.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for p in procs:
            r = volume.get((n, k, p))
            if r is None:
                out.append(f"| {p} | – | – | – | not run | – | – | – | – | – | – | – | – |")
                continue
            bound = words_mb(r.get("bound_words"))
            gemm_bound = words_mb(r.get("gemm_bound_words"))
            prism = hook_mb(r, "prism_syrk")
            prism_gemm = hook_mb(r, "prism_gemm_full")
            if "error" in r:
                mx, mean = f"failed: {r['error']}", None
            else:
                c = r.get("counter") or {}
                mx, mean = c.get("total_max_MB"), c.get("total_mean_MB")
            measured = mx if isinstance(mx, (int, float)) else None
            out.append(
                f"| {p} | {r.get('grid', '–')} | {r.get('bound_case') or '–'} | {fmt(bound)} | {fmt(mx)} | "
                f"{fmt(mean)} | {fmt(prism) if prism is not None else 'to be filled'} | "
                f"{fmt(prism_gemm) if prism_gemm is not None else 'to be filled'} | {fmt(gemm_bound)} | "
                f"{fmt(ratio(measured, bound))} | {fmt(ratio(prism, bound))} | {fmt(ratio(prism, measured))} | "
                f"{fmt(ratio(prism, prism_gemm))} |")
        out.append("")
    return "\n".join(out)


def md_time(time, shapes):
    """pdsyrk's best time at np = 2 per shape, prism syrk's beside it once filled, and the
    machine's 1-minute load average before the best run (other users of the cores show there)."""
    out = ["| shape n×k | grid | pdsyrk s | pdsyrk GF/s | prism syrk s | pdsyrk s / prism s | load before | runs |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for n, k in shapes:
        rs = time.get((n, k), [])
        ok = [r for r in rs if "error" not in r and r.get("best_s") is not None]
        failed = [r for r in rs if "error" in r]
        best = min(ok, key=lambda r: r["best_s"]) if ok else None
        prism = [h.get("best_s") for h in (r.get("prism_syrk") for r in rs) if isinstance(h, dict) and h.get("best_s")]
        prism_s = min(prism) if prism else None
        runs = f"{len(ok)} ok" + (f", {len(failed)} failed ({failed[0]['error']})" if failed else "")
        out.append(f"| {shape_name(n, k)} | {best.get('grid', '–') if best else '–'} | "
                   f"{fmt(best['best_s']) if best else '–'} | {fmt(best.get('gflops')) if best else '–'} | "
                   f"{fmt(prism_s) if prism_s is not None else 'to be filled'} | "
                   f"{fmt(ratio(best['best_s'] if best else None, prism_s))} | "
                   f"{fmt((best.get('loadavg_before') or [None])[0]) if best else '–'} | {runs} |")
    return "\n".join(out)


def markdown(doc, volume, time, shapes):
    """The whole report."""
    procs = doc.get("options", {}).get("procs", sorted({p for (_, _, p) in volume}))
    parts = ["## Distributed SYRK: ScaLAPACK pdsyrk_ against the SYRK lower bound\n", caption(doc), "",
             "Bound: `prism bound N N K --syrk --ranks P` (prism::bounds::syrk_parallel_io_minus_owned, "
             "docs/data-movement.md), words a rank must receive beyond a balanced share, as doubles. "
             "gemm bound: prism::bounds::memory_independent_minus_owned for the full n×n×k square. "
             "The prism columns are the hook the distributed syrk fills (records' `prism_syrk`, "
             "`prism_gemm_full`).\n"]
    if doc.get("quick"):
        parts.insert(1, "**Quick run (smoke test shapes), not a result.**\n")
    if volume:
        parts += ["### Volume per rank (MB received, max over ranks)\n", md_volume(volume, shapes, procs)]
    if time:
        parts += ["### Time at np = 2 (one rank per core, best over rounds)\n", md_time(time, shapes), ""]
        loads = [r["loadavg_before"][0] for rs in time.values() for r in rs if r.get("loadavg_before")]
        cpus = doc.get("machine", {}).get("cpus") or 0
        if loads and cpus and max(loads) > cpus:
            parts += [f"**Shared machine:** the 1-minute load average was {min(loads):.1f} to {max(loads):.1f} "
                      f"on {cpus} CPUs before these runs, so other work was running. The times say how "
                      "pdsyrk_ fared under that load, not what it does on idle cores. Compare them only "
                      "with prism figures taken in the same conditions.", ""]
    return "\n".join(parts) + "\n"


def plot(volume, shapes, path):
    """Per shape, max received MB against P."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = [s for s in shapes if any((s[0], s[1], p) in volume for (_, _, p) in volume)]
    fig, axes = plt.subplots(1, max(1, len(shapes)), figsize=(8, 3.4), squeeze=False)
    for ax, (n, k) in zip(axes[0], shapes):
        ps = sorted(p for (a, b, p) in volume if (a, b) == (n, k))
        rs = [volume[(n, k, p)] for p in ps]

        def series(get):
            pts = [(p, get(r)) for p, r in zip(ps, rs)]
            return [p for p, v in pts if v is not None], [v for p, v in pts if v is not None]

        for label, get, style in [
            ("pdsyrk (counter)", lambda r: None if "error" in r else (r.get("counter") or {}).get("total_max_MB"), "o-"),
            ("SYRK bound", lambda r: words_mb(r.get("bound_words")), "k--"),
            ("gemm bound, full square", lambda r: words_mb(r.get("gemm_bound_words")), "k:"),
            ("prism syrk", lambda r: hook_mb(r, "prism_syrk"), "s-"),
            ("prism gemm, full square", lambda r: hook_mb(r, "prism_gemm_full"), "^-"),
        ]:
            x, y = series(get)
            if x:
                ax.plot(x, y, style, label=label, markersize=4, linewidth=1.2)
        failed = [p for p, r in zip(ps, rs) if "error" in r]
        for p in failed:
            ax.axvline(p, color="red", alpha=0.3, linewidth=3)
        ax.set_title(f"n×k = {shape_name(n, k)}", fontsize=9)
        ax.set_xlabel("P (ranks)", fontsize=8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ps)
        ax.set_xticklabels([str(p) for p in ps], fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_yscale("log")  # pdsyrk spans 1x to 1000x the bound across grids
        ax.tick_params(axis="y", which="both", labelsize=7)
        for p, r in zip(ps, rs):  # the grid each pdsyrk point ran on
            v = None if "error" in r else (r.get("counter") or {}).get("total_max_MB")
            if v:
                ax.annotate(r.get("grid", ""), (p, v), textcoords="offset points", xytext=(0, 4), fontsize=5,
                            ha="center")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("MB received per rank (max)", fontsize=8)
    axes[0][0].legend(fontsize=6, loc="best")
    fig.suptitle("C = AᵀA: Debian ScaLAPACK pdsyrk_ against the SYRK lower bound", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main():
    """Reads the JSON, prints the markdown, writes --md and --png."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--md", help="also write the markdown here")
    ap.add_argument("--png", help="write the plot here (needs matplotlib)")
    a = ap.parse_args()
    doc, volume, time, shapes = load(a.json)
    if not shapes:
        shapes = sorted({(n, k) for (n, k, _) in volume} | set(time))
    md = markdown(doc, volume, time, shapes)
    sys.stdout.write(md)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    if a.png and volume:
        try:
            plot(volume, shapes, a.png)
        except ImportError as e:
            print(f"report_syrk: no plot ({e}); use /usr/bin/python3", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
