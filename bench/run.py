#!/usr/bin/env python3
"""Run prism_bench, once or once per peer kernel set, and write one Google Benchmark JSON.

    python3 bench/run.py --bench build/bench/prism_bench --out run/bench.json --log run/bench.log \\
        [--clean-env] [--kernel-sets all|none|LIB:SET,...] -- --set=peers --reps=5

A BLAS library picks its kernel set once, when it is loaded: OpenBLAS from OPENBLAS_CORETYPE
(or cpuid), BLIS from BLIS_ARCH_TYPE (or cpuid). One process therefore measures one set per
library, and comparing sets takes one process per (library, set). With --kernel-sets this
script runs, for every shape of the set in turn:

  1. the main process: every implementation the arguments ask for (prism, prism_blas and
     the peers with their default kernels, i.e. under this environment as it is);
  2. one process per kernel set of each peer library, with --only=LIB --label=SET (so the
     implementations are named e.g. openblas@SkylakeX and openblas_1t@SkylakeX) under an
     environment that selects that set,

so slow drift of the machine hits every set of a shape alike. With --rounds R the shape's
processes run R times over, every other round in reverse order (main, sets ...; sets
reversed ..., main), and the report keeps each implementation's best repetition over all
rounds: on a machine whose speed wanders by tens of percent over minutes (a shared VM), one
slow minute then no longer decides a ratio. The machine probes (FMA peak, read bandwidth)
run in a process of their own before the first shape and after the last.
Without --kernel-sets (or with none) prism_bench runs once, as it always did.

--kernel-sets best runs, per library, only the set that prism's own leaf copy of it runs on
this CPU (prism_bench --print-kernel-sets names them: the fastest set prism's probe measured
here), when the library's default is another: a peer on a weaker set than the CPU allows is
then also timed at its best, beside its default. The main job (bench.sh's quick and full
sets) runs with it, so its headline ratios are the ones a user who fixed their BLAS sees.

Which sets (--kernel-sets all). A set runs when this CPU has every instruction-set extension
of the CPU the set is named for (the flags of /proc/cpuinfo, tables OPENBLAS_SETS and
BLIS_SETS below). Sets whose gemm kernels use only 128-bit SSE (OpenBLAS Prescott .. Nehalem,
BLIS penryn) are left out to keep the run short (half as wide as the AVX sets, and each set
costs a process per shape); a LIB:SET list runs any set it names.
OpenBLAS also runs `auto`: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed, its own cpuid
detection. Every set is first confirmed by a short probe process (prism_bench
--print-kernel-sets): OpenBLAS must report the core it was asked for (openblas_get_corename);
a BLIS configuration must be registered in the installed build (else bli_init aborts) and
report its name (bli_arch_string). Two sets that load the same kernels (auto and Cooperlake,
say) run once; a set identical to the main process's default is not run again.

Environments. OpenBLAS set X: OPENBLAS_L2_SIZE removed, OPENBLAS_CORETYPE=X. BLIS set X:
BLIS_ARCH_TYPE=<id of X> (BLIS 0.9 reads the variable as a number; a name reads as 0, skx).
--clean-env removes OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE and BLIS_ARCH_TYPE from the
environment of every process, the main one included, as on a machine that sets none of them.
The JSON context records the variables as found (host_env), whether they were removed
(clean_env), every set with its environment and status (kernel_sets), and the git commit.

Exit status: prism_bench's (3 if prism's check against OpenBLAS failed) once the JSON is
written; a kernel-set process that fails is recorded in kernel_sets and does not stop the run.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

# The variables a clean environment lacks: they force a kernel set or a cache size.
CLEAN_VARS = ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "BLIS_ARCH_TYPE"]
# The variables recorded as found (threads included: they change what "default" means).
RECORDED_VARS = CLEAN_VARS + ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS",
                              "BLIS_NUM_THREADS"]

AVX512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}  # Skylake-SP's AVX-512
AMD_FMA4 = {"avx", "fma4", "xop"}                                       # Bulldozer's
# OpenBLAS DYNAMIC_ARCH core types (OPENBLAS_CORETYPE names) from AVX on, each with the
# extensions of the CPU it is named for; "auto" is OpenBLAS's own detection. SapphireRapids
# is newer than Debian 12's 0.3.21, which loads its own choice for a name it does not know;
# the probe then skips it.
OPENBLAS_SETS = [
    ("auto", set()),
    ("SapphireRapids", AVX512 | {"avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"}),
    ("Cooperlake", AVX512 | {"avx512_bf16"}),
    ("SkylakeX", AVX512),
    ("Zen", {"avx2", "fma"}),
    ("Haswell", {"avx2", "fma"}),
    ("Excavator", AMD_FMA4 | {"fma", "avx2"}),
    ("Steamroller", AMD_FMA4 | {"fma"}),
    ("Piledriver", AMD_FMA4 | {"fma"}),
    ("Bulldozer", AMD_FMA4),
    ("Sandybridge", {"avx"}),
]
# BLIS 0.9 x86-64 configurations (bli_arch_string names) from AVX on; knc (Xeon Phi
# coprocessor) never runs in a host process.
BLIS_SETS = [
    ("skx", AVX512),
    ("knl", {"avx512f", "avx512cd", "avx512pf", "avx512er"}),
    ("zen3", {"avx2", "fma"}),
    ("zen2", {"avx2", "fma"}),
    ("zen", {"avx2", "fma"}),
    ("haswell", {"avx2", "fma"}),
    ("excavator", AMD_FMA4 | {"fma", "avx2"}),
    ("steamroller", AMD_FMA4 | {"fma"}),
    ("piledriver", AMD_FMA4 | {"fma"}),
    ("bulldozer", AMD_FMA4),
    ("sandybridge", {"avx"}),
]
LIBRARIES = {"openblas": OPENBLAS_SETS, "blis": BLIS_SETS}
# The variables that select a library's kernels, the selector first; recorded for every set
# (None: unset).
LIBRARY_VARS = {"openblas": ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"], "blis": ["BLIS_ARCH_TYPE"]}


def log(msg):
    sys.stderr.write("run.py: %s\n" % msg)
    sys.stderr.flush()


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="the prism_bench executable")
    p.add_argument("--out", required=True, help="the merged Google Benchmark JSON to write")
    p.add_argument("--log", help="append every process's console output here (default: stdout)")
    p.add_argument("--clean-env", action="store_true",
                   help="remove %s from every process's environment" % ", ".join(CLEAN_VARS))
    p.add_argument("--kernel-sets", default="none", metavar="all|best|none|LIB:SET,...",
                   help="peer kernel sets to run besides the defaults: all (every set this CPU runs), "
                        "best (the set prism's leaves run here, where the default is another), none "
                        "(default), or a list such as openblas:SkylakeX,openblas:auto,blis:zen3")
    p.add_argument("--probe-timeout", type=float, default=120, help="seconds for one probe process")
    p.add_argument("--pick", default="",
                   help="with --kernel-sets: only these shapes of the set, as --list-shapes prints them "
                        "(e.g. 4x4x16777216:NN,32x32x4194304:TN)")
    p.add_argument("--rounds", type=int, default=1,
                   help="with --kernel-sets: run each shape's processes this many times, alternating "
                        "their order (default 1)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="-- then prism_bench's arguments")
    a = p.parse_args()
    if a.bench_args and a.bench_args[0] == "--":
        a.bench_args = a.bench_args[1:]
    if a.rounds < 1:
        p.error("--rounds must be 1 or more")
    if a.rounds > 1 and a.kernel_sets == "none":
        p.error("--rounds needs --kernel-sets (one process per shape and set)")
    for x in a.bench_args:
        if x.startswith("--benchmark_out") or x.startswith(("--only=", "--label=", "--pick=", "--probes=")):
            p.error("%s is set by run.py itself" % x.split("=")[0])
    return a


def base_environment(clean):
    env = dict(os.environ)
    if clean:
        for v in CLEAN_VARS:
            env.pop(v, None)
    return env


def set_environment(base, lib, requested, blis_ids):
    """The environment that makes `lib` load kernel set `requested`."""
    env = dict(base)
    if lib == "openblas":
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        if requested != "auto":
            env["OPENBLAS_CORETYPE"] = requested
    else:
        env["BLIS_ARCH_TYPE"] = str(blis_ids[requested])
    return env


def env_changes(base, env):
    """What `env` changes against `base`, for the record: {var: value or None (removed)}."""
    keys = sorted(set(base) | set(env))
    return {k: env.get(k) for k in keys if base.get(k) != env.get(k)}


def probe(bench, env, timeout):
    """prism_bench --print-kernel-sets under env: (cores {build: set}, blis ids {name: id}, rc);
    prism's own leaf sets are in cores as "leaf-openblas" and "leaf-blis"."""
    try:
        r = subprocess.run([bench, "--print-kernel-sets"], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, {}, "timed out"
    cores, ids = {}, {}
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) >= 3 and w[0] == "core":
            cores[w[1]] = " ".join(w[2:])
        elif len(w) == 3 and w[0] == "leaf":
            cores["leaf-" + w[1]] = w[2]
        elif len(w) == 3 and w[0] == "blis-arch":
            ids[w[2]] = int(w[1])
    return cores, ids, r.returncode


