#!/usr/bin/env python3
"""Turn prism_bench's Google Benchmark JSON into a markdown table and a PNG plot.

    prism_bench --set=quick --benchmark_out=quick.json --benchmark_out_format=json
    python3 bench/report.py quick.json --md quick.md --png quick.png

For every (shape, type, implementation) the best repetition is kept (highest GFLOP/s, i.e.
the shortest real time): repetitions are disturbed by other work, never helped by it.
The table has one row per shape and type: GFLOP/s of prism and of the four peers, prism
over the best of all four peers, prism over the best multi-threaded peer, and prism as a
percentage of the machine's FMA peak for that type (the fma_peak benchmark of the same run).
When the run has the prism_blas column (the drop-in libprism_blas.so), the table also shows
it and "drop-in / backend": prism_blas over openblas, the library the drop-in forwards to.

The PNG needs matplotlib (Debian: python3-matplotlib; run with /usr/bin/python3 if another
python3 comes first on PATH). The table is printed without it.
"""

import argparse
import json
import re
import sys

IMPLS = ["prism", "prism_blas", "openblas", "openblas_1t", "blis", "blis_1t"]
PEERS = ["openblas", "openblas_1t", "blis", "blis_1t"]
MT_PEERS = ["openblas", "blis"]
TYPE_NAMES = {"d": "double", "s": "float"}
COLORS = {
    "prism": "#d62728",
    "prism_blas": "#ff7f0e",
    "openblas": "#1f77b4",
    "openblas_1t": "#9ecae1",
    "blis": "#2ca02c",
    "blis_1t": "#a1d99b",
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", help="Google Benchmark JSON written by prism_bench (--benchmark_out=...)")
    p.add_argument("--md", help="also write the markdown table (and caption) to this file")
    p.add_argument("--png", help="write the plot to this PNG file")
    p.add_argument("--caption", default="", help="extra text appended below the table")
    p.add_argument("--quiet", action="store_true", help="do not print the table to stdout")
    return p.parse_args()


def load(path):
    with open(path) as f:
        return json.load(f)


def split_name(b):
    """(kind, type, trans, shape, impl) from a benchmark's run name, or None."""
    name = b.get("run_name") or b.get("name", "")
    parts = name.split("/")
    if parts[0] == "fma_peak" and len(parts) >= 2:
        return ("fma_peak", parts[1], None, None, "fma_peak")
    if parts[0] == "gemm" and len(parts) >= 5:
        return ("gemm", parts[1], parts[2], parts[3], parts[4])
    return None


def collect(data):
    """Best GFLOP/s per key, and bookkeeping (repetitions seen, failures, check errors)."""
    best = {}       # (type, trans, shape, impl) -> gflops ; fma: ("fma", type) -> gflops
    reps = {}       # same key -> number of successful repetitions
    errors = {}     # same key -> error message (all repetitions failed)
    check = {}      # (type, trans, shape) -> (err in k*eps, failed?)
    order = []      # (shape, trans, type) in order of first appearance
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue  # mean / median / stddev / cv aggregates
        parsed = split_name(b)
        if parsed is None:
            continue
        kind, typ, trans, shape, impl = parsed
        key = ("fma", typ) if kind == "fma_peak" else (typ, trans, shape, impl)
        if kind == "gemm" and (shape, trans, typ) not in order:
            order.append((shape, trans, typ))
        if b.get("error_occurred"):
            errors.setdefault(key, b.get("error_message", "error"))
            continue
        g = b.get("gflops")
        if g is None:  # older output: compute from the flop counter and the real time
            unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
            g = b["flop"] / (b["real_time"] * unit) * 1e-9
        reps[key] = reps.get(key, 0) + 1
        if g > best.get(key, -1.0):
            best[key] = g
        if kind == "gemm" and impl == "prism":
            failed = "CHECK_FAILED" in b.get("label", "")
            if "check_err_keps" in b or failed:
                check[(typ, trans, shape)] = (b.get("check_err_keps", float("nan")), failed)
    return best, reps, errors, check, order


def pow2_text(v):
    """4194304 -> 2^22 for large powers of two, otherwise the number."""
    if v >= (1 << 14) and v & (v - 1) == 0:
        return "2^%d" % (v.bit_length() - 1)
    return str(v)


def shape_label(shape, trans, sep="×"):
    m, n, k = (int(x) for x in shape.split("x"))
    text = sep.join(pow2_text(v) for v in (m, n, k))
    if trans and trans != "NN":
        text += " " + trans
    return text


def gf(v):
    if v is None:
        return "–"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 0.1:
        return "%.2f" % v
    return "%.2g" % v


def best_of(best, key_base, impls):
    found = [(best[key_base + (i,)], i) for i in impls if key_base + (i,) in best]
    return max(found) if found else (None, None)


def build_rows(best, reps, errors, check, order):
    rows = []
    for shape, trans, typ in order:
        base = (typ, trans, shape)
        vals = {i: best.get(base + (i,)) for i in IMPLS}
        peer, peer_name = best_of(best, base, PEERS)
        mt, mt_name = best_of(best, base, MT_PEERS)
        peak = best.get(("fma", typ))
        p = vals["prism"]
        rows.append({
            "shape": shape, "trans": trans, "type": typ, "vals": vals,
            "ratio_peer": (p / peer) if p and peer else None, "peer_name": peer_name,
            "ratio_mt": (p / mt) if p and mt else None, "mt_name": mt_name,
            "ratio_dropin": (vals["prism_blas"] / vals["openblas"]) if vals["prism_blas"] and vals["openblas"] else None,
            "pct_peak": (100.0 * p / peak) if p and peak else None,
            "check": check.get(base),
            "errors": {i: errors[base + (i,)] for i in IMPLS if base + (i,) in errors},
            "reps": {i: reps.get(base + (i,), 0) for i in IMPLS},
        })
    return rows


def context_text(ctx):
    cpu = ctx.get("cpu_model") or "unknown CPU"
    ncpu = ctx.get("num_cpus", "?")
    mhz = ctx.get("mhz_per_cpu")
    host = ctx.get("host_name", "?")
    date = ctx.get("date", "?")
    machine = "%s, %s CPUs%s, host %s" % (cpu, ncpu, " @ %s MHz" % mhz if mhz else "", host)
    return machine, date


def active_impls(rows):
    """The implementations the run measured (or tried to), in IMPLS order."""
    return [i for i in IMPLS if any(r["vals"][i] is not None or i in r["errors"] for r in rows)]


def markdown(data, rows, best, args):
    ctx = data.get("context", {})
    out = []
    impls = active_impls(rows)
    dropin = "prism_blas" in impls
    head = ["shape", "type"] + [("prism GF/s" if i == "prism" else i) for i in impls] + \
           ["prism / best peer", "prism / best MT peer"] + (["drop-in / backend"] if dropin else []) + \
           ["prism % of FMA peak"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|")
    notes = []
    try:
        wanted = int(ctx.get("reps", "0"))
    except ValueError:
        wanted = 0
    short = []  # entries measured with fewer repetitions than asked for
    for r in rows:
        vals = r["vals"]
        top = max((v for v in vals.values() if v is not None), default=None)
        cells = []
        for i in impls:
            v = vals[i]
            if v is None:
                cell = "err" if i in r["errors"] else "–"
            else:
                cell = gf(v)
                if v == top:
                    cell = "**%s**" % cell
                if wanted and r["reps"][i] < wanted:
                    cell += " †"
                    short.append("%s %s %s (%d of %d)" % (shape_label(r["shape"], r["trans"]), r["type"], i,
                                                         r["reps"][i], wanted))
            if i == "prism" and r["check"] and r["check"][1]:
                cell += " ⚠"
            cells.append(cell)
        ratio_peer = "–" if r["ratio_peer"] is None else "%.2f (%s)" % (r["ratio_peer"], r["peer_name"])
        ratio_mt = "–" if r["ratio_mt"] is None else "%.2f (%s)" % (r["ratio_mt"], r["mt_name"])
        pct = "–" if r["pct_peak"] is None else "%.1f %%" % r["pct_peak"]
        ratio_dropin = ["–" if r["ratio_dropin"] is None else "%.2f" % r["ratio_dropin"]] if dropin else []
        out.append("| " + " | ".join([shape_label(r["shape"], r["trans"]), r["type"]] + cells +
                                      [ratio_peer, ratio_mt] + ratio_dropin + [pct]) + " |")
        label = "%s %s" % (shape_label(r["shape"], r["trans"]), r["type"])
        if r["check"] and r["check"][1]:
            notes.append("⚠ %s: prism's result differs from OpenBLAS (max error %.3g k·eps)." %
                         (label, r["check"][0]))
        for i, msg in r["errors"].items():
            if r["vals"][i] is None:
                notes.append("err %s %s: %s" % (label, i, msg))
    if short:
        notes.append("† fewer repetitions than asked for: the rest were skipped after the benchmark "
                     "used its time budget (--budget-s=%s): %s." % (ctx.get("budget_s", "?"), "; ".join(short)))

    machine, date = context_text(ctx)
    peaks = ", ".join("%s %s GF/s" % (TYPE_NAMES.get(t, t), gf(best[("fma", t)]))
                      for t in ("d", "s") if ("fma", t) in best)
    types = sorted({r["type"] for r in rows}, key=lambda t: "ds".find(t))
    nreps = ctx.get("reps", "?")
    type_text = " and ".join(TYPE_NAMES.get(t, t) for t in types) + (" only" if len(types) == 1 else "")
    if ctx.get("shape_set") == "quick" and types == ["d"]:
        type_text += " (the quick set's default, to stay within about 3 minutes; --type=both adds float)"
    cap = ["", "*%s set, %s; best of %s repetitions per entry; GFLOP/s = 2mnk / real time. "
               "Machine: %s; run %s.*" % (ctx.get("shape_set", "?"), type_text, nreps, machine, date)]
    details = []
    if peaks:
        details.append("FMA peak (all %s cores): %s." % (ctx.get("num_cpus", "?"), peaks))
    details.append("prism: %s. openblas / blis: pthread builds with nproc threads; "
                   "openblas_1t / blis_1t: serial builds. Bold: fastest in the row; "
                   "ratios name the peer they divide by." % ctx.get("prism_context", "default context"))
    if dropin:
        details.append("prism_blas: the drop-in libprism_blas.so (cblas_?gemm through its routing rule), "
                       "forwarding what it does not take to the openblas column's library; drop-in / "
                       "backend = prism_blas / openblas.")
    cores = ", ".join("%s=%s" % (k[len("core_"):], v) for k, v in sorted(ctx.items()) if k.startswith("core_"))
    if cores:
        details.append("BLAS kernel sets selected on this CPU: %s." % cores)
    sched = ctx.get("kernel_sched_options", "none")
    if sched and sched != "none":
        details.append("Kernel scheduler options: %s (threads may be packed onto fewer vCPUs than "
                       "they could use)." % sched)
    cap.append("")
    cap.append("*" + " ".join(details) + "*")
    if notes:
        cap.append("")
        cap.extend("- " + n for n in notes)
    if args.caption:
        cap.append("")
        cap.append(args.caption)
    return "\n".join(out + cap) + "\n"


def plot(data, rows, best, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as e:
        sys.stderr.write("report.py: cannot draw %s: %s (install python3-matplotlib, or run "
                         "/usr/bin/python3 if another python3 comes first on PATH)\n" % (path, e))
        return False
    ctx = data.get("context", {})
    types = [t for t in ("d", "s") if any(r["type"] == t for r in rows)]
    nshape = max(sum(1 for r in rows if r["type"] == t) for t in types)
    width = max(11.0, 1.1 * nshape + 2.5)
    heights = []
    for _ in types:
        heights += [3.0, 1.4]
    fig, axes = plt.subplots(len(heights), 1, figsize=(width, 1.55 * sum(heights) + 1.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = axes[:, 0]
    impls = active_impls(rows)
    bar_w = 0.8 / len(impls)
    for ti, t in enumerate(types):
        trs = [r for r in rows if r["type"] == t]
        labels = [re.sub(r"2\^(\d+)", r"$2^{\1}$", shape_label(r["shape"], r["trans"])) for r in trs]
        x = list(range(len(trs)))
        peak = best.get(("fma", t))

        # GFLOP/s per implementation, log scale; a value far below the rest (a pathological
        # run) would squash the axis, so the axis stops at top / 3000 and such bars are
        # labelled with their value instead.
        ax = axes[2 * ti]
        ax.set_axisbelow(True)
        values = [r["vals"][i] for r in trs for i in impls if r["vals"][i]]
        top = max(values + ([peak] if peak else []))
        bottom = max(min(values) / 1.5, top / 3000.0)
        for j, impl in enumerate(impls):
            xs = [xi + (j - (len(impls) - 1) / 2) * bar_w for xi in x]
            ys = [r["vals"][impl] or 0 for r in trs]
            ax.bar(xs, ys, bar_w, color=COLORS[impl],
                   edgecolor="black" if impl == "prism" else "none", linewidth=0.6)
            for xv, yv in zip(xs, ys):
                if yv and yv < bottom:
                    ax.text(xv, bottom * 1.08, gf(yv), rotation=90, ha="center", va="bottom",
                            fontsize=6.5, color=COLORS[impl] if impl != "blis_1t" else "#4a8f3f")
        for xi, r in zip(x, trs):
            if r["vals"]["prism"]:
                ax.text(xi - (len(impls) - 1) / 2 * bar_w, r["vals"]["prism"] * 1.05, gf(r["vals"]["prism"]),
                        ha="center", va="bottom", fontsize=6.5, color="#8b0000")
        if peak:
            ax.axhline(peak, color="gray", linestyle="--", linewidth=1)
            ax.text(len(trs) - 0.45, peak * 1.04, "FMA peak, all cores: %s GF/s" % gf(peak),
                    va="bottom", ha="right", fontsize=8, color="dimgray")
        ax.set_yscale("log")
        ax.set_ylim(bottom, top * 1.6)
        ax.set_ylabel("GFLOP/s (log scale)")
        ax.set_title("%s (%s): GFLOP/s, best of repetitions" % (TYPE_NAMES.get(t, t), t), fontsize=10)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=25, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(trs) - 0.4)
        ax.grid(axis="y", which="major", alpha=0.3)

        # prism over the best peer and over the best multi-threaded peer.
        ax = axes[2 * ti + 1]
        ax.set_axisbelow(True)
        rp = [r["ratio_peer"] or 0 for r in trs]
        rm = [r["ratio_mt"] or 0 for r in trs]
        series = [(rp, "#d62728"), (rm, "#ff9896")]
        if "prism_blas" in impls:  # the drop-in over its backend
            series.append(([r["ratio_dropin"] or 0 for r in trs], COLORS["prism_blas"]))
        w = 0.72 / len(series)
        for si, (vals, color) in enumerate(series):
            off = (si - (len(series) - 1) / 2) * w
            ax.bar([xi + off for xi in x], vals, w, color=color)
            for xi, v in zip(x, vals):
                if v:
                    ax.text(xi + off, v + 0.02, "%.2f" % v, ha="center", va="bottom", fontsize=6.5)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylim(0, max([v for vals, _ in series for v in vals if v] + [1.0]) * 1.2)
        ax.set_ylabel("ratio")
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=25, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(trs) - 0.4)
        ax.grid(axis="y", alpha=0.3)

    handles = [Patch(facecolor=COLORS[i], edgecolor="black" if i == "prism" else "none", label=i) for i in impls]
    handles += [Patch(facecolor="#d62728", label="prism / best of all peers"),
                Patch(facecolor="#ff9896", label="prism / best multi-thread peer")]
    if "prism_blas" in impls:
        handles.append(Patch(facecolor=COLORS["prism_blas"], label="drop-in / backend (prism_blas / openblas)"))
    machine, date = context_text(ctx)
    peers = [p for p in ("OpenBLAS", "BLIS") if any(i.startswith(p.lower()) for i in impls)]
    fig.suptitle("prism vs %s (%s set, best of %s repetitions)\n%s — %s" % (
        " and ".join(peers) or "peers", ctx.get("shape_set", "?"), ctx.get("reps", "?"), machine, date), fontsize=11)
    top_in = 0.72  # inches kept for the title and the legend
    fig_h = fig.get_size_inches()[1]
    fig.legend(handles=handles, ncol=len(handles), loc="upper center", fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.62 / fig_h))
    fig.tight_layout(rect=(0, 0, 1, 1 - top_in / fig_h))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    args = parse_args()
    data = load(args.json)
    best, reps, errors, check, order = collect(data)
    if not order:
        sys.stderr.write("report.py: no gemm benchmarks in %s\n" % args.json)
        return 1
    rows = build_rows(best, reps, errors, check, order)
    md = markdown(data, rows, best, args)
    if not args.quiet:
        sys.stdout.write(md)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    if args.png and not plot(data, rows, best, args.png):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
