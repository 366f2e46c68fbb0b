#!/usr/bin/env python3
"""ctest syrk_any_scheme: the bound on every SYRK scheme in scripts/syrk-small-p.py (--any-scheme,
with equal shares and with shares within 5 % of the mean) never claims more than a feasible point of
the program it bounds, its branch and bound both certifies what holds and refuses what does not, and its
case-by-case table (--theta-scan) tells where no such certificate can exist.

Exit 77 (a ctest skip) where NumPy or SciPy is missing (scripts/install-deps.sh installs both)."""
import math
import os
import tempfile

from syrk_script import check, finish, ssp, star_point_value  # first: a skip where NumPy or SciPy is missing

import numpy as np  # noqa: E402

P, q = 7, 3.5
rng = np.random.default_rng(11)
EQUAL, UNEVEN = ssp.CTerm(P), ssp.CTerm(P, 0.05, 1 / 3)

# 0. The C term with uneven shares: a(w) never exceeds what a rank with any share f in [0.95/P, 1.05/P]
# pays at that column, (w^2 - theta w) / (2 f), and the constant P theta/2 is the theta/2 each rank pays;
# so for random schemes (share vectors per column, each rank's f its mean) the bound never exceeds the
# integral of w_i^2 / (2 f_i) summed. Its convex minorant never exceeds it either.
ok, worst = True, np.inf
for _ in range(300):
    L = int(rng.integers(1, 6))
    W = rng.dirichlet(np.ones(P) * rng.choice([0.3, 1, 3]), size=L)   # columns x ranks, equal column widths
    target = 1 + rng.uniform(-0.05, 0.05, P)
    target /= target.sum()                    # summing to 1; a draw pushed past 5 % of 1/P is skipped below
    for _ in range(500):                      # Sinkhorn: columns sum to 1, ranks' means to target
        W *= target / W.mean(axis=0)
        W /= W.sum(axis=1, keepdims=True)
    f = W.mean(axis=0)
    if np.any(np.abs(f * P - 1) > 0.05):
        continue
    true = ((W ** 2).mean(axis=0) / (2 * f)).sum()
    est = np.mean([UNEVEN.total(row) for row in W])
    worst = min(worst, true - est)
    ok &= est <= true + 1e-12
w = np.linspace(0, 1, 10001)
qc, lc = UNEVEN.convex
ok &= bool(np.all(qc * w * w - lc * w <= UNEVEN.a(w) + 1e-12))
for f in np.linspace(0.95 / P, 1.05 / P, 11):
    ok &= bool(np.all(UNEVEN.a(w) <= (w * w - w / 3) / (2 * f) + 1e-12))
check(ok and worst < np.inf, "uneven shares: the C term's bound never above the C words of random schemes "
      "(least slack %.2e), nor above (w^2 - w/3)/(2f) for f within 5%% of 1/P; its convex minorant below it" % worst)


# 1. The exact one-variable minima against a dense grid (a grid's least is never below the true least).
worst = 0.0
for trial in range(300):
    al, s, m = rng.uniform(0, 2), rng.uniform(-2, 10), rng.uniform(0, 0.8)
    lo = rng.uniform(0, 0.5)
    hi = rng.uniform(lo, 1)
    w = np.linspace(lo, hi, 400001)
    g1 = (al * np.sqrt(w) + q * w * w - s * w).min()
    g2 = (al * np.maximum(m, np.sqrt(w)) + q * w * w - s * w).min()
    e1, e2 = float(ssp.min_sqrt_quad(al, s, lo, hi, q)), float(ssp.min_max_sqrt_quad(al, m, s, lo, hi, q))
    if trial >= 200:   # the C term with uneven shares in place of q w^2
        a = UNEVEN.a(w)
        g1 = (al * np.sqrt(w) + a - s * w).min()
        g2 = (al * np.maximum(m, np.sqrt(w)) + a - s * w).min()
        e1, e2 = float(UNEVEN.min_sqrt_quad(al, s, lo, hi)), float(UNEVEN.min_max_sqrt_quad(al, m, s, lo, hi))
    worst = max(worst, e1 - g1, e2 - g2)
    if e1 > g1 + 1e-9 or e2 > g2 + 1e-9 or e1 < g1 - 1e-4 or e2 < g2 - 1e-4:
        check(False, "one-variable minimum off: alpha %.3f s %.3f m %.3f [%.3f, %.3f]" % (al, s, m, lo, hi))
        break
