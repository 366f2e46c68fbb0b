#!/usr/bin/python3
"""scripts/soak_dropin.py — the drop-in soak: CALLS calls of libprism_blas in one process,
made from Python threads through ctypes while the library is LD_PRELOADed (as a host
program meets it): random shapes, all four types, ?gemm / ?syrk / ?herk, operands from a
few bytes to 64 MB; each block of 10^4 calls made a quarter on 1 caller thread, then on
2, 3 and 4 at once (so every block meets the same thread counts; four threads made once and
reused). --no-prism runs the same calls with the backend on both sides: the control. Every result is checked against the backend BLAS
(libblas.so.3, opened privately) within the componentwise bound
    |C_prism - C_backend| <= 2 * 4 (k + 2) eps (|alpha| |op(A)| |op(B)| + |beta| |C0|)
(|op(A)| |op(B)| from the backend on the absolute values). After every block the process's
RSS (VmRSS) is recorded, and beside it what malloc has lent (mallinfo2). The first block
starts with the largest shapes of every type and kind (largest_first), on one caller thread
and then on all four at once, so that bounded caches are full before the first measurement. Pass: no wrong result, and RSS after the last block within 5% of
RSS after the first. Writes a markdown table (machine, date, environment, per block: calls,
threads, seconds, RSS) to OUT.

Run by scripts/soak.sh, which preloads the library:
    LD_PRELOAD=build/libprism_blas.so /usr/bin/python3 scripts/soak_dropin.py --out FILE
"""
import argparse
import concurrent.futures
import ctypes
import datetime
import os
import platform
import random
import sys
import threading
import time

import numpy as np

RowMajor, ColMajor = 101, 102
NoTrans, Trans, ConjTrans = 111, 112, 113
Upper, Lower = 121, 122
TYPES = "sdcz"
DTYPE = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
EPS = {"s": np.finfo(np.float32).eps, "d": np.finfo(np.float64).eps, "c": np.finfo(np.float32).eps,
       "z": np.finfo(np.float64).eps}


def P(a):
    """An array's address as a C pointer (a bare Python int would pass as a 32-bit int)."""
    return ctypes.c_void_p(a.ctypes.data)


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class Blas:
    """The cblas_?gemm / ?syrk / ?herk of one library handle."""

    def __init__(self, handle):
        self.h = handle

    def gemm(self, t, order, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        f = getattr(self.h, "cblas_%sgemm" % t)
        if t in "sd":
            ct = ctypes.c_float if t == "s" else ctypes.c_double
            f(order, ta, tb, m, n, k, ct(alpha), P(A), lda, P(B), ldb, ct(beta), P(C), ldc)
        else:
            al = np.array([alpha], dtype=DTYPE[t])
            be = np.array([beta], dtype=DTYPE[t])
            f(order, ta, tb, m, n, k, P(al), P(A), lda, P(B), ldb, P(be),
              P(C), ldc)

    def rank_k(self, t, herm, order, uplo, tr, n, k, alpha, A, lda, beta, C, ldc):
        name = "cblas_%s%s" % (t, "herk" if herm else "syrk")
        f = getattr(self.h, name)
        real = ctypes.c_float if t in "sc" else ctypes.c_double
        if t in "sd" or herm:
            f(order, uplo, tr, n, k, real(alpha.real), P(A), lda, real(beta.real), P(C), ldc)
        else:
            al = np.array([alpha], dtype=DTYPE[t])
            be = np.array([beta], dtype=DTYPE[t])
            f(order, uplo, tr, n, k, P(al), P(A), lda, P(be), P(C), ldc)


def random_dims(rng):
    """m, n, k: mostly small, some medium, a few up to 64 MB of operands."""
    r = rng.random()
    if r < 0.9:
        return rng.randint(0, 40), rng.randint(0, 40), rng.randint(0, 80)
    if r < 0.995:
        return rng.randint(1, 200), rng.randint(1, 200), rng.randint(1, 2000)
    shape = rng.choice(["square", "tall-k", "flat"])
    if shape == "square":
        return rng.randint(600, 1100), rng.randint(600, 1100), rng.randint(600, 1100)
    if shape == "tall-k":
        return rng.randint(8, 64), rng.randint(8, 64), rng.randint(50000, 200000)
    return rng.randint(1000, 2000), rng.randint(1000, 2000), rng.randint(4, 32)


def fits(t, m, n, k):
    """The operands are at most 64 MB."""
    es = np.dtype(DTYPE[t]).itemsize
    return (m * k + k * n + m * n) * es <= 64 << 20


LARGEST = [(1100, 1100, 1100), (1050, 1050, 1100), (64, 64, 200000), (2000, 2000, 32)]


def largest_first(rotate=0):
    """(type, kind, dims) of the largest shapes random_dims draws, for every type and kind:
    the run starts with them, so that prism's bounded caches (workspace blocks, plans) and
    every caller thread's BLAS buffers reach their high-water mark in the first block; a
    leak still grows after it. 1050 x 1050 x 1100 has k as its longest edge, so its plan
    cuts k and takes the largest temporary C' a square draw can ask for (1100^3 cuts m
    first and takes none: the drawn 946 x 946 x 1090 of an earlier run raised the pool's
    largest block after the first block). `rotate` starts the list elsewhere, so that
    threads warming up at once run different shapes."""
    shapes = [(t, kind, dims) for t in TYPES for kind in (["gemm", "syrk", "herk"] if t in "cz" else ["gemm", "syrk"])
              for dims in LARGEST]
    r = rotate * len(shapes) // 4
    return shapes[r:] + shapes[:r]


class MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                                               "uordblks", "fordblks", "keepcost")]


