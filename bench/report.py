#!/usr/bin/env python3
"""Turn prism_bench's Google Benchmark JSON into a markdown table and PNG charts.

    prism_bench --set=quick --benchmark_out=quick.json --benchmark_out_format=json
    python3 bench/report.py quick.json --md quick.md --png quick.png
    python3 bench/report.py full.json --png-ratio ratio.png --png-gflops gflops.png

For every (shape, type, implementation) the best repetition is kept (highest GFLOP/s, i.e.
the shortest real time): repetitions are disturbed by other work, never helped by it.
The table has one row per shape and type: GFLOP/s of prism and of the four peers with their
default kernel sets, prism over the best peer, prism over the best multi-threaded peer, and
prism's share of the machine's limit for the shape (the probes of the same run):
  - with the read-bandwidth probe (bandwidth/read/*): the roofline limit
        roofline = min(FMA peak, I × read bandwidth),  I = 2mnk / ((mk + kn + 2mn) · s)
    flop per byte when A and B are read once and C is read and written once (beta = 1),
    s the element size (8 bytes in double, 4 in float), and prism as a percentage of it;
  - without it: prism as a percentage of the FMA peak of that type.
When the run has the prism_blas column (the drop-in libprism_blas.so), the table also shows
it and "drop-in / backend": prism_blas over openblas, the library the drop-in forwards to.

Kernel sets (runs by bench/run.py --kernel-sets): implementations named LIB@SET (e.g.
openblas@SkylakeX, blis_1t@zen3) are the same peer loaded with another kernel set in a
process of its own. The table then adds openblas_best and blis_best: the library's fastest
column of the row, threaded or serial, over its default and every set, naming the set; "best
peer" and "best MT peer" range over every set, and a second table lists every set.

Charts (10 inches wide, 150 dpi: 1500 px, legible when shown 1000 px wide):
  --png-ratio   the headline: one bar per shape and type, prism / best peer of the row (linear
                axis, a dashed line at 1.0, shapes grouped tall-skinny / large / small); for a
                run of the drop-in against its backend only (the dropin set), drop-in / backend
                with prism / backend as a black tick. Bars above --ratio-max are clipped there,
                hatched, with their true value written.
  --png-gflops  absolute GFLOP/s, one panel per shape class and type, one colour per
                implementation; a value too small to see is a short hatched bar with its value
                written; a stalled run (1000 times below its row's best) or an entry with
                fewer repetitions than asked for (table †) is explained under the chart.
  --png         both in one image, the ratio chart above the GF/s chart.
They need matplotlib (Debian: python3-matplotlib; run with /usr/bin/python3 if another
python3 comes first on PATH). The table is printed without it.
"""

import argparse
import json
import re
import sys

