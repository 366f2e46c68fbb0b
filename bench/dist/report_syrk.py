#!/usr/bin/env python3
"""A table and a plot from a run of scripts/bench-syrk.sh (bench/dist/README.md).

    /usr/bin/python3 bench/dist/report_syrk.py bench/results/dist-syrk-<host>-<date>.json \
        --md bench/results/dist-syrk-<host>-<date>.md --png bench/results/dist-syrk-<host>-<date>.png

Markdown (stdout, and --md):
  * volume, one table per shape n x k (C = A^T A, C n x n, A k x n): for each P, the SYRK lower
    bound per rank (prism bound --syrk), Debian's pdsyrk_ per-rank max received MB (PMPI counter,
    one call), prism's syrk (per-rank max MB, its scheme, whether every rank's count equals the
    model) and its ratio to the bound, prism's gemm of the full square and the ratio syrk / gemm,
    and per row whether each of the volume targets holds (yes / no, or n/a with the reason
    where the target does not apply); a failed or timed-out run shows its error instead of
    numbers, it is never dropped; the prism columns read "not run" when the record's
    prism_syrk / prism_gemm_full hook is null (a --no-prism run, such as the first one);
  * time at np = 2: best seconds over the rounds of pdsyrk_, prism syrk and prism gemm of the full
    square (interleaved in the same rounds), pdsyrk s / prism s and the time target;
  * a summary: how many rows meet each target, and which do not.
PNG (--png; needs matplotlib): per shape, max received MB against P on a log scale: pdsyrk
(measured, each point labelled with its grid), prism syrk and prism gemm of the full square
(measured), the SYRK bound and gemm's bound for the full square; 8 x 3.4 inches at 200 dpi.
Targets: volume <= 1.2 x the SYRK bound where the bound's assumptions hold (here: prism
uses all P ranks, so work and data are spread over P as the bound assumes; a plan that leaves ranks
idle is n/a); <= 0.6 x prism's full-square gemm volume on the square-ish shapes (here
max(n, k) <= 4 min(n, k)); <= pdsyrk_'s volume on every shape and P; time at np 2 >= 1.2 x
pdsyrk_'s speed (pdsyrk s / prism s >= 1.2) on 256 x 2^20.
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


SQUAREISH = 4          # a shape is square-ish when max(n, k) <= SQUAREISH * min(n, k)
BOUND_TARGET = 1.2     # prism syrk <= 1.2 x the SYRK bound
GEMM_TARGET = 0.6      # prism syrk <= 0.6 x prism's full-square gemm
TIME_TARGET = 1.2      # pdsyrk s / prism s >= 1.2 ...
TIME_TARGET_SHAPE = (256, 1 << 20)  # ... on this shape


def hook(r, key):
    """A record's prism_syrk / prism_gemm_full dict, or None."""
    h = r.get(key) if r else None
    return h if isinstance(h, dict) else None


def pdsyrk_mb(r):
    """pdsyrk_'s measured max MB per rank, None when the run failed."""
    if r is None or "error" in r:
        return None
    return (r.get("counter") or {}).get("total_max_MB")


def yes_no(ok):
    return "yes" if ok else "**no**"


