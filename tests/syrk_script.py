"""Shared by the ctests on scripts/syrk-small-p.py (syrk_fixed_covers, syrk_any_scheme): the script
loaded as a module, or a ctest skip (exit 77) where NumPy or SciPy is missing, and the checks' tally."""
import importlib.util
import itertools
import math
import os
import sys

try:
    import numpy as np
    import scipy  # noqa: F401  (the script needs it)
except ImportError as e:
    print("SKIP: %s (scripts/install-deps.sh installs python3-numpy and python3-scipy)" % e)
    sys.exit(77)

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("ssp", os.path.join(_here, "..", "scripts", "syrk-small-p.py"))
ssp = importlib.util.module_from_spec(_spec)
sys.modules["ssp"] = ssp   # so that worker processes can find its functions by name
_spec.loader.exec_module(ssp)
failures = []


def check(ok, what):
    """Prints one check's outcome and remembers a failure."""
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        failures.append(what)


def finish():
    """Ends the test: exit 1 if any check failed."""
    print("%d failed" % len(failures))
    sys.exit(1 if failures else 0)


def star_point_value(wh, wB, wO, x, o):
    """max(F1, F2) at a point of the column lemma's star case (docs/data-movement.md, "A sharper column
    cost"): hub share wh, leaves' shares wB with rows x (X_b), other ranks' shares wO, o the rows the hub
    does not read; None where one of its constraints fails. The tests' own reading of the program,
    independent of the script's."""
    b, X = len(x), x.sum()
    if X + o > 1 or X * X - (x ** 2).sum() > wh or (1 - o) ** 2 < wh:
        return None
    for r in range(1, b + 1):
        for L in itertools.combinations(range(b), r):
            inL = np.zeros(b, bool)
            inL[list(L)] = True
            if 2 * o * x[inL].sum() > wB[inL].sum() + 1e-15:
                return None
            if X * X - (x[~inL] ** 2).sum() + 2 * o * x[inL].sum() > wh + wB[inL].sum() + 1e-15:
                return None
    f1 = 3 - X + (max(3, b) - 3) * o
    f2 = 1 - o + np.maximum(o + x, np.sqrt(wB)).sum() + sum(math.sqrt(v) for v in wO)
    return max(f1, f2)