IMPLS = ["prism", "prism_blas", "openblas", "openblas_1t", "blis", "blis_1t"]
PEERS = ["openblas", "openblas_1t", "blis", "blis_1t"]
MT_PEERS = ["openblas", "blis"]
LIBRARY_IMPLS = {"openblas": ["openblas", "openblas_1t"], "blis": ["blis", "blis_1t"]}
BEST_COLS = {"openblas_best": "openblas", "blis_best": "blis"}  # column -> library
TYPE_NAMES = {"d": "double", "s": "float"}
ELEMENT_BYTES = {"d": 8, "s": 4}
LARGE_BYTES = 1 << 30  # prism_bench: shapes with more operand bytes run --reps-large repetitions
COLORS = {
    "prism": "#d62728",
    "prism_blas": "#ff7f0e",
    "openblas": "#1f77b4",
    "openblas_1t": "#9ecae1",
    "openblas_best": "#08306b",
    "blis": "#2ca02c",
    "blis_1t": "#a1d99b",
    "blis_best": "#00441b",
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", help="Google Benchmark JSON written by prism_bench (--benchmark_out=...)")
    p.add_argument("--md", help="also write the markdown table (and caption) to this file")
    p.add_argument("--png", help="write both charts, --png-ratio's above --png-gflops', into one PNG file")
    p.add_argument("--png-ratio", metavar="FILE",
                   help="write the headline chart: prism / best peer per shape and type (linear axis, "
                        "a line at 1.0), or drop-in / backend, see --ratio")
    p.add_argument("--png-gflops", metavar="FILE",
                   help="write absolute GFLOP/s per implementation, one panel per shape class and type")
    p.add_argument("--ratio", choices=["auto", "peer", "dropin"], default="auto",
                   help="what the headline chart divides: peer = prism / best of the peer columns; "
                        "dropin = prism_blas / openblas (the drop-in over its backend); auto (default) = "
                        "dropin when the run measured prism_blas and no peer but openblas, else peer")
    p.add_argument("--ratio-max", type=float, default=3.0, metavar="X",
                   help="clip ratio bars above X (their true value is written on them; default 3)")
    p.add_argument("--caption", default="", help="extra text appended below the table")
    p.add_argument("--quiet", action="store_true", help="do not print the table to stdout")
    return p.parse_args()


def load(path):
    with open(path) as f:
        return json.load(f)


def split_name(b):
    """(kind, type, trans, shape, impl) from a benchmark's run name, or None. impl may carry a
    kernel set, e.g. openblas@SkylakeX."""
    name = b.get("run_name") or b.get("name", "")
    parts = name.split("/")
    if parts[0] == "fma_peak" and len(parts) >= 2:
        return ("fma_peak", parts[1], None, None, "fma_peak")
    if parts[0] == "bandwidth" and len(parts) >= 2:
        return ("bandwidth", None, None, None, "bandwidth")
    if parts[0] == "gemm" and len(parts) >= 5:
        return ("gemm", parts[1], parts[2], parts[3], parts[4])
    return None


def collect(data):
    """Best GFLOP/s per key, and bookkeeping (repetitions seen, failures, check errors)."""
    best = {}       # (type, trans, shape, impl) -> gflops ; fma: ("fma", type) -> gflops;
                    # read bandwidth: ("bw",) -> GB/s
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
        key = {"fma_peak": ("fma", typ), "bandwidth": ("bw",)}.get(kind, (typ, trans, shape, impl))
        if kind == "gemm" and (shape, trans, typ) not in order:
            order.append((shape, trans, typ))
        if b.get("error_occurred"):
            errors.setdefault(key, b.get("error_message", "error"))
            continue
        if kind == "bandwidth":
            if "gbytes_per_s" in b and b["gbytes_per_s"] > best.get(key, -1.0):
                best[key] = b["gbytes_per_s"]
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


def base_impl(impl):
    """openblas@SkylakeX -> openblas."""
    return impl.split("@", 1)[0]


def kernel_set(impl):
    """openblas@SkylakeX -> SkylakeX; None for a default column."""
    return impl.split("@", 1)[1] if "@" in impl else None


def set_text(impl):
    """How a best-of cell names its winner: "SkylakeX", "Haswell, 1t", "default", "default, 1t"."""
    return (kernel_set(impl) or "default") + (", 1t" if base_impl(impl).endswith("_1t") else "")


def best_of(best, key_base, impls):
    found = [(best[key_base + (i,)], i) for i in impls if key_base + (i,) in best]
    return max(found) if found else (None, None)


def operand_bytes(shape, typ):
    m, n, k = shape_dims(shape)
    return (m * k + k * n + m * n) * ELEMENT_BYTES.get(typ, 8)


def roofline(shape, typ, fma, bw, cache_bytes=0):
    """(limit GF/s, bound, intensity flop/byte) or None without both probes; bound is
    "memory", "FMA", or "FMA, in cache" when A, B and C fit in `cache_bytes` (one L2, as
    prism_bench records it): the benchmark calls the shape over and over on the same arrays,
    so they stay cached and memory bandwidth does not bound it.

    I = 2mnk / ((mk + kn + 2mn) * s): A and B read once, C read and written once (beta = 1),
    s bytes per element; limit = min(FMA peak, I * read bandwidth). For example 8x8x2^24 in
    double: 2*8*8*2^24 = 2^31 flop over (8*2^24 + 2^24*8 + 2*64) * 8 bytes ~ 2^31 bytes, so
    I ~ 1 flop/byte and the limit is the read bandwidth in GB/s, as GF/s; 4x4x2^24 has
    I ~ 0.5; 2048^3 has I = 128, FMA-bound."""
    if fma is None or bw is None:
        return None
    m, n, k = shape_dims(shape)
    intensity = 2.0 * m * n * k / ((m * k + k * n + 2.0 * m * n) * ELEMENT_BYTES.get(typ, 8))
    if cache_bytes and operand_bytes(shape, typ) <= cache_bytes:
        return (fma, "FMA, in cache", intensity)
    memory = intensity * bw
    return (memory, "memory", intensity) if memory < fma else (fma, "FMA", intensity)


def wanted_reps(ctx, shape, typ):
    """Repetitions prism_bench asked for on this shape (--reps, or --reps-large above 1 GiB)."""
    try:
        reps = int(ctx.get("reps", "0"))
        large = int(ctx.get("reps_large", reps))
    except ValueError:
        return 0
    return large if operand_bytes(shape, typ) > LARGE_BYTES else reps


def build_rows(best, reps, errors, check, order, cache_bytes=0):
    present = {}  # (type, trans, shape) -> every impl measured or tried there, in order seen
    for key in list(best) + list(errors):
        if len(key) == 4:
            lst = present.setdefault(key[:3], [])
            if key[3] not in lst:
                lst.append(key[3])
    bw = best.get(("bw",))
    rows = []
    for shape, trans, typ in order:
        base = (typ, trans, shape)
        here = present.get(base, [])
        vals = {i: best.get(base + (i,)) for i in IMPLS}
        peers = [i for i in here if base_impl(i) in PEERS]
        peer, peer_name = best_of(best, base, peers)
        mt, mt_name = best_of(best, base, [i for i in peers if base_impl(i) in MT_PEERS])
        lib_best = {}
        for col, lib in BEST_COLS.items():
            v, who = best_of(best, base, [i for i in peers if base_impl(i) in LIBRARY_IMPLS[lib]])
            lib_best[col] = (v, who)
            vals[col] = v
        peak = best.get(("fma", typ))
        roof = roofline(shape, typ, peak, bw, cache_bytes)
        p = vals["prism"]
        rows.append({
            "shape": shape, "trans": trans, "type": typ, "vals": vals, "impls": here,
            "all": {i: best.get(base + (i,)) for i in here},
            "sets": any(kernel_set(i) for i in here), "lib_best": lib_best,
            "ratio_peer": (p / peer) if p and peer else None, "peer_name": peer_name,
            "ratio_mt": (p / mt) if p and mt else None, "mt_name": mt_name,
            "ratio_dropin": (vals["prism_blas"] / vals["openblas"]) if vals["prism_blas"] and vals["openblas"] else None,
            "pct_peak": (100.0 * p / peak) if p and peak else None,
            "roofline": roof,
            "pct_roofline": (100.0 * p / roof[0]) if p and roof else None,
            "check": check.get(base),
            "errors": {i: errors[base + (i,)] for i in here if base + (i,) in errors},
            "reps": {i: reps.get(base + (i,), 0) for i in here},
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
    """The default-set implementations the run measured (or tried to), in IMPLS order."""
    return [i for i in IMPLS if any(r["vals"][i] is not None or i in r["errors"] for r in rows)]


def best_cols(rows):
    """openblas_best / blis_best when some row has a kernel-set column of that library."""
    return [c for c, lib in BEST_COLS.items()
            if any(kernel_set(i) and base_impl(i) in LIBRARY_IMPLS[lib] for r in rows for i in r["impls"])]


def bandwidth_probe(data):
    """(passes, bytes, threads) of the best bandwidth benchmark, or None."""
    found = None
    for b in data.get("benchmarks", []):
        parsed = split_name(b)
        if parsed and parsed[0] == "bandwidth" and "gbytes_per_s" in b:
            if found is None or b["gbytes_per_s"] > found["gbytes_per_s"]:
                found = b
    if found is None:
        return None
    return int(found.get("passes", 0)), int(found.get("bytes", 0)), int(found.get("threads", 0))


def env_text(ctx):
    """What the environment forced, from bench/run.py's host_env / clean_env (or the main
    process's blas_env for a run without run.py)."""
    host = ctx.get("host_env")
    forcing = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "BLIS_ARCH_TYPE")
    if isinstance(host, dict):
        forced = ["%s=%s" % (k, host[k]) for k in forcing if k in host]
        threads = ["%s=%s" % (k, v) for k, v in sorted(host.items()) if k not in forcing]
        if ctx.get("clean_env") == "1":
            text = ("Environment: clean (bench.sh --clean-env): %s removed from every process, so each "
                    "default column is the library's own choice for this CPU." %
                    (", ".join(forced) + " (as the host sets them)" if forced else "nothing to remove"))
        elif forced:
            text = ("Environment: the host's, as it is: %s force the default columns' kernels (prism's own "
                    "leaf copies choose theirs); a user's machine usually sets none of them." % ", ".join(forced))
        else:
            text = "Environment: the host's, as it is; it sets no variable that forces a kernel set."
        if threads:
            text += " Also set: %s (each library's thread count is set by the benchmark)." % ", ".join(threads)
        return text
    blas = ctx.get("blas_env")
    if blas:
        return "BLAS variables in the environment: %s." % blas
    return None


def kernel_sets_text(ctx):
    """The sets that ran (besides the defaults) and the ones left out, from bench/run.py."""
    record = ctx.get("kernel_sets")
    if not isinstance(record, list) or not record:
        return None
    defaults = ctx.get("default_kernel_sets", {})
    ran, left = [], []
    for e in record:
        env = ", ".join("%s=%s" % (k, v) if v is not None else "%s unset" % k
                        for k, v in e.get("env", {}).items())
        if e.get("status", "").startswith("ran"):
            asked = [e["requested"]] + e.get("requested_also", [])
            also = " (asked as %s)" % " and ".join(asked) if asked != [e.get("label")] else ""
            extra = "" if e["status"] == "ran" else "; " + e["status"]
            fails = "; failed on " + ", ".join(e["failures"]) if e.get("failures") else ""
            ran.append("%s@%s%s [%s%s%s]" % (e["library"], e["label"], also, env, extra, fails))
        elif "same kernels as" not in e.get("status", ""):
            left.append("%s %s (%s)" % (e["library"], e["requested"], e["status"].replace("skipped: ", "")))
    dflt = ", ".join("%s %s" % (lib, core) for lib, core in sorted(defaults.items()) if core)
    text = "Kernel sets: defaults %s;" % (dflt or "?")
    text += " besides them, each in a process of its own, interleaved per shape: %s." % (
        "; ".join(ran) if ran else "none")
    if left:
        text += " Not run: %s." % "; ".join(left)
    return text


def weaker_defaults(ctx):
    """[(lib, default set, best set)] for each peer library whose default ran a kernel set
    other than the one prism's leaves run on this CPU (bench/run.py's best_kernel_sets: the
    fastest set prism's probe measured here) and whose best set ran beside it."""
    best, defaults = ctx.get("best_kernel_sets") or {}, ctx.get("default_kernel_sets") or {}
    ran = {(e.get("library"), e.get("core")) for e in ctx.get("kernel_sets") or []
           if isinstance(e, dict) and e.get("status", "").startswith("ran")}
    out = []
    for lib in ("openblas", "blis"):
        b, d = best.get(lib), defaults.get(lib)
        if b and d and b.lower() != d.lower() and (lib, b) in ran:
            out.append((lib, d, b))
    return out


def weaker_text(ctx):
    """One sentence naming each peer whose default kernels are weaker than the CPU allows."""
    weak = weaker_defaults(ctx)
    if not weak:
        return None
    return ("Peers on weaker kernels than this CPU allows: %s. Each also ran at that best set, beside its default "
            "column, and the ratios to the best peer divide by the faster, so they are what a user whose BLAS "
            "runs its best kernels sees." % "; ".join(
                "%s's default ran %s, its best set here is %s (%s@%s)" % (lib, d, b, lib, b) for lib, d, b in weak))


def sets_table(rows, typ):
    """Every kernel-set column of one type: a row per library@set, a column per shape."""
    rs = [r for r in rows if r["type"] == typ]
    impls = []
    for lib in ("openblas", "blis"):
        for threaded in (True, False):
            for r in rs:
                for i in r["impls"]:
                    if base_impl(i) in LIBRARY_IMPLS[lib] and base_impl(i).endswith("_1t") != threaded \
                            and i not in impls:
                        impls.append(i)
    if not any(kernel_set(i) for i in impls):
        return []
    head = ["%s GF/s" % TYPE_NAMES.get(typ, typ)] + [shape_label(r["shape"], r["trans"]) for r in rs]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * len(rs)) + "|"]
    for i in impls:
        lib = "openblas" if base_impl(i) in LIBRARY_IMPLS["openblas"] else "blis"
        cells = []
        for r in rs:
            v = r["all"].get(i)
            if v is None:
                cells.append("err" if i in r["errors"] else "–")
                continue
            winner = r["lib_best"]["%s_best" % lib][1]
            cells.append("**%s**" % gf(v) if i == winner else gf(v))
        name = i if kernel_set(i) else "%s (default)" % i
        out.append("| " + " | ".join([name] + cells) + " |")
    return out