else:
    check(True, "300 one-variable minima (100 of them with the uneven C term) never above a dense grid's "
          "(largest excess %.1e)" % worst)


# 2. Feasible points of the star case's program: a box around one must not be bounded above its value.
def star_point(b, C=EQUAL):
    """A random point (w, x, o) meeting every constraint of the star case with |B| = b on P ranks, and
    max(F1, F2) + the C term there; None when the draw misses the constraints."""
    w = rng.dirichlet(np.ones(P) * rng.choice([0.5, 1, 3]))
    wh, wB, wO = w[0], w[1:1 + b], w[1 + b:]
    x = -np.sort(-rng.dirichlet(np.ones(b + 2))[:b] * rng.uniform(0.3, 1))
    o = rng.uniform(0, 1 - x.sum())
    t = star_point_value(wh, wB, wO, x, o)
    if t is None:
        return None
    return x, o, wO.sum(), wO.max() if len(wO) else 0.0, t, t + C.total(w)


found, bad = 0, []
for attempt in range(200000):
    if found >= 40:
        break
    b = int(rng.integers(1, P))
    C = EQUAL if found < 30 else UNEVEN
    pt = star_point(b, C)
    if pt is None:
        continue
    x, o, M, V, t, value = pt
    found += 1
    for grow in (0.0, 0.02, 0.1):
        lo_x, hi_x = np.maximum(0, x - grow * rng.uniform(0, 1, b)), np.minimum(1, x + grow * rng.uniform(0, 1, b))
        box = (lo_x, hi_x, (max(0, o - grow), min(1, o + grow)), (max(0, M - grow), min(1, M + grow)),
               (max(0, V - grow), min(1, V + grow)), (max(2, t - grow), t + grow))
        bound, _ = ssp.star_box_bound(P, b, box, math.inf, C)
        if bound > value + 1e-7:
            bad.append((b, grow, bound, value))
check(found >= 40 and not bad, "%d feasible star points (10 with the uneven C term), boxes of widths 0, 0.02 "
      "and 0.1 around each: never bounded above the point (%s)" % (found, bad[:3]))

# 3. The concave cases: exact where known (three ranks doing a third each: 2 + 7/6), never above a point.
cases = ssp.case_bounds(P)
check(abs(cases["a triangle of 2-sets"] - 19 / 6) < 1e-6, "triangle case least %.6f = 19/6" % cases["a triangle of 2-sets"])
uneven = ssp.case_bounds(P, UNEVEN)
ok = True
for C, bounds in ((EQUAL, cases), (UNEVEN, uneven)):
    for _ in range(2000):
        w = rng.dirichlet(np.ones(P) * rng.choice([0.3, 1, 3]))
        s = np.sqrt(w)
        c = C.total(w)
        one = min(1 + s.sum() - s[i] for i in range(P)) + c
        tri = 2 + s.sum() - (-np.sort(-s))[:3].sum() + c
        ok &= one >= bounds["one rank reads every row"] - 1e-9 and tri >= bounds["a triangle of 2-sets"] - 1e-9
        ok &= 3 + c >= bounds["every row read three times or more"] - 1e-9
# with uneven shares three ranks doing a third each still cost 19/6, and moving share between them less
third = np.array([1 / 3] * 3 + [0.0] * (P - 3))
check(abs(2 + UNEVEN.total(third) - 19 / 6) < 1e-12 and uneven["a triangle of 2-sets"] < 19 / 6
      and uneven["a triangle of 2-sets"] > 19 / 6 - 0.002,
      "uneven shares: triangle case least %.5f, just under 19/6" % uneven["a triangle of 2-sets"])
check(ok, "the concave cases' bounds (equal and uneven shares) never above 2000 random share vectors each")

# 4. The branch and bound certifies a level that holds and refuses one above a feasible point.
tau = 1.5 + P * 1.2 * ssp.bound(P)
ok1, boxes, _ = ssp.star_certify(P, 1, tau)
check(ok1, "|B| = 1 certified at 1.2 B(7) (%d boxes)" % boxes)
ok1, boxes, _ = ssp.star_certify(P, 1, tau, UNEVEN)
check(ok1, "|B| = 1 certified at 1.2 B(7) with shares within 5%% of the mean (%d boxes)" % boxes)
paused, n1, left = ssp.star_certify(P, 1, tau, UNEVEN, pause=100)
(oka, na, _), (okb, nb, _) = (ssp.star_certify(P, 1, tau, UNEVEN, start=part) for part in (left[0::2], left[1::2]))
check(paused is None and n1 == 100 and oka and okb and n1 + na + nb == boxes,
      "paused after 100 boxes, the rest dealt into two jobs: both certified, %d + %d + %d boxes = %d" % (n1, na, nb, boxes))
