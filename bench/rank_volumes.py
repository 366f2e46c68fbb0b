#!/usr/bin/python3
"""The rank level's volumes and plan time, without MPI.

Runs `prism plan M N K --ranks P` (one process at a time, under /usr/bin/time) and reads the
rank level's report lines from its output:

    # rank level: P ranks given, P' used; grid G
    # predicted per rank: received max X MB, mean Y MB; lower bound Z MB (...); max/mean flops F;
      peak memory A MB of B MB

Beside them it computes, for doubles (MB = elements x 8 / 1e6):

  best exact grid   min over ordered pm*pn*pk = P of
                    W = mk/(pm pk)(1-1/pn) + kn/(pk pn)(1-1/pm) + mn/(pm pn)(1-1/pk)
  best <= 64 idle   the same minimum over every P' in [P-64, P]
  cubic bound       3 (mnk/P)^(2/3) - (mn+mk+kn)/P: COSMA Thm 2, memory-independent, minus an
                    even share of the operands (what prism prints; recomputed to check it)
  tight bound       min x+y+z subject to xyz >= (mnk/P)^2, x <= mk, y <= kn, z <= mn, minus the
                    same share (equals the cubic bound unless a whole operand is smaller than
                    the cube's face (mnk/P)^(2/3))

Modes:
  (default)  the volume table: five shapes x P in {192, 768, 1021, 3001, 3072, 12288}
             -> <out>/rank-volumes-<stamp>.{md,csv,json,png}
  --sweep    plan time and peak memory against P (every P <= 64, then log-spaced values and
             the primes below them up to 100,000), on the same five shapes, plus the two
             planning targets (65536^3 at P = 16384, 1024^3 at P = 1024)
             -> <out>/rank-plan-time-<stamp>.{csv,json,md,png}
  --full S   every P from 1 to 100,000 for shape S (a name from --list-shapes); prints a time
             estimate first (from a short probe) and writes rows as they come
  --check    the yardstick code against the reference values, then exit

A run that exceeds --timeout is killed and recorded as a timeout (with the peak memory it had
reached); any non-zero exit is recorded with its status and the last line of its stderr. Rows
are written to the CSV as they finish, so an interrupted run keeps what it measured.

Use Debian's /usr/bin/python3 (NumPy and matplotlib); scripts/rank-volumes.sh wraps this.
"""

import argparse
import csv
import datetime as dt
import hashlib
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

SHAPES = [  # name, m, n, k
    ("16384³", 16384, 16384, 16384),
    ("6144×6144×1.2M", 6144, 6144, 1200000),
    ("1.2M×6144×6144", 1200000, 6144, 6144),
    ("100k×100k×5k", 100000, 100000, 5000),
    ("50000³", 50000, 50000, 50000),
]
TABLE_RANKS = [192, 768, 1021, 3001, 3072, 12288]
QUICK_SHAPES = ["16384³", "100k×100k×5k"]
QUICK_RANKS = [192, 1021]

# the planning targets: (name, m, n, k, P, seconds, peak MB or None)
TARGETS = [
    ("65536³", 65536, 65536, 65536, 16384, 1.0, 256.0),
    ("1024³", 1024, 1024, 1024, 1024, 0.1, None),
]

IDLE = 64
BYTES = 8  # doubles
TOL_MB = 0.0005  # prism prints MB to three decimals: allow the printed value's rounding
PMAX = 100000

# ----------------------------------------------------------------------------- yardsticks