def resident_cache(ctx):
    """Bytes of one L2 cache as prism_bench recorded it (0: unknown): operands that fit there
    count as cache-resident (see roofline())."""
    try:
        return int(ctx.get("l2_cache_bytes", "0"))
    except ValueError:
        return 0


def markdown(data, rows, best, args):
    ctx = data.get("context", {})
    out = []
    impls = active_impls(rows)
    bests = best_cols(rows)
    dropin = "prism_blas" in impls
    roof = any(r["roofline"] for r in rows)
    weak = {lib: d for lib, d, _ in weaker_defaults(ctx)}

    def head_name(i):  # a threaded peer on weaker kernels than the CPU allows says so in its column
        if i == "prism":
            return "prism GF/s"
        return "%s (%s, weaker)" % (i, weak[i]) if i in weak else i

    head = ["shape", "type"] + [head_name(i) for i in impls] + bests + \
           ["prism / best peer", "prism / best MT peer"] + (["drop-in / backend"] if dropin else []) + \
           (["roofline GF/s", "prism % of roofline"] if roof else ["prism % of FMA peak"])
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|")
    notes = []
    short = []  # entries measured with fewer repetitions than asked for
    for r in rows:
        vals = r["vals"]
        wanted = wanted_reps(ctx, r["shape"], r["type"])
        top = max((v for v in vals.values() if v is not None), default=None)
        cells = []
        for i in impls + bests:
            v = vals[i]
            who = r["lib_best"][i][1] if i in bests else i
            if v is None:
                cell = "err" if i in r["errors"] else "–"
            else:
                cell = gf(v)
                if v == top:
                    cell = "**%s**" % cell
                if i in bests:
                    cell += " (%s)" % set_text(who)
                if wanted and r["reps"].get(who, 0) < wanted:
                    cell += " †"
                    if i not in bests:
                        short.append("%s %s %s (%d of %d)" % (shape_label(r["shape"], r["trans"]), r["type"], i,
                                                             r["reps"][i], wanted))
            if i == "prism" and r["check"] and r["check"][1]:
                cell += " ⚠"
            cells.append(cell)
        ratio_peer = "–" if r["ratio_peer"] is None else "%.2f (%s)" % (r["ratio_peer"], r["peer_name"])
        ratio_mt = "–" if r["ratio_mt"] is None else "%.2f (%s)" % (r["ratio_mt"], r["mt_name"])
        if roof:
            lim = r["roofline"]
            limit = ["–" if lim is None else "%s (%s)" % (gf(lim[0]), lim[1]),
                     "–" if r["pct_roofline"] is None else "%.0f %%" % r["pct_roofline"]]
        else:
            limit = ["–" if r["pct_peak"] is None else "%.1f %%" % r["pct_peak"]]
        ratio_dropin = ["–" if r["ratio_dropin"] is None else "%.2f" % r["ratio_dropin"]] if dropin else []
        out.append("| " + " | ".join([shape_label(r["shape"], r["trans"]), r["type"]] + cells +
                                      [ratio_peer, ratio_mt] + ratio_dropin + limit) + " |")
        label = "%s %s" % (shape_label(r["shape"], r["trans"]), r["type"])
        if r["check"] and r["check"][1]:
            notes.append("⚠ %s: prism's result differs from OpenBLAS (max error %.3g k·eps)." %
                         (label, r["check"][0]))
        for i, msg in r["errors"].items():
            if r["all"].get(i) is None:
                notes.append("err %s %s: %s" % (label, i, msg))
        for i in r["impls"]:
            if kernel_set(i) and r["all"].get(i) is not None and wanted and r["reps"].get(i, 0) < wanted:
                short.append("%s %s %s (%d of %d)" % (shape_label(r["shape"], r["trans"]), r["type"], i,
                                                     r["reps"][i], wanted))
    if short:
        notes.append("† fewer repetitions than asked for: the rest were skipped after the benchmark "
                     "used its time budget (--budget-s=%s): %s." % (ctx.get("budget_s", "?"), "; ".join(short)))

    machine, date = context_text(ctx)
    peaks = ", ".join("%s %s GF/s" % (TYPE_NAMES.get(t, t), gf(best[("fma", t)]))
                      for t in ("d", "s") if ("fma", t) in best)
    types = sorted({r["type"] for r in rows}, key=lambda t: "ds".find(t))
    nreps = ctx.get("reps", "?")
    if ctx.get("reps_large", nreps) != nreps:
        nreps += " (%s for shapes with more than 1 GiB of operands)" % ctx["reps_large"]
    rounds = int(ctx.get("rounds", 1) or 1)
    rounds_text = ("; every process of a shape run %d times over, in alternating order, and the best kept"
                   % rounds if rounds > 1 else "")  # bench/run.py --rounds
    type_text = " and ".join(TYPE_NAMES.get(t, t) for t in types) + (" only" if len(types) == 1 else "")
    if ctx.get("shape_set") == "quick" and types == ["d"]:
        type_text += " (the quick set's default, to stay within about 3 minutes; --type=both adds float)"
    commit = ctx.get("git_commit")
    cap = ["", "*%s set, %s; best of %s repetitions per entry%s; GFLOP/s = 2mnk / real time. "
               "Machine: %s; run %s%s.*" % (ctx.get("shape_set", "?"), type_text, nreps, rounds_text, machine, date,
                                            "; commit %s" % commit if commit else "")]
    details = []
    if peaks:
        details.append("FMA peak (all %s cores): %s." % (ctx.get("num_cpus", "?"), peaks))
    if ("bw",) in best:
        probe = bandwidth_probe(data)
        how = (" (%d threads, best of %d passes over %s MiB)" % (probe[2], probe[0], probe[1] >> 20)
               if probe else "")
        details.append("Read bandwidth%s: %s GB/s." % (how, gf(best[("bw",)])))
    details.append("prism: %s%s. openblas / blis: pthread builds with nproc threads; "
                   "openblas_1t / blis_1t: serial builds; each with its default kernel set. Bold: fastest "
                   "in the row; ratios name the peer they divide by." % (
                       ctx.get("prism_context", "default context"),
                       "; its %s" % ctx["prism_machine"] if ctx.get("prism_machine") else ""))
    if bests:
        details.append("openblas_best / blis_best: the library's fastest column of the row, threaded or serial "
                       "(1t), over its default and every kernel set (named; table below); best peer and best "
                       "MT peer range over every set too.")
    if roof:
        l2 = resident_cache(ctx)
        details.append("Roofline = min(FMA peak, I × read bandwidth) with I = 2mnk / ((mk + kn + 2mn) · "
                       "element bytes), A and B read once and C read and written once; (memory) or (FMA) "
                       "says which bound applies%s." % (
                           "; (FMA, in cache): A, B and C fit in one core's L2 cache (%s KiB), so the repeated "
                           "calls find them there and the limit is the FMA peak" % (l2 >> 10) if l2 else ""))
    if dropin:
        details.append("prism_blas: the drop-in libprism_blas.so (cblas_?gemm through its routing rule), "
                       "forwarding what it does not take to the openblas column's library; drop-in / "
                       "backend = prism_blas / openblas.")
    cores = ", ".join("%s=%s" % (k[len("core_"):], v) for k, v in sorted(ctx.items()) if k.startswith("core_"))
    if cores:
        details.append("BLAS kernel sets the main process loaded: %s." % cores)
    sched = ctx.get("kernel_sched_options", "none")
    if sched and sched != "none":
        details.append("Kernel scheduler options: %s (threads may be packed onto fewer vCPUs than "
                       "they could use)." % sched)
    cap.append("")
    cap.append("*" + " ".join(details) + "*")
    load = ("Load (1-, 5-, 15-minute averages; this machine's other users count): %s at the start, %s at the end."
            % (ctx["load_start"], ctx.get("load_end", "?"))) if ctx.get("load_start") else None
    for extra in (weaker_text(ctx), env_text(ctx), load, kernel_sets_text(ctx)):
        if extra:
            cap.append("")
            cap.append("*%s*" % extra)
    if notes:
        cap.append("")
        cap.extend("- " + n for n in notes)
    if args.caption:
        cap.append("")
        cap.append(args.caption)
    for t in types:
        table = sets_table(rows, t)
        if table:
            cap += ["", "### Every kernel set, %s (GF/s; bold: the library's best of the shape)" %
                    TYPE_NAMES.get(t, t), ""] + table
    return "\n".join(out + cap) + "\n"