def targets(n, k, p, r):
    """The three volume targets for one row: cells (text) and verdicts (True / False / None = n/a)."""
    h, g = hook(r, "prism_syrk"), hook(r, "prism_gemm_full")
    syrk = h.get("recv_max_MB") if h and "error" not in h else None
    gemm = g.get("recv_max_MB") if g and "error" not in g else None
    bound = words_mb(r.get("bound_words")) if r else None
    pd = pdsyrk_mb(r)
    out = []
    # 1: <= 1.2 x bound where its assumptions hold (all P ranks used)
    if h is None:
        out.append(("not run", None))
    elif syrk is None:
        out.append(("**no** (prism failed)", False))
    elif h.get("ranks_used") is not None and h["ranks_used"] < p:
        out.append((f"n/a ({h['ranks_used']} of {p} ranks)", None))
    elif bound is None or bound <= 0:
        out.append(("n/a (no bound)", None))
    else:
        ok = syrk <= BOUND_TARGET * bound
        out.append((yes_no(ok), ok))
    # 2: <= 0.6 x full-square gemm on square-ish shapes
    if max(n, k) > SQUAREISH * min(n, k):
        out.append(("n/a (not square-ish)", None))
    elif h is None or g is None:
        out.append(("not run", None))
    elif syrk is None:
        out.append(("**no** (prism failed)", False))
    elif gemm is None:
        out.append(("n/a (gemm failed)", None))
    else:
        ok = syrk <= GEMM_TARGET * gemm
        out.append((yes_no(ok), ok))
    # 3: <= pdsyrk_ on every shape and P
    if h is None:
        out.append(("not run", None))
    elif syrk is None:
        out.append(("**no** (prism failed)", False))
    elif pd is None:
        out.append(("n/a (pdsyrk failed)", None))
    else:
        ok = syrk <= pd
        out.append((yes_no(ok), ok))
    return out


def prism_cell(h, what="recv_max_MB"):
    """A prism figure for a table cell: the number, 'failed: ..', or 'not run'."""
    if h is None:
        return "not run"
    if "error" in h and h.get(what) is None:
        return f"failed: {h['error']}"
    return fmt(h.get(what))


def md_volume(volume, shapes, procs):
    """One table per shape: bound, pdsyrk, prism syrk and gemm, ratios and the targets per row."""
    out = []
    for n, k in shapes:
        out.append(f"### {shape_name(n, k)}: C {n}×{n}, A {k}×{n}\n")
        out.append("| P | bound case | SYRK bound MB | pdsyrk MB (grid) | prism syrk MB | prism syrk scheme | "
                   "counts = model | prism syrk / bound | prism gemm full-square MB (grid) | prism syrk / gemm | "
                   "pdsyrk / bound | ≤ 1.2× bound | ≤ 0.6× gemm | ≤ pdsyrk |")
        out.append("|---:|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|---|---|")
        for p in procs:
            r = volume.get((n, k, p))
            if r is None:
                out.append(f"| {p} | – | – | not run | – | – | – | – | – | – | – | – | – | – |")
                continue
            bound = words_mb(r.get("bound_words"))
            pd = pdsyrk_mb(r)
            pd_cell = f"failed: {r['error']}" if "error" in r else f"{fmt(pd)} ({r.get('grid', '?')})"
            h, g = hook(r, "prism_syrk"), hook(r, "prism_gemm_full")
            syrk = h.get("recv_max_MB") if h else None
            gemm = g.get("recv_max_MB") if g else None
            scheme = "–"
            if h and h.get("scheme"):
                scheme = f"`{h['scheme']}`" + (f" ({h['ranks_used']} of {p} ranks)"
                                               if h.get("ranks_used") is not None and h["ranks_used"] < p else "")
            model = "–" if not h or h.get("ranks_off_model") is None else (
                "yes" if h["ranks_off_model"] == 0 else f"**no** ({h['ranks_off_model']} ranks off)")
            gemm_cell = prism_cell(g)
            if g and g.get("grid") and gemm is not None:
                gemm_cell += f" (`{g['grid']}`)"
            t = targets(n, k, p, r)
            out.append(
                f"| {p} | {r.get('bound_case') or '–'} | {fmt(bound)} | {pd_cell} | {prism_cell(h)} | {scheme} | "
                f"{model} | {fmt(ratio(syrk, bound))} | {gemm_cell} | {fmt(ratio(syrk, gemm))} | "
                f"{fmt(ratio(pd, bound))} | {t[0][0]} | {t[1][0]} | {t[2][0]} |")
        out.append("")
    return "\n".join(out)


def best_of(rs, key):
    """The best (least best_s) of the records' prism hook `key` (or of the records themselves
    with key None), and how many ran and failed."""
    got = [r if key is None else hook(r, key) for r in rs]
    got = [h for h in got if h is not None]
    ok = [h for h in got if "error" not in h and h.get("best_s")]
    failed = [h for h in got if "error" in h]
    return (min(ok, key=lambda h: h["best_s"]) if ok else None), len(ok), failed


