#!/usr/bin/env python3
"""ctest syrk_any_scheme: the bound on every SYRK scheme in scripts/syrk-small-p.py (--any-scheme)
never claims more than a feasible point of the program it bounds, and its branch and bound both
certifies what holds and refuses what does not.

Exit 77 (a ctest skip) where NumPy or SciPy is missing (scripts/install-deps.sh installs both)."""
import math

from syrk_script import check, finish, ssp, star_point_value  # first: a skip where NumPy or SciPy is missing

import numpy as np  # noqa: E402

P, q = 7, 3.5
rng = np.random.default_rng(11)


# 1. The exact one-variable minima against a dense grid (a grid's least is never below the true least).
worst = 0.0
for _ in range(200):
    al, s, m = rng.uniform(0, 2), rng.uniform(-2, 10), rng.uniform(0, 0.8)
    lo = rng.uniform(0, 0.5)
    hi = rng.uniform(lo, 1)
    w = np.linspace(lo, hi, 400001)
    g1 = (al * np.sqrt(w) + q * w * w - s * w).min()
    g2 = (al * np.maximum(m, np.sqrt(w)) + q * w * w - s * w).min()
    e1, e2 = float(ssp.min_sqrt_quad(al, s, lo, hi, q)), float(ssp.min_max_sqrt_quad(al, m, s, lo, hi, q))
    worst = max(worst, e1 - g1, e2 - g2)
    if e1 > g1 + 1e-9 or e2 > g2 + 1e-9 or e1 < g1 - 1e-4 or e2 < g2 - 1e-4:
        check(False, "one-variable minimum off: alpha %.3f s %.3f m %.3f [%.3f, %.3f]" % (al, s, m, lo, hi))
        break
else:
    check(True, "200 one-variable minima never above a dense grid's (largest excess %.1e)" % worst)


# 2. Feasible points of the star case's program: a box around one must not be bounded above its value.
def star_point(b):
    """A random point (w, x, o) meeting every constraint of the star case with |B| = b on P ranks, and
    max(F1, F2) + (P/2)|w|^2 there; None when the draw misses the constraints."""
    w = rng.dirichlet(np.ones(P) * rng.choice([0.5, 1, 3]))
    wh, wB, wO = w[0], w[1:1 + b], w[1 + b:]
    x = -np.sort(-rng.dirichlet(np.ones(b + 2))[:b] * rng.uniform(0.3, 1))
    o = rng.uniform(0, 1 - x.sum())
    t = star_point_value(wh, wB, wO, x, o)
    if t is None:
        return None
    return x, o, wO.sum(), wO.max() if len(wO) else 0.0, t, t + q * (w ** 2).sum()


found, bad = 0, []
for attempt in range(200000):
    if found >= 30:
        break
    b = int(rng.integers(1, P))
    pt = star_point(b)
    if pt is None:
        continue
    x, o, M, V, t, value = pt
    found += 1
    for grow in (0.0, 0.02, 0.1):
        lo_x, hi_x = np.maximum(0, x - grow * rng.uniform(0, 1, b)), np.minimum(1, x + grow * rng.uniform(0, 1, b))
        box = (lo_x, hi_x, (max(0, o - grow), min(1, o + grow)), (max(0, M - grow), min(1, M + grow)),
               (max(0, V - grow), min(1, V + grow)), (max(2, t - grow), t + grow))
        bound = ssp.star_box_bound(P, b, box, math.inf)
        if bound > value + 1e-7:
            bad.append((b, grow, bound, value))
check(found >= 30 and not bad, "%d feasible star points, boxes of widths 0, 0.02 and 0.1 around each: "
      "never bounded above the point (%s)" % (found, bad[:3]))

# 3. The concave cases: exact where known (three ranks doing a third each: 2 + 7/6), never above a point.
cases = ssp.case_bounds(P)
check(abs(cases["a triangle of 2-sets"] - 19 / 6) < 1e-6, "triangle case least %.6f = 19/6" % cases["a triangle of 2-sets"])
ok = True
for _ in range(2000):
    w = rng.dirichlet(np.ones(P) * rng.choice([0.3, 1, 3]))
    s = np.sqrt(w)
    quad = q * (w ** 2).sum()
    one = min(1 + s.sum() - s[i] for i in range(P)) + quad
    tri = 2 + s.sum() - (-np.sort(-s))[:3].sum() + quad
    ok &= one >= cases["one rank reads every row"] - 1e-9 and tri >= cases["a triangle of 2-sets"] - 1e-9
check(ok, "the concave cases' bounds never above 2000 random share vectors")

# 4. The branch and bound certifies a level that holds and refuses one above a feasible point.
tau = 1.5 + P * 1.2 * ssp.bound(P)
ok1, boxes, _ = ssp.star_certify(P, 1, tau)
check(ok1, "|B| = 1 certified at 1.2 B(7) (%d boxes)" % boxes)
best = None
for attempt in range(200000):
    pt = star_point(1)
    if pt is not None and (best is None or pt[-1] < best[-1]):
        best = pt
ok2, boxes, left = ssp.star_certify(P, 1, best[-1] + 0.01)
check(not ok2, "|B| = 1 refused at a feasible point's value + 0.01 = %.4f (stopped after %d boxes)" % (best[-1] + 0.01, boxes))

finish()