# ----------------------------------------------------------------------------------------------
# Plots. Two charts, each readable at README width (about 1000 px):
#   ratio chart: one bar per shape and type, prism / best peer (or, for a run of the drop-in
#                against its backend only, drop-in / backend), linear axis with a line at 1.0;
#                a bar above --ratio-max is clipped there and its true value written on it.
#   GF/s chart:  absolute GFLOP/s, one panel per shape class (rows) and type (columns), one
#                colour per implementation; a bar too small to see on the panel's linear axis
#                is drawn as a short hatched bar with its value written, and a pathological value
#                (far below its row) or a short entry (table †) is explained below the chart.

SHAPE_CLASSES = [  # key, panel title; see shape_class()
    ("tall", "tall-skinny: k ≥ 16·max(m, n)"),
    ("wide", "large: wide and square"),
    ("small", "small: all sides ≤ 256"),
]
CLASS_SHORT = {"tall": "tall-skinny", "wide": "large", "small": "small"}
IMPL_LABELS = {
    "prism": "prism",
    "prism_blas": "prism_blas (drop-in)",
    "openblas": "openblas (threaded)",
    "openblas_1t": "openblas_1t (1 thread)",
    "blis": "blis (threaded)",
    "blis_1t": "blis_1t (1 thread)",
    "openblas_best": "openblas_best (any kernel set)",
    "blis_best": "blis_best (any kernel set)",
}
TYPE_COLORS = {"d": "#5e3c99", "s": "#b2abd2"}  # ratio chart: one colour per type
ANOMALY = 1000.0  # a value more than this many times below its row's best is pathological
SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def shape_dims(shape):
    return tuple(int(x) for x in shape.split("x"))


