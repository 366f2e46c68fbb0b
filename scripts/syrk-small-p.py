#!/usr/bin/env python3
"""Distributed SYRK on few ranks: the least volume a rank must receive, searched and bounded.

    /usr/bin/python3 scripts/syrk-small-p.py [--pmax 16] [--prism build/apps/prism] [--md OUT.md]
                                             [--bb-budget SECONDS]
    /usr/bin/python3 scripts/syrk-small-p.py --certify P [--budget SECONDS]   # one lower bound
    /usr/bin/python3 scripts/syrk-small-p.py --describe P   # the best scheme's plan and owners
    /usr/bin/python3 scripts/syrk-small-p.py --fixed-covers P [--md OUT.md]   # bound every fixed-cover scheme
    /usr/bin/python3 scripts/syrk-small-p.py --any-scheme P [--ratio 1.2] [--imbalance 0.05] [--md OUT.md]
                                                                            # bound every scheme
    /usr/bin/python3 scripts/syrk-small-p.py --theta-scan P [--imbalance 0.05 --thetas 0.25,...] [--md OUT.md]
                                                                            # each case's least, per theta

C = A A^T, C n x n symmetric, A n x k, on P ranks (docs/data-movement.md, "SYRK on few ranks").
The model is the SYRK bound's: every off-diagonal multiply-add C_xy += A_xl A_yl is done once,
on one rank; the ranks do equal shares; A starts, and C's triangle ends, as one copy, each word
owned by one rank. A rank receives the words of A it reads but does not own and, for the words
of C it owns, the partial sums the other ranks computed. The volume is the largest number of
words any rank receives. Units: n = k = 1 (continuous), so A has area 1, the triangle 1/2, and
the SYRK bound's 3D case per rank is B(P) = 3/2 P^(-2/3) - 3/2 P^(-1).

What it prints, for P = 2 .. pmax on the square shape:
  - B(P), in units of n^2 words and in MB for n = k = 4096 (doubles);
  - prism's schemes as its planner scores them (`prism plan 4096 4096 4096 --syrk UT --ranks P`,
    read-only; skipped when the binary is missing): the scheme it picks and the least volume it
    lists, with all P ranks working and with idle ranks allowed;
  - the best scheme this search finds with all P ranks working, its volume / B(P), and the
    scheme; and the best with idle ranks allowed (P' < P ranks work, more flops each);
  - a lower bound on volume / B(P) that holds for every scheme with all P ranks doing equal
    work: P = 2 in closed form, P = 3, 4, 5 certified by branch and bound over a relaxation
    (see certify() below), P = 6 as far as the time budget takes it.

The search (what "scheme" means here). Rows are cut into atoms (intervals with measures mu);
a *template* names roles, each reading a set of atoms and allowed to compute a set of blocks
(atom pairs); a *component* is a template with a number of ranks per role (its multiplicity)
and a share of k equal to its ranks / P, so that work balances. Within a component, the k
columns are split among *patterns* (which roles are active), and in each pattern every block
is split among the active roles allowed to compute it. A mixed-integer LP (scipy's HiGHS)
chooses the pattern depths, the block split and which blocks each role touches (a rank touches
the whole block it computes any part of), minimising the words touched; the atom measures are
searched by Nelder-Mead around it. A role's ranks take turns over k, each doing 1/n of every
pattern. Several components on disjoint parts of k give heterogeneous groups. A final LP picks
who owns each word (A: one of its readers; C: one of its computers, the partial sums routed to
it) so as to minimise the largest receive, which is what is reported.

Templates: full (one role reading everything: the k split), chain (nested triangles: role j
computes every pair with an endpoint in layer j, reading layers j..L-1), tri3 (three roles on
three atoms, each reading two: the c = 3 cover with unequal atoms), star4 (the c = 4 cover
whose classes are {1,2},{1,3},{1,4},{2,3,4}, its big class cut in three), and prism's
difference covers tbd_c (c equal row blocks; for even c the blocks of difference c/2 split
by halves of k, as prism does). What is tried: prism's family (G slices x tbd_c, equal row
blocks); heterogeneous slices (a dynamic program over slices of c = 1..13 ranks, each with its
best single-slice cover: k, tbd_c, the star, nested 1 + 1); chains of 2 layers (and 3 up to
P = 9) with any rank counts; tri3 and the star with nearly equal multiplicities; Fano with
multiplicities G or G + 1 and unequal row blocks; and idle ranks (the best over P' < P).

--fixed-covers P bounds, with no search, every scheme made of groups with one fixed cover each (k cut
into parts, one group of ranks per part, each role of a group updating one fixed set of pairs at every
column of its part): the column lemma's star case is sharpened by what only some ranks can do
(star_case_at_least, an interval branch and bound), which at P = 7 puts every such scheme above
1.2 B(P). About two and a half minutes at P = 7.

--any-scheme P bounds every scheme on P ranks doing equal work, whatever it does column by column: a
rank's pairs over k number at least P times the integral of its share squared, so the words touched
are at least the least over one column's share vector w of kappa(w) + (P/2)|w|^2. The column lemma's
concave cases are bounded by Lagrange duality, the star case by branch and bound (star_certify), each
box by the exact Lagrangian dual at multipliers a linear relaxation proposes (star_box_bound). At P = 7
it certifies 1.2 B(P) in about half an hour on two cores; at P = 6, --ratio 1.223 (what prism's k2 x tbd3
receives, to 0.1 %) in four minutes. --imbalance d lets every rank's share of the
multiply-adds lie within d of the mean (the planner's 5 % load target): the C term then becomes
P theta/2 + sum a(w_i), a piecewise quadratic (CTerm), and the same cases are bounded with it; at
P = 7, --imbalance 0.05 --theta 0.27 certifies 1.2 B(P) in about 40 minutes on two cores. With
--checkpoint FILE the star cases' progress is saved every five minutes, --stop-after SECONDS saves
and stops (exit status 3), and the same command run again goes on from the file; the report then says
over how many parts and commits it ran. Any theta gives a valid bound; --theta-scan P tabulates, for
several, each case's least (the concave cases' by duality, the star's as found by local search from
random starts, star_least), so that the certificate runs at the theta leaving it the most room; with
equal shares it tabulates the one row, and shows where no certificate of this kind can exist (a star
point below tau).

The default run takes about four minutes on one core (scipy's HiGHS is single-threaded here).
"""

import argparse
import datetime
import functools
import heapq
import itertools
import math
import os
import pickle
import platform
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from types import SimpleNamespace

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp, minimize
from scipy.sparse import coo_matrix

N4096 = 4096


def bound(P):
    """SYRK bound's 3D case per rank, continuous, units n^2 words (n = k)."""
    return 1.5 * P ** (-2.0 / 3.0) - 1.5 / P


def bound_exact(n, k, P):
    """The same in words with its lower-order terms (prism::bounds::syrk_parallel_io_minus_owned, 3D)."""
    return 1.5 * (n * (n - 1) * k / P) ** (2.0 / 3.0) - (n * k + n * (n - 1) / 2) / P


def mb(words):
    return words * 8 / 1e6


# ---------------------------------------------------------------- templates and components


class Template:
    """roles: (name, atoms read, blocks allowed). A pattern is a tuple of (role, atoms it reads
    there); by default every set of roles that covers all blocks, each reading all its atoms."""

    def __init__(self, name, m, roles, pats=None):
        self.name, self.m, self.roles = name, m, roles
        self.blocks = [(a, b) for a in range(m) for b in range(a, m)]
        self.bidx = {b: i for i, b in enumerate(self.blocks)}
        if pats is None:
            pats = []
            for r in range(1, len(roles) + 1):
                for S in itertools.combinations(range(len(roles)), r):
                    pats.append(tuple((t, frozenset(roles[t][1])) for t in S))
        self.pats = [P for P in pats if len(set().union(*[self.can(t, U) for t, U in P])) == len(self.blocks)]

    def can(self, t, U):
        """Blocks role t may compute while reading atoms U."""
        return {b for b in self.roles[t][2] if b[0] in U and b[1] in U}


def blocks_of(U):
    U = sorted(U)
    return {(a, b) for i, a in enumerate(U) for b in U[i:]}


def t_full():
    return Template("k", 1, [("F", {0}, {(0, 0)})])


def t_chain(L):
    return Template("chain%d" % L, L, [("L%d" % j, set(range(j, L)), {(j, b) for b in range(j, L)}) for j in range(L)])


def t_tri3():
    roles = [("%d%d" % (i, j), {i, j}, blocks_of({i, j})) for (i, j) in [(0, 1), (0, 2), (1, 2)]]
    return Template("tri3", 3, roles)


def t_star4():
    # atoms 0,1,2: classes {ctr,leaf j}; atoms 3,4,5: the class {leaves}, cut in three
    A, B = [0, 1, 2], [3, 4, 5]
    roles = [("ctr", set(A), blocks_of(A))]
    for j in range(3):
        U = {A[j]} | set(B)
        roles.append(("leaf%d" % (j + 1), U, blocks_of(U)))
    return Template("star4", 6, roles)


