#!/usr/bin/env python3
"""ctest syrk_fixed_covers: the certified column cost of scripts/syrk-small-p.py never claims more
than a real layout reads, and its fixed-cover bounds meet the schemes known to be optimal.

Exit 77 (a ctest skip) where NumPy or SciPy is missing (scripts/install-deps.sh installs both)."""
import math

from syrk_script import check, finish, ssp, star_point_value  # first: a skip where NumPy or SciPy is missing

import numpy as np  # noqa: E402


# 1. A real layout bounds the certificate from above. Four ranks with a quarter each: the hub reads
#    X = (0.125, 0.25, 0.25) and the other three read O = 0.375 and their own X_b, 2.375 rows.
q = [0.25] * 4
check(not ssp.star_case_at_least(q, 0, [0, 1, 2], 2.376), "no certificate above the 2.375 layout")
check(ssp.star_case_at_least(q, 0, [0, 1, 2], 2.32), "2.32 certified for four quarter shares")
cost = ssp.column_cost_lb(q)
check(2.25 <= cost <= 2.375, "column cost of four quarters %.4f lies between the lemma's 2.25 and 2.375" % cost)


# 2. Random shares, hubs and sets B: any point meeting the star case's constraints is a lower value
#    the certificate must not exceed (it is a relaxation of real layouts, so its least lies below).
def point_value(w, h, B, x, o):
    """max(F1, F2) at a point of the star case's program (hub h, leaves B with rows x), or None."""
    leaves = np.array([w[j] for j in range(len(w)) if j != h])
    others = [j for j in range(len(leaves)) if j not in B]
    return star_point_value(w[h], leaves[B], leaves[others], np.asarray(x, float), o)


rng = np.random.default_rng(7)
tried = 0
while tried < 12:
    a = int(rng.integers(4, 7))
    w = rng.dirichlet(np.ones(a))
    h = int(rng.integers(a))
    B = sorted(rng.choice(a - 1, size=int(rng.integers(1, a)), replace=False).tolist())
    v = point_value(list(w), h, B, rng.dirichlet(np.ones(len(B))) * rng.uniform(0, 0.8), rng.uniform(0, 0.6))
    if v is None:
        continue
    tried += 1
    check(not ssp.star_case_at_least(list(w), h, B, v + 1e-6),
          "no certificate above a feasible point: a=%d h=%d B=%s value %.4f" % (a, h, B, v))

# 3. Where the least scheme is known, the bound meets it: P = 3, nested 2 + 1 (11/6 + 1/sqrt 3);
#    P = 4, nested 2 + 2 (2 + sqrt 1/2), prism's pick.
for P, best in ((3, 11 / 6 + 1 / math.sqrt(3)), (4, 2 + math.sqrt(0.5))):
    least = ssp.fixed_cover_bounds(P)[0][0]
    check(abs(least - best) < 1e-9, "P = %d: least fixed cover touches %.6f, the known optimum %.6f" % (P, least, best))

finish()