def shape_class(shape):
    """tall: k at least 16 times the larger of m, n (the CARMA / block-Krylov shapes);
    small: every side at most 256; large: the rest (wide m, n with small k, and big squares)."""
    m, n, k = shape_dims(shape)
    if k >= 16 * max(m, n):
        return "tall"
    if max(m, n, k) <= 256:
        return "small"
    return "wide"


def short_label(shape, trans, math=True):
    """4×4×2²⁴, 128³, 32×32×2²² TN: large powers of two as powers, cubes as n³ (matplotlib
    mathtext superscripts, or Unicode ones with math=False)."""
    m, n, k = shape_dims(shape)
    if m == n == k:
        text = pow2_text(m) + "^3" if m < (1 << 14) else "(%s)^3" % pow2_text(m)
    else:
        text = "×".join(pow2_text(v) for v in (m, n, k))
    if math:
        text = re.sub(r"\^(\d+)", r"$^{\1}$", text)
    else:
        text = re.sub(r"\^(\d+)", lambda g: g.group(1).translate(SUP), text)
    if trans and trans != "NN":
        text += " " + trans
    return text


def shape_order(rows):
    """(shape, trans) in a readable order: by class, then by size within the class."""
    seen = []
    for r in rows:
        if (r["shape"], r["trans"]) not in seen:
            seen.append((r["shape"], r["trans"]))
    rank = {c: i for i, (c, _) in enumerate(SHAPE_CLASSES)}

    def key(st):
        (m, n, k), c = shape_dims(st[0]), shape_class(st[0])
        inner = {"tall": (max(m, n), k), "wide": (k, m * n), "small": (m * n * k,)}[c]
        return (rank[c],) + inner + (st[1] != "NN", st[1])
    return sorted(seen, key=key)


def run_title(ctx):
    machine, date = context_text(ctx)
    m = re.match(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d)", date)
    when = "%s %s UTC" % m.groups() if m else date
    return "%s set · %s · run %s · best of %s repetitions" % (
        ctx.get("shape_set", "?"), machine, when, ctx.get("reps", "?"))


def ratio_mode(rows, mode):
    """'dropin' for a run that measured the drop-in against its backend only, else 'peer'."""
    if mode != "auto":
        return mode
    impls = active_impls(rows)
    return "dropin" if "prism_blas" in impls and [i for i in impls if i in PEERS] == ["openblas"] else "peer"


def import_pyplot(path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        sys.stderr.write("report.py: cannot draw %s: %s (install python3-matplotlib, or run "
                         "/usr/bin/python3 if another python3 comes first on PATH)\n" % (path, e))
        return None
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10,
                         "xtick.labelsize": 10, "ytick.labelsize": 10, "legend.fontsize": 10})
    return plt