def t_tbd(c, D):
    """prism's difference cover: rank p computes (p, p) and, for each d = 1 .. c/2, one block
    {p + a, p + b} with a - b = d (a, b in D). For even c the blocks of d = c/2 are split by
    halves of k between their two ranks, each reading the far row block only in its half."""
    pair = {}
    for d in range(1, c // 2 + 1):
        opts = [(a, b) for a in D for b in D if (a - b) % c == d]
        opts.sort(key=lambda ab: (0 not in ab, ab))
        pair[d] = opts[0]
    roles = []
    need = []
    for p in range(c):
        U = {(p + a) % c for a in D}
        roles.append(("r%d" % p, U, blocks_of(U)))
        base = {p}
        for d in range(1, (c - 1) // 2 + 1):
            base |= {(p + pair[d][0]) % c, (p + pair[d][1]) % c}
        need.append(base)
    if c % 2:
        pats = [tuple((p, frozenset(need[p])) for p in range(c))] if c > 1 else None
    else:
        a, b = pair[c // 2]
        pats = []
        for phase in (0, 1):
            P_ = []
            for p in range(c):
                U = set(need[p])
                if (p < c // 2) == (phase == 0):
                    U |= {(p + a) % c, (p + b) % c}
                P_.append((p, frozenset(U)))
            pats.append(tuple(P_))
    return Template("tbd%d{%s}" % (c, ",".join(map(str, D))), c, roles, pats)


def difference_cover(c):
    """A smallest difference cover of Z_c holding 0 and 1 (brute force; c <= 16)."""
    if c == 1:
        return [0]
    for size in range(2, c + 1):
        for rest in itertools.combinations(range(2, c), size - 2):
            D = [0, 1] + list(rest)
            if len({(a - b) % c for a in D for b in D}) == c:
                return D
    return list(range(c))


def af(mu, a, b):
    """Fraction of all pairs in block (a, b)."""
    return mu[a] * mu[a] if a == b else 2 * mu[a] * mu[b]


PEN = 1000.0


def solve_component(T, mu, n, Pp, exact=False, z_fixed=None):
    """Least words touched (area units) by a component: template T, atom measures mu, ranks per
    role n, P' working ranks. exact: work balance as an equality (else penalised slack).
    Returns (value, solution dict) or (inf, None)."""
    nR = len(T.roles)
    d = sum(n) / Pp
    act = [t for t in range(nR) if n[t] > 0]
    pats = [S for S in T.pats if all(n[t] > 0 for t, _ in S)]
    if not pats:
        return math.inf, None
    var = [("x", p) for p in range(len(pats))]
    for p, S in enumerate(pats):
        for t, U in S:
            for b in T.can(t, U):
                var.append(("g", p, T.bidx[b], t))
    for t in act:
        for b in T.roles[t][2]:
            var.append(("z", T.bidx[b], t))
    if not exact:
        for t in act:
            var += [("sp", t), ("sm", t)]
    vid = {v: i for i, v in enumerate(var)}
    V = len(var)
    cost = np.zeros(V)
    integ = np.zeros(V)
    lb = np.zeros(V)
    ub = np.full(V, np.inf)
    for p, S in enumerate(pats):
        cost[vid[("x", p)]] = sum(sum(mu[a] for a in U) for t, U in S)
    for t in act:
        for b in T.roles[t][2]:
            i = vid[("z", T.bidx[b], t)]
            cost[i] = n[t] * af(mu, *b) / 2
            ub[i] = 1
            if z_fixed is not None:
                lb[i] = ub[i] = z_fixed.get((T.bidx[b], t), 0)
            else:
                integ[i] = 1
        if not exact:
            cost[vid[("sp", t)]] = cost[vid[("sm", t)]] = PEN
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def add(entries, l, h):
        nonlocal r
        for c_, v_ in entries:
            rows.append(r)
            cols.append(c_)
            vals.append(v_)
        lo.append(l)
        hi.append(h)
        r += 1

    add([(vid[("x", p)], 1) for p in range(len(pats))], d, d)
    for p, S in enumerate(pats):
        for bi, blk in enumerate(T.blocks):
            add([(vid[("x", p)], -1)] + [(vid[("g", p, bi, t)], 1) for t, U in S if blk in T.can(t, U)], 0, 0)
    gby = {}
    for v, i in vid.items():
        if v[0] == "g":
            gby.setdefault(v[3], []).append((i, v))
    for t in act:
        e = [(i, af(mu, *T.blocks[v[2]])) for i, v in gby.get(t, [])]
        if not exact:
            e += [(vid[("sp", t)], -1), (vid[("sm", t)], 1)]
        tol = 1e-5 / Pp if exact else 0.0  # "exact": balanced to one part in 10^5
        add(e, n[t] / Pp - tol, n[t] / Pp + tol)
        for b in T.roles[t][2]:
            bi = T.bidx[b]
            add([(i, 1) for i, v in gby.get(t, []) if v[2] == bi] + [(vid[("z", bi, t)], -d)], -np.inf, 0)
    A = coo_matrix((vals, (rows, cols)), shape=(r, V)).tocsr()
    res = milp(cost, constraints=LinearConstraint(A, lo, hi), integrality=integ, bounds=Bounds(lb, ub),
               options={"time_limit": 5})
    if res.x is None:
        return math.inf, None
    x = res.x
    sol = dict(T=T, mu=np.array(mu, float), n=list(n), d=d, pats=pats, Pp=Pp,
               xp={p: x[vid[("x", p)]] for p in range(len(pats)) if x[vid[("x", p)]] > 1e-12},
               g={(v[1], v[2], v[3]): x[i] for v, i in vid.items() if v[0] == "g" and x[i] > 1e-12},
               z={(v[1], v[2]): int(round(x[i])) for v, i in vid.items() if v[0] == "z"})
    sol["slack"] = 0.0 if exact else sum(x[vid[("sp", t)]] + x[vid[("sm", t)]] for t in act)
    val = res.fun - PEN * sol["slack"]
    sol["touched"] = val
    return res.fun, sol


def exact_component(sol):
    """Re-solve with the regions found and the work balance exact; None when it cannot balance."""
    T = sol["T"]
    v, s = solve_component(T, sol["mu"], sol["n"], sol["Pp"], exact=True, z_fixed=sol["z"])
    return s if s is not None and math.isfinite(v) else None


def optimise(T, n, Pp, param=None, starts=None, iters=200, z=None):
    """Nelder-Mead over the atom measures (param maps free parameters to mu); z fixes the
    blocks each role computes (an LP then, no integers)."""
    if param is None:
        if T.m == 1:
            v, s = solve_component(T, [1.0], n, Pp)
            return exact_component(s) if s else None

        def param(y):
            y = np.abs(y)
            return y / y.sum() if y.sum() > 0 else None
        starts = starts or [np.ones(T.m) / T.m]

    def f(y):
        mu = param(y)
        if mu is None:
            return 1e9
        return solve_component(T, mu, n, Pp, z_fixed=z)[0]

    best = (math.inf, None)
    for s0 in starts:
        r = minimize(f, s0, method="Nelder-Mead", options={"maxiter": iters, "xatol": 1e-8, "fatol": 1e-11})
        if r.fun < best[0]:
            best = (r.fun, r.x)
    if not math.isfinite(best[0]):
        return None
    v, s = solve_component(T, param(best[1]), n, Pp, z_fixed=z)
    return exact_component(s) if s else None


def perfect_regions(T):
    """For a perfect difference set (each pair of row blocks in one rank's set, as Fano's):
    rank p computes (p, p) and the pairs of its blocks."""
    z = {}
    for t, (_, U, R) in enumerate(T.roles):
        for b in R:
            z[(T.bidx[b], t)] = 1 if (b[0] != b[1] or b[0] == t) else 0
    return z


def star_param(y):
    a, b = abs(y[0]), abs(y[1])
    s = 3 * (a + b)
    return np.array([a, a, a, b, b, b]) / s if s > 0 else None


# ---------------------------------------------------------------- the whole scheme: ownership LP


def max_receive(comps, detail=False):
    """Least largest receive (units n^2) over ownership, for components on disjoint parts of k.
    Per role: A read, minus A owned, plus partial sums received; a role's n ranks share it.
    detail: also return the ownership (A: share of each reader-set cell per role; C: the
    fraction of each overlay cell each role owns) and each role's receive."""
    roles = []  # (component index, role index)
    for k, s in enumerate(comps):
        for t, nt in enumerate(s["n"]):
            if nt > 0:
                roles.append((k, t))
    rid = {r: i for i, r in enumerate(roles)}
    nroles = len(roles)
    Aread = np.zeros(nroles)
    Scells = {}  # (k, reader roles) -> size
    for k, s in enumerate(comps):
        T, mu = s["T"], s["mu"]
        for p, xp in s["xp"].items():
            S = s["pats"][p]
            for t, U in S:
                Aread[rid[(k, t)]] += xp * sum(mu[a] for a in U)
            for a in range(T.m):
                R = tuple(sorted(rid[(k, t)] for t, U in S if a in U))
                if R:
                    Scells[R] = Scells.get(R, 0.0) + xp * mu[a]
    # C overlay: elementary row intervals from every component's atom boundaries
    cuts = {0.0, 1.0}
    for s in comps:
        cuts |= set(np.round(np.cumsum(s["mu"]), 12))
    cuts = sorted(c for c in cuts if 0 <= c <= 1)
    ints = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1) if cuts[i + 1] - cuts[i] > 1e-12]

    def atom_of(s, x):
        cs = np.cumsum(s["mu"])
        return int(min(np.searchsorted(cs, x, side="right"), len(cs) - 1))

    ccells = []  # (area in area units, [(role id, ranks)])
    for i in range(len(ints)):
        for j in range(i, len(ints)):
            li, lj = ints[i][1] - ints[i][0], ints[j][1] - ints[j][0]
            area = (li * li if i == j else 2 * li * lj) / 2
            touch = []
            for k, s in enumerate(comps):
                a = atom_of(s, (ints[i][0] + ints[i][1]) / 2)
                b = atom_of(s, (ints[j][0] + ints[j][1]) / 2)
                bi = s["T"].bidx[(min(a, b), max(a, b))]
                for t, nt in enumerate(s["n"]):
                    if nt > 0 and s["z"].get((bi, t), 0):
                        touch.append((rid[(k, t)], nt))
            ccells.append((area, touch))
    # variables: o[(cell, role)], kappa[(ccell, role)], t
    var = []
    for R in Scells:
        for q in R:
            var.append(("o", R, q))
    for ci, (area, touch) in enumerate(ccells):
        for q, _ in touch:
            var.append(("k", ci, q))
    var.append(("t",))
    vid = {v: i for i, v in enumerate(var)}
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    for R, size in Scells.items():
        for q in R:
            rows.append(r)
            cols.append(vid[("o", R, q)])
            vals.append(1.0)
        lo.append(size)
        hi.append(size)
        r += 1
    for ci, (area, touch) in enumerate(ccells):
        h = sum(nt for _, nt in touch)
        for q, _ in touch:
            rows.append(r)
            cols.append(vid[("k", ci, q)])
            vals.append(1.0)
        lo.append((h - 1) * area)
        hi.append((h - 1) * area)
        r += 1
    nr = [0] * nroles
    for (k, t), q in rid.items():
        nr[q] = comps[k]["n"][t]
    per_role = [[] for _ in range(nroles)]
    for v, i in vid.items():
        if v[0] == "o":
            per_role[v[2]].append((i, -1.0))
        elif v[0] == "k":
            per_role[v[2]].append((i, 1.0))
    for q in range(nroles):
        for i, c in per_role[q]:
            rows.append(r)
            cols.append(i)
            vals.append(c)
        rows.append(r)
        cols.append(vid[("t",)])
        vals.append(-nr[q])
        lo.append(-np.inf)
        hi.append(-Aread[q])
        r += 1
    c = np.zeros(len(var))
    c[vid[("t",)]] = 1
    A = coo_matrix((vals, (rows, cols)), shape=(r, len(var))).tocsr()
    res = linprog(c, bounds=(0, None), method="highs", **_split(A, lo, hi))
    if not detail:
        return res.fun if res.status == 0 else math.inf
    x = res.x
    own_a = {(R, q): x[vid[("o", R, q)]] / Scells[R] for R in Scells for q in R if Scells[R] > 0}
    own_c = []
    for ci, (area, touch) in enumerate(ccells):
        h = sum(nt for _, nt in touch)
        fr = {q: (x[vid[("k", ci, q)]] / ((h - 1) * area) if h > 1 else 1.0) for q, _ in touch}
        own_c.append(fr)
    recv = np.array([Aread[q] for q in range(nroles)])
    for v, i in vid.items():
        if v[0] == "o":
            recv[v[2]] -= x[i]
        elif v[0] == "k":
            recv[v[2]] += x[i]
    return dict(t=res.fun, roles=roles, nr=nr, own_a=own_a, own_c=own_c, ccells=ccells, ints=ints,
                recv=recv, Aread=Aread, Scells=Scells)


def _split(A, lo, hi):
    """linprog wants equalities and <= rows apart."""
    lo, hi = np.array(lo), np.array(hi)
    eq = np.isclose(lo, hi)
    out = {}
    if eq.any():
        out["A_eq"] = A[eq]
        out["b_eq"] = hi[eq]
    if (~eq).any():
        out["A_ub"] = A[~eq]
        out["b_ub"] = hi[~eq]
    return out


def touched(comps):
    return sum(s["touched"] for s in comps)


def describe(comps):
    parts = []
    for s in comps:
        T = s["T"]
        mult = ",".join(str(x) for x in s["n"])
        mu = ""
        if T.m > 1 and not T.name.startswith("tbd"):
            mu = " mu=" + "/".join("%.3f" % x for x in s["mu"])
        parts.append("%s[%s]%s" % (T.name, mult, mu))
    return " + ".join(parts)


def describe_plan(comps, P):
    """What a rank does and owns, in words an implementation can follow."""
    d = max_receive(comps, detail=True)
    out = []
    k0 = 0.0
    rank = 0
    ranks_of = {}
    for ci, s in enumerate(comps):
        T, mu = s["T"], s["mu"]
        cuts = np.concatenate([[0], np.cumsum(mu)])
        out.append("slice %d: columns [%.4f, %.4f) of k (%s); row atoms: %s" % (
            ci, k0, k0 + s["d"], T.name, ", ".join("a%d=[%.4f,%.4f)" % (a, cuts[a], cuts[a + 1]) for a in range(T.m))))
        for t, nt in enumerate(s["n"]):
            if nt:
                ranks_of[(ci, t)] = list(range(rank, rank + nt))
                rank += nt
                used = [T.blocks[b] for (b, tt), z in s["z"].items() if tt == t and z]
                out.append("  role %s: ranks %s; computes blocks %s (C region %.4f of the triangle)" % (
                    T.roles[t][0], ranks_of[(ci, t)], used, sum(af(mu, *b) for b in used)))
        for p, xp in sorted(s["xp"].items()):
            S = s["pats"][p]
            parts = []
            for t, U in S:
                blks = [(T.blocks[b], s["g"].get((p, b, t), 0) / xp) for b in range(len(T.blocks)) if s["g"].get((p, b, t), 0) > 1e-9]
                if blks:
                    parts.append("%s reads %s, does %s" % (T.roles[t][0], sorted(U),
                                 ", ".join("%s%s" % (b, "" if f > 1 - 1e-6 else " x%.3f" % f) for b, f in blks)))
            out.append("  pattern on %.4f of k: %s" % (xp, "; ".join(parts)))
        k0 += s["d"]
    out.append("each pattern's columns are cut into n equal runs for a role of n ranks, its ranks taking one run each"
               " (x f: that share of the pattern's columns)")
    out.append("ownership of A (share of each cell kind its readers own; a role's share is split evenly over its ranks):")
    for (R, q), f in sorted(d["own_a"].items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if len(R) > 1 and f > 1e-6:
            ci, t = d["roles"][q]
            names = "+".join("%d:%s" % (d["roles"][r][0], comps[d["roles"][r][0]]["T"].roles[d["roles"][r][1]][0]) for r in R)
            out.append("  cells read by {%s}: %d:%s owns %.4f" % (names, ci, comps[ci]["T"].roles[t][0], f))
    out.append("ownership of C (overlay cells computed by more than one rank: fraction each role owns):")
    for (area, touch), fr in zip(d["ccells"], d["own_c"]):
        if len(touch) > 1 or (touch and touch[0][1] > 1):
            pass
    agg = {}
    for (area, touch), fr in zip(d["ccells"], d["own_c"]):
        key = tuple(sorted(q for q, _ in touch))
        a = agg.setdefault(key, [0.0, {}])
        a[0] += area
        for q, f in fr.items():
            a[1][q] = a[1].get(q, 0) + f * area
    for key, (area, fr) in sorted(agg.items()):
        names = ", ".join("%d:%s %.4f" % (d["roles"][q][0], comps[d["roles"][q][0]]["T"].roles[d["roles"][q][1]][0],
                                         fr[q] / area) for q in key)
        out.append("  C area %.4f computed by {%s}" % (area, names))
    for q, (ci, t) in enumerate(d["roles"]):
        out.append("receive per rank, %d:%s: %.5f n^2 (%.3f B(P))" % (ci, comps[ci]["T"].roles[t][0], d["recv"][q] / d["nr"][q],
                                                                 d["recv"][q] / d["nr"][q] / bound(P)))
    return "\n".join(out)


# ---------------------------------------------------------------- the search


class Search:
    def __init__(self):
        self.cache = {}
        self.tbd = {c: t_tbd(c, difference_cover(c)) for c in range(2, 17)}
        self.flat_cache = {}

    def comp(self, key, fn):
        if key not in self.cache:
            self.cache[key] = fn()
        return self.cache[key]

    def flat(self, c, Pp):
        """Best single-slice cover of c ranks (one rank per role) on a slice of depth c/P'."""
        out = []
        if c == 1:
            out.append(self.comp(("k", 1, Pp), lambda: optimise(t_full(), [1], Pp)))
        else:
            T = self.tbd[c]
            out.append(self.comp(("tbd", c, 1, Pp), lambda: exact_component(solve_component(T, np.ones(c) / c, [1] * c, Pp)[1])))
        if c == 2:
            mu = np.array([1 - 0.5 ** 0.5, 0.5 ** 0.5])
            out.append(self.comp(("chain", (1, 1), Pp), lambda: exact_component(solve_component(t_chain(2), mu, [1, 1], Pp)[1])))
        if c == 4:
            # the flat star's best measures do not depend on the slice depth (its C is 1/2 in any case)
            if "star4flat" not in self.cache:
                s0 = optimise(t_star4(), [1, 1, 1, 1], 4, param=star_param, starts=[np.array([0.2, 0.13])], iters=120)
                self.cache["star4flat"] = s0["mu"] if s0 else None
            mu = self.cache["star4flat"]
            if mu is not None:
                out.append(self.comp(("star4", (1, 1, 1, 1), Pp),
                                     lambda: exact_component(solve_component(t_star4(), mu, [1, 1, 1, 1], Pp)[1])))
        out = [s for s in out if s is not None]
        return min(out, key=lambda s: s["touched"]) if out else None

    def candidates(self, Pp):
        """Schemes with exactly P' working ranks: lists of components."""
        cands = []
        # prism's family: G slices x difference cover of c, G c = P'
        for c in range(1, Pp + 1):
            if Pp % c:
                continue
            G = Pp // c
            if c == 1:
                s = self.comp(("k", G, Pp), lambda: optimise(t_full(), [G], Pp))
            else:
                T = self.tbd[c]
                s = self.comp(("tbd", c, G, Pp), lambda: exact_component(solve_component(T, np.ones(c) / c, [G] * c, Pp)[1]))
            if s:
                cands.append(("prism family", [s]))
        # heterogeneous groups: slices of different c, each with its best flat cover (dynamic programming)
        best = {0: (0.0, [])}
        for tot in range(1, Pp + 1):
            opts = []
            for c in range(1, min(tot, 13) + 1):
                if tot - c in best:
                    s = self.flat(c, Pp)
                    if s:
                        opts.append((best[tot - c][0] + s["touched"], best[tot - c][1] + [s]))
            if opts:
                best[tot] = min(opts, key=lambda o: o[0])
        if Pp in best and len(best[Pp][1]) > 1:
            cands.append(("heterogeneous slices", best[Pp][1]))
        # chains (nested triangles), k split inside each layer
        for L in ((2, 3) if Pp <= 9 else (2,)):
            for parts in itertools.product(range(1, Pp), repeat=L):
                if sum(parts) != Pp:
                    continue
                s = self.comp(("chain", parts, Pp), lambda: optimise(t_chain(L), list(parts), Pp,
                                                                      starts=[chain_start(parts, Pp)], iters=120))
                if s:
                    cands.append(("chain", [s]))
        # the c = 3 cover with unequal atoms and multiplicities (roles take turns over k)
        for n in itertools.combinations_with_replacement(range(Pp, 0, -1), 3):
            if sum(n) != Pp or n[0] - n[2] > 1 or n == (1, 1, 1):
                continue
            s = self.comp(("tri3", n, Pp), lambda: optimise(t_tri3(), list(n), Pp, iters=100, starts=[
                np.ones(3) / 3, np.array([0.55, 0.37, 0.08]), np.array([0.41, 0.24, 0.35])]))
            if s:
                cands.append(("tri3 rotating", [s]))
        # star4 with multiplicities (leaves alike)
        for nc in range(1, Pp):
            if (Pp - nc) % 3 == 0 and (Pp - nc) // 3 >= 1 and abs(nc - (Pp - nc) // 3) <= 1:
                nl = (Pp - nc) // 3
                s = self.comp(("star4", nc, nl, Pp), lambda: optimise(t_star4(), [nc, nl, nl, nl], Pp, param=star_param,
                                                                      starts=[np.array([0.2, 0.13])], iters=150))
                if s:
                    cands.append(("star4 rotating", [s]))
        # Fano with multiplicities G or G+1 (which lines get G+1: a few choices)
        if Pp >= 8:
            G, extra = divmod(Pp, 7)
            if G >= 1 and extra:
                for chosen in fano_choices(extra):
                    n = [G + (1 if p in chosen else 0) for p in range(7)]
                    s = self.comp(("fano", tuple(n), Pp), lambda: optimise(self.tbd[7], n, Pp, iters=700,
                                                                          z=perfect_regions(self.tbd[7])))
                    if s:
                        cands.append(("Fano rotating", [s]))
        return cands


def chain_start(parts, Pp):
    """Layer measures that balance a chain whose layers are k split: layer j's pairs are n_j / P'."""
    rem, mu = Pp, []
    prev = 1.0
    for p in parts:
        rem -= p
        s = math.sqrt(rem / Pp)
        mu.append(prev - s)
        prev = s
    mu = np.maximum(np.array(mu), 1e-3)
    return mu / mu.sum()


def fano_choices(extra):
    # lines of tbd7{0,1,3}: role p reads {p, p+1, p+3}; the group acts transitively on lines,
    # so one choice for 1, 2, 5, 6 extra lines; for 3 and 4 two kinds (concurrent or not)
    base = {1: [[0]], 2: [[0, 1]], 3: [[0, 1, 2], [0, 1, 5]], 4: [[3, 4, 5, 6], [2, 3, 4, 6]],
            5: [[0, 1, 2, 3, 4]], 6: [[0, 1, 2, 3, 4, 5]]}
    return base.get(extra, [])


# ---------------------------------------------------------------- lower bounds


def kappa(W):
    """Least sum of row fractions read by the ranks at one column doing pair fractions W[i]
    (every row pair once): some rank reads all rows (1 + sum of the others' sqrt w), or every
    row is read by two or more ranks, whose families give 2 + the rest (a triangle of 2-sets),
    3/2 + half the rest (2-sets through one rank) or 3 (no 2-sets)."""
    S = np.sqrt(np.maximum(W, 0))
    tot = S.sum(1)
    srt = -np.sort(-S, axis=1)
    m1 = srt[:, 0]
    top3 = srt[:, :3].sum(1) if S.shape[1] >= 3 else np.full(len(S), np.inf)
    return np.minimum(np.minimum(1 + tot - m1, 2 + tot - top3), np.minimum(1.5 + 0.5 * (tot - m1), 3.0))


def relax_lb(c, cand, P):
    """Least mean column cost when rank i computes at most the fraction c[i] of the pairs in
    any column and 1/P of all pairs over k: an LP over the vertices of {0<=w<=c, sum w=1}
    (kappa is a minimum of concave functions, so vertices suffice)."""
    V = []
    for free, up in cand:
        w = np.zeros(P)
        w[up] = c[up]
        w[free] = 1 - w.sum()
        if -1e-12 <= w[free] <= c[free] + 1e-12:
            V.append(np.clip(w, 0, None))
    if not V:
        return math.inf
    V = np.array(V)
    res = linprog(kappa(V), A_eq=np.vstack([V.T, np.ones(len(V))]), b_eq=[1 / P] * P + [1], bounds=(0, None),
                  method="highs")
    return res.fun if res.status == 0 else math.inf


def certify(P, budget, tol=1e-3, target=None):
    """Branch and bound over c in [1/P, 1]^P (sorted; the relaxation is symmetric): every scheme
    touches in total at least min_c (sum c / 2 + relax_lb(c)). relax_lb falls as c grows, so a
    box [lo, hi] is bounded by sum lo / 2 + relax_lb(hi). Returns (certified lower bound on the
    words touched over all ranks, best point value, finished?)."""
    cand = []
    for free in range(P):
        others = [i for i in range(P) if i != free]
        for bits in itertools.product([0, 1], repeat=P - 1):
            cand.append((free, [o for o, b in zip(others, bits) if b]))
    t0 = time.time()
    lo0, hi0 = np.full(P, 1 / P), np.ones(P)

    def bnd(lo, hi):
        return lo.sum() / 2 + relax_lb(hi, cand, P) - 1e-7

    heap = [(bnd(lo0, hi0), 0, lo0, hi0)]
    cnt = 1
    best_up = math.inf if target is None else target + tol
    finished = False
    while heap:
        if time.time() - t0 > budget:
            break
        b, _, lo, hi = heapq.heappop(heap)
        if b >= best_up - tol:
            heapq.heappush(heap, (b, cnt, lo, hi))
            finished = True
            break
        mid = (lo + hi) / 2
        if target is None:
            best_up = min(best_up, mid.sum() / 2 + relax_lb(mid, cand, P))
        k = int(np.argmax(hi - lo))
        for half in (0, 1):
            l2, h2 = lo.copy(), hi.copy()
            if half == 0:
                h2[k] = mid[k]
            else:
                l2[k] = mid[k]
            if any(l2[i] > h2[i + 1] for i in range(P - 1)):
                continue
            v = bnd(l2, h2)
            if v < best_up - tol:
                heapq.heappush(heap, (v, cnt, l2, h2))
                cnt += 1
    if not heap:
        finished = True
    cert = min([h[0] for h in heap] + [best_up - tol])
    return cert, best_up, finished


# ---------------------------------------------------------------- fixed covers: a sharper column cost


@functools.lru_cache(maxsize=None)
def _leaf_subsets(b):
    """Every non-empty set L of b leaves, as (L, its mask over the leaves), in itertools order: the sets
    the star case's Hall constraints run over. Example: b = 2 gives ((0,), [T, F]), ((1,), [F, T]),
    ((0, 1), [T, T]). Cached: the branch and bounds ask for them at every box; do not modify."""
    return tuple((L, np.isin(np.arange(b), L)) for r in range(1, b + 1) for L in itertools.combinations(range(b), r))


def star_case_at_least(w, h, B, tau, max_boxes=4_000_000):
    """True if every layout of the column lemma's star case (no rank reads every row; the rows read by
    exactly two ranks are read by hub h and a rank of B, each of B having some) reads at least tau rows.

    Rows: X_b read by h and b only (x_b, b in B), Y the other rows h reads (y, three readers or more),
    O the rows h does not read (o = 1 - x - y; each is read by every rank of B, and by three or more).
    Rows read: F1 = 2x + 3y + max(3, |B|) o, and F2 = (1 - o) + sum_B max(o + x_b, sqrt w_b) + the other
    ranks' sqrt w (a rank of B reads X_b and all of O; any rank reads at least sqrt of its share). Pairs
    only some ranks can do bound the shares: X_b x X_c (b != c) only h; X_b x O only b; so for L in B,
    2 o x(L) <= w(L) and x^2 - sum_{b not in L} x_b^2 + 2 o x(L) <= w_h + w(L); pairs touching O avoid h,
    1 - (1 - o)^2 <= 1 - w_h. Interval branch and bound over boxes of (x_B, o): a box goes once one
    constraint fails at all its points or max(F1, F2) >= tau at all of them (every term is monotone in
    each variable, so the box's corners bound it). Example: w = 1/4 each certifies 2.32 and not 2.33; the
    layout X = (0.125, 0.25, 0.25), O = 0.375 reads 2.375."""
    P_ = len(w)
    leaves = [j for j in range(P_) if j != h]
    wl = np.array([w[j] for j in leaves])
    wh = w[h]
    B = sorted(B)
    k = len(B)
    cO = max(3, k)
    sB, wB = np.sqrt(wl[B]), wl[B]
    s_out = sum(math.sqrt(wl[j]) for j in range(len(leaves)) if j not in B)
    masks = [inL for _, inL in _leaf_subsets(k)]
    lo, hi = np.zeros((1, k + 1)), np.ones((1, k + 1))
    seen = 0
    eps = 1e-12   # a box goes only if a constraint fails by more than rounding
    while len(lo):
        seen += len(lo)
        if seen > max_boxes:
            return False
        xl, xh, ol, oh = lo[:, :k], hi[:, :k], lo[:, k], hi[:, k]
        keep = xl.sum(1) + ol <= 1 + eps
        cross = xl.sum(1) ** 2 - (xl ** 2).sum(1)
        keep &= wh - cross >= -eps
        for m in masks:
            keep &= wh + wB[m].sum() - cross - (xl[:, m] ** 2).sum(1) - 2 * ol * xl[:, m].sum(1) >= -eps
            keep &= wB[m].sum() - 2 * ol * xl[:, m].sum(1) >= -eps
        keep &= (1 - ol) ** 2 - wh >= -eps
        f1 = 3 - np.minimum(xh.sum(1), 1 - ol) + (cO - 3) * ol
        f2 = 1 - oh + np.maximum(ol[:, None] + xl, sB[None, :]).sum(1) + s_out
        keep &= np.maximum(f1, f2) < tau
        lo, hi = lo[keep], hi[keep]
        if not len(lo):
            return True
        width = hi - lo
        if width.max() < 1e-6:
            return False
        d = np.argmax(width, 1)
        idx = np.arange(len(lo))
        mid = (lo[idx, d] + hi[idx, d]) / 2
        lo2, hi2 = lo.copy(), hi.copy()
        hi[idx, d] = mid
        lo2[idx, d] = mid
        lo, hi = np.vstack([lo, lo2]), np.vstack([hi, hi2])
    return True


_column_cost = {}


def column_cost_lb(w, steps=14):
    """A lower bound on the rows read at a column whose ranks do the pair shares w (all > 0): the
    column lemma's cases 1, 2 and 4 as in kappa(), case 3 (the star) certified to within 3/2^steps by
    bisection over star_case_at_least for every hub and every set B."""
    w = [float(v) for v in w]
    key = (tuple(w), steps)
    if key not in _column_cost:
        _column_cost[key] = _column_cost_lb(w, steps)
    return _column_cost[key]


def _column_cost_lb(w, steps):
    a = len(w)
    s = np.sqrt(w)
    if a == 1:
        return 1.0
    case1 = min(1 + s.sum() - s[i] for i in range(a))
    case2 = min((2 + s.sum() - s[list(t)].sum() for t in itertools.combinations(range(a), 3)), default=math.inf)
    # ranks with equal shares are interchangeable: one hub per share value, and B up to which ranks
    # of each share value it holds (w = 1/7 each: 7 x 64 choices of (h, B) become 7)
    cases = []
    for h in sorted({w.index(v) for v in w}):
        leaves = [w[j] for j in range(a) if j != h]
        groups = [[j for j in range(a - 1) if leaves[j] == v] for v in sorted(set(leaves))]
        for counts in itertools.product(*[range(len(g) + 1) for g in groups]):
            cases.append((h, [j for g, c in zip(groups, counts) for j in g[:c]]))
    lo, hi = 1.5, 3.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        ok = all(star_case_at_least(w, h, B, mid) for h, B in cases)
        lo, hi = (mid, hi) if ok else (lo, mid)
    return min(case1, case2, lo, 3.0)


def int_partitions(n, largest=None):
    largest = largest or n
    if n == 0:
        yield ()
        return
    for first in range(min(n, largest), 0, -1):
        for rest in int_partitions(n - first, first):
            yield (first,) + rest


def fixed_cover_bounds(P):
    """Every scheme made of groups with one fixed cover each: group g has p_g ranks and the share p_g/P of
    k; its roles (m_j ranks, taking turns over the group's columns) each update one fixed set of pairs,
    m_j/p_g of the triangle, at every column. It touches T = sum_g [sum_j m_j^2/(2 p_g) +
    (p_g/P) kappa(m/p_g)]. Returns [(T lower bound with column_cost_lb, with the lemma's kappa, groups)],
    least first. Example: P = 7, groups (1,1,1,1) and (1,1,1) (star on 4/7 of k, tbd3 on 3/7):
    4 x 1/8 + 3 x 1/6 + 4/7 x 2.3224 + 3/7 x 2 = 3.1842."""
    cost, lemma = {}, {}
    for roles in {r for p in range(1, P + 1) for r in int_partitions(p)}:
        w = np.array(roles) / sum(roles)
        lemma[roles] = 1.0 if len(roles) == 1 else kappa(np.pad(w, (0, max(0, 3 - len(w))))[None])[0]
        cost[roles] = lemma[roles] if len(roles) <= 3 else max(lemma[roles], column_cost_lb(w))
    out = set()
    for sizes in int_partitions(P):
        for groups in itertools.product(*[list(int_partitions(p)) for p in sizes]):
            out.add(tuple(sorted(groups, key=lambda r: (-sum(r), r))))

    def total(groups, kap):
        return sum(sum(m * m for m in r) / (2 * sum(r)) + sum(r) / P * kap[r] for r in groups)
    return sorted((total(g, cost), total(g, lemma), g) for g in out)


def ratio_of_total(total, P):
    return (total - 1.5) / P / bound(P)


# ---------------------------------------------------------------- every scheme: one column at a time


def min_sqrt_quad(alpha, s, lo, hi, q):
    """min over w in [lo, hi] of alpha sqrt(w) + q w^2 - s w (alpha >= 0, q > 0), elementwise. Candidates:
    the ends and the stationary points, u = sqrt(w) solving u^3 - (s / 2q) u + alpha / 4q = 0 (its two
    largest roots; the third is negative). Example: alpha = 0, s = 2, q = 3.5 gives w = 2/7, -2/7."""
    alpha, s, lo, hi = np.broadcast_arrays(*[np.asarray(v, float) for v in (alpha, s, lo, hi)])

    def g(w):
        return alpha * np.sqrt(w) + q * w * w - s * w
    best = np.minimum(g(lo), g(hi))
    p, r = -s / (2 * q), alpha / (4 * q)
    three = p < 0
    pp = np.where(three, p, -1.0)
    rad = 2 * np.sqrt(-pp / 3)
    phase = np.arccos(np.clip((3 * r / (2 * pp)) * np.sqrt(-3 / pp), -1, 1)) / 3
    for k in range(2):
        u = rad * np.cos(phase - 2 * np.pi * k / 3)
        w = u * u
        ok = three & (u >= 0) & (w >= lo) & (w <= hi)
        best = np.where(ok, np.minimum(best, g(np.where(ok, w, lo))), best)
    return best


def min_quad(s, lo, hi, q):
    """min over w in [lo, hi] of q w^2 - s w, elementwise."""
    w = np.clip(np.asarray(s, float) / (2 * q), lo, hi)
    return q * w * w - s * w


def min_max_sqrt_quad(alpha, m, s, lo, hi, q):
    """min over w in [lo, hi] of alpha max(m, sqrt w) + q w^2 - s w: the flat piece up to m^2, then the
    sqrt piece."""
    flat_hi = min(hi, m * m)
    flat = alpha * m + min_quad(s, lo, max(flat_hi, lo), q) if flat_hi >= lo else np.inf
    rise_lo = max(lo, m * m)
    rise = min_sqrt_quad(alpha, s, rise_lo, max(hi, rise_lo), q) if hi >= rise_lo else np.inf
    return np.minimum(flat, rise)


class CTerm:
    """What one rank's share w of a column's pairs costs in C words touched, a(w), summed over the ranks
    with a constant: sum over ranks of (C words touched) >= const + integral over columns of sum_i a(w_i).
    Equal shares (imbalance 0): a(w) = (P/2) w^2, const 0. Shares f_i within imbalance d of 1/P: rank i
    touches at least the integral of w_i^2 / (2 f_i) = theta/2 + integral of (w_i^2 - theta w_i) / (2 f_i)
    (the integral of w_i is f_i), and since f_i lies in [(1 - d)/P, (1 + d)/P] the integrand is at least
    a(w) = P/(2(1 + d)) (w^2 - theta w) where w >= theta, P/(2(1 - d)) (w^2 - theta w) below; const =
    P theta/2. Example: P = 7, d = 0.05, theta = 1/3: three ranks doing a third each cost 7/6, as with
    equal shares; moving 0.01 from one to another costs 7/6 - 0.00076."""

    def __init__(self, P, imbalance=0.0, theta=1 / 3):
        d = float(imbalance)
        if not 0 <= d < 1:
            raise ValueError("imbalance must be in [0, 1)")
        if d == 0:   # one piece: the same bound as theta's two with d = 0, evaluated once
            self.pieces, self.const, self.convex = [(0.0, 1.0, P / 2, 0.0)], 0.0, (P / 2, 0.0)
        else:
            ql, qh = P / (2 * (1 - d)), P / (2 * (1 + d))
            # each piece: on [lo, hi], q w^2 - lin w
            self.pieces = [(0.0, theta, ql, ql * theta), (theta, 1.0, qh, qh * theta)]
            self.const = P * theta / 2
            self.convex = (qh, ql * theta)   # qh w^2 - ql theta w <= a(w) on [0, 1]: a convex minorant

    def a(self, w):
        """a(w), elementwise."""
        w = np.asarray(w, float)
        v = np.full(w.shape, np.inf)
        for lo, hi, q, lin in self.pieces:
            v = np.where((w >= lo) & (w <= hi), np.minimum(v, q * w * w - lin * w), v)
        return v

    def total(self, w):
        """const + sum of a over one column's share vector w (the C words it implies, per unit of k)."""
        return self.const + float(self.a(w).sum())

    def _least(self, f, lo, hi):
        best = np.inf
        for plo, phi, q, lin in self.pieces:
            a, b = max(lo, plo), min(hi, phi)
            if a <= b:
                best = np.minimum(best, f(q, lin, a, b))
        return best

    def min_quad(self, s, lo, hi):
        """min over w in [lo, hi] of a(w) - s w, elementwise in s."""
        return self._least(lambda q, lin, a, b: min_quad(s + lin, a, b, q), lo, hi)

    def min_sqrt_quad(self, alpha, s, lo, hi):
        """min over w in [lo, hi] of alpha sqrt(w) + a(w) - s w, elementwise."""
        return self._least(lambda q, lin, a, b: min_sqrt_quad(alpha, s + lin, a, b, q), lo, hi)

    def min_max_sqrt_quad(self, alpha, m, s, lo, hi):
        """min over w in [lo, hi] of alpha max(m, sqrt w) + a(w) - s w, elementwise."""
        return self._least(lambda q, lin, a, b: min_max_sqrt_quad(alpha, m, s + lin, a, b, q), lo, hi)


def case_bounds(P, C=None):
    """Least of kappa's concave cases plus the C term (CTerm; equal shares by default: (P/2) |w|^2) over
    every column share vector w (sum 1, P ranks), by Lagrange duality on sum w = 1 (the terms are
    separable, so each multiplier mu gives a bound exactly): some rank reads every row, 1 + sum of the
    others' sqrt w; a triangle of 2-sets, 2 + the sqrt w of all but three; every row read thrice, 3.
    Example: P = 7, equal shares, the triangle case, mu = 7/3: 2 + 7/3 - 3 (7/18) = 19/6 (three ranks
    doing a third each, exactly)."""
    C = C or CTerm(P)
    mu = np.linspace(0, 3 * P, 30001)
    one = C.const + 1 + mu + C.min_quad(mu, 0, 1) + (P - 1) * C.min_sqrt_quad(1.0, mu, 0, 1)
    tri = C.const + 2 + mu + 3 * C.min_quad(mu, 0, 1) + (P - 3) * C.min_sqrt_quad(1.0, mu, 0, 1)
    three = C.const + 3 + mu + P * C.min_quad(mu, 0, 1)
    return {"one rank reads every row": float(one.max()) - 1e-9, "a triangle of 2-sets": float(tri.max()) - 1e-9,
            "every row read three times or more": float(three.max()) - 1e-9}


def _star_box(P, b, box, C):
    """What star_box_bound needs of a box, or None where no point of the star case lies in it (checked
    on the box's ends by plain arithmetic, never by a solver, and only when a constraint fails by more
    than eps, so that rounding never empties a box). Every quantity errs the safe way: lower
    bounds from the box's low corner where they grow with x and o, F2 <= t_hi for the caps."""
    eps = 1e-9
    nO, cO = P - 1 - b, max(3, b)
    xlo, xhi, (olo, ohi), (Mlo, Mhi), (Vlo, Vhi), (tlo, thi) = box
    if nO == 0:
        Mlo = Mhi = Vlo = Vhi = 0.0
    Mlo = max(Mlo, Vlo)
    if nO and (Mlo > Mhi or Vhi * nO < Mlo):
        return None
    X = xlo.sum()
    lh, uh = X * X - (xlo ** 2).sum(), min(1.0, (1 - olo) ** 2)   # only h does X_b x X_c; h reads 1 - o
    a = 3 - min(xhi.sum(), 1 - olo) + (cO - 3) * olo              # F1 >= a
    c0 = 1 - ohi
    m, lb = olo + xlo, 2 * olo * xlo                             # leaf b reads O and X_b; only b does X_b x O
    s = thi - c0                                                 # F2 <= t_hi: sum_B max(m, sqrt w) + others <= s
    rV = 1 / math.sqrt(Vhi) if nO and Vhi > 0 else 0.0           # others: sum sqrt w_j >= M / sqrt(V)
    base = m.sum() + Mlo * rV
    if lh > uh + eps or X + olo > 1 + eps or a > thi + eps or base > s + eps:
        return None
    uh = max(uh, lh)
    U = np.minimum(1.0, np.maximum(s - base + m, 0.0) ** 2)
    Mmax = min(Mhi, nO * Vhi, (s - m.sum()) * math.sqrt(Vhi)) if nO else 0.0
    hall = []
    for L, inL in _leaf_subsets(b):
        QL = X * X - (xlo[~inL] ** 2).sum() + 2 * olo * xlo[inL].sum()   # only h and L do these pairs
        RL = 2 * olo * xlo[inL].sum()                                     # only L does X(L) x O
        if QL > uh + U[inL].sum() + eps or RL > U[inL].sum() + eps:
            return None
        hall.append((L, QL, RL))
    if np.any(lb > U + eps) or (nO and Mmax < Mlo - eps) or lh + lb.sum() + Mlo > 1 + eps or uh + U.sum() + Mmax < 1 - eps:
        return None
    U, Mmax = np.maximum(U, lb), max(Mmax, Mlo)
    t0 = max(tlo, a, c0 + base)                                   # t = max(F1, F2) >= both
    return SimpleNamespace(C=C, nO=nO, lh=lh, uh=uh, m=m, lb=lb, U=U, s=s, rV=rV, Mlo=Mlo, Mmax=Mmax, Vlo=Vlo,
                           Vhi=Vhi, t0=t0, hall=hall)


def _star_box_multipliers(b, d, ntan=64):
    """Multipliers for star_box_bound's dual from a linear relaxation of the box (sqrt w by its chord,
    w^2 by tangents, every row elastic so that it always solves): mu on sum w = 1, nu on F2 <= t_hi,
    and per Hall constraint the pair (eta_Q, eta_R). Only a guess: the bound never relies on it. The C
    term's pieces give tangents at points inside each, the others' total its convex minorant."""
    C, nO, lb, U = d.C, d.nO, d.lb, d.U
    sl, su = np.sqrt(lb), np.sqrt(U)
    wide = U - lb > 1e-15
    be = np.where(wide, (su - sl) / np.where(wide, U - lb, 1.0), 0.0)
    al = sl - be * lb
    # variables: w_h, w_1..w_b, M, y_1..y_b (y >= max(m, chord)), z_h, z_1..z_b, z_O (z >= the C term), e (elastic)
    ih, iw, iM, iy, iz = 0, 1, 1 + b, 2 + b, 2 + 2 * b
    ie = iz + b + 2
    nv = ie + 1
    cost = np.zeros(nv)
    cost[iz:ie] = 1
    cost[ie] = 100.0
    rows, rhs = [], []

    def row(coef, r):
        v = np.zeros(nv)
        for k, c in coef:
            v[k] += c
        v[ie] = -1
        rows.append(v)
        rhs.append(r)
    row([(iy + j, 1) for j in range(b)] + [(iM, d.rV)], d.s)
    for L, QL, RL in d.hall:
        row([(ih, -1)] + [(iw + j, -1) for j in L], -QL)
        row([(iw + j, -1) for j in L], -RL)
    for j in range(b):
        if be[j] > 0:
            row([(iw + j, be[j]), (iy + j, -1)], -al[j])

    def tangents(iv, izv, pieces, lo, hi):
        # z >= coef w^2 - lin w, by its tangents at points of [lo, hi] inside each piece
        for plo, phi, coef, lin in pieces:
            a, b_ = max(lo, plo), min(hi, phi)
            for g in (np.linspace(a, b_, ntan) if a <= b_ else []):
                row([(iv, 2 * coef * g - lin), (izv, -1)], coef * g * g)
    tangents(ih, iz, C.pieces, d.lh, d.uh)
    for j in range(b):
        tangents(iw + j, iz + 1 + j, C.pieces, lb[j], U[j])
    qc, lc = C.convex
    if nO:
        tangents(iM, iz + 1 + b, [(0.0, 1.0, qc / nO, lc)], d.Mlo, d.Mmax)
        row([(iM, -lc), (iz + 1 + b, -1)], -qc * d.Vlo ** 2)   # z_O >= qc V^2 - lc M
    Aeq = np.zeros((1, nv))
    Aeq[0, ih:iM + 1] = 1
    bounds = [(d.lh, d.uh)] + [(lb[j], U[j]) for j in range(b)] + [(d.Mlo, d.Mmax) if nO else (0, 0)]
    bounds += [(d.m[j], None) for j in range(b)] + [(None, None)] * (b + 2) + [(0, None)]
    # the equality is elastic too: w's sum may miss 1 at the same price
    Aub = np.array(rows)
    res = linprog(np.append(cost, [100.0, 100.0]), A_ub=np.hstack([Aub, np.zeros((len(rows), 2))]), b_ub=rhs,
                  A_eq=np.hstack([Aeq, [[1.0, -1.0]]]), b_eq=[1.0], bounds=bounds + [(0, None)] * 2, method="highs")
    if res.status != 0:
        return 0.0, 0.0, [(0.0, 0.0)] * len(d.hall)
    y = np.maximum(-res.ineqlin.marginals, 0.0)
    return res.eqlin.marginals[0], y[0], [(y[1 + 2 * i], y[2 + 2 * i]) for i in range(len(d.hall))]


def star_box_bound(P, b, box, tau, C=None, hint=None):
    """A lower bound on max(F1, F2) + the C term (CTerm; equal shares by default: (P/2) |w|^2) over the
    column lemma's star case (hub h, |B| = b leaves with rows X_b, P - 1 - b other ranks) restricted to
    box; inf where the box holds no point.
    box: x_lo, x_hi (the X_b, sorted down: the leaves are interchangeable), then (lo, hi) of o, M (the
    others' total share), V (their largest share) and t (= max(F1, F2)). A value >= tau only says the
    box cannot go below tau.
    The bound is the Lagrangian dual of the box's program, evaluated exactly: for multipliers mu (sum w
    = 1), nu >= 0 (F2 <= t_hi) and eta >= 0 (the Hall constraints), t_lo + mu - nu s + sum eta rhs +
    each rank's own least term (min_quad, min_max_sqrt_quad, min_sqrt_quad: exact), which by weak
    duality bounds every point whatever the multipliers. The others enter twice, one by one (each
    sqrt w_j and a(w_j), w_j <= V) and together (sum sqrt >= M / sqrt V, and the C term's convex minorant
    qc w^2 - lc w with sum w^2 >= max(V^2, M^2/nO));
    either is a lower bound on their least, so the larger is. The multipliers come from a linear
    relaxation and a search around them; a solver only guesses, the arithmetic decides.
    hint: the multipliers (mu, nu, eta) that did best on an enclosing box, tried first: a sub-box's
    dual at them is usually at least the enclosing box's, so a box its parent nearly settled needs no
    solver.
    Returns (bound, the multipliers that gave it)."""
    C = C or CTerm(P)
    d = _star_box(P, b, box, C)
    if d is None:
        return math.inf, hint
    nO, lh, uh, m, lb, U, s = d.nO, d.lh, d.uh, d.m, d.lb, d.U, d.s
    qc, lc = C.convex
    rV, Mlo, Mmax, Vlo, Vhi = d.rV, d.Mlo, d.Mmax, d.Vlo, d.Vhi

    def hall_terms(eta):
        const = sum(e1 * QL + e2 * RL for (e1, e2), (L, QL, RL) in zip(eta, d.hall))
        eh = sum(e1 for e1, _ in eta)
        eb = np.zeros(b)
        for (e1, e2), (L, _, _) in zip(eta, d.hall):
            for j in L:
                eb[j] += e1 + e2
        return const, eh, eb

    def dual(mu, nu, es):
        v = C.const + d.t0 - nu * s + mu + es * const + C.min_quad(mu + es * eh, lh, uh)
        for j in range(b):
            v = v + C.min_max_sqrt_quad(nu, m[j], mu + es * eb[j], lb[j], U[j])
        if nO:
            one_by_one = nO * C.min_sqrt_quad(nu, mu, 0.0, Vhi)
            c = mu - nu * rV + lc
            kink = math.sqrt(nO) * Vlo
            flat = qc * Vlo * Vlo - np.maximum(c * Mlo, c * min(Mmax, kink)) if min(Mmax, kink) >= Mlo else np.inf
            r_lo = max(Mlo, kink)
            rise = min_quad(c, r_lo, max(Mmax, r_lo), qc / nO) if Mmax >= r_lo else np.inf
            v = v + np.maximum(one_by_one, np.minimum(flat, rise))
        return v
    best, found = -math.inf, None
    for guess in ([hint] if hint is not None else []) + [None]:
        mu0, nu0, eta = guess or _star_box_multipliers(b, d)
        const, eh, eb = hall_terms(eta)
        v = float(dual(np.array([[mu0]]), np.array([[nu0]]), 1.0)[0, 0]) - 1e-9
        if v > best:
            best, found = v, (mu0, nu0, eta)
        if best >= tau:
            return best, found
    for es in (1.0, 0.5, 0.0):   # scaling eta down only where the full eta came close
        mu = (mu0 + np.linspace(-2, 2, 81))[:, None]
        nu = np.linspace(0, 3 * nu0 + 1, 61)[None, :]
        V = dual(mu, nu, es)
        i = np.unravel_index(np.argmax(V), V.shape)
        m0, n0, bv = mu[i[0], 0], nu[0, i[1]], V[i]
        for sc in (0.05, 0.01, 0.002):
            mu = (m0 + np.linspace(-sc, sc, 21))[:, None]
            nu = np.maximum(0, n0 + np.linspace(-sc, sc, 21))[None, :]
            V = dual(mu, nu, es)
            i = np.unravel_index(np.argmax(V), V.shape)
            if V[i] > bv:
                m0, n0, bv = mu[i[0], 0], nu[0, i[1]], V[i]
        if bv - 1e-9 > best:
            best, found = bv - 1e-9, (float(m0), float(n0), [(es * e1, es * e2) for e1, e2 in eta])
        if best >= tau or best < tau - 0.02:
            break
    return best, found


def _star_root(b, tau, nO):
    """The star case's whole box: x_B in [0, 1]^b, o in [0, 1], M and V in [0, 1] (0 without other ranks),
    t in [2, tau]; no multipliers yet."""
    one = 1.0 if nO else 0.0
    return (np.zeros(b), np.ones(b), [(0.0, 1.0), (0.0, one), (0.0, one), (2.0, tau)], None)


def _star_halves(box, d):
    """box cut in two across coordinate d (the first b are x_B, then o, M, V, t)."""
    xlo, xhi, rest, hint = box
    b = len(xlo)
    if d < b:
        mid = (xlo[d] + xhi[d]) / 2
        h1, l2 = xhi.copy(), xlo.copy()
        h1[d] = l2[d] = mid
        return [(xlo, h1, rest, hint), (l2, xhi, rest, hint)]
    lo, hi = rest[d - b]
    r1, r2 = list(rest), list(rest)
    r1[d - b], r2[d - b] = (lo, (lo + hi) / 2), ((lo + hi) / 2, hi)
    return [(xlo, xhi, r1, hint), (xlo, xhi, r2, hint)]


def _star_sorted(xlo, xhi):
    """Whether a box can hold x_B sorted down: no x_{i+1}'s low end above x_i's high end."""
    return all(xlo[i + 1] <= xhi[i] for i in range(len(xlo) - 1))


def _star_width(box):
    xlo, xhi, rest, _ = box
    return np.concatenate([xhi - xlo, [hi - lo for lo, hi in rest]])


def star_pieces(P, b, tau, depth):
    """The star case's box cut depth times across its widest side, as star_certify would: 2^depth pieces
    (fewer once the sorted x_B empties some), to certify one by one or on several cores.
    Example: P = 7, b = 3, tau = 3.1433, depth 3: t's range [2, tau] (the widest, 1.14) is halved, then
    x_1's and x_2's: 8 pieces. A later cut of x_2 in [1/2, 1] into [3/4, 1] beside x_1 in [0, 1/2] would
    break x_1 >= x_2, and that piece is dropped."""
    boxes = [_star_root(b, tau, P - 1 - b)]
    for _ in range(depth):
        boxes = [h for box in boxes for h in _star_halves(box, int(np.argmax(_star_width(box))))]
        boxes = [box for box in boxes if _star_sorted(box[0], box[1])]
    return boxes


def star_certify(P, b, tau, C=None, max_boxes=2_000_000, min_width=2e-4, start=None, pause=None):
    """Branch and bound over the star case's layout (x_B sorted down, o) and the others' (M, V) and t:
    True when every box's star_box_bound reaches tau. start: the boxes to cover (star_pieces; the whole
    case by default). Returns (certified, boxes, the box that failed); after pause boxes, (None, boxes,
    the boxes still to cover), so that a caller can share them out."""
    C = C or CTerm(P)
    stack = list(start) if start is not None else [_star_root(b, tau, P - 1 - b)]
    n = 0
    while stack:
        if pause is not None and n >= pause:
            return None, n, stack
        box = stack.pop()
        xlo, xhi, rest, hint = box
        n += 1
        if n > max_boxes:
            return False, n, "box budget spent"
        if not _star_sorted(xlo, xhi):
            continue
        value, hint = star_box_bound(P, b, (xlo, xhi) + tuple(rest), tau, C, hint)
        if value >= tau:
            continue
        width = _star_width(box)
        d = int(np.argmax(width))
        if width[d] < min_width:
            return False, n, (xlo, xhi, rest)
        stack += _star_halves((xlo, xhi, rest, hint), d)
    return True, n, None


def _star_slacks(wh, wB, x, o):
    """The star case's constraints at a point, each as a slack that is >= 0 where it holds: the rows
    (X + o <= 1), the pairs only the hub can do, the hub's pairs outside O, and for every set L of
    leaves the Hall constraints (only L does X(L) x O; only h and L do the pairs that need them)."""
    X = x.sum()
    g = [1 - X - o, wh - (X * X - (x ** 2).sum()), (1 - o) ** 2 - wh]
    for _, inL in _leaf_subsets(len(x)):
        RL = 2 * o * x[inL].sum()
        g += [wB[inL].sum() - RL, wh + wB[inL].sum() - (X * X - (x[~inL] ** 2).sum() + RL)]
    return g


def _star_f1(X, o, b):
    """F1, the rows read when every row of O is read three times or more (|B| times, if more)."""
    return 3 - X + (max(3, b) - 3) * o


def star_value(P, b, C, wh, wB, wO, x, o):
    """max(F1, F2) + the C term at a point of the star case (hub share wh, leaves' shares wB reading rows
    x, other ranks' shares wO, o the rows the hub does not read), or None where a constraint of the
    case's program fails (docs/data-movement.md, "A sharper column cost"). Example: P = 7, b = 3,
    x = (1/3, 1/3, 0), o = 1/4, wh = 0.4, wB = (0.2, 0.2, 0.2), no other work: the Hall constraints
    hold (0.2 >= 2 x_b o = 1/6), F1 = 3 - 2/3 = 2.333 and F2 = 3/4 + 2 (1/4 + 1/3) + sqrt(0.2) = 2.364."""
    if abs(wh + wB.sum() + wO.sum() - 1) > 1e-12 or min(_star_slacks(wh, wB, x, o)) < 0:
        return None
    f1 = _star_f1(x.sum(), o, b)
    f2 = 1 - o + np.maximum(o + x, np.sqrt(wB)).sum() + np.sqrt(wO).sum()
    return max(f1, f2) + C.total(np.concatenate([[wh], wB, wO]))


def star_least(P, b, C, trials=40, seed=0):
    """The least max(F1, F2) + C term that local search finds over the star case with |B| = b: SciPy's
    SLSQP from `trials` random starts, every constraint asked to hold with 1e-8 to spare so that the
    point it ends at is feasible exactly (star_value checks it). A feasible point, so an upper bound on
    the case's least, which star_certify's lower bound must stay under: the gap between the two is the
    room a certificate has. Returns (value, (wh, wB, wO, x, o)); (inf, None) if no start ends feasible."""
    nO = P - 1 - b
    # z = [wh, wB (b), wO (nO), x (b), o, t, y (b)]: t >= F1, F2; y_j >= max(o + x_j, sqrt wB_j)
    iB, iO, ix = 1, 1 + b, P
    io, it, iy = ix + b, ix + b + 1, ix + b + 2
    nv, gap = iy + b, 1e-8

    def split(z):
        return z[0], z[iB:iO], z[iO:ix], z[ix:io], z[io], z[it], z[iy:]

    def ineq(z):
        wh, wB, wO, x, o, t, y = split(z)
        g = _star_slacks(wh, wB, x, o)
        g += [t - _star_f1(x.sum(), o, b), t - (1 - o + y.sum() + np.sqrt(np.maximum(wO, 1e-16)).sum())]
        g += list(y - (o + x)) + list(y - np.sqrt(np.maximum(wB, 1e-16)))
        return np.array(g) - gap

    def cost(z):
        return z[it] + C.total(np.clip(z[:ix], 0, 1))
    cons = [{"type": "eq", "fun": lambda z: z[:ix].sum() - 1}, {"type": "ineq", "fun": ineq}]
    bounds = [(0, 1)] * (P + b + 1) + [(0, 5)] + [(0, 2)] * b
    rng = np.random.default_rng(seed)
    best, point = math.inf, None
    for _ in range(trials):
        z = rng.random(nv)
        z[:ix] /= z[:ix].sum()
        z[it], z[iy:] = 3.5, 1.0
        res = minimize(cost, z, method="SLSQP", bounds=bounds, constraints=cons,
                       options={"maxiter": 500, "ftol": 1e-12})
        wh, wB, wO, x, o, _, _ = split(np.clip(res.x, 0, 1))
        w = np.concatenate([[wh], wB, wO])
        w /= w.sum()
        here = (w[0], w[iB:iO], w[iO:ix], x, o)
        v = star_value(P, b, C, *here)
        if v is not None and v < best:
            best, point = v, here
    return best, point


def theta_scan_report(P, ratio, imbalance, thetas, trials):
    """Markdown: the column bound's least over every column case (kappa + the C term): the concave cases'
    lower bounds (case_bounds, exact duality) and each star case's least found by local search
    (star_least, an upper bound), for each theta with uneven shares (one row with equal shares, where
    theta plays no part). Their least over the cases, less tau, is the most room a certificate
    (--any-scheme) can have; where it is negative no certificate of this kind can reach ratio x B(P),
    and where it is small the branch and bound needs many boxes."""
    t_start = time.time()
    tau = 1.5 + P * ratio * bound(P)
    thetas = list(thetas) if imbalance else [None]
    if not thetas:
        raise SystemExit("--theta-scan: no theta given (--thetas)")
    middle = [b for b in range(1, P) if abs(b - (P - 1) / 2) < 1]   # P = 7: |B| = 3; P = 8: 3 and 4
    head = ["theta", "one rank reads every row", "a triangle of 2-sets", "every row read thrice"]
    head += ["star, abs(B) = %d (found)" % b for b in range(1, P)] + ["least", "least / B(P)", "least - tau"]
    rows = []
    for theta in thetas:
        C = CTerm(P, imbalance, theta) if imbalance else CTerm(P)
        vals = list(case_bounds(P, C).values())
        for b in range(1, P):
            vals.append(star_least(P, b, C, trials * (3 if b in middle else 1), seed=b)[0])
        rows.append((theta, vals))
    if imbalance:
        title = "shares within %g%% of the mean: the C term's theta, case by case" % (100 * imbalance)
        model = ("With shares within d = %g of 1/P, `--any-scheme %d --imbalance %g --theta THETA` bounds every "
                 "scheme by the least over one column's share vector w of kappa(w) + P theta/2 + sum a(w_i) "
                 "(CTerm); any theta gives a valid bound, each gives another." % (imbalance, P, imbalance))
    else:
        title = "equal shares: the column bound, case by case"
        model = ("With equal shares, `--any-scheme %d` bounds every scheme by the least over one column's share "
                 "vector w of kappa(w) + (P/2) abs(w)^2." % P)
    lines = ["# Distributed SYRK, P = %d, %s" % (P, title), ""]
    lines.extend(provenance(t_start))
    lines.append("")
    lines.append(model + " Per case: the concave cases' least (a lower bound, by duality) and, for the star "
                 "with abs(B) leaves, the least that local search found (star_least: %d starts, three times as "
                 "many for abs(B) = %s; a feasible point, so an upper bound on that case's least). A "
                 "certificate at %.2f B(P) needs every case above tau = %.5f; *least - tau* is the most room it "
                 "can have, and where a star point lies below tau no such certificate exists." %
                 (trials, " and ".join(map(str, middle)), ratio, tau))
    lines.append("")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---:|" * len(head))
    for theta, vals in rows:
        least = min(vals)
        lines.append("| %s | " % ("%.3f" % theta if theta is not None else "-") +
                     " | ".join("%.4f" % v for v in vals) +
                     " | %.4f | %.4f | %+.4f |" % (least, ratio_of_total(least, P), least - tau))
    theta, vals = max(rows, key=lambda r: min(r[1]))
    least = min(vals)
    lines.append("")
    where = head[1 + vals.index(least)]
    if least >= tau:
        lines.append("Most room%s: %+.4f, the least case being %s." %
                     (" at theta = %.3f" % theta if theta is not None else "", least - tau, where))
    elif where.startswith("star"):
        lines.append("No certificate of this kind can reach %.2f B(P)%s: %s has a point at %.4f, %.4f B(P)." %
                     (ratio, " at any theta tried" if theta is not None else "", where, least,
                      ratio_of_total(least, P)))
    else:   # a dual bound under tau proves nothing either way: the case needs a sharper bound
        lines.append("Undecided: %s is bounded below only by %.4f (%.4f B(P)), under tau; a certificate needs a "
                     "sharper bound there." % (where, least, ratio_of_total(least, P)))
    return "\n".join(lines) + "\n"


def _star_job(args):
    P, b, tau, imbalance, theta, boxes, pause = args
    t0 = time.time()
    ok, n, where = star_certify(P, b, tau, CTerm(P, imbalance, theta), start=boxes, pause=pause)
    return b, ok, n, time.time() - t0, where


def _save_checkpoint(path, state):
    """Write state to path atomically (a temporary file, then a rename)."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(state, f)
    os.replace(tmp, path)


def any_scheme_report(P, ratio, imbalance=0.0, theta=1 / 3, pause=2000, checkpoint=None, every=300.0,
                      stop_after=None):
    """Markdown: certifies that every scheme on P ranks doing equal work (or, with imbalance d, work within
    d of the mean) touches T >= tau, tau the words of ratio x B(P), through T >= min over column share
    vectors w of kappa(w) + the C term (CTerm).
    checkpoint: a file where the star cases' progress (their tallies and every box not yet covered) is
    saved every `every` seconds; a run given the file of an unfinished one with the same arguments
    goes on from it, and the report says over how many parts and commits it ran. stop_after: seconds after
    which the run saves its checkpoint and returns None instead of a report."""
    if not 3 <= P <= 8:
        raise SystemExit("--any-scheme: P must be 3 to 8 (the star case's Hall constraints grow as 2^P)")
    t_start = time.time()
    tau = 1.5 + P * ratio * bound(P)
    C = CTerm(P, imbalance, theta)
    cases = case_bounds(P, C)
    # Each case starts as up to 2^6 pieces, the middle sizes of B first (most Hall constraints and other
    # ranks: they take longest). A job covers its boxes for at most `pause` boxes, then hands back what it
    # has left, dealt into two new jobs, so the cores stay shared however the work falls.
    # Example: a job ends with its stack [B1, B2, B3] (B3 next): jobs [B1, B3] and [B2] go back in the queue.
    key = (P, ratio, imbalance, theta, pause)
    order = sorted(range(1, P), key=lambda b: abs(b - (P - 1) / 2))
    if checkpoint and os.path.exists(checkpoint):
        with open(checkpoint, "rb") as f:
            state = pickle.load(f)
        if state["key"] != key:
            raise SystemExit("--checkpoint %s: saved for P, ratio, imbalance, theta, pause = %s, not %s" %
                             (checkpoint, state["key"], key))
        print("resuming from %s: %d jobs to go, %d earlier parts" % (checkpoint, len(state["pending"]),
                                                                     len(state["parts"])), file=sys.stderr)
    else:
        state = dict(key=key, parts=[],   # parts: (commit, seconds) of earlier runs
                     stars={b: [True, 0, 0.0, None] for b in range(1, P)},   # certified, boxes, core-seconds, failed box
                     pending=[(b, [piece]) for b in order for piece in star_pieces(P, b, tau, 6)])
    stars, parts = state["stars"], state["parts"]
    workers = os.cpu_count() or 1
    saved_at = time.time()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        running = {pool.submit(_star_job, (P, b, tau, imbalance, theta, boxes, pause)): (b, boxes)
                   for b, boxes in state["pending"]}
        while running:
            done = next(as_completed(running))
            del running[done]
            b, ok, boxes, secs, where = done.result()
            st = stars[b]
            st[1], st[2] = st[1] + boxes, st[2] + secs
            if ok is None and st[0]:
                for part in (where[0::2], where[1::2]):
                    if part:
                        running[pool.submit(_star_job, (P, b, tau, imbalance, theta, part, pause))] = (b, part)
            elif ok is False and st[0]:
                st[0], st[3] = False, where
            print("star |B| = %d: %s, %d boxes in %.0f s; the case so far %d boxes, %.0f core-seconds; %d jobs "
                  "queued or running, %.0f s since the start" %
                  (b, {True: "covered", False: "NOT certified", None: "paused"}[ok], boxes, secs, st[1], st[2],
                   len(running), time.time() - t_start), file=sys.stderr, flush=True)
            stop = stop_after is not None and time.time() - t_start >= stop_after
            if checkpoint and running and (stop or time.time() - saved_at >= every):
                # jobs still running are saved whole: a run going on from here redoes them
                _save_checkpoint(checkpoint, dict(key=key, stars=stars, pending=list(running.values()),
                                                  parts=parts + [(git_commit(), time.time() - t_start)]))
                saved_at = time.time()
            if stop and running:
                pool.shutdown(cancel_futures=True)
                return None
    if checkpoint and os.path.exists(checkpoint):
        os.remove(checkpoint)   # finished: the report holds it all
    stars = [(b, ok, boxes, secs, where) for b, (ok, boxes, secs, where) in sorted(stars.items())]
    held = all(v >= tau for v in cases.values()) and all(ok for _, ok, _, _, _ in stars)
    if imbalance:
        who = "doing shares of the multiply-adds within %g%% of the mean" % (100 * imbalance)
        why = ("rank i updates w_i(l) of the pairs at column l and f_i of them over k, f_i within %g%% of 1/P, "
               "so the pairs it ever updates number at least the integral of w_i^2 / f_i = theta + the "
               "integral of (w_i^2 - theta w_i) / f_i, and T >= min over w of kappa(w) + P theta/2 + sum_i "
               "a(w_i), a(w) = P/(2(1 + d)) (w^2 - theta w) for w >= theta and P/(2(1 - d)) (w^2 - theta w) "
               "below (d = %g, theta = %.5f)" % (100 * imbalance, imbalance, theta))
        cterm = "P theta/2 + sum a(w)"
        title = "every scheme within %g%% of equal shares" % (100 * imbalance)
    else:
        who = "doing equal shares of the multiply-adds"
        why = ("rank i updates w_i(l) of the pairs at column l and 1/P of them over k, so the pairs it ever "
               "updates number at least P times the integral of w_i^2, and T >= min over w of kappa(w) + "
               "(P/2) |w|^2")
        cterm = "(P/2) abs(w)^2"
        title = "every scheme"
    lines = ["# Distributed SYRK, P = %d: %s, bounded one column at a time" % (P, title), ""]
    lines.extend(provenance(t_start, workers))
    if parts:
        lines.append("Resumed from a checkpoint: this run went on from %d earlier part(s) (%s); the star cases' "
                     "boxes and core-seconds below are summed over all parts, jobs cut off by a stop counted "
                     "once, in the part that finished them." %
                     (len(parts), ", ".join("%.0f s at commit %s" % (t, c) for c, t in parts)))
    lines.append("")
    lines.append("Claim checked: every scheme on %d ranks %s touches T >= %.5f words (units n^2, n = k), so its "
                 "volume is at least %.3f B(P) (B(P) = %.5f n^2 a rank, the SYRK bound's 3D case). Why: %s "
                 "(docs/data-movement.md, \"Every scheme misses 1.2× at P = 7\"), kappa the column lemma's "
                 "least rows read. Result: **%s**." %
                 (P, who, tau, ratio, bound(P), why, "holds" if held else "not certified"))
    lines.append("")
    lines.append("| column case (the column lemma's) | least of kappa + %s | >= %.5f |" % (cterm, tau))
    lines.append("|---|---:|---|")
    for name, v in cases.items():
        lines.append("| %s | %.5f | %s |" % (name, v, "yes" if v >= tau else "**no**"))
    lines.append("")
    lines.append("The star case (rows read by exactly two ranks all read by one hub h; |B| leaves have such rows), "
                 "by branch and bound over the layout (x_B, o), the other ranks' total and largest share and "
                 "t = max(F1, F2), each box bounded by star_box_bound: the exact Lagrangian dual of its program, "
                 "at multipliers a linear relaxation proposes (or, first, at those that did best on the box "
                 "it was cut from); each case's boxes shared among the cores used, its seconds summed over "
                 "them:")
    lines.append("")
    lines.append("| abs(B) | other ranks | >= %.5f | boxes | core-seconds | box left over |" % tau)
    lines.append("|---:|---:|---|---:|---:|---|")
    for b, ok, boxes, secs, where in stars:
        lines.append("| %d | %d | %s | %d | %.0f | %s |" % (b, P - 1 - b, "yes" if ok else "**no**", boxes, secs,
                                                          "-" if ok else str(where).replace("\n", " ")))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- prism's planner


def prism_schemes(binary, P):
    try:
        out = subprocess.run([binary, "plan", "4096", "4096", "4096", "--syrk", "UT", "--ranks", str(P), "--threads", "1"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^# rank level: .*scheme (.*)$", out, re.M)
    bm = re.search(r"SYRK lower bound ([0-9.]+) MB", out)
    if not m or not bm:
        return None
    rows = re.findall(r"^#\s+(\d+)\s+(\S.*?)\s{2,}([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(yes|no)\s*$", out, re.M)
    listed = [(int(r), s.strip(), float(v)) for r, s, v, _, _, _ in rows]
    return dict(chosen=m.group(1).strip(), bound_mb=float(bm.group(1)), listed=listed)


# ---------------------------------------------------------------- main


def git_commit():
    """The short hash of the commit this script's checkout is at, or "?"."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "?"
    except OSError:
        return "?"


def provenance(t_start, used=1):
    """The report's lines saying when, at which commit and on what machine (using how many of its cores) it ran."""
    now = datetime.datetime.utcnow()
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    commit = git_commit()
    return ["Generated by `scripts/syrk-small-p.py` on %s at %s UTC, commit %s." %
            (now.strftime("%Y-%m-%d"), now.strftime("%H:%M"), commit),
            "Machine: %s, %d cores (%d used), Python %s, NumPy %s, SciPy %s; %.0f s." %
            (cpu, os.cpu_count() or 0, used, platform.python_version(), np.__version__, __import__("scipy").__version__,
             time.time() - t_start),
            "Environment: %s (NumPy's OpenBLAS reads them; the figures are model arithmetic, not timings)." %
            ", ".join("%s=%s" % (v, os.environ[v]) if v in os.environ else "%s unset" % v
                      for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"))]


def emit(text, md):
    """Prints a report, and writes it to md when given."""
    print(text)
    if md:
        with open(md, "w") as f:
            f.write(text)


def fixed_covers_report(P):
    """Markdown: the least words touched by every fixed-cover scheme on P ranks, sharp and by the lemma."""
    if not 2 <= P <= 8:
        raise SystemExit("--fixed-covers: P must be 2 to 8 (the number of schemes and of stars grows fast)")
    t_start = time.time()
    rows = fixed_cover_bounds(P)
    target = 1.5 + P * 1.2 * bound(P)
    splits = sorted({r for p in range(4, P + 1) for r in int_partitions(p) if len(r) >= 4}, key=lambda r: (sum(r), r))
    costs = {r: column_cost_lb(np.array(r) / sum(r)) for r in splits}

    def name(groups):
        return " + ".join("(%s)" % ",".join(map(str, g)) for g in groups)
    lines = ["# Distributed SYRK, P = %d: every scheme of groups with one fixed cover each, bounded" % P, ""]
    lines.extend(provenance(t_start))
    lines.append("")
    lines.append("A scheme here cuts k into parts, one per group of ranks (a part's share of k is its group's "
                 "ranks / P); in its part a group's roles each update one fixed set of pairs at every column, "
                 "a role's ranks taking turns over the columns (docs/data-movement.md, \"SYRK on few ranks\"). "
                 "(m, ...) is a group with m ranks per role: on 7 ranks, (3,2,2) is prism's tbd3[3,2,2], "
                 "(1,1,1,1) + (1,1,1) the star on 4/7 of k beside tbd3 on 3/7, (7) the k split. T: words "
                 "touched by all ranks "
                 "together, units n^2 (n = k); volume / B(P) >= (T - 3/2) / (P B(P)). *Sharp*: the column "
                 "lemma's star case replaced by its certified refinement (`column_cost_lb`); *lemma*: the "
                 "column lemma alone.")
    lines.append("")
    lines.append("%d schemes. 1.2 B(P) is T <= %.4f. The least sharp bound over all of them: T >= %.4f, volume >= "
                 "%.3f B(P); schemes below 1.2 B(P) by the sharp bound: %d (by the lemma alone: %d)." %
                 (len(rows), target, rows[0][0], ratio_of_total(rows[0][0], P),
                  sum(r[0] <= target for r in rows), sum(r[1] <= target for r in rows)))
    lines.append("")
    lines.append("| scheme (groups) | T >=, sharp | volume / B(P) >= | T >=, lemma | volume / B(P) >= |")
    lines.append("|---|---:|---:|---:|---:|")
    for sharp, lem, g in sorted(rows, key=lambda r: r[1])[:12]:
        lines.append("| %s | %.4f | %.3f | %.4f | %.3f |" % (name(g), sharp, ratio_of_total(sharp, P), lem,
                                                         ratio_of_total(lem, P)))
    lines.append("")
    lines.append("The twelve schemes with the least lemma bound. Column costs (rows read per column, least) "
                 "for the role splits with four roles or more:")
    lines.append("")
    lines.append("| ranks per role | shares | lemma | sharp |")
    lines.append("|---|---|---:|---:|")
    for roles in splits:
        w = np.array(roles) / sum(roles)
        lines.append("| (%s) | %s | %.4f | %.4f |" % (",".join(map(str, roles)),
                                                    " ".join("%d/%d" % (m, sum(roles)) for m in roles),
                                                    kappa(w[None])[0], costs[roles]))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pmax", type=int, default=16)
    ap.add_argument("--prism", default=os.path.join(os.path.dirname(__file__), "..", "build", "apps", "prism"))
    ap.add_argument("--md", help="write the markdown report here")
    ap.add_argument("--bb-budget", type=float, default=20.0,
                    help="seconds of branch and bound per P (P = 3, 4, 6; six times that for P = 5)")
    ap.add_argument("--certify", type=int, help="only run the branch and bound for this P")
    ap.add_argument("--describe", type=int, help="only search this P and print its best scheme's plan and ownership")
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--any-scheme", type=int, metavar="P",
                    help="only certify that every scheme on P ranks (3 to 8) misses --ratio x the bound")
    ap.add_argument("--ratio", type=float, default=1.2, help="with --any-scheme: the ratio to certify (1.2)")
    ap.add_argument("--imbalance", type=float, default=0.0,
                    help="with --any-scheme: every rank's share of the multiply-adds within this fraction of the "
                         "mean (0.05: 5%%) instead of equal")
    ap.add_argument("--theta", type=float, default=1 / 3,
                    help="with --imbalance: the share at which the C term's bound changes slope (1/3)")
    ap.add_argument("--theta-scan", type=int, metavar="P",
                    help="only tabulate each column case's least on P ranks (with --imbalance, for each of --thetas)")
    ap.add_argument("--thetas", default="0.25,0.26,0.27,0.28,0.29,0.30,0.3333",
                    help="with --theta-scan: the thetas, comma-separated")
    ap.add_argument("--trials", type=int, default=40, help="with --theta-scan: local-search starts per star case")
    ap.add_argument("--checkpoint", metavar="FILE",
                    help="with --any-scheme: save the star cases' progress here every 5 minutes, and go on from "
                         "it if it holds an unfinished run with the same arguments")
    ap.add_argument("--stop-after", type=float, metavar="SECONDS",
                    help="with --checkpoint: save and stop once this many seconds have passed (exit status 3)")
    ap.add_argument("--fixed-covers", type=int, metavar="P",
                    help="only bound every scheme of groups with one fixed cover each on P ranks (P <= 8)")
    args = ap.parse_args()

    if args.fixed_covers:
        emit(fixed_covers_report(args.fixed_covers), args.md)
        return

    if args.theta_scan:
        emit(theta_scan_report(args.theta_scan, args.ratio, args.imbalance,
                               [float(v) for v in args.thetas.split(",")], args.trials), args.md)
        return

    if args.any_scheme:
        if args.stop_after is not None and not args.checkpoint:
            raise SystemExit("--stop-after needs --checkpoint (where the unfinished run is saved)")
        report = any_scheme_report(args.any_scheme, args.ratio, args.imbalance, args.theta,
                                   checkpoint=args.checkpoint, stop_after=args.stop_after)
        if report is None:
            print("stopped after %g s, unfinished; run the same command again to go on from %s" %
                  (args.stop_after, args.checkpoint), file=sys.stderr)
            sys.exit(3)
        emit(report, args.md)
        return

    if args.certify:
        P = args.certify
        cert, up, fin = certify(P, args.budget)
        print("P=%d: every scheme touches >= %.5f (units n^2) in total; relaxation point %.5f; %s" %
              (P, cert, up, "finished" if fin else "budget spent"))
        print("volume / B(P) >= %.4f" % ratio_of_total(cert, P))
        return

    if args.describe:
        P = args.describe
        search = Search()
        cands = sorted(((touched(c), k, c) for k, c in search.candidates(P)), key=lambda x: x[0])[:4]
        best = min(((max_receive(c), k, c) for _, k, c in cands), key=lambda x: x[0])
        print("P=%d: %s (%s), volume %.5f n^2 = %.4f B(P)" % (P, describe(best[2]), best[1], best[0], best[0] / bound(P)))
        print(describe_plan(best[2], P))
        return

    t_start = time.time()
    search = Search()
    best_by_Pp = {}
    log = []
    for Pp in range(2, args.pmax + 1):
        cands = search.candidates(Pp)
        scored = []
        for kind, comps in cands:
            scored.append((touched(comps), kind, comps))
        scored.sort(key=lambda x: x[0])
        # the largest receive over ownership for the leanest few
        final = []
        for tot, kind, comps in scored[:4]:
            final.append((max_receive(comps), tot, kind, comps))
        prism_fam = [x for x in scored if x[1] == "prism family"]
        for tot, kind, comps in prism_fam[:1]:
            final.append((max_receive(comps), tot, kind, comps))
        final.sort(key=lambda x: x[0])
        best_by_Pp[Pp] = final
        log.append("P'=%d: %d candidates, %.0f s so far" % (Pp, len(cands), time.time() - t_start))
        print(log[-1], file=sys.stderr, flush=True)

    lower = {2: (0.25 / bound(2), "closed form (docs/data-movement.md)")}
    for P in range(3, min(6, args.pmax) + 1):
        budget = args.bb_budget * (6 if P == 5 else 1)
        cert, up, fin = certify(P, budget, tol=1e-3 if P < 5 else 2e-3)
        lower[P] = (ratio_of_total(cert, P), "relaxation, branch and bound %s" % ("finished" if fin else "cut at %g s" % budget))
        print("P=%d bound: %.4f (%s)" % (P, lower[P][0], lower[P][1]), file=sys.stderr, flush=True)

    prism_ok = os.path.exists(args.prism)
    lines = []
    lines.append("# Distributed SYRK on few ranks: least volume, searched and bounded (square shape)")
    lines.append("")
    lines.extend(provenance(t_start))
    lines.append("")
    lines.append("Volume: the largest number of words a rank receives, in units of n^2 (n = k, continuous; "
                 "MB for n = k = 4096 doubles = units x 134.2). B(P): the SYRK bound's 3D case, "
                 "3/2 P^(-2/3) - 3/2 P^(-1). prism's ratios are its planner's own (exact n = 4096, "
                 "`prism plan 4096 4096 4096 --syrk UT --ranks P`), the others continuous; the two differ "
                 "by about 0.1% on the same scheme. *Idle* columns let P' < P ranks work (P/P' times the flops "
                 "per rank); the 1.2x target is judged with all P ranks working. Lower bound: on volume / B(P) "
                 "for every scheme with all P ranks doing equal work (docs/data-movement.md, \"SYRK on few ranks\").")
    lines.append("")
    lines.append("| P | B(P) | B(P) MB | prism picks | its ratio | prism's least, all P | prism's least, idle allowed | "
                 "search, all P: ratio | scheme | search, idle allowed | lower bound | vs prism's least, all P |")
    lines.append("|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for P in range(2, args.pmax + 1):
        B = bound(P)
        pr = prism_schemes(args.prism, P) if prism_ok else None
        if pr:
            ex = bound_exact(N4096, N4096, P)
            chosen = [v for r, s, v in pr["listed"] if s == pr["chosen"]]
            pick_ratio = chosen[0] / pr["bound_mb"] if chosen else float("nan")
            allP = [v for r, s, v in pr["listed"] if r == P]
            anyP = [v for r, s, v in pr["listed"] if 1 < r <= P]
            pa = min(allP) / pr["bound_mb"] if allP else float("nan")
            pi = min(anyP) / pr["bound_mb"] if anyP else float("nan")
            pick = "`%s`" % pr["chosen"]
        else:
            pick, pick_ratio = "(no binary)", float("nan")
            fam = [x for x in best_by_Pp[P] if x[2] == "prism family"]
            pa = fam[0][0] / B if fam else float("nan")
            pi = float("nan")
        mine = best_by_Pp[P][0]
        ratio_all = mine[0] / B
        idle = min((best_by_Pp[q][0][0], q) for q in range(2, P + 1))
        idle_s = "%.3f (P'=%d)" % (idle[0] / B, idle[1]) if idle[1] < P else "%.3f" % (idle[0] / B)
        lb = lower.get(P)
        lb_s = "%.3f" % lb[0] if lb else "-"
        if lb and "cut" in lb[1]:
            lb_s += " (partial)"
        gain = 1 - ratio_all / pa if pa == pa else float("nan")
        lines.append("| %d | %.5f | %.3f | %s | %.3f | %.3f | %.3f | %.3f | %s | %s | %s | %s |" % (
            P, B, mb(B * N4096 * N4096), pick, pick_ratio, pa, pi, ratio_all,
            "%s (%s)" % (describe(mine[3]), mine[2]), idle_s, lb_s,
            "%+.1f%%" % (-100 * gain) if gain == gain else "-"))
    lines.append("")
    lines.append("Scheme notation: template[ranks per role] with the atom measures (row fractions) where they "
                 "are not equal; + joins components on disjoint parts of k (each gets k x its ranks / P). "
                 "k[G]: the k split over G ranks; tbd_c{D}: prism's difference cover; chainL: nested triangles, "
                 "layer j (measure mu_j, outermost first) computed by its own ranks, each reading layers j.. over "
                 "its share of k; tri3: atoms 0,1,2, roles 01, 02, 12 reading those atoms; star4: atoms "
                 "{ctr,leaf j} x3 then the leaves' class in three, roles ctr, leaf1..3.")
    lines.append("")
    lines.append("Lower bounds: P = 2 closed form; P >= 3 the relaxation of docs/data-movement.md minimised by "
                 "branch and bound to 0.001 (P = 5: 0.002) words/n^2 (\"partial\": the time budget ran out first, the figure "
                 "is what it had certified).")
    for P in sorted(lower):
        lines.append("- P = %d: %.4f (%s)" % (P, lower[P][0], lower[P][1]))
    emit("\n".join(lines) + "\n", args.md)


if __name__ == "__main__":
    main()