def malloc_kib():
    """(bytes malloc has lent and not had back: uordblks + hblkhd, bytes it holds free in
    its arenas: fordblks), in KiB, from glibc's mallinfo2. Between blocks no operand is
    alive, so the first is what the process keeps through malloc: prism's workspace pool
    and caches, Python's objects; not the BLAS libraries' own mmap'ed buffers or thread
    stacks, which RSS also counts."""
    try:
        f = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return -1, -1
    f.restype = MallInfo2
    m = f()
    return (m.uordblks + m.hblkhd) >> 10, m.fordblks >> 10


def one_call(rng, prism, backend, forced=None):
    """One random call through prism and the backend; returns an error text or None."""
    t = rng.choice(TYPES)
    kind = rng.choice(["gemm", "gemm", "syrk", "herk"] if t in "cz" else ["gemm", "gemm", "syrk"])
    m, n, k = random_dims(rng)
    if forced:
        t, kind, (m, n, k) = forced
    if kind != "gemm":
        m = n
    while not fits(t, m, n, k):
        m, n, k = max(1, m // 2), max(1, n // 2), max(1, k // 2)
        if kind != "gemm":
            m = n
    dt = DTYPE[t]
    cplx = t in "cz"

    def rnd(r, c):
        a = np.random.default_rng(rng.getrandbits(32)).standard_normal((r, c))
        if cplx:
            a = a + 1j * np.random.default_rng(rng.getrandbits(32)).standard_normal((r, c))
        return np.asfortranarray(a.astype(dt))

    alpha = rng.choice([1.0, -0.5, 0.0, 2.0]) + (0.25j if cplx and kind == "gemm" else 0)
    beta = rng.choice([0.0, 1.0, 0.75]) + (-0.5j if cplx and kind == "syrk" else 0)
    if kind == "herk":
        alpha, beta = complex(alpha.real), complex(beta.real)
    order = ColMajor
    if kind == "gemm":
        ta = rng.choice([NoTrans, Trans, ConjTrans] if cplx else [NoTrans, Trans])
        tb = rng.choice([NoTrans, Trans, ConjTrans] if cplx else [NoTrans, Trans])
        A = rnd(m, k) if ta == NoTrans else rnd(k, m)
        B = rnd(k, n) if tb == NoTrans else rnd(n, k)
        C0 = rnd(m, n)
        lda, ldb, ldc = max(1, A.shape[0]), max(1, B.shape[0]), max(1, m)
        Cp, Cb = C0.copy(order="F"), C0.copy(order="F")
        prism.gemm(t, order, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, Cp, ldc)
        backend.gemm(t, order, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, Cb, ldc)
        absA, absB = np.asfortranarray(np.abs(A).astype(dt)), np.asfortranarray(np.abs(B).astype(dt))
        bound = np.zeros((m, n), dtype=dt, order="F")
        backend.gemm(t, order, ta if ta != ConjTrans else Trans, tb if tb != ConjTrans else Trans, m, n, k, 1.0,
                     absA, lda, absB, ldb, 0.0, bound, ldc)
        inner, mask = k, np.ones((m, n), dtype=bool)
    else:
        herm = kind == "herk"
        tr = rng.choice([NoTrans, ConjTrans] if herm else ([NoTrans, Trans]))
        uplo = rng.choice([Upper, Lower])
        A = rnd(n, k) if tr == NoTrans else rnd(k, n)
        C0 = rnd(n, n)
        if herm:
            np.fill_diagonal(C0, np.real(np.diag(C0)))
        lda, ldc = max(1, A.shape[0]), max(1, n)
        Cp, Cb = C0.copy(order="F"), C0.copy(order="F")
        prism.rank_k(t, herm, order, uplo, tr, n, k, alpha, A, lda, beta, Cp, ldc)
        backend.rank_k(t, herm, order, uplo, tr, n, k, alpha, A, lda, beta, Cb, ldc)
        absA = np.asfortranarray(np.abs(A).astype(dt))
        bound = np.zeros((n, n), dtype=dt, order="F")
        backend.gemm(t, order, NoTrans if tr == NoTrans else Trans, Trans if tr == NoTrans else NoTrans, n, n, k, 1.0,
                     absA, lda, absA, lda, 0.0, bound, ldc)
        inner = k
        mask = np.triu(np.ones((n, n), dtype=bool)) if uplo == Upper else np.tril(np.ones((n, n), dtype=bool))
    if Cp.size == 0:
        return None
    tol = 2 * 4 * (inner + 2) * EPS[t] * (abs(alpha) * np.abs(bound) + abs(beta) * np.abs(C0)) + np.finfo(np.float64).tiny
    diff = np.abs(Cp.astype(np.complex128) - Cb.astype(np.complex128))
    bad = (diff > tol) & mask
    if np.any(bad) or np.any(Cp[~mask] != C0[~mask]):
        return "%s%s m=%d n=%d k=%d alpha=%s beta=%s: max |diff| %.3g over bound" % (
            t, kind, m, n, k, alpha, beta, float(diff[bad].max()) if np.any(bad) else 0.0)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--block", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--backend", default="libblas.so.3")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-prism", action="store_true",
                    help="diagnosis: call the backend on both sides, without prism (no LD_PRELOAD needed)")
    args = ap.parse_args()
    self_handle = ctypes.CDLL(None)  # the process's symbols: cblas_* resolve to the preloaded library first
    if args.no_prism:
        self_handle = ctypes.CDLL(args.backend, mode=os.RTLD_LOCAL)
    elif "libprism_blas" not in os.environ.get("LD_PRELOAD", ""):
        print("soak_dropin: run with LD_PRELOAD=.../libprism_blas.so", file=sys.stderr)
        return 2
    prism = Blas(self_handle)
    backend = Blas(ctypes.CDLL(args.backend, mode=os.RTLD_LOCAL))
    rows, failures, first_rss = [], [], None
    lock = threading.Lock()
    done = 0
    t0 = time.time()
    # Four caller threads made once and reused: a thread that is created and ends anew for
    # every segment leaks in the backend or Python alone (scripts/soak_dropin.py --no-prism
    # grew about 160 bytes per call that way, with no prism in the process).
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    for b in range(args.calls // args.block):
        threads = "1-4"

        def worker(seed, count, forced=()):
            rng = random.Random(seed)
            for c in range(count):
                err = one_call(rng, prism, backend, forced[c] if c < len(forced) else None)
                if err:
                    with lock:
                        failures.append(err)

        tb = time.time()
        # A quarter of the block on 1 caller thread, then on 2, 3 and 4 at once.
        for nt in (1, 2, 3, 4):
            calls = args.block // 4
            per = [calls // nt + (1 if i < calls % nt else 0) for i in range(nt)]
            # Block 0 warms up: the largest shapes on one thread, then on all four at once.
            futures = [pool.submit(worker, args.seed * 1000003 + b * 101 + nt * 11 + i, c,
                                   largest_first(i) if b == 0 and nt in (1, 4) else ())
                       for i, c in enumerate(per)]
            for x in futures:
                x.result()
        done += args.block
        rss = rss_kib()
        lent, free = malloc_kib()
        first_rss = first_rss or rss
        rows.append((done, threads, time.time() - tb, rss, len(failures), lent, free))
        print("soak_dropin: %7d calls, %s threads, %6.1f s, RSS %d KiB (%+.2f%% vs first block), malloc %d KiB lent, "
              "%d KiB free, %d wrong" % (done, threads, time.time() - tb, rss, 100.0 * (rss - first_rss) / first_rss,
                                         lent, free, len(failures)), flush=True)
    last_rss = rows[-1][3]
    drift = 100.0 * (last_rss - first_rss) / first_rss
    ok = not failures and abs(drift) <= 5.0
    env = {v: os.environ.get(v, "(unset)") for v in ("LD_PRELOAD", "PRISM_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                      "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "PRISM_BLAS_ROUTE",
                                                      "PRISM_SMALL_FLOPS", "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX")}
    with open(args.out, "w") as f:
        f.write("# Drop-in soak: %d calls under LD_PRELOAD (scripts/soak.sh)\n\n" % done)
        f.write("- date: %s\n" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"))
        f.write("- machine: %s, %d CPUs, %s\n" % (platform.node(), os.cpu_count(), platform.platform()))
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][:1]
        f.write("- cpu: %s\n" % (cpu[0] if cpu else "?"))
        f.write("- python %s, numpy %s, backend %s\n" % (platform.python_version(), np.__version__, args.backend))
        f.write("- environment: %s\n" % ", ".join("%s=%s" % kv for kv in env.items()))
        f.write("- seed %d; %.0f s in all\n\n" % (args.seed, time.time() - t0))
        f.write("| calls | caller threads | seconds | RSS KiB | vs first block | malloc lent KiB | malloc free KiB "
                "| wrong results |\n")
        f.write("|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for d, th, s, r, w, lent, free in rows:
            f.write("| %d | %s | %.1f | %d | %+.2f%% | %d | %d | %d |\n" % (
                d, th, s, r, 100.0 * (r - first_rss) / first_rss, lent, free, w))
        f.write("\nmalloc lent: bytes malloc has handed out and not had back (mallinfo2 uordblks + hblkhd) "
                "when the block ends, no operand alive: prism's workspace pool and caches and Python's objects; "
                "malloc free: bytes free in its arenas. RSS also counts what is not malloc's (the BLAS "
                "libraries' per-thread buffers, thread stacks, code).\n")
        f.write("\nResult: %s — %d wrong results; RSS after call %d is %+.2f%% of RSS after call %d (limit 5%%).\n" % (
            "PASS" if ok else "FAIL", len(failures), done, drift, rows[0][0]))
        for e in failures[:20]:
            f.write("\n- wrong: %s" % e)
    print("soak_dropin: %s: %d wrong, RSS drift %+.2f%%" % ("PASS" if ok else "FAIL", len(failures), drift))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