def ratio_figure(plt, data, rows, mode, cap):
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
    ctx = data.get("context", {})
    mode = ratio_mode(rows, mode)
    order = shape_order(rows)
    types = [t for t in ("d", "s") if any(r["type"] == t for r in rows)]
    by = {(r["shape"], r["trans"], r["type"]): r for r in rows}

    def value(r):
        if r is None:
            return None
        if mode == "dropin":
            return r["ratio_dropin"]
        return r["ratio_peer"]

    def prism_over_backend(r):
        v = r["vals"] if r else {}
        return v["prism"] / v["openblas"] if r and v.get("prism") and v.get("openblas") else None

    vals = [value(by.get(st + (t,))) for st in order for t in types]
    vmax = max([v for v in vals if v] + [1.0])
    if mode == "dropin":
        vmax = max([vmax] + [prism_over_backend(by.get(st + (t,))) or 0 for st in order for t in types])
    clipped = vmax > cap
    top = cap * 1.14 if clipped else max(1.25, vmax * 1.16)

    fig, ax = plt.subplots(figsize=(10, 5.4))
    ax.set_axisbelow(True)
    w = 0.8 / len(types)
    x = list(range(len(order)))
    for ti, t in enumerate(types):
        off = (ti - (len(types) - 1) / 2) * w
        for xi, st in zip(x, order):
            r = by.get(st + (t,))
            v = value(r)
            xb = xi + off
            if v is None:
                ax.text(xb, 0.03 * top, "n/a", rotation=90, ha="center", va="bottom", fontsize=10, color="gray")
                continue
            over = v > cap
            h = cap if over else v
            ax.bar(xb, h, w * 0.92, color=TYPE_COLORS[t], hatch="//" if over else None,
                   edgecolor="white" if over else "none", linewidth=0)
            if over:  # clipped: a break mark at the top, the true value on the bar
                ax.text(xb, cap - 0.03 * top, "%.2f ↑" % v, rotation=90, ha="center", va="top",
                        fontsize=10, color="white" if t == "d" else "black", fontweight="bold",
                        bbox=dict(boxstyle="square,pad=0.15", fc=TYPE_COLORS[t], ec="none"))
            p = prism_over_backend(r) if mode == "dropin" else None
            if p is not None:
                ax.plot([xb - w * 0.46, xb + w * 0.46], [min(p, cap)] * 2, color="black", lw=2.2,
                        solid_capstyle="butt")
            if not over:
                ax.text(xb, max(h, min(p or 0, cap)) + 0.015 * top, "%.2f" % v, rotation=90, ha="center",
                        va="bottom", fontsize=10,
                        bbox=dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.85))
    ax.axhline(1.0, color="black", lw=1.2, ls="--", zorder=0.5)
    one = "1.0 = as fast as the backend" if mode == "dropin" else "1.0 = as fast as the best peer"
    if clipped:
        ax.axhline(cap, color="gray", lw=0.8, ls=":")
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_xticks(x)
    ax.set_xticklabels([short_label(*st) for st in order], rotation=40, ha="right", rotation_mode="anchor")
    ax.grid(axis="y", alpha=0.3)
    if mode == "dropin":
        ax.set_ylabel("drop-in / backend (higher is better)")
        title = "libprism_blas (drop-in, unchanged cblas_?gemm calls) over its backend, openblas (threaded)"
    else:
        peers = [i for i in active_impls(rows) if i in PEERS]
        ax.set_ylabel("prism / best peer (higher is better)")
        title = "prism over the fastest peer of each row (%s%s)" % (
            ", ".join(peers), ", every kernel set" if best_cols(rows) else "")
    # Shape classes: a separator between them, the class name at the top of its span.
    classes = [shape_class(st[0]) for st in order]
    start = 0
    for i in range(1, len(order) + 1):
        if i == len(order) or classes[i] != classes[start]:
            if i < len(order):
                ax.axvline(i - 0.5, color="gray", lw=0.8)
            ax.text((start + i - 1) / 2, 0.985, CLASS_SHORT[classes[start]], transform=ax.get_xaxis_transform(),
                    ha="center", va="top", fontsize=10, style="italic", color="dimgray")
            start = i
    handles = [Patch(facecolor=TYPE_COLORS[t], label=TYPE_NAMES.get(t, t)) for t in types]
    handles.append(Line2D([], [], color="black", lw=1.2, ls="--", label=one))
    if mode == "dropin":
        handles.append(Line2D([], [], color="black", lw=2.2, label="prism (C++ API) / backend"))
    if clipped:
        handles.append(Patch(facecolor="#888888", hatch="//", edgecolor="white",
                             label="off scale (> %g×): true value written" % cap))
    weak = weaker_defaults(ctx)
    if weak and mode != "dropin":  # say which peer's default was weak, and that its best set counts
        title += "".join("\n%s's default ran %s, weaker than this CPU allows: also timed at %s" % w for w in weak)
    fig.suptitle(title, fontsize=12)
    ax.set_title(run_title(ctx), fontsize=10, color="dimgray")
    fig.tight_layout()
    # The legend goes to the upper corner (or the middle) where it covers no bar and no written
    # value; where none is free, the axis grows until the best place is.
    occupied = []  # per shape: the top of its highest bar or marker, in data units
    for st in order:
        tops = [min(max(value(r), prism_over_backend(r) or 0) if mode == "dropin" else value(r), cap)
                for r in (by.get(st + (t,)) for t in types) if value(r) is not None]
        occupied.append(max(tops, default=0.0))
    text_frac = 0.5 / (ax.get_position().height * fig.get_size_inches()[1])  # a written value
    x0, x1 = ax.get_xlim()
    choice = None
    for loc, anchor in (("upper right", (1.0, 0.93)), ("upper left", (0.0, 0.93)), ("upper center", (0.5, 0.93))):
        leg = ax.legend(handles=handles, loc=loc, bbox_to_anchor=anchor, framealpha=0.95)
        fig.canvas.draw()
        bb = leg.get_window_extent().transformed(ax.transAxes.inverted())
        under = [o for i, o in enumerate(occupied)
                 if (i + 0.45 - x0) / (x1 - x0) >= bb.x0 and (i - 0.45 - x0) / (x1 - x0) <= bb.x1]
        need = max(under, default=0.0) / max(bb.y0 - text_frac, 0.05)
        if choice is None or need < choice[0]:
            choice = (need, loc, anchor)
        if need <= top:
            break
    need, loc, anchor = choice
    ax.legend(handles=handles, loc=loc, bbox_to_anchor=anchor, framealpha=0.95)
    if need > top:
        ax.set_ylim(0, need)
    return fig