def query(bench, args, flag, env):
    r = subprocess.run([bench] + args + [flag], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        sys.exit("run.py: %s %s failed (status %d)" % (bench, flag, r.returncode))
    return [l.strip() for l in r.stdout.splitlines() if l.strip()]


def wanted_sets(spec, flags, best):
    """[(lib, requested set, why skipped or None)] from --kernel-sets; `best`: {lib: the set
    prism's leaf copy runs here}."""
    if spec == "none":
        return []
    if spec == "best":
        return [(lib, best[lib], None) if best.get(lib) else (lib, "best", "prism's leaf set unknown")
                for lib in LIBRARIES]
    if spec == "all":
        out = []
        for lib, table in LIBRARIES.items():
            for name, needs in table:
                missing = sorted(needs - flags)
                out.append((lib, name, "this CPU lacks %s" % " ".join(missing) if missing else None))
        return out
    out = []
    for item in spec.split(","):
        lib, _, name = item.partition(":")
        if lib not in LIBRARIES or not name:
            sys.exit("run.py: --kernel-sets item '%s' is not LIB:SET with LIB openblas or blis" % item)
        out.append((lib, name, None))
    return out


def choose_sets(args, base_env, impls):
    """Probes every wanted set; returns (sets to run, the record of every set considered)."""
    flags = cpu_flags()
    default_cores, blis_ids, rc = probe(args.bench, base_env, args.probe_timeout)
    if rc != 0:
        sys.exit("run.py: %s --print-kernel-sets failed under this environment (status %s)" % (args.bench, rc))
    libs_timed = {i.split("_")[0] for i in impls}
    record, run = [], []
    seen = {}  # (lib, confirmed core) -> the record that runs it
    best = {lib: default_cores.get("leaf-" + lib) for lib in LIBRARIES}
    for lib, name, skip in wanted_sets(args.kernel_sets, flags, best):
        entry = {"library": lib, "requested": name}
        pthread, serial = "%s-pthread" % lib, "%s-serial" % lib
        if lib not in libs_timed:
            entry["status"] = "skipped: no %s implementation in this run" % lib
            record.append(entry)
            continue
        if skip:
            entry["status"] = "skipped: " + skip
            record.append(entry)
            continue
        if lib == "blis" and name not in blis_ids:
            entry["status"] = "skipped: this BLIS has no architecture named %s" % name
            record.append(entry)
            continue
        env = set_environment(base_env, lib, name, blis_ids)
        entry["env"] = {v: env.get(v) for v in LIBRARY_VARS[lib]}
        cores, _, rc = probe(args.bench, env, args.probe_timeout)
        core = cores.get(pthread)
        if rc != 0 or core is None:
            entry["status"] = ("skipped: configuration not registered in this BLIS build (bli_init aborts)"
                               if lib == "blis" else "skipped: the probe failed (status %s)" % rc)
            record.append(entry)
            continue
        entry["core"] = core
        if cores.get(serial) != core:
            entry["core_serial"] = cores.get(serial)
        if name != "auto" and core.lower() != name.lower():
            entry["status"] = "skipped: asked for %s, %s loaded %s" % (name, lib, core)
            record.append(entry)
            continue
        # The main process's default column already measures these kernels when it loaded the
        # same core and the library's other variables (after the selector, the first) agree.
        same_vars = all(base_env.get(v) == env.get(v) for v in LIBRARY_VARS[lib][1:])
        if default_cores.get(pthread) == core and same_vars:
            entry["status"] = "skipped: same kernels as the default column (%s)" % lib
            record.append(entry)
            continue
        if (lib, core) in seen:
            first = seen[(lib, core)]
            first["requested_also"] = first.get("requested_also", []) + [name]
            entry["status"] = "skipped: same kernels as %s@%s" % (lib, first["label"])
            record.append(entry)
            continue
        entry["label"] = re.sub(r"[^A-Za-z0-9_.+-]", "_", core)
        entry["status"] = "ran"
        entry["_env"] = env
        seen[(lib, core)] = entry
        record.append(entry)
        run.append(entry)
    defaults = {"openblas": default_cores.get("openblas-pthread"), "blis": default_cores.get("blis-pthread")}
    return run, record, defaults, best


class Runner:
    """Runs prism_bench processes. Their stdout (Google Benchmark's console table) goes to the
    log. With quiet=True (one process per shape and set: many processes) their stderr goes
    there too, and the terminal gets one line per process, prism's check failures, and the
    end of the stderr of a process that failed."""

    def __init__(self, args, tmp, quiet):
        self.args, self.tmp, self.n, self.quiet = args, tmp, 0, quiet
        self.logf = open(args.log, "a") if args.log else None

    def __call__(self, extra, env, base_env, what):
        """Runs prism_bench with the common arguments and `extra`; returns (json or None, rc)."""
        self.n += 1
        if self.quiet:
            log(what)
        out = os.path.join(self.tmp, "%04d.json" % self.n)
        cmd = [self.args.bench] + self.args.bench_args + extra + \
              ["--benchmark_out=" + out, "--benchmark_out_format=json"]
        changes = env_changes(base_env, env)
        head = "=== %s: %s%s" % (what, " ".join(cmd),
                                 "  [env %s]" % " ".join("%s=%s" % (k, "(removed)" if v is None else v)
                                                         for k, v in changes.items()) if changes else "")
        sink = self.logf or sys.stdout
        sink.write(head + "\n")
        sink.flush()
        if self.quiet:
            r = subprocess.run(cmd, env=env, stdout=sink, stderr=subprocess.PIPE, text=True)
            sink.write(r.stderr)
            sink.flush()
            lines = r.stderr.splitlines()
            for line in lines:
                if "CHECK" in line or "failed the check" in line:
                    sys.stderr.write(line + "\n")
            if r.returncode != 0:
                sys.stderr.write("".join(l + "\n" for l in lines[-20:]))
                log("%s: status %d" % (what, r.returncode))
            rc = r.returncode
        else:
            rc = subprocess.run(cmd, env=env, stdout=sink, stderr=None).returncode
        data = None
        if os.path.exists(out):
            try:
                with open(out) as f:
                    data = json.load(f)
            except ValueError:
                data = None
            os.remove(out)
        return data, rc


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        sha = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return (sha + (" (uncommitted changes)" if dirty else "")) if sha else "unknown"
    except OSError:
        return "unknown"


def load_average():
    """The 1-, 5- and 15-minute load averages of the machine ("" where /proc has none): other
    users' processes count, and a run on a busy machine says so."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return ""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main():
    args = parse_args()
    started = utc_now()
    host = {v: os.environ[v] for v in RECORDED_VARS if v in os.environ}
    base_env = base_environment(args.clean_env)
    tmp = tempfile.mkdtemp(prefix="prism-bench-")  # each process's JSON, removed once read
    run = Runner(args, tmp, quiet=args.kernel_sets != "none")
    extra_ctx = {
        "host_env": host,
        "clean_env": "1" if args.clean_env else "0",
        "removed_env": [v for v in CLEAN_VARS if v in host] if args.clean_env else [],
        "git_commit": git_commit(),
        "run_start_utc": started,
        "load_start": load_average(),
    }

    if args.kernel_sets == "none":
        data, rc = run([], base_env, base_env, "all shapes, default kernel sets")
        if data is None:
            sys.exit("run.py: prism_bench wrote no JSON (status %d)" % rc)
        extra_ctx["run_mode"] = "one process"
        extra_ctx["kernel_sets"] = []
        merged = data
    else:
        impls = query(args.bench, args.bench_args, "--list-impls", base_env)
        shapes = query(args.bench, args.bench_args, "--list-shapes", base_env)
        if args.pick:
            wanted = [x if ":" in x else x + ":NN" for x in args.pick.split(",") if x]
            missing = [x for x in wanted if x not in shapes]
            if missing:
                sys.exit("run.py: --pick names shapes the set lacks: %s (it has %s)" % (", ".join(missing), ", ".join(shapes)))
            shapes = [x for x in shapes if x in wanted]
            extra_ctx["picked_shapes"] = ",".join(shapes)
        sets, record, defaults, best = choose_sets(args, base_env, impls)
        for e in record:
            log("%s %s: %s" % (e["library"], e["requested"],
                               "runs as %s@%s" % (e["library"], e["label"]) if e["status"] == "ran" else e["status"]))
        merged, rc = None, 0
        benchmarks = []

        def take(data, what):
            nonlocal merged
            if data is None:
                return
            if merged is None or (what == "main" and merged.get("_probe_only")):
                ctx = dict(data.get("context", {}))
                merged = {"context": ctx, "_probe_only": what != "main"}
            benchmarks.extend(data.get("benchmarks", []))

        probes = not ("--no-fma" in args.bench_args and "--no-bandwidth" in args.bench_args)
        if probes:
            data, _ = run(["--no-gemm", "--probes=first"], base_env, base_env, "machine probes, first")
            take(data, "probes")
        def main_process(i, s, tag):
            nonlocal rc
            data, r = run(["--pick=" + s, "--no-fma", "--no-bandwidth"], base_env, base_env,
                          "shape %d/%d %s%s: main process" % (i + 1, len(shapes), s, tag))
            rc = rc or r
            take(data, "main")

        def set_process(i, s, tag, e):
            data, r = run(["--pick=" + s, "--no-fma", "--no-bandwidth", "--check=0",
                           "--only=" + e["library"], "--label=" + e["label"]],
                          e["_env"], base_env,
                          "shape %d/%d %s%s: %s@%s" % (i + 1, len(shapes), s, tag, e["library"], e["label"]))
            if data is not None:
                ctx = data.get("context", {})
                ran = ctx.get("core_%s-pthread" % e["library"])
                if ran and ran != e["core"]:
                    e["status"] = "ran, but loaded %s (probe said %s)" % (ran, e["core"])
            if r != 0:
                e.setdefault("failures", []).append("%s: status %d" % (s, r))
            take(data, "set")

        for i, s in enumerate(shapes):
            for rnd in range(args.rounds):
                tag = " round %d/%d" % (rnd + 1, args.rounds) if args.rounds > 1 else ""
                # Odd rounds run in reverse, so no implementation always runs first (or last)
                # after the machine has been idle or busy.
                if rnd % 2 == 0:
                    main_process(i, s, tag)
                    for e in sets:
                        set_process(i, s, tag, e)
                else:
                    for e in reversed(sets):
                        set_process(i, s, tag, e)
                    main_process(i, s, tag)
        if probes:
            data, _ = run(["--no-gemm", "--probes=last"], base_env, base_env, "machine probes, last")
            take(data, "probes")
        if merged is None:
            sys.exit("run.py: no process wrote JSON")
        merged.pop("_probe_only", None)
        merged["benchmarks"] = benchmarks
        for e in record:
            e.pop("_env", None)
        extra_ctx["run_mode"] = "per shape: the main process, then one process per kernel set"
        extra_ctx["rounds"] = args.rounds
        extra_ctx["kernel_sets"] = record
        extra_ctx["default_kernel_sets"] = defaults
        extra_ctx["best_kernel_sets"] = best
        extra_ctx["kernel_sets_mode"] = args.kernel_sets

    os.rmdir(tmp)
    extra_ctx["run_end_utc"] = utc_now()
    extra_ctx["load_end"] = load_average()
    merged.setdefault("context", {}).update(extra_ctx)
    with open(args.out, "w") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    log("wrote %s" % args.out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
