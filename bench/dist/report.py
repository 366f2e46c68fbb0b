#!/usr/bin/env python3
"""Tables and a plot from a run of scripts/bench-dist.sh (bench/dist/README.md).

    /usr/bin/python3 bench/dist/report.py bench/results/dist-<date>.json \
        --md bench/results/dist-<date>.md --png bench/results/dist-<date>.png

Markdown (stdout, and --md):
  * volume, one table per shape: per-rank max received MB of `prism run` (measured by prism's
    counter, and prism's own prediction) at each P beside COSMA's figure (COSMA 2.8.4, measured
    once and quoted, not rerun) and the bound prism reports, prism / COSMA, P' (ranks prism
    used) and its grid;
  * time at np = 2: best seconds and GF/s of `prism run` and of ScaLAPACK pdgemm per shape,
    best over the rounds, and pdgemm s / prism s (above 1: prism is faster);
  * pdgemm, when the run has that part: per (shape, NB, grid) at np = 4, the
    per-rank max MB received by Debian's ScaLAPACK pdgemm_ (PMPI counter), by prism through
    pdgemm_ (prism's own count and the counter's; ROUTE=prism) and with ROUTE=auto (the route
    it took), prism's model of both, and prism native (`prism run`), with the ratios to
    ScaLAPACK; then the time at np = 2 per (shape, grid): ScaLAPACK, prism through pdgemm_
    (prism and auto), prism native and ScaLAPACK s / each. Headings of that part start with
    "## pdgemm" (scripts/performance-figures.sh can put them in a README block of their own).
PNG (--png; needs matplotlib): per shape, max received MB against P for prism (measured and
predicted), COSMA and the bound; 8 x 3.4 inches at 200 dpi, drawn for ~800 px width. A run
with no part (a) volume (--pdgemm-only) gets the pdgemm plot there instead.
--pdgemm-png: per pdgemm shape, bars of the counter's per-rank max MB for ScaLAPACK, prism
through pdgemm_ (ROUTE=prism, auto) at each (NB, grid), and prism native as a dashed line.
A run whose records carry "fixture": true (bench/dist/testdata) is marked as a fixture
everywhere: its prism numbers are made up.
MB = 1e6 bytes.
"""

import argparse
import json
import sys

# COSMA 2.8.4, per-rank max MB received, native layout, PMPI counter; measured once and quoted.
# Not rerun here: COSMA is not packaged in Debian.
COSMA_MB = {
    (2048, 2048, 2048): {2: 16.78, 4: 16.78, 7: 28.77, 8: 12.58, 12: 11.19, 13: 30.21, 16: 10.49},
    (256, 256, 262144): {2: 0.26, 4: 0.39, 7: 0.45, 8: 0.46, 12: 0.48, 13: 0.49, 16: 0.49},
    (4096, 4096, 256): {2: 4.19, 4: 4.19, 7: 7.21, 8: 4.19, 12: 3.50, 13: 7.77, 16: 3.15},
}
SHAPES = list(COSMA_MB)


def shape_name(s, unicode=True):
    """2048³ or 256×256×262144 (x and ^3 without unicode)."""
    m, n, k = s
    x = "×" if unicode else "x"
    if m == n == k:
        return f"{m}³" if unicode else f"{m}^3"
    return f"{m}{x}{n}{x}{k}"


def fmt(v, digits=3):
    """A number for a table cell: 3 significant digits below 1, 2 decimals above, 1 above 100."""
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


