#!/usr/bin/python3
"""tests/dropin/numpy_preload.py — NumPy (Debian's python3-numpy) with libprism_blas under
LD_PRELOAD, as a user would run an unchanged script.

    numpy_preload.py /path/to/libprism_blas.so

Runs the same computation in two child processes, one plain and one with
LD_PRELOAD=libprism_blas.so PRISM_STATS=1: C = A.T @ B and G = A.T @ A (NumPy's cblas_dsyrk) with A, B of 2^22 x 32 (same seed).
NumPy's OpenBLAS (libopenblas.so.0, pthread) is loaded globally in the preloaded child
before prism's first call, so this is exactly the case where prism's leaf BLAS must stay
isolated from the host's. Checks:
  - |C_prism - C_numpy| <= 2 * 4 (k + 2) eps (|A|.T @ |B|) componentwise;
  - PRISM_STATS shows the call took the recursion path (and which leaf library ran);
  - the host OpenBLAS's thread count is the same before and after the prism call.
"""
import os
import re
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(20261122)
k, n = 1 << 22, 32
A = rng.standard_normal((k, n))
B = rng.standard_normal((k, n))
blas = ctypes.CDLL("libopenblas.so.0")          # NumPy's own OpenBLAS, already loaded
before = blas.openblas_get_num_threads()
C = A.T @ B
G = A.T @ A                                     # NumPy calls cblas_dsyrk for this (one operand)
after = blas.openblas_get_num_threads()
np.save(out + "/C.npy", C)
np.save(out + "/G.npy", G)
if sys.argv[2] == "bound":
    np.save(out + "/AB.npy", np.abs(A).T @ np.abs(B))
    np.save(out + "/AA.npy", np.abs(A).T @ np.abs(A))
print("host openblas threads", before, after)
"""


def main():
    lib = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        plain, pre = os.path.join(tmp, "plain"), os.path.join(tmp, "preload")
        os.mkdir(plain)
        os.mkdir(pre)
        # No PRISM_* setting of the caller's, but 2 threads whatever the host's cores: with one,
        # every call goes to the backend (as documented) and the recursion is not shown.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRISM_") and k != "LD_PRELOAD"}
        env["PRISM_NUM_THREADS"] = "2"
        r1 = subprocess.run([sys.executable, "-c", CHILD, plain, "bound"], env=env, capture_output=True, text=True)
        env_pre = dict(env, LD_PRELOAD=lib, PRISM_STATS="1", PRISM_VERBOSE="1")
        r2 = subprocess.run([sys.executable, "-c", CHILD, pre, "-"], env=env_pre, capture_output=True, text=True)
        sys.stdout.write(r1.stdout + r1.stderr + r2.stdout + r2.stderr)
        if r1.returncode != 0 or r2.returncode != 0:
            print("FAIL: a child process failed")
            return 1

        import numpy as np
        C1, C2, AB = (np.load(os.path.join(d, f)) for d, f in ((plain, "C.npy"), (pre, "C.npy"), (plain, "AB.npy")))
        k = 1 << 22
        bound = 2 * 4 * (k + 2) * np.finfo(np.float64).eps * AB
        err = np.abs(C2 - C1)
        ok = True
        if not np.all(err <= bound):
            print("FAIL: componentwise bound violated at", int(np.sum(err > bound)), "entries")
            ok = False
        print("max |C_prism - C_numpy| / bound = %.3g" % float(np.max(err / bound)))
        # A.T @ A: NumPy's syrk path (it fills the other triangle itself from the one computed).
        G1, G2, AA = (np.load(os.path.join(d, f)) for d, f in ((plain, "G.npy"), (pre, "G.npy"), (plain, "AA.npy")))
        gbound = 2 * 4 * (k + 2) * np.finfo(np.float64).eps * AA
        gerr = np.abs(G2 - G1)
        if not np.all(gerr <= gbound):
            print("FAIL: A.T @ A: componentwise bound violated at", int(np.sum(gerr > gbound)), "entries")
            ok = False
        print("A.T @ A: max |G_prism - G_numpy| / bound = %.3g" % float(np.max(gerr / gbound)))
        if not re.search(r"cblas_dsyrk RowMajor uplo=\w trans=\w n=32 k=4194304 -> recursion", r2.stderr):
            print("FAIL: PRISM_VERBOSE does not show NumPy's A.T @ A (cblas_dsyrk, n=32, k=2^22) taking the recursion")
            ok = False
        if not re.search(r"recursion\s+dsyrk\s+[1-9]", r2.stderr):
            print("FAIL: PRISM_STATS does not show a dsyrk call on the recursion path")
            ok = False
        if not re.search(r"recursion\s+dgemm\s+[1-9]", r2.stderr):
            print("FAIL: PRISM_STATS does not show a double-precision call on the recursion path")
            ok = False
        if not re.search(r"cblas_dgemm RowMajor transa=\w transb=\w m=32 n=32 k=4194304 -> recursion", r2.stderr):
            print("FAIL: PRISM_VERBOSE does not show the 32x32x2^22 call taking the recursion")
            ok = False
        threads = re.search(r"host openblas threads (\d+) (\d+)", r2.stdout)
        if not threads or threads.group(1) != threads.group(2):
            print("FAIL: the host OpenBLAS's thread count changed across the prism call")
            ok = False
        # The leaves are prism's own streaming kernels on these shapes (gemm 32x32 TN from
        # memory, the syrk triangles); any BLAS leaf that ran must be a private copy, never
        # the host's (shared) OpenBLAS.
        leaf_lines = re.findall(r"leaves \((\w+)\): ([^\n]*)", r2.stderr)
        if not leaf_lines:
            print("FAIL: PRISM_STATS names no leaf backend")
            ok = False
        for backend, what in leaf_lines:
            if backend == "streaming" and not what.startswith("prism's own kernel"):
                print("FAIL: streaming leaf line reads", what)
                ok = False
            if backend != "streaming" and "(private copy" not in what:
                print("FAIL: prism's %s leaves did not run on a private BLAS copy: %s" % (backend, what))
                ok = False
        if not any(b == "streaming" for b, _ in leaf_lines):
            print("FAIL: the streaming leaves (gemm and rank-k) did not run")
            ok = False
        print("numpy_preload:", "PASS" if ok else "FAIL")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
