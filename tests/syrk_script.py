"""Shared by the ctests on scripts/syrk-small-p.py (syrk_fixed_covers, syrk_any_scheme): the script
loaded as a module, or a ctest skip (exit 77) where NumPy or SciPy is missing, and the checks' tally."""
import importlib.util
import os
import sys

try:
    import numpy  # noqa: F401  (the script needs both)
    import scipy  # noqa: F401
except ImportError as e:
    print("SKIP: %s (scripts/install-deps.sh installs python3-numpy and python3-scipy)" % e)
    sys.exit(77)

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("ssp", os.path.join(_here, "..", "scripts", "syrk-small-p.py"))
ssp = importlib.util.module_from_spec(_spec)
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