def md_time(time, shapes):
    """Best seconds at np = 2 over the rounds: pdsyrk_, prism syrk, prism gemm of the full square
    (interleaved in the same rounds), the ratio, the target and the load averages seen."""
    out = ["| shape n×k | pdsyrk s (grid) | prism syrk s (scheme) | prism gemm full-square s (grid) | "
           "pdsyrk s / prism syrk s | prism gemm s / prism syrk s | ≥ 1.2× pdsyrk | load before (min–max) | runs |",
           "|---|---:|---:|---:|---:|---:|---|---|---|"]
    for n, k in shapes:
        rs = time.get((n, k), [])
        pd, pd_ok, pd_failed = best_of(rs, None)
        sy, sy_ok, sy_failed = best_of(rs, "prism_syrk")
        ge, ge_ok, ge_failed = best_of(rs, "prism_gemm_full")
        pd_s, sy_s, ge_s = (x["best_s"] if x else None for x in (pd, sy, ge))
        r = ratio(pd_s, sy_s)
        if (n, k) != TIME_TARGET_SHAPE:
            target = "n/a (target on 256×1048576)"
        elif r is None:
            target = "**no** (no time)" if pd_s is not None else "n/a (pdsyrk failed)"
        else:
            target = yes_no(r >= TIME_TARGET)
        loads = [x["loadavg_before"][0] for x in rs + [hook(y, kk) for y in rs for kk in ("prism_syrk", "prism_gemm_full")]
                 if x and x.get("loadavg_before")]
        load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"
        runs = []
        for name, okn, failed in (("pdsyrk", pd_ok, pd_failed), ("syrk", sy_ok, sy_failed), ("gemm", ge_ok, ge_failed)):
            runs.append(f"{name} {okn} ok" + (f", {len(failed)} failed ({failed[0]['error']})" if failed else ""))
        pd_cell = f"{fmt(pd_s)} ({pd.get('grid', '?')})" if pd else "–"
        sy_cell = f"{fmt(sy_s)} (`{sy.get('scheme', '?')}`)" if sy else "–"
        ge_cell = f"{fmt(ge_s)} (`{ge.get('grid', '?')}`)" if ge else "–"
        out.append(f"| {shape_name(n, k)} | {pd_cell} | {sy_cell} | {ge_cell} | {fmt(r)} | {fmt(ratio(ge_s, sy_s))} | "
                   f"{target} | {load} | {'; '.join(runs)} |")
    return "\n".join(out)


def md_summary(volume, time, shapes, procs):
    """How many rows meet each target, and the rows that do not (generated, never hand-edited)."""
    names = [f"volume ≤ {BOUND_TARGET}× the SYRK bound where its assumptions hold (all P ranks used)",
             f"volume ≤ {GEMM_TARGET}× prism's full-square gemm on the square-ish shapes "
             f"(max(n, k) ≤ {SQUAREISH}·min(n, k))",
             "volume ≤ pdsyrk_'s, every shape and P"]
    tally = [{"yes": 0, "no": [], "na": 0} for _ in names]
    for n, k in shapes:
        for p in procs:
            r = volume.get((n, k, p))
            if r is None or hook(r, "prism_syrk") is None:
                continue
            for i, (_, v) in enumerate(targets(n, k, p, r)):
                if v is True:
                    tally[i]["yes"] += 1
                elif v is False:
                    tally[i]["no"].append(f"{shape_name(n, k)} P={p}")
                else:
                    tally[i]["na"] += 1
    if not any(t["yes"] or t["no"] for t in tally):
        return ""
    out = ["### Targets\n"]
    for name, t in zip(names, tally):
        judged = t["yes"] + len(t["no"])
        verdict = "holds" if judged and not t["no"] else ("does not hold" if t["no"] else "not judged")
        line = f"- {name}: **{verdict}**; met on {t['yes']} of the {judged} rows judged"
        if t["na"]:
            line += f" ({t['na']} rows n/a)"
        if t["no"]:
            line += "; not met at " + ", ".join(t["no"])
        out.append(line + ".")
    rs = time.get(TIME_TARGET_SHAPE, [])
    pd, _, _ = best_of(rs, None)
    sy, _, _ = best_of(rs, "prism_syrk")
    if rs:
        r = ratio(pd["best_s"] if pd else None, sy["best_s"] if sy else None)
        out.append(f"- time at np 2 ≥ {TIME_TARGET}× pdsyrk_ on {shape_name(*TIME_TARGET_SHAPE)}: "
                   + (f"**{'holds' if r >= TIME_TARGET else 'does not hold'}** (pdsyrk s / prism s = {fmt(r)})"
                      if r is not None else "**not judged** (no time)") + ".")
    return "\n".join(out) + "\n"