def divisors(p):
    small, large = [], []
    d = 1
    while d * d <= p:
        if p % d == 0:
            small.append(d)
            if d * d != p:
                large.append(p // d)
        d += 1
    return small + large[::-1]


def grid_numerator(m, n, k, pm, pn, pk):
    """P x W for the grid pm x pn x pk (an integer, so ties compare exactly)."""
    return m * k * (pn - 1) + k * n * (pm - 1) + m * n * (pk - 1)


def best_exact(m, n, k, p):
    """(W elements as a Fraction, (pm, pn, pk)) minimising W over ordered pm*pn*pk = p.
    Ties go to the lexicographically smallest triple."""
    best = None
    ds = divisors(p)
    for pm in ds:
        r = p // pm
        for pn in divisors(r):
            pk = r // pn
            key = (grid_numerator(m, n, k, pm, pn, pk), (pm, pn, pk))
            if best is None or key < best:
                best = key
    return Fraction(best[0], p), best[1]


def grid_busiest_int(m, n, k, pm, pn, pk):
    """Elements the busiest rank of the grid pm x pn x pk receives with integer blocks, as
    prism's native layout counts them: part boundaries at round(ext * i / parts), a shared
    block of N elements split among its s holders as [floor(tN/s), floor((t+1)N/s)), the
    holder's place t being its index along the cut that shares the block (A: n, B: m, C: k).
    Example: 10 x 10 x 10 on 1 x 3 x 1: n parts 3, 4, 3 (boundaries 3, 7); A (10 x 10) is
    shared by the 3 ranks, pieces 33, 33, 34, so rank 0 receives 67 of A and nothing else."""
    def sizes(ext, parts):
        b = [int(Fraction(ext * i, parts) + Fraction(1, 2)) for i in range(parts + 1)]
        return [b[i + 1] - b[i] for i in range(parts)]
    def recv(N, s, t):
        return N - ((t + 1) * N // s - t * N // s)
    ms, ns, ks = sizes(m, pm), sizes(n, pn), sizes(k, pk)
    most = 0
    for i, mi in enumerate(ms):
        for j, nj in enumerate(ns):
            for l, kl in enumerate(ks):
                most = max(most, recv(mi * kl, pn, j) + recv(kl * nj, pm, i) + recv(mi * nj, pk, l))
    return most


def best_idle(m, n, k, p, idle=IDLE):
    """(W, (pm, pn, pk), P') minimising W over every P' in [p - idle, p]; ties go to the
    larger P' (fewer idle ranks), then the smaller triple."""
    best = None
    for q in range(max(1, p - idle), p + 1):
        w, g = best_exact(m, n, k, q)
        key = (w, -q, g)
        if best is None or key < best:
            best = key
    return best[0], best[2], -best[1]


def owned(m, n, k, p):
    return (m * n + m * k + k * n) / p


def bound_cubic(m, n, k, p):
    """clamped at 0, as prism prints it"""
    f = m * n * k / p
    return max(0.0, 3.0 * f ** (2.0 / 3.0) - owned(m, n, k, p))


def bound_tight(m, n, k, p):
    """min x+y+z with xyz >= F^2 (F = mnk/p) and each projection at most its operand's size:
    the optimum is x_i = min(cap_i, t) with one common t (water filling)."""
    f = m * n * k / p
    caps = sorted([m * k, k * n, m * n])
    t = f ** (2.0 / 3.0)
    if t <= caps[0]:
        d = 3.0 * t
    else:
        t = f / math.sqrt(caps[0])
        if t <= caps[1]:
            d = caps[0] + 2.0 * t
        else:
            d = caps[0] + caps[1] + f * f / (caps[0] * caps[1])
    return max(0.0, d - owned(m, n, k, p))


def mb(elements):
    return float(elements) * BYTES / 1e6


def grid_str(g):
    return "×".join(str(x) for x in g)


# reference values (doubles, MB) the yardstick code must reproduce. The flat shapes' values
# were computed with 1.2M = 1,200,000 (the table's runs use 1,228,800 = 1200 x 1024).
REFERENCE = [
    # m, n, k, P, best exact grid, its MB, best <= 64 idle (grid, MB) or None, bound - owned MB
    (16384, 16384, 16384, 768, (8, 8, 12), 69.9, None, 68.4),
    (16384, 16384, 16384, 1021, (1, 1, 1021), 2145, ((10, 10, 10), 58.0), 57.2),
    (16384, 16384, 16384, 12288, (16, 24, 32), 12.1, None, 11.6),
    (6144, 6144, 1200000, 768, (1, 2, 384), 227.4, None, 209.7),
    (6144, 6144, 1200000, 3001, (1, 1, 3001), 301.9, ((2, 3, 500), 109.2), 107.2),
    (1200000, 6144, 6144, 3072, (512, 2, 3), 107.8, None, 105.8),
    (100000, 100000, 5000, 1021, (1, 1021, 1), 3996, ((30, 34, 1), 243.1), 235.1),
    (100000, 100000, 5000, 12288, (64, 64, 3), 54.0, None, 54.0),
]


def close(a, b):
    """a (computed) equals b (quoted) at b's printed precision."""
    s = repr(b)
    digits = len(s.split(".")[1]) if "." in s else 0
    return abs(a - b) <= 0.5 * 10.0 ** (-digits) + 1e-9


def self_check(verbose=True):
    bad = 0
    for m, n, k, p, g, g_mb, idle, b in REFERENCE:
        w, gg = best_exact(m, n, k, p)
        wi, gi, qi = best_idle(m, n, k, p)
        bc = bound_cubic(m, n, k, p)
        ok = gg == g and close(mb(w), g_mb) and close(mb(bc), b)
        if idle is not None:
            ok = ok and gi == idle[0] and close(mb(wi), idle[1])
        else:
            ok = ok and mb(wi) <= mb(w)
        bad += not ok
        if verbose:
            print(f"{'ok ' if ok else 'BAD'} {m}x{n}x{k} P={p}: best exact {grid_str(gg)} {mb(w):.1f} MB"
                  f" (ref {grid_str(g)} {g_mb}); <= {IDLE} idle {grid_str(gi)} (P'={qi}) {mb(wi):.1f} MB"
                  f" (ref {'-' if idle is None else grid_str(idle[0]) + ' ' + str(idle[1])});"
                  f" bound {mb(bc):.1f} MB (ref {b}); tight {mb(bound_tight(m, n, k, p)):.1f} MB")
    return bad == 0


# ----------------------------------------------------------------------------- running prism


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def local_libraries(path):
    """The shared libraries `path` loads from outside the system folders (prism's own, from its
    build folder): [(soname, resolved path)]."""
    out = []
    for line in sh("ldd", path).splitlines():
        mm = re.match(r"\s*(\S+) => (/\S+)", line)
        if mm and not mm.group(2).startswith(("/lib", "/usr/lib", "/usr/local/lib")):
            out.append((mm.group(1), os.path.realpath(mm.group(2))))
    return out


class Binary:
    """The prism program: its executable and the libraries it loads from its build folder
    (where the planner lives), fingerprinted together. With snapshot=True they are copied
    once into a private folder and every run uses the copy (LD_LIBRARY_PATH is searched before
    the executable's RUNPATH), so a rebuild of the original during a long run changes nothing;
    otherwise a rebuild is noticed and each row names the build it ran."""

    def __init__(self, path, snapshot=False):
        self.path = os.path.abspath(path)
        self.run_path = self.path
        self.env = None
        self.snapshot_dir = None
        self.seen = {}  # fingerprint -> description
        self.key = None
        self.sha = None
        if snapshot:
            self.take_snapshot()
        self.refresh()

    def files(self):
        return [("prism", self.path)] + local_libraries(self.path)

    def take_snapshot(self):
        import atexit
        import shutil
        for attempt in range(5):
            before = self.stat_key(self.files())
            d = tempfile.mkdtemp(prefix="prism-snapshot-")
            for name, src in self.files():
                shutil.copy2(src, os.path.join(d, name))
            if before is not None and self.stat_key(self.files()) == before:
                break
            shutil.rmtree(d)  # rebuilt while copying: try again in a while
            time.sleep(30)
        else:
            raise SystemExit(f"{self.path} kept changing while it was copied")
        self.snapshot_dir = d
        self.run_path = os.path.join(d, "prism")
        self.env = dict(os.environ, LD_LIBRARY_PATH=d + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else ""))
        self.snapshot_files = [(name, os.path.join(d, name), src) for name, src in self.files()]
        atexit.register(shutil.rmtree, d, True)

    @staticmethod
    def stat_key(files):
        try:
            return tuple((src, os.stat(src).st_mtime_ns, os.stat(src).st_size) for _, src in files)
        except OSError:
            return None

    def refresh(self):
        """The fingerprint of what a run now executes (None if it is missing)."""
        if self.snapshot_dir:
            files = [(name, copy) for name, copy, _ in self.snapshot_files]
            originals = {name: src for name, _, src in self.snapshot_files}
        else:
            files = self.files()
            originals = dict(files)
        key = self.stat_key(files)
        if key is None:
            self.key, self.sha = None, None
            return None
        if key != self.key:
            self.key = key
            try:
                shas = {name: sha256(f) for name, f in files}
            except OSError:
                self.sha = None
                return None
            self.sha = hashlib.sha256("".join(f"{n}:{h}\n" for n, h in sorted(shas.items())).encode()).hexdigest()
            if self.sha not in self.seen:
                newest = max(os.stat(f).st_mtime for _, f in files)
                self.seen[self.sha] = {
                    "fingerprint": self.sha,
                    "files": {name: {"path": originals.get(name), "sha256": shas[name]} for name in shas},
                    "built_utc": dt.datetime.fromtimestamp(newest, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "first_used_utc": now_utc(),
                    "snapshot": bool(self.snapshot_dir),
                }
        return self.sha

    def help_text(self):
        try:
            r = subprocess.run([self.run_path, "plan", "--help"], capture_output=True, text=True, timeout=30, env=self.env)
            return r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired):
            return ""


def now_utc():
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def child_pids(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run_once(binary, args, timeout):
    """One `prism plan ...` under /usr/bin/time. Returns a dict: rc, status, wall_s, cpu_s,
    peak_kb, stdout, stderr_tail."""
    with tempfile.NamedTemporaryFile("w+", prefix="rank-volumes-time-", delete=False) as tf:
        timefile = tf.name
    cmd = ["/usr/bin/time", "-f", "%e %M %U %S", "-o", timefile, binary.run_path] + args
    t0 = time.monotonic()
    out_f = tempfile.TemporaryFile("w+")
    err_f = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, text=True, start_new_session=True, env=binary.env)
    peak_seen = None
    status = "ok"
    while True:
        try:
            proc.wait(timeout=min(0.25, max(0.01, timeout - (time.monotonic() - t0))))
            break
        except subprocess.TimeoutExpired:
            pass
        for c in child_pids(proc.pid):
            h = vm_hwm_kb(c)
            if h is not None:
                peak_seen = max(peak_seen or 0, h)
        if time.monotonic() - t0 > timeout:
            status = "timeout"
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the group this call started
            except ProcessLookupError:
                pass
            proc.wait()
            break
    wall = time.monotonic() - t0
    out_f.seek(0)
    err_f.seek(0)
    stdout = out_f.read()
    stderr = err_f.read()
    out_f.close()
    err_f.close()
    res = {"rc": proc.returncode, "status": status, "wall_s": round(wall, 3), "cpu_s": None,
           "peak_kb": peak_seen, "stdout": stdout, "stderr_tail": stderr.strip().splitlines()[-1:] and stderr.strip().splitlines()[-1]}
    try:
        with open(timefile) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        os.unlink(timefile)
    except OSError:
        lines = []
    if status != "timeout":
        # /usr/bin/time writes "Command exited with non-zero status N" first on failure
        vals = None
        for l in lines:
            parts = l.split()
            if len(parts) == 4:
                try:
                    vals = [float(x) for x in parts]
                except ValueError:
                    pass
            if l.startswith("Command terminated by signal"):
                res["status"] = "signal " + l.split()[-1]
        if vals:
            res["wall_s"] = vals[0]
            res["peak_kb"] = int(vals[1])
            res["cpu_s"] = round(vals[2] + vals[3], 2)
        # time's own exit status is the child's (or 128+signal)
        if res["rc"] != 0 and res["status"] == "ok":
            res["status"] = f"exit {res['rc']}"
    return res


def run_plan(binary, m, n, k, p, timeout, use_summary, retry_wait, log):
    """prism plan with retries for a binary that is being rebuilt (missing, not executable,
    or replaced while it ran)."""
    args = ["plan", str(m), str(n), str(k), "--ranks", str(p)]
    if use_summary:
        args.append("--summary")
    attempts = 0
    while True:
        attempts += 1
        before = binary.refresh()
        if before is None or not os.access(binary.run_path, os.X_OK):
            if attempts <= 5:
                log(f"  {binary.path} missing or not executable; waiting {retry_wait} s (attempt {attempts})")
                time.sleep(retry_wait)
                continue
            return {"rc": None, "status": "binary missing", "wall_s": None, "cpu_s": None, "peak_kb": None,
                    "stdout": "", "stderr_tail": "", "attempts": attempts, "build_fingerprint": None,
                    "load_before": os.getloadavg()[0]}
        load = os.getloadavg()[0]
        res = run_once(binary, args, timeout)
        after = binary.refresh()
        odd = res["status"] not in ("ok", "timeout") and (res["rc"] in (126, 127) or after != before)
        if odd and attempts <= 3:
            log(f"  odd failure ({res['status']}: {res['stderr_tail']}), binary {'changed' if after != before else 'unchanged'};"
                f" waiting {retry_wait} s and retrying")
            time.sleep(retry_wait)
            continue
        res["attempts"] = attempts
        res["build_fingerprint"] = before if before == after else f"{before} -> {after}"
        res["load_before"] = round(load, 2)
        return res


RE_RANK = re.compile(r"^# rank level: (\d+) ranks given, (\d+) used; grid (.*)$")
RE_NUM = r"([-+0-9.eE]+|inf|nan)"


def parse(stdout):
    d = {}
    for line in stdout.splitlines():
        if not line.startswith("#"):
            continue
        mm = RE_RANK.match(line)
        if mm:
            d["ranks_given"] = int(mm.group(1))
            d["ranks_used"] = int(mm.group(2))
            d["grid"] = mm.group(3).strip()
        elif line.startswith("# predicted per rank:"):
            d["predicted_line"] = line[2:]
            for key, pat in [("max_MB", r"received max " + RE_NUM + r" MB"),
                             ("mean_MB", r"mean " + RE_NUM + r" MB"),
                             ("bound_MB", r"lower bound " + RE_NUM + r" MB"),
                             ("flops_ratio", r"max/mean flops " + RE_NUM),
                             ("peak_model_MB", r"peak memory " + RE_NUM + r" MB"),
                             ("memory_limit_MB", r"peak memory [^;]*? of " + RE_NUM + r" MB")]:
                mm = re.search(pat, line)
                if mm:
                    d[key] = float(mm.group(1))
            mm = re.search(r"lower bound [^(]*\(([^)]*)\)", line)
            if mm:
                d["bound_kind"] = mm.group(1)
        elif line.startswith("# why:"):
            d["why"] = line[len("# why:"):].strip()
        elif line.startswith("# context:"):
            d["context"] = line[len("# context:"):].strip()
    return d


def classify_failure(status, err, m, n, k, p):
    """What a failed run's message says, in a few words; the operands' own share decides
    whether a memory failure is unavoidable."""
    if status == "ok":
        return ""
    if status == "timeout":
        return "timeout"
    err = err or ""
    if "rank count must be in" in err:
        return "P outside the range prism accepts"
    mm = re.search(r"fits (\d+) bytes per rank", err)
    if mm:
        limit_mb = int(mm.group(1)) / 1e6
        need = (m * n + m * k + k * n) * BYTES / p / 1e6
        if need > limit_mb:
            return f"memory: the operands alone need {need:.0f} MB per rank, the limit is {limit_mb:.0f} MB"
        return f"memory: no plan fits {limit_mb:.0f} MB per rank (the operands alone need {need:.0f} MB)"
    return "other"


def grid_dims(grid):
    """(pm, pn, pk) for a grid of plain factors ("m2 k3 n2 ..."); None for an unequal tree."""
    if grid is None or "(" in grid:
        return None
    dims = {"m": 1, "n": 1, "k": 1}
    for tok in grid.split():
        mm = re.fullmatch(r"([mnk])(\d+)", tok)
        if not mm:
            return None
        dims[mm.group(1)] *= int(mm.group(2))
    return dims["m"], dims["n"], dims["k"]


# ----------------------------------------------------------------------------- the header


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def source_dir_of(binary_path):
    d = os.path.dirname(os.path.abspath(binary_path))
    # the build folder's CMakeCache names the source folder
    probe = d
    for _ in range(4):
        cache = os.path.join(probe, "CMakeCache.txt")
        if os.path.exists(cache):
            with open(cache, errors="replace") as f:
                for line in f:
                    if line.startswith("CMAKE_HOME_DIRECTORY:"):
                        return line.split("=", 1)[1].strip()
        probe = os.path.dirname(probe)
    top = sh("git", "-C", d, "rev-parse", "--show-toplevel")
    return top or None


def header(binary, argv, extra):
    lscpu = {}
    for line in sh("lscpu").splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            lscpu[key.strip()] = value.strip()
    mem_kb = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_kb = int(line.split()[1])
    except OSError:
        pass
    src = source_dir_of(binary.path)
    os_name = ""
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    try:
        import numpy
        np_v = numpy.__version__
    except ImportError:
        np_v = None
    try:
        import matplotlib
        mpl_v = matplotlib.__version__
    except ImportError:
        mpl_v = None
    dirty = sh("git", "-C", src, "status", "--porcelain", "--untracked-files=no") if src else ""
    h = {
        "host": platform.node(),
        "cpu_model": lscpu.get("Model name", ""),
        "cpus": int(lscpu.get("CPU(s)", "0") or 0),
        "cores_per_socket": lscpu.get("Core(s) per socket", ""),
        "sockets": lscpu.get("Socket(s)", ""),
        "threads_per_core": lscpu.get("Thread(s) per core", ""),
        "hypervisor": lscpu.get("Hypervisor vendor", ""),
        "memory_GiB": round(mem_kb / 2**20, 1) if mem_kb else None,
        "os": os_name,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "numpy": np_v,
        "matplotlib": mpl_v,
        "prism_binary": binary.path,
        "prism_source": src,
        "prism_commit": sh("git", "-C", src, "rev-parse", "HEAD") if src else "",
        "prism_source_modified_files": len(dirty.splitlines()) if dirty else 0,
        "prism_source_diff_sha256": hashlib.sha256(sh("git", "-C", src, "diff", "HEAD").encode()).hexdigest()[:16] if dirty else "",
        "script_commit": sh("git", "-C", REPO, "rev-parse", "HEAD"),
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(("PRISM_", "OPENBLAS_", "OMP_", "BLIS_", "GOMP_", "MKL_"))},
        "command": " ".join([os.path.relpath(sys.argv[0], REPO)] + argv),
        "started_utc": now_utc(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }
    h.update(extra)
    return h


def finish_header(h, binary):
    h["finished_utc"] = now_utc()
    h["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    h["prism_binaries"] = list(binary.seen.values())


def header_line(h):
    env = ", ".join(f"{k}={v}" for k, v in h["environment"].items()) or "no PRISM_/OPENBLAS_/OMP_/BLIS_ variables set"
    dirty = (f" plus uncommitted changes in {h['prism_source_modified_files']} tracked files (diff sha256 {h['prism_source_diff_sha256']})"
             if h["prism_source_modified_files"] else "")
    bins = "; ".join(f"{b['fingerprint'][:12]} (built {b['built_utc']}{', run from a private copy' if b.get('snapshot') else ''})"
                     for b in h.get("prism_binaries", []))
    return (f"Machine: {h['cpu_model']}, {h['cpus']} CPUs ({h['sockets']} socket × {h['cores_per_socket']} cores, "
            f"{h['threads_per_core']} thread/core{', ' + h['hypervisor'] + ' guest' if h['hypervisor'] else ''}), "
            f"{h['memory_GiB']} GiB, {h['os']}, Linux {h['kernel']}; shared with other work "
            f"(load average {h['load_average_start'][0]} at the start, {h.get('load_average_end', ['?'])[0]} at the end). "
            f"Run: {h['started_utc']} – {h.get('finished_utc', '?')}. "
            f"prism: {h['prism_binary']} from {h['prism_source']} at commit {h['prism_commit'][:12]}{dirty}; build fingerprint (SHA-256 of the executable and its libprism*.so) {bins}. "
            f"Environment: {env}; Python {h['python']}, NumPy {h['numpy']}, matplotlib {h['matplotlib']}. "
            f"Command: `{h['command']}`.")


# ----------------------------------------------------------------------------- the table


def fmt(x, nd=1):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.1f}" if nd >= 1 else f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.{max(nd, 1)}f}" if abs(x) < 10 else f"{x:.{nd}f}"
    return f"{x:.3g}"


def mbf(x):
    """MB as the table shows it: two decimals (one from 1000 MB)."""
    if x is None:
        return "–"
    if x == 0:
        return "0"
    return f"{x:.1f}" if abs(x) >= 1000 else f"{x:.2f}"


def yes_no(b):
    return "–" if b is None else ("yes" if b else "**no**")


def volume_row(binary, name, m, n, k, p, args, log):
    w, g = best_exact(m, n, k, p)
    wi, gi, qi = best_idle(m, n, k, p)
    row = {
        "shape": name, "m": m, "n": n, "k": k, "P": p,
        "best_exact_grid": grid_str(g), "best_exact_MB": round(mb(w), 4),
        "best_exact_int_MB": round(mb(grid_busiest_int(m, n, k, *g)), 4) if p <= 20000 else None,
        "best_idle_grid": grid_str(gi), "best_idle_ranks": qi, "best_idle_MB": round(mb(wi), 4),
        "bound_cubic_MB": round(mb(bound_cubic(m, n, k, p)), 4),
        "bound_tight_MB": round(mb(bound_tight(m, n, k, p)), 4),
    }
    log(f"{name} P={p}: ", end="")
    res = run_plan(binary, m, n, k, p, args.timeout, args.use_summary, args.retry_wait, log)
    parsed = parse(res["stdout"])
    row.update({
        "status": res["status"], "rc": res["rc"], "attempts": res["attempts"],
        "plan_s": res["wall_s"], "plan_cpu_s": res["cpu_s"],
        "plan_peak_MB": round(res["peak_kb"] * 1024 / 1e6, 1) if res["peak_kb"] else None,
        "load_before": res["load_before"], "build_fingerprint": res["build_fingerprint"],
        "stderr_tail": res["stderr_tail"] if res["status"] != "ok" else "",
        "failure_kind": classify_failure(res["status"], res["stderr_tail"], m, n, k, p),
    })
    for key in ("ranks_used", "grid", "max_MB", "mean_MB", "bound_MB", "bound_kind", "flops_ratio",
                "peak_model_MB", "memory_limit_MB", "why", "context", "predicted_line"):
        row[key] = parsed.get(key)
    dims = grid_dims(row["grid"])
    row["grid_dims"] = grid_str(dims) if dims else None
    if row["status"] == "ok" and row["max_MB"] is None:
        row["status"] = "no rank-level report in the output"
    if row["max_MB"] is not None:
        row["ratio_bound"] = row["max_MB"] / row["bound_MB"] if row["bound_MB"] else None
        row["le_best_exact"] = row["max_MB"] <= row["best_exact_MB"] + TOL_MB
        row["le_best_exact_int"] = (row["max_MB"] <= row["best_exact_int_MB"] + TOL_MB
                                    if row.get("best_exact_int_MB") is not None else None)
        row["le_best_idle"] = row["max_MB"] <= row["best_idle_MB"] + TOL_MB
        row["le_1_1_bound"] = row["max_MB"] <= 1.1 * row["bound_MB"] + TOL_MB if row["bound_MB"] is not None else None
        row["flops_within_5pct"] = row["flops_ratio"] <= 1.05 if row["flops_ratio"] is not None else None
        row["bound_matches_cubic"] = (abs(row["bound_MB"] - row["bound_cubic_MB"]) <= max(TOL_MB, 1e-6 * row["bound_cubic_MB"])
                                      if row["bound_MB"] is not None else None)
    else:
        for key in ("ratio_bound", "le_best_exact", "le_best_exact_int", "le_best_idle", "le_1_1_bound", "flops_within_5pct",
                    "bound_matches_cubic"):
            row[key] = None
    log(f"{row['status']}, {row['plan_s']} s, {row['plan_peak_MB']} MB; P'={row['ranks_used']} max {row['max_MB']} MB"
        f" (best exact {row['best_exact_MB']:.1f}, <= {IDLE} idle {row['best_idle_MB']:.1f}, bound {row['bound_MB']})")
    return row


CSV_COLUMNS = ["shape", "m", "n", "k", "P", "status", "rc", "ranks_used", "grid", "grid_dims", "max_MB", "mean_MB",
               "best_exact_grid", "best_exact_MB", "best_idle_grid", "best_idle_ranks", "best_idle_MB",
               "bound_MB", "bound_kind", "bound_cubic_MB", "bound_tight_MB", "bound_matches_cubic", "ratio_bound",
               "le_best_exact", "le_best_idle", "le_1_1_bound", "flops_ratio", "flops_within_5pct",
               "plan_s", "plan_cpu_s", "plan_peak_MB", "peak_model_MB", "memory_limit_MB", "why", "load_before",
               "attempts", "build_fingerprint", "failure_kind", "stderr_tail"]


def write_csv_header(path, h, columns):
    with open(path, "w", newline="") as f:
        f.write("# " + header_line(h) + "\n")
        f.write("# header: " + json.dumps(h, ensure_ascii=False) + "\n")
        csv.writer(f).writerow(columns)


def append_csv(path, row, columns):
    with open(path, "a", newline="") as f:
        csv.writer(f).writerow(["" if row.get(c) is None else row.get(c) for c in columns])


def rewrite_csv(path, h, rows, columns):
    write_csv_header(path, h, columns)
    for r in rows:
        append_csv(path, r, columns)


def volume_markdown(h, rows, timeout, docs=False):
    out = ["# The rank level's volumes at scale (model, no MPI)", "", header_line(h), "",
           f"`prism plan M N K --ranks P` per row (doubles; MB = 10⁶ bytes; one process at a time, "
           f"{timeout:g} s limit each). prism max/mean: the predicted elements a rank receives, most and "
           f"on average over working ranks. Best exact grid: the least W = mk/(pm·pk)(1−1/pn) + kn/(pk·pn)(1−1/pm) "
           f"+ mn/(pm·pn)(1−1/pk) over pm·pn·pk = P. Best with ≤ {IDLE} idle: the same over every P′ in [P−{IDLE}, P]. "
           f"Bound: prism's printed lower bound (COSMA Thm 2, memory-independent, minus an even share of the "
           f"operands); tight bound: the same with each projection capped at its operand's size. Plan s: wall "
           f"seconds (/usr/bin/time %e); plan peak MB: maximum resident set (%M).", "",
           f"A ratio in bold fails its test: prism / best exact > 1, prism / best ≤ {IDLE} idle > 1 (both with "
           f"{TOL_MB} MB allowed for prism's three printed decimals), prism / bound > 1.1, max/mean flops > 1.05.", "",
           f"| shape | P | P′ used | grid | prism max MB | mean MB | best exact grid | MB | best ≤ {IDLE} idle (P′) | MB "
           "| bound MB | tight bound MB | prism / best exact | prism / best ≤ 64 idle | prism / bound | max/mean flops | plan s | plan peak MB |",
           "|---|---:|---:|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    if docs:
        out = [header_line(h), ""] + out[6:]

    def ratio(x, y, fails):
        if x is None or not y:
            return "–"
        t = f"{x / y:.4f}"
        return f"**{t}**" if fails else t

    for r in rows:
        if r["max_MB"] is None:
            err = r.get("stderr_tail") or ""
            err = err if len(err) <= 200 else err[:197] + "..."
            what = r["status"] + (f" ({r['failure_kind']}: “{err}”)" if err else "")
            grid = f"**{what}**"
        else:
            grid = f"`{r['grid']}`" + (f" ({r['grid_dims']})" if r["grid_dims"] else "")
        idle = r['best_idle_grid'] + ("" if r['best_idle_ranks'] == r['P'] else f" ({r['best_idle_ranks']})")
        flops = "–" if r["flops_ratio"] is None else (f"{r['flops_ratio']:.4f}" if r["flops_within_5pct"] else f"**{r['flops_ratio']:.4f}**")
        out.append(
            f"| {r['shape']} | {r['P']} | {fmt(r['ranks_used'])} | {grid} | {mbf(r['max_MB'])} | {mbf(r['mean_MB'])} "
            f"| {r['best_exact_grid']} | {mbf(r['best_exact_MB'])} | {idle} | {mbf(r['best_idle_MB'])} "
            f"| {mbf(r['bound_MB'])} | {mbf(r['bound_tight_MB'])} "
            f"| {ratio(r['max_MB'], r['best_exact_MB'], r['le_best_exact'] is False)} "
            f"| {ratio(r['max_MB'], r['best_idle_MB'], r['le_best_idle'] is False)} "
            f"| {ratio(r['max_MB'], r['bound_MB'], r['le_1_1_bound'] is False)} | {flops} "
            f"| {fmt(r['plan_s'], 2)}{' (timeout)' if r['status'] == 'timeout' else ''} | {fmt(r['plan_peak_MB'])} |")
    out.append("")
    done = [r for r in rows if r["max_MB"] is not None]
    failed = [r for r in rows if r["max_MB"] is None]
    out.append(f"Rows with a result: {len(done)} of {len(rows)}"
               + (f"; without: {', '.join(r['shape'] + ' P=' + str(r['P']) + ' (' + r['status'] + ')' for r in failed)}." if failed else "."))
    for key, ref, what in [("le_best_exact", "best_exact_MB", "above the best exact grid"),
                           ("le_best_exact_int", "best_exact_int_MB",
                            "above the best exact grid counted with integer blocks (its busiest rank, as prism's layout counts it)"),
                           ("le_best_idle", "best_idle_MB", f"above the best grid with ≤ {IDLE} idle"),
                           ("le_1_1_bound", "bound_MB", "above 1.1 × the bound")]:
        bad = [r for r in done if r.get(key) is False]
        out.append(f"- {what} ({len(bad)} of {len(done)}): " + (", ".join(
            f"{r['shape']} P={r['P']} (+{100 * (r['max_MB'] / r[ref] - 1):.3f} %)" for r in bad) if bad else "none") + ".")
        if key in ("le_best_exact", "le_best_idle"):
            even = [r for r in bad if r["mean_MB"] is not None and r["mean_MB"] <= r[ref] + TOL_MB]
            if even:
                out.append(f"  Of these, prism's printed mean is at or below the yardstick in: " + ", ".join(f"{r['shape']} P={r['P']}" for r in even)
                           + " (the yardstick's formula assumes equal blocks; where a dimension does not divide evenly,"
                             " the largest block's rank receives more than the mean).")
    idle_bad = [r for r in done if r["le_best_idle"] is False and r["best_idle_ranks"] < r["P"]]
    if idle_bad:
        out.append(f"- the ≤ {IDLE} idle yardstick's own price in those rows, as the flops each of its working ranks does "
                   f"beyond an even share of P (P/P′ − 1): " + ", ".join(
                       f"{r['shape']} P={r['P']}: {r['P'] - r['best_idle_ranks']} idle, +{100 * (r['P'] / r['best_idle_ranks'] - 1):.1f} %"
                       for r in idle_bad).replace(" %, ", " %; ") + ".")
    badf = [r for r in done if r["flops_within_5pct"] is False]
    out.append(f"- max/mean flops above 1.05: " + (", ".join(f"{r['shape']} P={r['P']} ({r['flops_ratio']:.4f})" for r in badf) if badf else "none") + ".")
    mism = [r for r in done if r["bound_matches_cubic"] is False]
    out.append(f"- prism's printed bound against 3(mnk/P)^(2/3) − (mn+mk+kn)/P recomputed here: "
               + ("equal in every row with a result." if not mism else
                  "differs in " + ", ".join(f"{r['shape']} P={r['P']} ({r['bound_MB']} vs {r['bound_cubic_MB']})" for r in mism) + "."))
    tight = [r for r in rows if r["bound_tight_MB"] > r["bound_cubic_MB"] + 1e-3]
    out.append("- the tight bound is above the cubic one in: " +
               (", ".join(f"{r['shape']} P={r['P']} ({r['bound_tight_MB']:.1f} vs {r['bound_cubic_MB']:.1f})" for r in tight) if tight else "no row") + ".")
    whys = sorted({r["why"] for r in done if r.get("why")})
    if whys:
        out.append("")
        out.append("prism's stated reasons (`# why:`): " + " | ".join(f"“{w}”" for w in whys))
    return "\n".join(out) + "\n"


def volume_png(rows, path, title):
    """Two panels of the same rows: every ratio on a log scale, and the band around the bound."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG", file=sys.stderr)
        return False
    fig, (ax_all, ax_zoom) = plt.subplots(2, 1, figsize=(max(9, 0.42 * len(rows) + 2), 9.5), sharex=True,
                                          gridspec_kw={"height_ratios": [1, 1.4]})
    xs = list(range(len(rows)))
    labels = [f"{r['shape']}  P={r['P']}" for r in rows]

    def series(key):
        return [r[key] / r["bound_cubic_MB"] if r.get(key) is not None and r["bound_cubic_MB"] > 0 else None for r in rows]

    styles = [("best_exact_MB", dict(marker="s", color="tab:gray", ms=6), "best exact grid / bound"),
              ("best_idle_MB", dict(marker="^", color="tab:orange", ms=7), f"best with ≤ {IDLE} idle / bound"),
              ("max_MB", dict(marker="o", color="tab:blue", ms=5), "prism max / bound")]
    lo, hi = 0.99, 1.13
    for ax in (ax_all, ax_zoom):
        for key, style, lab in styles:
            ys = series(key)
            pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
            if ax is ax_zoom:
                above = [(x, y) for x, y in pts if y > hi]
                pts = [(x, y) for x, y in pts if y <= hi]
                for x, y in above:
                    ax.annotate(f"{y:.2f}", (x, hi), xytext=(0, -12), textcoords="offset points", ha="center",
                                fontsize=6, color=style["color"])
                if above:
                    ax.plot([x for x, _ in above], [hi] * len(above), ls="none", marker="^", color=style["color"],
                            ms=5, markerfacecolor="none")
            ax.plot([x for x, _ in pts], [y for _, y in pts], ls="none", label=lab, **style)
        fails = [x for x, r in zip(xs, rows) if r["max_MB"] is None]
        if fails:
            ax.plot(fails, [1.0] * len(fails), marker="x", color="red", ls="none", ms=9, label="prism: no result (timeout/failure)")
        ax.axhline(1.1, color="tab:red", lw=0.8, ls="--", label="1.1 × bound")
        ax.axhline(1.0, color="black", lw=0.6)
        ax.grid(True, which="both", axis="y", alpha=0.3)
    ax_all.set_yscale("log")
    ax_all.set_ylabel("ratio to the bound (log)")
    ax_all.legend(fontsize=8, loc="upper left")
    ax_zoom.set_ylim(lo, hi)
    ax_zoom.set_ylabel("ratio to the bound (0.99–1.13; ^ off the top)")
    ax_zoom.set_xticks(xs)
    ax_zoom.set_xticklabels(labels, rotation=90, fontsize=7)
    ax_all.set_title(title + "\nbound: COSMA Thm 2 memory-independent minus an even share of the operands", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------- the sweep


def is_prime(p):
    if p < 2:
        return False
    if p % 2 == 0:
        return p == 2
    d = 3
    while d * d <= p:
        if p % d == 0:
            return False
        d += 2
    return True


def prime_at_most(x):
    while x >= 2 and not is_prime(x):
        x -= 1
    return x


def sweep_ranks(points, dense=64, pmax=PMAX):
    """every P <= dense, then `points` log-spaced values in (dense, pmax] and the largest prime
    at or below each, plus the table's P and a few powers of two."""
    ps = set(range(1, dense + 1))
    for i in range(points):
        x = int(round(math.exp(math.log(dense) + (math.log(pmax) - math.log(dense)) * (i + 1) / points)))
        ps.add(x)
        ps.add(prime_at_most(x))
    ps.update(TABLE_RANKS)
    ps.update([1024, 16384, 65536, 65537, pmax])
    return sorted(p for p in ps if 1 <= p <= pmax)


SWEEP_COLUMNS = ["shape", "m", "n", "k", "P", "prime", "status", "rc", "plan_s", "plan_cpu_s", "plan_peak_MB",
                 "ranks_used", "max_MB", "bound_MB", "flops_ratio", "grid", "load_before", "attempts", "build_fingerprint", "failure_kind", "stderr_tail"]


def sweep_row(binary, name, m, n, k, p, args, log):
    res = run_plan(binary, m, n, k, p, args.timeout, args.use_summary, args.retry_wait, log)
    parsed = parse(res["stdout"])
    row = {"shape": name, "m": m, "n": n, "k": k, "P": p, "prime": is_prime(p), "status": res["status"], "rc": res["rc"],
           "plan_s": res["wall_s"], "plan_cpu_s": res["cpu_s"],
           "plan_peak_MB": round(res["peak_kb"] * 1024 / 1e6, 1) if res["peak_kb"] else None,
           "ranks_used": parsed.get("ranks_used"), "max_MB": parsed.get("max_MB"), "bound_MB": parsed.get("bound_MB"),
           "flops_ratio": parsed.get("flops_ratio"), "grid": parsed.get("grid"), "load_before": res["load_before"],
           "attempts": res["attempts"], "build_fingerprint": res["build_fingerprint"],
           "stderr_tail": res["stderr_tail"] if res["status"] != "ok" else "",
           "failure_kind": classify_failure(res["status"], res["stderr_tail"], m, n, k, p)}
    if row["status"] == "ok" and p > 1 and row["max_MB"] is None:
        row["status"] = "no rank-level report in the output"
    log(f"{name} P={p}: {row['status']} {row['plan_s']} s {row['plan_peak_MB']} MB")
    return row


def sweep_png(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG", file=sys.stderr)
        return False
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(13, 6.2))
    names = []
    for r in rows:
        if r["shape"] not in names:
            names.append(r["shape"])
    colors = dict(zip(names, ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan"]))
    target_names = {t[0] for t in TARGETS}
    for name in names:
        rs = [r for r in rows if r["shape"] == name]
        ok = [r for r in rs if r["status"] == "ok" and r["plan_s"] is not None]
        to = [r for r in rs if r["status"] == "timeout"]
        bad = [r for r in rs if r["status"] not in ("ok", "timeout", "skipped")]
        c = colors[name]
        big = name in target_names and len(rs) <= 3
        style = dict(marker="*" if big else ".", ms=12 if big else 4, ls="none" if big else "-", lw=0.8)
        for ax, key in ((ax_t, "plan_s"), (ax_m, "plan_peak_MB")):
            ax.plot([r["P"] for r in ok], [max(r[key], 1e-3) if r[key] is not None else None for r in ok],
                    color=c, label=name + (" (target shape)" if big else ""), **style)
            if to:
                ax.plot([r["P"] for r in to], [r[key] if r[key] else 1e-3 for r in to], ls="none", marker="^", color=c, ms=7,
                        markerfacecolor="none")
            if bad:
                ax.plot([r["P"] for r in bad], [r[key] if r[key] else 1e-3 for r in bad], ls="none", marker="x", color=c, ms=7)
    # the targets
    for name, m, n, k, p, secs, peak in TARGETS:
        ax_t.plot([p], [secs], marker="D", ms=10, color="red", markerfacecolor="none", ls="none")
        ax_t.annotate(f"target {name}: {secs:g} s", (p, secs), textcoords="offset points", xytext=(6, -12), fontsize=7, color="red")
        if peak:
            ax_m.plot([p], [peak], marker="D", ms=10, color="red", markerfacecolor="none", ls="none")
            ax_m.annotate(f"target {name}: {peak:g} MB", (p, peak), textcoords="offset points", xytext=(-120, 6), fontsize=7, color="red")
    ax_t.plot([], [], marker="^", ls="none", color="gray", markerfacecolor="none", label="timeout (at the limit)")
    ax_t.plot([], [], marker="x", ls="none", color="gray", label="failed (non-zero exit)")
    ax_t.plot([], [], marker="D", ls="none", color="red", markerfacecolor="none", label="target")
    for ax, lab in ((ax_t, "plan time, wall s (/usr/bin/time %e)"), (ax_m, "peak resident MB (/usr/bin/time %M)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ranks P")
        ax.set_ylabel(lab)
        ax.grid(True, which="both", alpha=0.3)
    # a P log P guide through the median plan at P = 16384, where one exists
    ref = [r for r in rows if r["P"] == 16384 and r["status"] == "ok" and r.get("plan_s")]
    ref = sorted(ref, key=lambda r: r["plan_s"])
    if ref:
        r0 = ref[len(ref) // 2]
        gx = [1024, 4096, 16384, 65536, 100000]
        for ax, key in ((ax_t, "plan_s"), (ax_m, "plan_peak_MB")):
            c0 = r0[key] / (16384 * math.log(16384))
            ax.plot(gx, [c0 * p * math.log(p) for p in gx], ls=":", color="black", lw=1.0,
                    label=f"∝ P log P through {r0['shape']} at P = 16384 (guide)")
        ax_m.set_ylim(bottom=10)
    from matplotlib.ticker import LogLocator, FuncFormatter
    for ax in (ax_t, ax_m):
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    handles, labels = ax_t.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def sweep_markdown(h, rows, timeout, docs=False):
    out = ["# The rank level's plan time against P", "", header_line(h), "",
           f"`prism plan M N K --ranks P` once per (shape, P), one process at a time, {timeout:g} s limit each. "
           f"Plan s: wall seconds; peak MB: maximum resident set; both from /usr/bin/time. A timeout's peak is the "
           f"resident high-water mark read from /proc when it was stopped.", ""]
    if docs:
        out = [header_line(h), ""]
    at = [p for p in (1024, 16384, 65536, 100000) if any(r["P"] == p for r in rows)]
    out.append("| shape | P values | ok | timeouts | failures | skipped | slowest ok run | largest peak |"
               + "".join(f" P = {p}: s, MB |" for p in at))
    out.append("|---|---:|---:|---:|---:|---:|---|---|" + "---|" * len(at))
    names = []
    for r in rows:
        if r["shape"] not in names:
            names.append(r["shape"])
    for name in names:
        rs = [r for r in rows if r["shape"] == name]
        ok = [r for r in rs if r["status"] == "ok"]
        to = [r for r in rs if r["status"] == "timeout"]
        bad = [r for r in rs if r["status"] not in ("ok", "timeout", "skipped")]
        slow = max(ok, key=lambda r: r["plan_s"] or 0, default=None)
        peak = max([r for r in rs if r.get("plan_peak_MB")], key=lambda r: r["plan_peak_MB"], default=None)
        skipped = [r for r in rs if r["status"] == "skipped"]
        slow_s = "%.2f s at P=%d" % (slow["plan_s"], slow["P"]) if slow else "–"
        peak_s = "%.0f MB at P=%d" % (peak["plan_peak_MB"], peak["P"]) if peak else "–"
        cells = []
        for p in at:
            r = next((r for r in rs if r["P"] == p), None)
            if r is None:
                cells.append("–")
            elif r["status"] == "ok":
                cells.append(f"{r['plan_s']:.2f} s, {r['plan_peak_MB']:.0f} MB")
            else:
                cells.append(f"**{r['status']}**")
        out.append(f"| {name} | {len(rs)} | {len(ok)} | {len(to)} | {len(bad)} | {len(skipped)} | {slow_s} | {peak_s} |"
                   + "".join(f" {c} |" for c in cells))
    out.append("")
    out.append("Targets:")
    for name, m, n, k, p, secs, peak in TARGETS:
        r = next((r for r in rows if r["m"] == m and r["n"] == n and r["k"] == k and r["P"] == p), None)
        if r is None:
            out.append(f"- {name} at P = {p}: not run.")
            continue
        met = r["status"] == "ok" and r["plan_s"] is not None and r["plan_s"] < secs and (peak is None or (r["plan_peak_MB"] or 1e18) < peak)
        out.append(f"- {name} at P = {p} (under {secs:g} s{f' and {peak:g} MB' if peak else ''}): {r['status']}, "
                   f"{r['plan_s']} s wall, {r['plan_cpu_s']} s CPU, {r['plan_peak_MB']} MB peak: {'met' if met else '**not met**'}.")
    bad = [r for r in rows if r["status"] not in ("ok", "timeout", "skipped")]
    to = [r for r in rows if r["status"] == "timeout"]
    out.append("")
    out.append(f"Failures ({len(bad)}): " + ("none." if not bad else ""))
    groups = {}
    for r in bad:
        kind = r["failure_kind"] or ""
        if kind.startswith("memory: the operands alone"):
            kind = "memory: the operands alone exceed the memory per rank"
        elif kind.startswith("memory: no plan fits"):
            kind = "memory: the operands fit the memory per rank, but prism found no plan that does"
        groups.setdefault((r["shape"], r["status"], kind), []).append(r)
    for (name, st, kind), rs in groups.items():
        err = rs[-1]["stderr_tail"] or ""
        err = err if len(err) <= 300 else err[:297] + "..."
        out.append(f"- {name}, {st}, {kind}: P = {compress([r['P'] for r in rs])}"
                   + (f" (failing after {span([r['plan_s'] for r in rs])} s)" if rs[0].get("plan_s") else "")
                   + (f"; at P = {rs[-1]['P']}: “{err}”" if err else ""))
        if "operands fit" in kind:
            for r in rs:
                out.append(f"  - P = {r['P']}: {r['failure_kind']}")
    est = []
    for name in names:
        pts = sorted((r["P"], r["plan_s"]) for r in rows if r["shape"] == name and r.get("plan_s") is not None)
        if len(pts) >= 10:
            total = pts[0][1] + sum((p1 - p0) * (t0 + t1) / 2 for (p0, t0), (p1, t1) in zip(pts, pts[1:]))
            est.append(f"{name} {total / 3600:.0f} h (P ≤ {pts[-1][0]})")
    if est:
        out.append("")
        out.append("Time to plan every P one after the other (`--full`), estimated from these samples (trapezoids "
                   "between neighbouring P, a timeout counted at the limit): " + "; ".join(est) + ".")
    slow = [r for r in rows if r["status"] == "ok" and (r.get("plan_s") or 0) > 10]
    out.append("")
    out.append(f"Plans over 10 s ({len(slow)}): " + ("none." if not slow else ""))
    sl = {}
    for r in slow:
        sl.setdefault(r["shape"], []).append(r)
    for name, rs in sl.items():
        out.append(f"- {name}: " + ", ".join(f"P = {r['P']} ({r['plan_s']:.0f} s)" for r in rs))
    out.append("")
    out.append(f"Timeouts ({len(to)}): " + ("none." if not to else ""))
    tg = {}
    for r in to:
        tg.setdefault(r["shape"], []).append(r["P"])
    for name, ps in tg.items():
        out.append(f"- {name}: P = {compress(ps)}")
    sk = [r for r in rows if r["status"] == "skipped"]
    out.append("")
    out.append(f"Skipped ({len(sk)}): " + ("none." if not sk else
               f"after {rows and sk[0]['failure_kind'].split(':')[1].split(' timeouts')[0].strip()} timeouts in a row on a shape, "
               "its larger P were not run (`--skip-after`; they have no result, neither a pass nor a failure)."))
    sg = {}
    for r in sk:
        sg.setdefault(r["shape"], []).append(r["P"])
    for name, ps in sg.items():
        out.append(f"- {name}: P = {compress(ps)}")
    return "\n".join(out) + "\n"


def span(xs):
    lo, hi = min(xs), max(xs)
    return f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f}"


def compress(ps):
    ps = sorted(ps)
    parts, i = [], 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        parts.append(str(ps[i]) if i == j else f"{ps[i]}–{ps[j]}")
        i = j + 1
    return ", ".join(parts)


def volume_title(h):
    return (f"prism plan --ranks P: max MB received per rank over the bound; {h['cpu_model']}, "
            f"{h['started_utc'][:10]}, prism {h['prism_commit'][:10]}")


def sweep_title(h):
    return (f"prism plan --ranks P: plan time and peak memory; {h['cpu_model']}, {h['cpus']} CPUs (shared), "
            f"{h['started_utc'][:10]}, prism {h['prism_commit'][:10]}")


def render(json_path):
    """The .md and .png of a result again, from its .json (the same code a run uses)."""
    d = json.load(open(json_path))
    h, rows = d["header"], d["rows"]
    base = json_path[:-len(".json")]
    if h.get("mode") == "volumes":
        with open(base + ".md", "w") as f:
            f.write(volume_markdown(h, rows, h.get("timeout_s", 0)))
        volume_png(rows, base + ".png", volume_title(h))
    else:
        with open(base + ".md", "w") as f:
            f.write(sweep_markdown(h, rows, h.get("timeout_s", 0)))
        sweep_png(rows, base + ".png", sweep_title(h))
    print(f"wrote {base}.{{md,png}}")
    return 0


# ----------------------------------------------------------------------------- the docs page

DOCS_BEGIN = "<!-- rank-volumes:begin"
DOCS_END = "<!-- rank-volumes:end -->"


def newest(pattern_prefix, exclude=()):
    d = os.path.join(REPO, "bench", "results")
    names = sorted(f for f in os.listdir(d) if f.startswith(pattern_prefix) and f.endswith(".json")
                   and not any(f.startswith(e) for e in exclude))
    return os.path.join(d, names[-1]) if names else None


def render_docs(page, vol_json, sweep_json):
    """Rewrite the block between the markers of `page` from two committed result files."""
    rel = lambda path: os.path.relpath(path, os.path.dirname(os.path.abspath(page)))
    parts = [DOCS_BEGIN + " (written by bench/rank_volumes.py --docs from the result files it names; do not edit by hand) -->", ""]
    if vol_json:
        d = json.load(open(vol_json))
        base = vol_json[:-len(".json")]
        parts += ["### Volumes per rank", "",
                  f"From [{os.path.basename(base)}.md]({rel(base + '.md')}) (also [.csv]({rel(base + '.csv')}), "
                  f"[.json]({rel(vol_json)})).", "",
                  volume_markdown(d["header"], d["rows"], d["header"].get("timeout_s", 0), docs=True).rstrip(), "",
                  f"![prism's maximum MB per rank, the best exact grid and the best grid with ≤ {IDLE} idle ranks, "
                  f"each over the bound]({rel(base + '.png')})", ""]
    if sweep_json:
        d = json.load(open(sweep_json))
        base = sweep_json[:-len(".json")]
        parts += ["### Plan time and memory against P", "",
                  f"From [{os.path.basename(base)}.md]({rel(base + '.md')}) (also [.csv]({rel(base + '.csv')}), "
                  f"[.json]({rel(sweep_json)})).", "",
                  sweep_markdown(d["header"], d["rows"], d["header"].get("timeout_s", 0), docs=True).rstrip(), "",
                  f"![plan time and peak memory of prism plan --ranks P against P, log-log, with the targets]({rel(base + '.png')})", ""]
    parts.append(DOCS_END)
    block = "\n".join(parts)
    text = open(page).read()
    i, j = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if i < 0 or j < 0:
        raise SystemExit(f"{page}: no {DOCS_BEGIN} ... {DOCS_END} block")
    text = text[:i] + block + text[j + len(DOCS_END):]
    with open(page, "w") as f:
        f.write(text)
    print(f"{page}: block rewritten from {vol_json} and {sweep_json}")


# ----------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prism", default=os.path.join(REPO, "build", "apps", "prism"))
    ap.add_argument("--quick", action="store_true", help="two shapes x two P (sweep: a sparse sample); writes to bench/runs/")
    ap.add_argument("--sweep", action="store_true", help="plan time against P")
    ap.add_argument("--full", metavar="SHAPE", help="every P from 1 to --pmax for one shape")
    ap.add_argument("--estimate-only", action="store_true", help="with --full: print the estimate and exit")
    ap.add_argument("--check", action="store_true", help="check the yardsticks against the reference values and exit")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per prism run (default 120)")
    ap.add_argument("--retry-wait", type=float, default=60.0, help="seconds to wait before retrying an odd failure")
    ap.add_argument("--shapes", help="comma-separated shape names (see --list-shapes)")
    ap.add_argument("--ranks", help="comma-separated P values instead of the default list")
    ap.add_argument("--points", type=int, default=100, help="sweep: log-spaced points above P = 64 (each with the prime below it)")
    ap.add_argument("--pmax", type=int, default=PMAX)
    ap.add_argument("--pmin", type=int, default=1, help="--full: the first P (split a full run over several sessions)")
    ap.add_argument("--skip-after", type=int, default=3, metavar="N",
                    help="sweep/full: after N timeouts in a row on a shape, record its larger P as skipped "
                         "instead of running them (0: run everything; default 3)"),
    ap.add_argument("--no-targets", action="store_true", help="sweep: leave out the two planning-target runs")
    ap.add_argument("--out-dir", help="default bench/results (bench/runs/<mode>-<stamp>/ with --quick)")
    ap.add_argument("--stamp", help="the file name's UTC stamp (default now, YYYY-MM-DDTHHMMZ)")
    ap.add_argument("--list-shapes", action="store_true")
    ap.add_argument("--no-summary", action="store_true", help="do not pass --summary even if prism has it")
    ap.add_argument("--docs", metavar="PAGE", help="rewrite PAGE's rank-volumes block from result files, then exit")
    ap.add_argument("--volumes-json", help="with --docs (default: the newest bench/results/rank-volumes-*.json)")
    ap.add_argument("--sweep-json", help="with --docs (default: the newest bench/results/rank-plan-time-*.json)")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run the prism binary in place instead of a private copy of it and its build-tree libraries")
    ap.add_argument("--render", metavar="JSON", help="rewrite the .md and .png beside a result .json, then exit")
    args = ap.parse_args()

    if args.render:
        return render(args.render)
    if args.docs:
        render_docs(args.docs, args.volumes_json or newest("rank-volumes-"),
                    args.sweep_json or newest("rank-plan-time-", exclude=("rank-plan-time-full-",)))
        return 0

    if args.list_shapes:
        for name, m, n, k in SHAPES:
            print(f"{name}\t{m} {n} {k}")
        return 0
    ok = self_check(verbose=args.check)
    if args.check:
        return 0 if ok else 1
    if not ok:
        print("yardstick self-check failed (run --check)", file=sys.stderr)
        return 1

    if not os.path.exists(args.prism):
        print(f"no prism binary at {args.prism} (--prism PATH)", file=sys.stderr)
        return 2
    binary = Binary(args.prism, snapshot=not args.no_snapshot)
    args.use_summary = (not args.no_summary) and "--summary" in binary.help_text()

    stamp = args.stamp or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H%MZ")
    mode = "full" if args.full else ("sweep" if args.sweep else "volumes")
    if args.out_dir:
        out_dir = args.out_dir
    elif args.quick:
        out_dir = os.path.join(REPO, "bench", "runs", f"rank-{mode}-quick-{stamp}")
    else:
        out_dir = os.path.join(REPO, "bench", "results")
    os.makedirs(out_dir, exist_ok=True)

    shape_by_name = {s[0]: s for s in SHAPES}
    for alias, s in list(shape_by_name.items()):
        shape_by_name[alias.replace("³", "^3").replace("×", "x")] = s
    if args.full:
        if args.full not in shape_by_name:
            print(f"unknown shape {args.full!r}; --list-shapes", file=sys.stderr)
            return 2
        shapes = [shape_by_name[args.full]]
    elif args.shapes:
        try:
            shapes = [shape_by_name[s.strip()] for s in args.shapes.split(",")]
        except KeyError as e:
            print(f"unknown shape {e}; --list-shapes", file=sys.stderr)
            return 2
    elif args.quick:
        shapes = [shape_by_name[s] for s in QUICK_SHAPES]
    else:
        shapes = SHAPES

    logf = None

    def log(msg, end="\n"):
        print(msg, end=end, flush=True)
        if logf:
            logf.write(msg + end)
            logf.flush()

    if mode == "volumes":
        ranks = [int(x) for x in args.ranks.split(",")] if args.ranks else (QUICK_RANKS if args.quick else TABLE_RANKS)
        base = os.path.join(out_dir, f"rank-volumes-{stamp}")
        if not args.quick and any(os.path.exists(base + e) for e in (".md", ".csv", ".json", ".png")):
            print(f"{base}.* exists; refusing to overwrite (--stamp)", file=sys.stderr)
            return 2
        h = header(binary, sys.argv[1:], {"mode": mode, "timeout_s": args.timeout, "summary_flag": args.use_summary,
                                          "idle": IDLE, "bytes_per_element": BYTES, "tolerance_MB": TOL_MB})
        logf = open(base + ".log", "w")
        write_csv_header(base + ".csv", h, CSV_COLUMNS)
        rows = []
        for name, m, n, k in shapes:
            for p in ranks:
                row = volume_row(binary, name, m, n, k, p, args, log)
                rows.append(row)
                append_csv(base + ".csv", row, CSV_COLUMNS)
        finish_header(h, binary)
        contexts = sorted({r["context"] for r in rows if r.get("context")})
        h["prism_context"] = contexts
        rewrite_csv(base + ".csv", h, rows, CSV_COLUMNS)
        with open(base + ".json", "w") as f:
            json.dump({"header": h, "rows": rows}, f, indent=1, ensure_ascii=False)
        with open(base + ".md", "w") as f:
            f.write(volume_markdown(h, rows, args.timeout))
        volume_png(rows, base + ".png", volume_title(h))
        log(f"wrote {base}.{{md,csv,json,png,log}}")
        return 0

    # sweep / full
    if mode == "full":
        ranks = list(range(max(1, args.pmin), args.pmax + 1))
    elif args.ranks:
        ranks = [int(x) for x in args.ranks.split(",")]
    elif args.quick:
        ranks = sweep_ranks(points=8, dense=4, pmax=args.pmax)
    else:
        ranks = sweep_ranks(points=args.points, pmax=args.pmax)
    jobs = [(name, m, n, k, p) for name, m, n, k in shapes for p in ranks]
    if mode == "sweep" and not args.no_targets and not args.quick:
        jobs += [(name, m, n, k, p) for name, m, n, k, p, _, _ in TARGETS]

    if mode == "full":
        name, m, n, k = shapes[0]
        probe = [p for p in (1, 10, 100, 1000, 3001, 10000, 30011, 65536, 100000) if p <= args.pmax]
        if args.pmin > 1:
            probe = sorted({args.pmin, *[p for p in probe if p > args.pmin]})
        log(f"estimating: {len(probe)} probe runs of {name} ...")
        pts = []
        for p in probe:
            r = sweep_row(binary, name, m, n, k, p, args, log)
            pts.append((p, min(r["plan_s"] or args.timeout, args.timeout)))
        # piecewise-linear in log P between the probes, summed over every P
        total = 0.0
        for p in range(max(1, args.pmin), args.pmax + 1):
            for (p0, t0), (p1, t1) in zip(pts, pts[1:]):
                if p0 <= p <= p1:
                    f = (math.log(p) - math.log(p0)) / (math.log(p1) - math.log(p0)) if p1 > p0 else 0
                    total += t0 + f * (t1 - t0)
                    break
        log(f"estimate for every P in {max(1, args.pmin)}..{args.pmax}: {total / 3600:.1f} hours ({total:.0f} s) at the probe's times,"
            f" with runs capped at the {args.timeout:g} s limit")
        if args.estimate_only:
            return 0

    base = os.path.join(out_dir, f"rank-plan-time-{'full-' if mode == 'full' else ''}{stamp}")
    if not args.quick and any(os.path.exists(base + e) for e in (".md", ".csv", ".json", ".png")):
        print(f"{base}.* exists; refusing to overwrite (--stamp)", file=sys.stderr)
        return 2
    h = header(binary, sys.argv[1:], {"mode": mode, "timeout_s": args.timeout, "summary_flag": args.use_summary,
                                      "ranks_sampled": len(ranks), "runs_planned": len(jobs),
                                      "skip_after_timeouts": args.skip_after})
    logf = open(base + ".log", "w")
    write_csv_header(base + ".csv", h, SWEEP_COLUMNS)
    rows = []
    timeouts_in_a_row = {}
    t_start = time.monotonic()
    for i, (name, m, n, k, p) in enumerate(jobs):
        if i and i % 25 == 0:
            el = time.monotonic() - t_start
            log(f"[{i}/{len(jobs)} runs, {el / 60:.1f} min so far]")
        streak = timeouts_in_a_row.get((name, m, n, k), [])
        if args.skip_after and len(streak) >= args.skip_after:
            row = {"shape": name, "m": m, "n": n, "k": k, "P": p, "prime": is_prime(p), "status": "skipped",
                   "failure_kind": f"not run: {len(streak)} timeouts in a row before it (P = {compress(streak)})"}
            log(f"{name} P={p}: skipped ({row['failure_kind']})")
        else:
            row = sweep_row(binary, name, m, n, k, p, args, log)
            if row["status"] == "timeout":
                timeouts_in_a_row[(name, m, n, k)] = streak + [p]
            elif row["status"] == "ok":
                timeouts_in_a_row[(name, m, n, k)] = []
        rows.append(row)
        append_csv(base + ".csv", row, SWEEP_COLUMNS)
    finish_header(h, binary)
    rewrite_csv(base + ".csv", h, rows, SWEEP_COLUMNS)
    with open(base + ".json", "w") as f:
        json.dump({"header": h, "rows": rows}, f, indent=1, ensure_ascii=False)
    with open(base + ".md", "w") as f:
        f.write(sweep_markdown(h, rows, args.timeout))
    sweep_png(rows, base + ".png", sweep_title(h))
    log(f"wrote {base}.{{md,csv,json,png,log}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