def load(path):
    """The run's document, whether it is a fixture, its volume and time records by key, its shapes."""
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
    """The paragraph under the title: machine, run dates, git commit, environment."""
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
    """The volume tables of part (a), one per shape."""
    procs = sorted({p for (_, p) in volume} | set(doc.get("options", {}).get("procs", [])))
    out = ["## Per-rank max received MB (volume)", "",
           "`mpirun --oversubscribe -np P prism run M N K --threads 1 --reps 1 --json` "
           "(oversubscribed: its times are not reported). "
           "prism = measured by prism's counter, predicted = prism's own model, COSMA = COSMA 2.8.4 "
           "(native layout, PMPI counter; measured once and quoted, not rerun), bound = the bound prism "
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
    """The time table of part (b)."""
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
            """One record's value, or why there is none."""
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


# ---- pdgemm: ScaLAPACK's pdgemm_ vs prism through pdgemm_ vs prism native ----

PDGEMM_TOOLS = ("scalapack_pdgemm", "prism_via_pdgemm", "prism_auto_pdgemm", "prism_run")


def pshape(r):
    """(m, n, k, transa) of a pdgemm-part record; prism run's "trans":"TN" gives transa T."""
    ta = r.get("transa") or (r.get("trans") or "N")[0]
    return (int(r["m"]), int(r["n"]), int(r["k"]), ta.upper())


def pshape_name(s):
    """2048³, or 32×32×4000000 AᵀB for a transposed A."""
    m, n, k, ta = s
    return shape_name((m, n, k)) + (" A\u1d40B" if ta in ("T", "C") else "")


def usable(r):
    """Whether a record ran and printed its line (not failed, not skipped)."""
    return r is not None and "error" not in r and "skipped" not in r


def first_call(r):
    """The first PRISM_STATS line of a run, as a dict: the timed call (a --check call comes after)."""
    calls = (r or {}).get("prism_scalapack") or []
    return calls[0] if calls else {}


def counter_mb(r):
    """Per-rank max MB received in the counted window, by the PMPI counter (p2p + collectives)."""
    return ((r or {}).get("counter") or {}).get("total_max_MB")


def why_not(r):
    """The cell text of a record that has no number: not run, skipped or failed."""
    if r is None:
        return "not run"
    if "skipped" in r:
        return "skipped"
    if "error" in r:
        return "failed"
    return "–"


def load_pdgemm(doc):
    """The pdgemm part's records: volume by (shape, tool, grid, nb), time (best over rounds) by
    (shape, tool, grid), the counter self-tests, whether prism's lines are a fixture, the shapes."""
    vol, tim = {}, {}
    selftests, fixture = [], False
    for r in doc.get("records", []):
        ph = r.get("phase")
        if ph == "counter_selftest":
            selftests.append(r)
            continue
        if ph not in ("pdgemm_volume", "pdgemm_time") or "m" not in r:
            continue
        fixture = fixture or any(c.get("fixture") for c in r.get("prism_scalapack") or [])
        s = pshape(r)
        tool = r.get("tool")
        grid = None if tool == "prism_run" else r.get("grid")
        if ph == "pdgemm_volume":
            vol[(s, tool, grid, None if tool == "prism_run" else r.get("nb"))] = r
        else:
            key = (s, tool, grid)
            old = tim.get(key)
            ok = usable(r) and r.get("best_s")
            if old is None or (ok and (not usable(old) or r["best_s"] < old["best_s"])):
                tim[key] = r
    order = [(int(x["m"]), int(x["n"]), int(x["k"]), x["transa"]) for x in doc.get("pdgemm", {}).get("shapes", [])]
    seen = {k[0] for k in vol} | {k[0] for k in tim}
    shapes = [s for s in order if s in seen] + sorted(seen - set(order))
    return vol, tim, selftests, fixture, shapes


def md_pdgemm_volume(doc, vol, shapes, fixture):
    """The pdgemm volume table (np 4), prism native's own table, and the plans prism chose."""
    opts = doc.get("pdgemm", {})
    np_ = opts.get("volume_np", 4)
    out = ["## pdgemm: per-rank max received MB at np = %d (volume)" % np_, ""]
    if fixture:
        out += ["**FIXTURE: the prism-through-pdgemm lines come from bench/dist/testdata/fake_prism_scalapack.c "
                "(ScaLAPACK underneath, made-up figures); not a measurement.**", ""]
    out += [f"`mpirun --oversubscribe -np {np_} prism_pdgemm_bench M N K --nb NB --grid G --reps 1`, "
            "one pdgemm_ call counted (MPI_Pcontrol around it) by the PMPI counter "
            "(bench/dist/mpi_counter.c: p2p + collectives, per-rank max). "
            "ScaLAPACK = Debian's libscalapack-openmpi pdgemm_; model = prism's model of ScaLAPACK on "
            "that layout (`scalapack_model_MB`); prism = the same program with "
            "`LD_PRELOAD=libprism_scalapack.so PRISM_SCALAPACK_ROUTE=prism`: its own count "
            "(`recv_max_MB`, redistribution included; `redistribution_max_MB` of it moving operands "
            "between the caller's layout and the plan's) and the counter's, and its prediction; "
            "auto = ROUTE=auto, the route it took and the counter's MB; native = `prism run` "
            "in prism's own layout (its own count; table below). Ratios use the counter for both "
            "sides (prism's own count where the counter has none). MB = 1e6 bytes. "
            "Oversubscribed: times not reported.", "",
            "| shape | NB | grid | ScaLAPACK MB | model MB | prism MB (own) | of which redistribution | "
            "prism MB (counter) | predicted MB | auto route | auto MB (counter) | native MB | "
            "prism / ScaLAPACK | auto / ScaLAPACK | native / ScaLAPACK |",
            "|-------|---:|------|-------------:|---------:|---------------:|------------------------:|"
            "-------------------:|-------------:|------------|------------------:|----------:|"
            "------------------:|-----------------:|-------------------:|"]
    plans, reasons = [], []
    for s in shapes:
        nat = vol.get((s, "prism_run", None, None))
        nat_mb = nat.get("recv_max_MB") if usable(nat) else None
        keys = sorted({(k[3], k[2]) for k in vol if k[0] == s and k[1] != "prism_run"},
                      key=lambda x: (x[0], (opts.get("volume_grids", []) + [opts.get("gram_extra_grid")]).index(x[1])
                                     if x[1] in opts.get("volume_grids", []) + [opts.get("gram_extra_grid")] else 99))
        for nb, grid in keys:
            sc = vol.get((s, "scalapack_pdgemm", grid, nb))
            pv = vol.get((s, "prism_via_pdgemm", grid, nb))
            pa = vol.get((s, "prism_auto_pdgemm", grid, nb))
            sc_mb = counter_mb(sc) if usable(sc) else None
            pv_call, pa_call = first_call(pv), first_call(pa)
            pv_own = pv_call.get("recv_max_MB") if usable(pv) else None
            pv_cnt = counter_mb(pv) if usable(pv) else None
            pa_cnt = counter_mb(pa) if usable(pa) else None
            model = pv_call.get("scalapack_model_MB", pa_call.get("scalapack_model_MB"))
            route = pa_call.get("route") if usable(pa) else None
            if usable(pv) and pv_call.get("route") not in (None, "prism"):
                pv_own = "route=%s" % pv_call.get("route")
            if usable(pv) and not pv_call:
                pv_own = "no stats line"
            if pv_call.get("plan"):
                plans.append(f"{pshape_name(s)}, NB {nb}, {grid}: `{pv_call['plan']}`")
            if route == "backend" and pa_call.get("reason"):
                reasons.append(f"{pshape_name(s)}, NB {nb}, {grid}: {pa_call['reason']}")
            pv_ratio_num = pv_cnt if pv_cnt is not None else (pv_own if not isinstance(pv_own, str) else None)
            out.append(
                f"| {pshape_name(s)} | {nb} | {grid} | {fmt(sc_mb) if sc_mb is not None else why_not(sc)} | "
                f"{fmt(model)} | {fmt(pv_own) if usable(pv) else why_not(pv)} | "
                f"{fmt(pv_call.get('redistribution_max_MB')) if usable(pv) else '–'} | "
                f"{fmt(pv_cnt) if usable(pv) else why_not(pv)} | "
                f"{fmt(pv_call.get('pred_max_MB')) if usable(pv) else '–'} | "
                f"{(route or '?') if usable(pa) else why_not(pa)} | {fmt(pa_cnt) if usable(pa) else why_not(pa)} | "
                f"{fmt(nat_mb) if nat_mb is not None else why_not(nat)} | {fmt(ratio(pv_ratio_num, sc_mb))} | "
                f"{fmt(ratio(pa_cnt, sc_mb))} | {fmt(ratio(nat_mb, sc_mb))} |")
    out.append("")
    skipped = sorted({r["skipped"] for r in vol.values() if "skipped" in r})
    if skipped:
        out += ["Skipped: " + "; ".join(skipped) + ".", ""]
    checked = [r for r in vol.values() if r.get("check") in ("passed", "failed") and r.get("tool") != "prism_run"]
    if checked:
        bad = [r for r in checked if r["check"] == "failed"]
        out += [f"C checked (`--check`: one more call after the counted one, compared with a serial "
                f"recomputation) in {len(checked)} run(s): "
                + ("all passed." if not bad else f"{len(bad)} FAILED: " + "; ".join(
                    f"{r.get('tool')} {pshape_name(pshape(r))} NB {r.get('nb')} {r.get('grid')}" for r in bad) + "."),
                ""]
    nat_rows = [(s, vol.get((s, "prism_run", None, None))) for s in shapes]
    if any(r is not None for _, r in nat_rows):
        out += [f"prism native at np = {np_} (`prism run M N K --threads 1 --reps 1 --json`, `--trans TN` for AᵀB): "
                "its own count, its prediction, and the PMPI counter over the whole run (no Pcontrol in "
                "`prism run`, so setup traffic is in it).", "",
                "| shape | P' | grid | MB (own) | predicted MB | MB (counter, whole run) | bound MB |",
                "|-------|---:|------|---------:|-------------:|------------------------:|---------:|"]
        for s, r in nat_rows:
            if r is None:
                continue
            if not usable(r):
                out.append(f"| {pshape_name(s)} | – | {why_not(r)} | – | – | – | – |")
                continue
            out.append(f"| {pshape_name(s)} | {r.get('ranks_used', '–')} | {r.get('grid', '–')} | "
                       f"{fmt(r.get('recv_max_MB'))} | {fmt(r.get('pred_max_MB'))} | {fmt(counter_mb(r))} | "
                       f"{fmt(r.get('bound_MB'))} |")
        out.append("")
    if plans:
        out += ["Plans prism chose through pdgemm_ (ROUTE=prism):", ""] + [f"- {p}" for p in plans] + [""]
    if reasons:
        out += ["Why auto went to ScaLAPACK:", ""] + [f"- {x}" for x in reasons] + [""]
    return out


def md_pdgemm_time(doc, tim, shapes, fixture):
    """The pdgemm time table (np 2): ScaLAPACK vs prism through pdgemm_ (prism, auto) vs native."""
    opts = doc.get("pdgemm", {})
    reps = doc.get("options", {}).get("reps_time", "?")
    out = ["## pdgemm: time at np = 2 (not oversubscribed)", ""]
    if fixture:
        out += ["**FIXTURE: prism through pdgemm is ScaLAPACK underneath here; not a measurement.**", ""]
    out += [f"`mpirun -np 2 prism_pdgemm_bench M N K --nb {opts.get('time_nb', 128)} --grid G --reps {reps}`: "
            "Debian's ScaLAPACK, then with `LD_PRELOAD=libprism_scalapack.so` and PRISM_SCALAPACK_ROUTE=prism, "
            "and =auto (PRISM_STATS=1 in both, to record the route); native = "
            f"`prism run M N K --threads 1 --reps {reps} --json` in prism's own layout (one figure per shape). "
            f"{doc.get('options', {}).get('rounds', '?')} round(s), the order reversed every other round; "
            "best time kept (a repetition's time is its slowest rank's). Every rank: OPENBLAS_NUM_THREADS=1, "
            "PRISM_NUM_THREADS=1. ScaLAPACK s / X s above 1: X is faster.", "",
            "| shape | grid | ScaLAPACK s | prism s | auto s | auto route | native s | "
            "ScaLAPACK / prism | ScaLAPACK / auto | ScaLAPACK / native |",
            "|-------|------|------------:|--------:|-------:|------------|---------:|"
            "------------------:|-----------------:|-------------------:|"]
    grids_order = opts.get("time_grids", [])
    for s in shapes:
        nat = tim.get((s, "prism_run", None))
        grids = sorted({k[2] for k in tim if k[0] == s and k[1] != "prism_run"},
                       key=lambda g: grids_order.index(g) if g in grids_order else 99)
        for g in grids:
            sc, pv, pa = (tim.get((s, t, g)) for t in ("scalapack_pdgemm", "prism_via_pdgemm", "prism_auto_pdgemm"))

            def sec(r):
                """Best seconds of a record, or None."""
                return r.get("best_s") if usable(r) else None
            route = first_call(pa).get("route") if usable(pa) else None
            out.append(
                f"| {pshape_name(s)} | {g} | {fmt(sec(sc)) if sec(sc) else why_not(sc)} | "
                f"{fmt(sec(pv)) if sec(pv) else why_not(pv)} | {fmt(sec(pa)) if sec(pa) else why_not(pa)} | "
                f"{(route or '?') if usable(pa) else '–'} | {fmt(sec(nat)) if sec(nat) else why_not(nat)} | "
                f"{fmt(ratio(sec(sc), sec(pv)))} | {fmt(ratio(sec(sc), sec(pa)))} | {fmt(ratio(sec(sc), sec(nat)))} |")
    out.append("")
    skipped = sorted({r["skipped"] for r in tim.values() if "skipped" in r})
    if skipped:
        out += ["Skipped: " + "; ".join(skipped) + ".", ""]
    return out


def md_pdgemm(doc, vol, tim, selftests, fixture, shapes):
    """The pdgemm part: the counter's self-test, the volume and the time tables."""
    out = []
    if vol:
        out += md_pdgemm_volume(doc, vol, shapes, fixture)
        for r in selftests:
            state = r.get("selftest") or ("failed: " + r["error"] if "error" in r else "?")
            out += [f"PMPI counter self-test at np = {r.get('np', '?')} "
                    f"(bench/dist/mpi_counter_selftest.c, known traffic through every intercepted call): {state}.", ""]
    if tim:
        out += md_pdgemm_time(doc, tim, shapes, fixture)
    return out


def markdown(doc, is_fixture, volume, time, shapes):
    """The whole markdown report."""
    title = "# Distributed benchmark: prism's rank level"
    if is_fixture:
        title += " — FIXTURE, not a measurement"
    out = [title, "", caption(doc, is_fixture), ""]
    if volume:
        out += md_volume(doc, volume, shapes)
    if time:
        out += md_time(doc, time, shapes)
    vol, tim, selftests, pfixture, pshapes = load_pdgemm(doc)
    if pfixture and not is_fixture:
        out[0] += " — FIXTURE (pdgemm part), not a measurement"
    out += md_pdgemm(doc, vol, tim, selftests, pfixture, pshapes)
    failed = [r for r in doc.get("records", []) if "error" in r]
    if failed:
        out += ["## Failed runs", ""] + [f"- `{r.get('cmd', '?')}`: {r['error']}" for r in failed] + [""]
    return "\n".join(out)


def plot(doc, is_fixture, volume, shapes, path):
    """The PNG of part (a): max MB received per rank against P, one panel per shape."""
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
        """Category positions of the P values."""
        return [xpos[p] for p in ps]

    for ax, s in zip(axes[0], panel_shapes):
        ok = {p: r for (sh, p), r in volume.items() if sh == s and "error" not in r}
        ps = sorted(ok)
        cosma = COSMA_MB.get(s, {})
        if cosma:
            cp = sorted(cosma)
            handles["COSMA 2.8.4"] = ax.plot(xs(cp), [cosma[p] for p in cp], "s-", color="#1f77b4",
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
    order = ["prism measured", "prism predicted", "prism, P' < P ranks used", "COSMA 2.8.4", "bound"]
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


def plot_pdgemm(doc, vol, shapes, fixture, path):
    """The pdgemm volume PNG: per shape, bars of per-rank max MB (PMPI counter) for ScaLAPACK,
    prism through pdgemm_ (ROUTE=prism) and ROUTE=auto at each (NB, grid), prism native as a line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 8})
    fig, axes = plt.subplots(1, max(1, len(shapes)), figsize=(8, 3.4), squeeze=False)
    series = [("scalapack_pdgemm", "ScaLAPACK pdgemm_", "#1f77b4"),
              ("prism_via_pdgemm", "prism via pdgemm_, ROUTE=prism", "#d62728"),
              ("prism_auto_pdgemm", "prism via pdgemm_, ROUTE=auto", "#ff9896")]
    handles = {}
    for ax, s in zip(axes[0], shapes):
        order = doc.get("pdgemm", {}).get("volume_grids", []) + [doc.get("pdgemm", {}).get("gram_extra_grid")]
        cats = sorted({(k[3], k[2]) for k in vol if k[0] == s and k[1] != "prism_run"},
                      key=lambda x: (x[0], order.index(x[1]) if x[1] in order else 99, str(x[1])))
        width = 0.8 / len(series)
        for i, (tool, label, color) in enumerate(series):
            xs, ys = [], []
            for j, (nb, grid) in enumerate(cats):
                r = vol.get((s, tool, grid, nb))
                if usable(r) and counter_mb(r) is not None:
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(counter_mb(r))
            if xs:
                handles[label] = ax.bar(xs, ys, width, color=color)
        nat = vol.get((s, "prism_run", None, None))
        if usable(nat) and nat.get("recv_max_MB") is not None:
            handles["prism native (own count)"] = ax.axhline(nat["recv_max_MB"], color="black", ls="--", lw=1.0)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([f"{g}\n{nb}" for nb, g in cats], fontsize=7)
        ax.set_xlabel("grid / NB")
        ax.set_ylim(bottom=0)
        ax.set_title(pshape_name(s))
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("max MB received per rank")
    names = [n for _, n, _ in series if n in handles] + [n for n in ["prism native (own count)"] if n in handles]
    fig.legend([handles[n] for n in names], names, loc="upper center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    mach = doc.get("machine", {})
    note = (f"{mach.get('cpu_model', '?')}, np = {doc.get('pdgemm', {}).get('volume_np', 4)} oversubscribed · "
            f"{doc.get('date_utc', '?')} · git {doc.get('git', {}).get('commit', '?')[:10]} · PMPI counter · MB = 1e6 bytes")
    if fixture:
        note = "FIXTURE: prism-through-pdgemm is ScaLAPACK underneath, not a measurement\n" + note
        fig.text(0.5, 0.5, "FIXTURE", fontsize=40, color="red", alpha=0.15, ha="center", va="center", rotation=20)
    fig.text(0.5, 0.01, note, ha="center", va="bottom", fontsize=7, color="#444444")
    fig.tight_layout(rect=(0, 0.09 if fixture else 0.05, 1, 0.86))
    fig.savefig(path, dpi=200)
    plt.close(fig)


def main():
    """Reads the JSON, prints the markdown (and writes --md, --png)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="bench/results/dist-<date>.json written by scripts/bench-dist.sh")
    ap.add_argument("--md", help="write the markdown here too")
    ap.add_argument("--png", help="write the plot here (needs matplotlib); a run without part (a)'s volume "
                                  "gets the pdgemm volume plot here instead")
    ap.add_argument("--pdgemm-png", help="write the pdgemm volume plot here (needs matplotlib)")
    args = ap.parse_args()
    doc, is_fixture, volume, time, shapes = load(args.json)
    text = markdown(doc, is_fixture, volume, time, shapes)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    vol, _, _, pfixture, pshapes = load_pdgemm(doc)
    try:
        if args.png:
            if volume or not vol:
                plot(doc, is_fixture, volume, shapes, args.png)
            else:
                plot_pdgemm(doc, vol, pshapes, pfixture, args.png)
        if args.pdgemm_png and vol:
            plot_pdgemm(doc, vol, pshapes, pfixture, args.pdgemm_png)
    except ImportError as e:
        print(f"report.py: no PNG ({e}); run with /usr/bin/python3", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