pieces = ssp.star_pieces(P, 1, tau, 3)
vol = sum(float(np.prod(ssp._star_width(piece))) for piece in pieces)
ok3, boxes3, _ = ssp.star_certify(P, 1, tau, UNEVEN, start=pieces)
check(len(pieces) == 8 and abs(vol - float(np.prod(ssp._star_width(ssp._star_root(1, tau, P - 2))))) < 1e-12 and ok3,
      "|B| = 1 cut into 8 pieces that fill its box, and certified from them (%d boxes)" % boxes3)
best = None
# the least of 20,000 random star points with |B| = 1 (3.41 here; 200,000 draws found 3.40 in 25 s)
for attempt in range(20000):
    pt = star_point(1)
    if pt is not None and (best is None or pt[-1] < best[-1]):
        best = pt
ok2, boxes, left = ssp.star_certify(P, 1, best[-1] + 0.01)
check(not ok2, "|B| = 1 refused at a feasible point's value + 0.01 = %.4f (stopped after %d boxes)" % (best[-1] + 0.01, boxes))

# 5. The whole report, cut off and resumed from its checkpoint, covers the same boxes as in one go.
def star_rows(report):
    return [line for line in report.splitlines() if line.startswith("| ") and "yes" in line and "|---" not in line]


whole = ssp.any_scheme_report(4, 1.2, pause=30)
with tempfile.TemporaryDirectory() as tmp:
    ck = os.path.join(tmp, "p4.pkl")
    cut = ssp.any_scheme_report(4, 1.2, pause=30, checkpoint=ck, stop_after=0)
    saved = os.path.exists(ck)
    resumed = ssp.any_scheme_report(4, 1.2, pause=30, checkpoint=ck)
    gone = not os.path.exists(ck)


def boxes(report):
    return [row.split("|")[4].strip() for row in star_rows(report) if row.split("|")[1].strip().isdigit()]


check(cut is None and saved and gone and "Resumed from a checkpoint: this run went on from 1 earlier part" in resumed
      and "Result: **holds**" in whole and "Result: **holds**" in resumed and boxes(whole) == boxes(resumed)
      and len(boxes(whole)) == 3,
      "P = 4 stopped at once and resumed from its checkpoint: the same boxes per case as in one go (%s; %s)" %
      (boxes(whole), boxes(resumed)))

# 6. Local search's least (star_least, the --theta-scan figures) is a feasible point by this test's own
# reading of the program, at least the level the branch and bound certified for |B| = 1 above, and no
# worse than the best of the random points drawn there.
value, (wh, wB, wO, x, o) = ssp.star_least(P, 1, EQUAL, trials=10, seed=1)
t = star_point_value(wh, wB, wO, x, o)
w = np.concatenate([[wh], wB, wO])
check(t is not None and abs(t + EQUAL.total(w) - value) < 1e-12 and abs(w.sum() - 1) < 1e-12
      and tau <= value <= best[-1] + 1e-9,
      "|B| = 1: local search's least %.5f is feasible, between the certified %.5f and the best random point %.5f"
      % (value, tau, best[-1]))

# 7. The case-by-case table (--theta-scan): at P = 4 every case clears 1.2 B(P) (the certificate above
# holds there), at P = 8 local search finds a star point below it, so the table says no certificate of
# this kind exists. At P = 6 the least case is the triangle of 2-sets at exactly T = 3, what prism's
# k2 x tbd3 touches (docs/data-movement.md, "P = 6 the same way"): 3 - tau(1.2) = 0.0292 of room.
last4 = ssp.theta_scan_report(4, 1.2, 0.0, [], 3).splitlines()[-1]
last6 = ssp.theta_scan_report(6, 1.2, 0.0, [], 3).splitlines()[-1]
last8 = ssp.theta_scan_report(8, 1.2, 0.0, [], 3).splitlines()[-1]
check(last4.startswith("Most room: +") and last6.startswith("Most room: +0.0292, the least case being a triangle")
      and last8.startswith("No certificate of this kind can reach 1.20 B(P): star"),
      "case-by-case tables: P = 4 '%s'; P = 6 '%s'; P = 8 '%s'" % (last4, last6, last8))

finish()