def chart_impls(rows):
    """The GF/s chart's bars: the table's default columns, or, when kernel sets ran, prism, the
    drop-in, each threaded peer's default and each library's best (the serial defaults are
    inside the bests)."""
    bests = best_cols(rows)
    if not bests:
        return active_impls(rows)
    out = []
    for i in active_impls(rows):
        if i in ("openblas_1t", "blis_1t"):
            continue
        out.append(i)
        if i + "_best" in bests:
            out.append(i + "_best")
    return out + [b for b in bests if b not in out]


def gflops_figure(plt, data, rows, best):
    import textwrap
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    ctx = data.get("context", {})
    impls = chart_impls(rows)
    order = shape_order(rows)
    types = [t for t in ("d", "s") if any(r["type"] == t for r in rows)]
    classes = [c for c, _ in SHAPE_CLASSES if any(shape_class(st[0]) == c for st in order)]
    by = {(r["shape"], r["trans"], r["type"]): r for r in rows}
    counts = [sum(1 for st in order if shape_class(st[0]) == c) for c in classes]
    if len(types) > 1:  # a row per class, a column per type
        grid = [[(c, t) for t in types] for c in classes]
        gs = {"height_ratios": [1] * len(classes)}
        panel_h = 2.9 * len(classes)
    else:  # one type: the classes side by side, as wide as their number of shapes
        grid = [[(c, types[0]) for c in classes]]
        gs = {"width_ratios": [max(n, 2.2) for n in counts]}
        panel_h = 3.6
    notes = []
    short_bars = False
    roof = any(r["roofline"] for r in rows)
    head_in, legend_rows = 0.75, (len(impls) + (1 if roof else 0) + 2) // 3
    legend_in = 0.28 * legend_rows + 0.15

    def dark(color):
        return tuple(0.55 * x for x in to_rgb(color))

    bar_w = 0.84 / len(impls)
    panels = []
    for row in grid:
        for c, t in row:
            panels.append((c, t))
    fig, axes = plt.subplots(len(grid), len(grid[0]), figsize=(10, panel_h), squeeze=False, gridspec_kw=gs)
    axis_h_in = panel_h / len(grid) - 1.0  # about: less the title and the tick labels
    for (c, t), ax in zip(panels, axes.flat):
        sts = [st for st in order if shape_class(st[0]) == c]
        if len(types) > 1:
            panel_w_in = 8.8 / len(types)
        else:
            panel_w_in = 8.8 * gs["width_ratios"][classes.index(c)] / sum(gs["width_ratios"])
        ax.set_axisbelow(True)
        trs = [by.get(st + (t,)) for st in sts]
        values = [r["vals"][i] for r in trs if r for i in impls if r["vals"][i]]
        values += [r["roofline"][0] for r in trs if r and r["roofline"]]
        top = max(values + [1.0]) * 1.16
        floor = 0.015 * top  # a bar lower than this would be invisible
        for xi, r in enumerate(trs):
            if r is None:
                continue
            row_best = max(x for x in r["vals"].values() if x)
            wanted = wanted_reps(ctx, r["shape"], r["type"])
            if r["roofline"]:  # the shape's limit: a dashed line across its group of bars
                ax.plot([xi - 0.46, xi + 0.46], [r["roofline"][0]] * 2, color="black", lw=1.3, ls="--", zorder=3)
            heights = [max(r["vals"][i] or 0, floor) for i in impls]
            text_top = -1.0  # top of the last value written in this group (data units)
            for j, impl in enumerate(impls):
                xb = xi + (j - (len(impls) - 1) / 2) * bar_w
                v = r["vals"][impl]
                # a written value goes above this bar and its neighbours, so it overlaps none
                y_text = max(heights[max(j - 1, 0):j + 2] + [text_top]) + 0.02 * top
                if v is None:
                    if impl in r["errors"]:
                        ax.text(xb, y_text, "err", rotation=90, ha="center", va="bottom", fontsize=10)
                    continue
                who = r["lib_best"][impl][1] if impl in BEST_COLS else impl
                short = wanted and r["reps"].get(who, 0) < wanted
                stalled = v * ANOMALY < row_best
                if v < floor:  # too small to see: a short hatched bar, its value written above
                    short_bars = True
                    ax.bar(xb, floor, bar_w, color=COLORS[impl], hatch="////", edgecolor=dark(COLORS[impl]),
                           linewidth=0)
                    text = "%s%s%s" % ("▼ " if stalled else "", gf(v), " †" if short else "")
                    ax.text(xb, y_text, text, rotation=90, ha="center", va="bottom", fontsize=10,
                            color=dark(COLORS[impl]), fontweight="bold" if stalled else "normal")
                    # the next label in this group starts above this one (10 pt digits: ~0.09 in)
                    text_top = y_text + (0.09 * len(text) + 0.05) / axis_h_in * top
                else:
                    ax.bar(xb, v, bar_w, color=COLORS[impl],
                           edgecolor="black" if impl == "prism" else "none", linewidth=0.6)
                    if short or stalled:
                        ax.text(xb, v + 0.01 * top, "▼" if stalled else "†", ha="center", va="bottom", fontsize=10)
                if stalled or short:
                    why = []
                    if stalled:
                        why.append("%s times below the fastest in its row, a stalled run rather than the "
                                   "library's speed" % "{:,}".format(int(round(row_best / v, -2))))
                    if short:
                        why.append("only %d of %d repetitions ran within the time budget (--budget-s=%s), "
                                   "marked † in the table" % (r["reps"].get(who, 0), wanted, ctx.get("budget_s", "?")))
                    notes.append("%s %s, %s, %s: %s GF/s, %s." % (
                        "▼" if stalled else "†", short_label(r["shape"], r["trans"]), TYPE_NAMES.get(t, t), impl,
                        gf(v), "; ".join(why)))
        ax.set_ylim(0, top)
        ax.set_xlim(-0.55, len(sts) - 0.45)
        ax.set_xticks(range(len(sts)))
        longest = max(len(re.sub(r"\$\^\{(\d+)\}\$", r"\1", short_label(*st))) for st in sts)
        crowded = longest * 0.09 > 0.9 * panel_w_in / len(sts)  # horizontal labels would touch
        ax.set_xticklabels([short_label(*st) for st in sts], rotation=30 if crowded else 0,
                           ha="right" if crowded else "center", rotation_mode="anchor")
        ax.grid(axis="y", alpha=0.3)
        if len(types) > 1:
            ax.set_title("%s, %s" % (dict(SHAPE_CLASSES)[c], TYPE_NAMES.get(t, t)), fontsize=11)
        else:
            ax.set_title(dict(SHAPE_CLASSES)[c], fontsize=11)
        if ax in axes[:, 0]:
            ax.set_ylabel("GFLOP/s" if len(types) > 1 else "GFLOP/s, %s" % TYPE_NAMES.get(t, t))
    handles = [Patch(facecolor=COLORS[i], edgecolor="black" if i == "prism" else "none",
                     linewidth=0.6, label=IMPL_LABELS.get(i, i)) for i in impls]
    if roof:
        handles.append(Line2D([], [], color="black", lw=1.3, ls="--", label="roofline limit"))
    peaks = ", ".join("%s %s" % (TYPE_NAMES.get(t, t), gf(best[("fma", t)])) for t in types if ("fma", t) in best)
    foot = ["Higher is better; a linear axis per panel."
            + (" Short hatched bar: a value under 1.5 % of its panel's axis, drawn at that height with its value "
               "written." if short_bars else "")
            + (" FMA peak of the machine (all cores): %s GF/s." % peaks if peaks else "")
            + (" Read bandwidth: %s GB/s. Roofline = min(FMA peak, 2mnk / ((mk + kn + 2mn) · element bytes) × "
               "read bandwidth)." % gf(best[("bw",)]) if roof else "")]
    foot += sorted(set(notes), key=notes.index)
    foot_text = "\n".join(textwrap.fill(n, 135) for n in foot)
    foot_in = 0.19 * (foot_text.count("\n") + 1) + 0.15
    fig_h = panel_h + head_in + legend_in + foot_in
    fig.set_size_inches(10, fig_h)
    fig.text(0.5, 1 - 0.12 / fig_h, "GFLOP/s by shape class", ha="center", va="top", fontsize=12)
    fig.text(0.5, 1 - 0.42 / fig_h, run_title(ctx), ha="center", va="top", fontsize=10, color="dimgray")
    fig.legend(handles=handles, ncol=min(3, len(handles)), loc="upper center", frameon=False,
               bbox_to_anchor=(0.5, 1 - (head_in - 0.05) / fig_h), columnspacing=1.5)
    fig.text(0.012, 0.08 / fig_h, foot_text, ha="left", va="bottom", fontsize=10, color="#333333")
    fig.tight_layout(rect=(0, foot_in / fig_h, 1, 1 - (head_in + legend_in) / fig_h), h_pad=1.0, w_pad=1.0)
    return fig