def markdown(doc, volume, time, shapes):
    """The whole report."""
    procs = doc.get("options", {}).get("procs", sorted({p for (_, _, p) in volume}))
    parts = ["## Distributed SYRK: prism against ScaLAPACK pdsyrk_ and the SYRK lower bound\n", caption(doc), "",
             "Bound: `prism bound N N K --syrk --ranks P` (prism::bounds::syrk_parallel_io_minus_owned, "
             "docs/data-movement.md), words a rank must receive beyond a balanced share, as doubles. "
             "prism syrk: `prism run N N K --syrk UT --json --threads 1`; prism gemm full-square: "
             "`prism run N N K --trans TN --json --threads 1` (C = AᵀA as the whole n×n×k gemm), same mpirun "
             "flags as pdsyrk_. prism's MB are its own per-rank byte counts (prism::dist::last_traffic); "
             "\"counts = model\" says every rank received exactly the bytes its model predicts. pdsyrk_'s MB are "
             "the PMPI counter's. \"≤ 1.2× bound\" is judged only where prism uses all P ranks (the bound "
             f"assumes work and data spread over P); \"≤ 0.6× gemm\" only on square-ish shapes "
             f"(max(n, k) ≤ {SQUAREISH}·min(n, k)). Every cell is generated from the JSON.\n"]
    if doc.get("quick"):
        parts.insert(1, "**Quick run (smoke test shapes), not a result.**\n")
    summary = md_summary(volume, time, shapes, procs)
    if summary:
        parts += [summary]
    if volume:
        parts += ["### Volume per rank (MB received, max over ranks)\n", md_volume(volume, shapes, procs)]
    all_procs = doc.get("options", {}).get("all_procs")
    if all_procs and sorted(all_procs) != sorted(procs):
        parts += [f"**P list cut:** the volume part ran P ∈ {{{', '.join(map(str, procs))}}} of "
                  f"{{{', '.join(map(str, all_procs))}}} (`--procs`), to keep the run within its time.\n"]
    if time:
        parts += ["### Time at np = 2 (one rank per core, best over rounds)\n", md_time(time, shapes), ""]
        loads = [r["loadavg_before"][0] for rs in time.values() for r in rs if r.get("loadavg_before")]
        cpus = doc.get("machine", {}).get("cpus") or 0
        if loads and cpus and max(loads) > cpus:
            # A 1-minute average falls over minutes: right after the oversubscribed volume runs
            # (P ranks on these CPUs) it still counts them, whether or not anything else runs.
            cause = ("It still counts this run's own oversubscribed volume part, which ended just before, "
                     "and any other work on the machine. " if volume else "Other work was running. ")
            parts += [f"**Load:** the 1-minute load average was {min(loads):.1f} to {max(loads):.1f} "
                      f"on {cpus} CPUs before these runs. {cause}The times say how each "
                      "program fared under that load, not what it does on idle cores; the three programs ran "
                      "in turn within each round, so they met the same load, and the ratio is the fairer figure.",
                      ""]
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
    fig.suptitle("C = AᵀA, MB received per rank: prism syrk, prism gemm (full square), pdsyrk_, SYRK bound", fontsize=9)
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