DPI = 150


def save(fig, path):
    fig.savefig(path, dpi=DPI)


def plot_ratio(data, rows, path, mode="auto", cap=3.0):
    plt = import_pyplot(path)
    if plt is None:
        return False
    fig = ratio_figure(plt, data, rows, mode, cap)
    save(fig, path)
    plt.close(fig)
    return True


def plot_gflops(data, rows, best, path):
    plt = import_pyplot(path)
    if plt is None:
        return False
    fig = gflops_figure(plt, data, rows, best)
    save(fig, path)
    plt.close(fig)
    return True


def plot(data, rows, best, path, mode="auto", cap=3.0):
    """--png: the ratio chart above the GF/s chart, in one image."""
    plt = import_pyplot(path)
    if plt is None:
        return False
    import io
    import numpy as np
    import matplotlib.image as mpimg
    parts = []
    for fig in (ratio_figure(plt, data, rows, mode, cap), gflops_figure(plt, data, rows, best)):
        buf = io.BytesIO()
        fig.savefig(buf, dpi=DPI, format="png")
        plt.close(fig)
        buf.seek(0)
        parts.append(mpimg.imread(buf, format="png"))
    width = max(p.shape[1] for p in parts)
    padded = []
    for p in parts:
        if p.shape[1] < width:
            pad = np.ones((p.shape[0], width - p.shape[1], p.shape[2]), dtype=p.dtype)
            p = np.concatenate([p, pad], axis=1)
        padded.append(p)
    gap = np.ones((int(0.15 * DPI), width, parts[0].shape[2]), dtype=parts[0].dtype)
    mpimg.imsave(path, np.concatenate([padded[0], gap, padded[1]], axis=0))
    return True


def main():
    args = parse_args()
    data = load(args.json)
    best, reps, errors, check, order = collect(data)
    if not order:
        sys.stderr.write("report.py: no gemm benchmarks in %s\n" % args.json)
        return 1
    rows = build_rows(best, reps, errors, check, order, resident_cache(data.get("context", {})))
    md = markdown(data, rows, best, args)
    if not args.quiet:
        sys.stdout.write(md)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    ok = True
    if args.png:
        ok = plot(data, rows, best, args.png, args.ratio, args.ratio_max) and ok
    if args.png_ratio:
        ok = plot_ratio(data, rows, args.png_ratio, args.ratio, args.ratio_max) and ok
    if args.png_gflops:
        ok = plot_gflops(data, rows, best, args.png_gflops) and ok
    if not ok:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
