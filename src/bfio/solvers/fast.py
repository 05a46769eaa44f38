"""The default BF-IO solver: a greedy placement plus local search for Eq. (IO).

Write ``E(h) = max_g Lhat_g(h)`` for the envelope of predicted loads and
``w_h = delta^h`` for the offset weights (:mod:`bfio.solvers.objective`).
Because exactly ``U`` requests are admitted and request ``j`` adds ``s_j + h``
at offset ``h < l_j`` (its lifetime),

    J = G sum_h w_h E(h) - sum_h w_h sum_g base_g(h) - sum_{admitted j} sum_{h<l_j} w_h (s_j + h),

so the integer program trades the envelope (weight ``G w_h`` per token at
offset ``h``) against admitted weighted volume. Adding a request of size ``s``
and lifetime ``l`` to worker ``g`` changes ``J`` by

    delta_g(s) = G sum_{h<l} w_h max(0, s - c_g(h)) - sum_{h<l} w_h (s + h),   c_g(h) = E(h) - Lhat_g(h) - h,

a convex piecewise-linear function of ``s`` whose minimum is at the weighted
quantile of ``c_g(0..l-1)`` (:func:`_pivots`; with unit weights the
``ceil(l / G)``-th smallest, for ``G > H`` the *headroom* ``min_h c_g(h)``: the
largest request that does not raise the envelope at any offset). The solver

1. places the requests that must be admitted (admission ``fifo``/``aging``, or
   all of them when ``U = |R_wait|``) largest first, each on the worker where it
   raises the envelope least (best fit among the workers where it fits);
2. fills the remaining slots one at a time, each time taking the
   (worker, request) pair with the most negative ``delta`` (the two waiting
   requests around the minimizer of ``delta_g`` are the only candidates, by
   convexity), keeping room on workers with several free slots for their
   remaining slots;
3. runs a local search to a local optimum: replace an admitted request by a
   waiting one (free admission only), and move or swap admitted requests
   between workers for the workers that set the envelope.

Every step keeps the assignment feasible, so the result always satisfies
Eq. (IO)'s constraints. Only workers with free slots change; the others enter
through the fixed envelope ``Mo(h)``.

One kernel serves both ``new_requests`` modes. A new request ``j`` has a
lifetime ``l_j`` in ``1..H + 1`` offsets (``persist``: ``H + 1`` for all, pass
:func:`persisting`; ``predicted``: the predictor's ``o_hat_j``). The waiting
requests are grouped into lifetime buckets (:func:`_bucket`); each bucket offers
the two requests around its pivot (taken at its longest lifetime), and every
candidate's cost uses its own lifetime. With a single group ``l = H + 1`` and
unit weights every step is the persisting, undiscounted algorithm, operation
for operation.

The lifetimes and the weights are the routing call's objective terms
(:class:`bfio.solvers.objective.ObjectiveTerms`, handed over by
:func:`solve_fast_terms`); the cost of one placement is :func:`_life_cost`, the
kernel's cost function (where a new term of ``J`` goes: the objective module's
"How to add a term").

``base`` may be integer (point predictors: ``oracle``, ``noisy``, ``none``) or
float (expected loads of the ``empirical``/``geometric`` predictors); numba
compiles one specialization per dtype, and the integer one does exact integer
arithmetic.
"""

from __future__ import annotations

import numpy as np

from bfio.jit import helper as _helper, kernel
from bfio.solvers.fenwick import bit_add as _bit_add
from bfio.solvers.fenwick import bit_kth as _bit_kth
from bfio.solvers.fenwick import bit_prefix as _bit_prefix
from bfio.solvers.objective import PERSIST, persisting
from bfio.solvers.touched import touched_workers, waiting_order

# The helpers below take arrays but never allocate, so they are compiled without
# the runtime's reference counting (numba's ``_nrt`` target option): a helper
# that numba does not inline otherwise pays an atomic reference count in and out
# for every array argument on every call, which was 23% of a Table-1 routing call
# (profiled with perf; the phases that allocate keep ``bfio.jit.kernel``).

_NONE = -2  # index of an empty envelope entry
_FIXED = -1  # index standing for the workers without free slots (Mo)


@_helper
def _column_scan(P, Mo, tv, ti, h):
    """Top three of column ``h`` over ``{Mo} U touched workers``."""
    nT = P.shape[0]
    for k in range(3):
        tv[k, h] = -1
        ti[k, h] = _NONE
    for t in range(-1, nT):
        v = Mo[h] if t < 0 else P[t, h]
        if v > tv[0, h]:
            tv[2, h] = tv[1, h]
            ti[2, h] = ti[1, h]
            tv[1, h] = tv[0, h]
            ti[1, h] = ti[0, h]
            tv[0, h] = v
            ti[0, h] = t
        elif v > tv[1, h]:
            tv[2, h] = tv[1, h]
            ti[2, h] = ti[1, h]
            tv[1, h] = v
            ti[1, h] = t
        elif v > tv[2, h]:
            tv[2, h] = v
            ti[2, h] = t


@_helper
def _update_worker(P, Mo, tv, ti, t):
    """Refresh the top-three structure after worker ``t``'s profile changed."""
    H1 = P.shape[1]
    for h in range(H1):
        if ti[0, h] == t or ti[1, h] == t or ti[2, h] == t:
            _column_scan(P, Mo, tv, ti, h)
        else:
            v = P[t, h]
            if v > tv[0, h]:
                tv[2, h] = tv[1, h]
                ti[2, h] = ti[1, h]
                tv[1, h] = tv[0, h]
                ti[1, h] = ti[0, h]
                tv[0, h] = v
                ti[0, h] = t
            elif v > tv[1, h]:
                tv[2, h] = tv[1, h]
                ti[2, h] = ti[1, h]
                tv[1, h] = v
                ti[1, h] = t
            elif v > tv[2, h]:
                tv[2, h] = v
                ti[2, h] = t


@_helper
def _excl1(tv, ti, t, h):
    return tv[0, h] if ti[0, h] != t else tv[1, h]


@_helper
def _excl2(tv, ti, a, b, h):
    for k in range(3):
        if ti[k, h] != a and ti[k, h] != b:
            return tv[k, h]
    return -1


@_helper
def _prefer(capl, P, a, b, spread):
    """Tie-break among equal-``delta`` choices: worker ``a`` before ``b`` if it has
    more free slots, then a lower current predicted load."""
    if not spread:
        return False
    if capl[a] != capl[b]:
        return capl[a] > capl[b]
    return P[a, 0] < P[b, 0]


@_helper
def _prefix_headroom(E, P, t, pm):
    """``pm[t, h] = min_{h' <= h} (E(h') - P_t(h') - h')``: the largest request of
    lifetime ``h + 1`` that fits on ``t`` without raising the envelope
    (``pm[t, H]`` is the headroom of a persisting request)."""
    H1 = P.shape[1]
    m = E[0] - P[t, 0]
    pm[t, 0] = m
    for h in range(1, H1):
        v = E[h] - P[t, h] - h
        if v < m:
            m = v
        pm[t, h] = m


@_helper
def _upper(a, lo, hi, x):
    """First position in ``lo..hi`` with ``a[pos] > x`` (``a`` ascending there)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@_helper
def _grp_le(ssorted, bit, lo, hi, x):
    """Largest waiting request with size <= x among positions lo..hi-1, or -1.
    Among equal sizes the oldest request sits last, so it is found first."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x) - 1
    if pos < lo:
        return -1
    before = _bit_prefix(bit, lo - 1) if lo > 0 else 0
    c = _bit_prefix(bit, pos)
    if c == before:
        return -1
    return _bit_kth(bit, c)


@_helper
def _grp_gt(ssorted, bit, lo, hi, x):
    """Smallest waiting request with size > x among positions lo..hi-1, or -1."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x)
    c = _bit_prefix(bit, pos - 1) if pos > 0 else 0
    total = _bit_prefix(bit, hi - 1)
    if c >= total:
        return -1
    return _bit_kth(bit, c + 1)


@_helper
def _volume(s, l, cw, cwh):
    """Weighted volume ``sum_{h<l} w_h (s + h)`` a request adds to ``sum_g Lhat_g``."""
    return s * cw[l] + cwh[l]


@_helper
def _life_cost(c, s, l, G, w, cw, cwh):
    """Change of ``J`` when a request of size ``s`` and lifetime ``l`` joins a worker
    with headroom ``c``: ``G sum_{h<l} w_h max(0, s - c(h)) - sum_{h<l} w_h (s + h)``
    (``cw[l] = sum_{h<l} w_h``, ``cwh[l] = sum_{h<l} w_h h``). For ``l = H + 1`` and
    unit weights this is ``delta(s) - H (H + 1) / 2`` (a constant shift).
    The kernel's cost function: a new term of ``J`` is added here and in
    :class:`bfio.solvers.objective.ObjectiveTerms` (its module docstring, "How to add a term")."""
    tot = 0.0
    for h in range(l):
        d = s - c[h]
        if d > 0:
            tot += w[h] * d
    return G * tot - _volume(s, l, cw, cwh)


@kernel
def cumulative_weights(w):
    """``(cw, cwh)`` with ``cw[l] = sum_{h<l} w_h`` and ``cwh[l] = sum_{h<l} w_h h``
    (``l = 0..len(w)``): the prefix sums :func:`_life_cost` and :func:`_volume` read."""
    H1 = w.shape[0]
    cw = np.zeros(H1 + 1, dtype=np.float64)
    cwh = np.zeros(H1 + 1, dtype=np.float64)
    for h in range(H1):
        cw[h + 1] = cw[h] + w[h]
        cwh[h + 1] = cwh[h] + w[h] * h
    return cw, cwh


@kernel
def worker_costs(C, s, l, G, w):
    """:func:`_life_cost` of one request (size ``s``, lifetime ``l <= len(w)``) on every
    row of headrooms ``C`` (``C[g, h] = c_g(h)``): the change of ``J`` on each worker."""
    cw, cwh = cumulative_weights(w)
    out = np.empty(C.shape[0])
    for g in range(C.shape[0]):
        out[g] = _life_cost(C[g], s, l, G, w, cw, cwh)
    return out


@_helper
def _pivots(c, G, w, cw, glist, ng, piv, row, idx):
    """``piv[row, q]`` = the minimizer of the convex cost of a request of lifetime
    ``l = glist[q]`` (``glist`` ascending): the weighted quantile of ``c[0..l-1]``,
    the smallest ``c(h)`` with ``G sum_{h' < l: c(h') <= c(h)} w_h' >= sum_{h' < l} w_h'``
    (the right derivative ``G sum_{c(h') <= s} w_h' - cw[l]`` of the cost turns
    non-negative there). With unit weights it is the ``ceil(l/G)``-th smallest.

    Most often (large ``G``) the prefix minimum already carries enough weight;
    otherwise the offsets are sorted once (a stable insertion sort into the
    caller's scratch ``idx``: no allocation, which in this hot helper cost more
    than the sort) and walked in order of ``c``."""
    H1 = c.shape[0]
    q = 0
    m = c[0]
    hm = 0
    walk = False
    for l in range(1, H1 + 1):
        v = c[l - 1]
        if v < m:
            m = v
            hm = l - 1
        if glist[q] == l:
            piv[row, q] = m
            if G * w[hm] < cw[l] * (1.0 - 1e-12):
                walk = True  # the minimum alone is too light: refined below
            q += 1
            if q == ng:
                break
    if not walk:
        return
    for h in range(H1):
        v = c[h]
        k = h
        while k > 0 and c[idx[k - 1]] > v:
            idx[k] = idx[k - 1]
            k -= 1
        idx[k] = h
    for q in range(ng):
        l = glist[q]
        target = cw[l] * (1.0 - 1e-12)
        acc = 0.0
        for k in range(H1):
            h = idx[k]
            if h >= l:
                continue
            acc += w[h]
            if G * acc >= target:
                piv[row, q] = c[h]
                break


EXACT_LIFETIMES = 4  # lifetimes up to this many offsets get a candidate group of their own


@_helper
def _bucket(l, H1):
    """Candidate group of a request of lifetime ``l``: ``l`` itself up to
    :data:`EXACT_LIFETIMES`, then ranges growing by half (5-6, 7-9, 10-14, 15-21,
    22-32, ...); a request persisting over the window (``l = H + 1``) has its
    own group. Groups only choose *candidates* (the two requests around a
    group's pivot); every candidate's cost uses its own lifetime."""
    if l >= H1:
        return _bucket(H1 - 1, H1 + 1) + 1 if H1 > 1 else 1
    if l <= EXACT_LIFETIMES:
        return l
    k = EXACT_LIFETIMES
    hi = EXACT_LIFETIMES
    while hi < l:
        hi = (hi * 3 + 1) // 2
        k += 1
    return k


@_helper
def _w(s, l, h):
    """What a request of size ``s`` and lifetime ``l`` adds at offset ``h``."""
    return s + h if h < l else 0


@_helper
def _find_left(lp, p):
    """Largest waiting position ``<= p`` (``-1`` if none). ``lp`` is a union-find
    over positions: a waiting position is its own root, a taken one points to
    the position left of it; paths are compressed on the way."""
    r = p
    while r >= 0 and lp[r] != r:
        r = lp[r]
    while p >= 0 and lp[p] != p:
        nxt = lp[p]
        lp[p] = r
        p = nxt
    return r


@_helper
def _find_right(rp, p):
    """Smallest waiting position ``>= p`` (``n``, a sentinel root, if none)."""
    r = p
    while rp[r] != r:
        r = rp[r]
    while rp[p] != p:
        nxt = rp[p]
        rp[p] = r
        p = nxt
    return r


@_helper
def _take_position(lp, rp, q):
    """Position ``q`` is no longer waiting: unite it with its neighbours."""
    lp[q] = q - 1
    rp[q] = q + 1


@_helper
def _cand_le(ssorted, lp, lo, hi, x):
    """Largest waiting request with size <= x among positions lo..hi-1, or -1
    (the union-find twin of :func:`_grp_le`, same answer)."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x) - 1
    if pos < lo:
        return -1
    r = _find_left(lp, pos)
    return r if r >= lo else -1


@_helper
def _cand_gt(ssorted, rp, lo, hi, x):
    """Smallest waiting request with size > x among positions lo..hi-1, or -1
    (the union-find twin of :func:`_grp_gt`, same answer)."""
    if hi <= lo:
        return -1
    pos = _upper(ssorted, lo, hi, x)
    if pos >= hi:
        return -1
    r = _find_right(rp, pos)
    return r if r < hi else -1


@_helper
def _next_waiting(lp, rp, gstart, k, side, p):
    """The candidate that replaces the taken request at position ``p`` of group
    ``k`` on ``side`` (0: largest waiting ``<=`` the pivot, 1: smallest ``>``),
    or -1. Invariant: every position between ``p`` and the pivot is taken
    (``p`` was the nearest waiting one), so this is the answer of
    :func:`_cand_le` / :func:`_cand_gt` for the same pivot, and it is the same
    for every worker whose candidate was ``p``."""
    if side == 0:
        q = _find_left(lp, p)
        return q if q >= gstart[k] else -1
    q = _find_right(rp, p)
    return q if q < gstart[k + 1] else -1


@_helper
def _place(P, E, capl, taken, bit, at, rank, sizes, lf, j, t):
    """Admit request ``j`` to touched worker ``t``: add ``s_j + h`` to ``P_t(h)``
    for ``h < l_j``, raise the envelope where it is exceeded. Returns at how many
    offsets ``E`` rose (the envelope never falls)."""
    s = sizes[j]
    nr = 0
    for h in range(lf[j]):
        P[t, h] += s + h
        if P[t, h] > E[h]:
            E[h] = P[t, h]
            nr += 1
    capl[t] -= 1
    taken[j] = True
    _bit_add(bit, rank[j], -1)
    at[j] = t
    return nr


@kernel
def _place_forced(P, E, capl, sizes, lf, forced, sorder, taken, bit, at, rank, U, wt, spread):
    """Phase 1: the requests that must be admitted, largest first, each on the
    worker where it raises the envelope least (best fit among the workers where
    it fits: ``s <= pm[t, l - 1]``, the prefix minimum of ``c_t(h) = E(h) - P_t(h) - h``).
    Returns the number placed (at most ``U``). Invariant: no worker receives
    more than its free slots."""
    nT, H1 = P.shape
    n = sizes.shape[0]
    nf = 0
    for j in range(n):
        if forced[j]:
            nf += 1
    if nf == 0:
        return 0
    pm = np.empty((nT, H1), dtype=P.dtype)
    for t in range(nT):
        _prefix_headroom(E, P, t, pm)
    placed = 0
    for q in range(n - 1, -1, -1):
        j = sorder[q]
        if not forced[j] or placed >= U:
            continue
        s = sizes[j]
        l = lf[j]
        best = -1
        for t in range(nT):
            if capl[t] > 0 and pm[t, l - 1] >= s:
                if best < 0 or (_prefer(capl, P, t, best, spread) if spread else pm[t, l - 1] < pm[best, l - 1]):
                    best = t
        if best < 0:
            fd = 0.0
            for t in range(nT):
                if capl[t] == 0:
                    continue
                d = 0.0
                for h in range(l):
                    x = s + h + P[t, h] - E[h]
                    if x > 0:
                        d += wt[h] * x
                if best < 0 or d < fd or (d == fd and P[t, 0] < P[best, 0]):
                    best = t
                    fd = d
        if _place(P, E, capl, taken, bit, at, rank, sizes, lf, j, best) > 0:
            for t in range(nT):
                _prefix_headroom(E, P, t, pm)
        else:
            _prefix_headroom(E, P, best, pm)
        placed += 1
    return placed


@_helper
def _evaluate(t, P, E, capl, smin, lmin, cc, cpiv, cpos, ccost, sizes, lf, order, ssorted, lp, rp, gstart, gkey,
              glist, G, wt, cw, cwh, idx):
    """Worker ``t``'s candidates from scratch: its reserved headroom
    ``c(h) = E(h) - P_t(h) - h - r (s_min + h) [h < l_min]`` (``r`` further free
    slots keep room for copies of the smallest waiting request), each group's
    pivot (:func:`_pivots`), and the two waiting requests around it with their
    costs (:func:`_life_cost`)."""
    H1 = P.shape[1]
    ng = glist.shape[0]
    r = capl[t] - 1
    c = cc[t]
    for h in range(H1):
        c[h] = E[h] - P[t, h] - h - (r * (smin + h) if h < lmin else 0)
    _pivots(c, G, wt, cw, glist, ng, cpiv, t, idx)
    for g2 in range(ng):
        k = gkey[g2]
        for side in range(2):
            if side == 0:
                p = _cand_le(ssorted, lp, gstart[k], gstart[k + 1], cpiv[t, g2])
            else:
                p = _cand_gt(ssorted, rp, gstart[k], gstart[k + 1], cpiv[t, g2])
            cpos[t, g2, side] = p
            if p >= 0:
                jj = order[p]
                ccost[t, g2, side] = _life_cost(c, sizes[jj], lf[jj], G, wt, cw, cwh)


@_helper
def _requery(t, cc, cpos, ccost, taken, sizes, lf, order, lp, rp, gstart, gkey, G, wt, cw, cwh):
    """Replace worker ``t``'s candidates that were taken since its evaluation by
    the next waiting request on the same side of the same pivot. Exact while
    ``c`` and the pivots are unchanged: the waiting set only shrinks in phase 2,
    so an untaken candidate is still the nearest one, and a taken one's
    replacement is :func:`_next_waiting` from its position."""
    ng = cpos.shape[1]
    for g2 in range(ng):
        k = gkey[g2]
        for side in range(2):
            p = cpos[t, g2, side]
            if p < 0 or not taken[order[p]]:
                continue
            p = _next_waiting(lp, rp, gstart, k, side, p)
            cpos[t, g2, side] = p
            if p >= 0:
                jj = order[p]
                ccost[t, g2, side] = _life_cost(cc[t], sizes[jj], lf[jj], G, wt, cw, cwh)


@_helper
def _select(t, cpos, ccost, sizes, lf, order, bestj, bestd, bsec, bslot):
    """Worker ``t``'s best candidate: the most negative cost; among equal costs of
    different lifetimes the larger volume ``l s`` (groups in ascending order).
    Also the slot ``2 q + side`` it sits in (``bslot``) and the least cost of the
    other slots (``bsec``), for the bound of a worker whose best was taken (:func:`_fill`)."""
    ng = cpos.shape[1]
    bj = -1
    bd = 0.0
    bl = 0
    bvol = 0
    bs = -1
    for g2 in range(ng):
        for side in range(2):
            p = cpos[t, g2, side]
            if p < 0:
                continue
            jj = order[p]
            l = lf[jj]
            d = ccost[t, g2, side]
            vol = l * sizes[jj]
            if bj < 0 or d < bd or (d == bd and l != bl and vol > bvol):
                bj = jj
                bd = d
                bl = l
                bvol = vol
                bs = 2 * g2 + side
    sec = np.inf
    for g2 in range(ng):
        for side in range(2):
            if cpos[t, g2, side] >= 0 and 2 * g2 + side != bs and ccost[t, g2, side] < sec:
                sec = ccost[t, g2, side]
    bestj[t] = bj
    bestd[t] = bd
    bsec[t] = sec
    bslot[t] = bs


@_helper
def _refresh(t, P, E, capl, smin, lmin, cc, cpiv, cpos, ccost, newc, newpiv, taken, sizes, lf, order, ssorted, lp,
             rp, gstart, gkey, glist, G, wt, cw, cwh, idx):
    """Bring worker ``t``'s cached evaluation up to date after its reserved
    headroom ``c`` may have changed (it received a request, the envelope rose,
    or ``s_min`` moved). Exactly what :func:`_evaluate` would give now: ``c`` and
    the pivots are recomputed; a group whose pivot kept its value keeps its
    untaken candidates (still the nearest waiting requests: the waiting set only
    shrinks in phase 2) and recosts those whose window reaches the first
    changed offset; the other groups are queried afresh."""
    H1 = P.shape[1]
    ng = glist.shape[0]
    r = capl[t] - 1
    first = H1
    for h in range(H1):
        newc[h] = E[h] - P[t, h] - h - (r * (smin + h) if h < lmin else 0)
        if first == H1 and newc[h] != cc[t, h]:
            first = h
    if first == H1:
        _requery(t, cc, cpos, ccost, taken, sizes, lf, order, lp, rp, gstart, gkey, G, wt, cw, cwh)
        return
    c = cc[t]
    for h in range(first, H1):
        c[h] = newc[h]
    _pivots(c, G, wt, cw, glist, ng, newpiv, 0, idx)
    for g2 in range(ng):
        k = gkey[g2]
        moved = newpiv[0, g2] != cpiv[t, g2]
        cpiv[t, g2] = newpiv[0, g2]
        for side in range(2):
            p = cpos[t, g2, side]
            if moved or (p >= 0 and taken[order[p]]):
                if moved:
                    if side == 0:
                        p = _cand_le(ssorted, lp, gstart[k], gstart[k + 1], cpiv[t, g2])
                    else:
                        p = _cand_gt(ssorted, rp, gstart[k], gstart[k + 1], cpiv[t, g2])
                else:
                    p = _next_waiting(lp, rp, gstart, k, side, p)
                cpos[t, g2, side] = p
                if p >= 0:
                    jj = order[p]
                    ccost[t, g2, side] = _life_cost(c, sizes[jj], lf[jj], G, wt, cw, cwh)
            elif p >= 0 and lf[order[p]] > first:
                jj = order[p]
                ccost[t, g2, side] = _life_cost(c, sizes[jj], lf[jj], G, wt, cw, cwh)


@_helper
def _before(t, u, vt, vu, capl, P, spread):
    """Worker ``t`` with value ``vt[t]`` goes before ``u`` with ``vu[u]``: lower
    value, then :func:`_prefer`, then the lower index (the order a scan over the
    workers would pick in). ``_before(t, u, bestd, bestd, ...)`` orders two
    evaluated workers; with a lower bound as ``vt`` it tells whether ``t`` could
    still go before ``u``."""
    if vt[t] != vu[u]:
        return vt[t] < vu[u]
    if _prefer(capl, P, t, u, spread):
        return True
    if _prefer(capl, P, u, t, spread):
        return False
    return t < u


@_helper
def _reservation_relief(smin, lmin, s2, l2, wt):
    """``sum_h w_h max(0, res(h) - res2(h))`` with ``res(h) = (s_min + h) [h < l_min]``:
    how much one reserved slot's headroom ``c(h)`` can rise, weighted, when the
    smallest waiting request changes from ``(s_min, l_min)`` to ``(s2, l2)``."""
    tot = 0.0
    for h in range(wt.shape[0]):
        a = smin + h if h < lmin else 0
        b = s2 + h if h < l2 else 0
        if a > b:
            tot += wt[h] * (a - b)
    return tot


@kernel
def _fill(P, E, capl, sizes, lf, sorder, order, ssorted, rank, gstart, gkey, glist, taken, bit, at, placed, U,
          G, wt, cw, cwh, spread, reuse, bounds):
    """Phase 2: fill the remaining slots one at a time, each time with the
    (worker, request) pair of most negative ``delta`` over every worker's
    candidates (ties: :func:`_before`). Returns the number placed (``U``).

    A worker's evaluation (headroom, pivots, two candidates per group, best
    candidate) is *current* when nothing it depends on changed since: it
    received no request, the envelope did not rise, the smallest waiting
    request (its reservation) did not change (or it has one slot left), and its
    best candidate is still waiting. A stale worker is brought up to date
    (:func:`_requery` if only candidates were taken, else :func:`_refresh`;
    ``reuse=False``: :func:`_evaluate`, the same result) only if it could beat
    the best current worker: ``delta`` is ``G``-Lipschitz in the headroom
    (``|d delta| <= G sum_h w_h |d c(h)|``) and the headroom only rises through
    the envelope (``E`` never falls here) or a smaller reservation, so

        bound_t = best_t - G sum_h w_h (E(h) - E_t(h)) - G r_t * relief since t's evaluation

    is a lower bound of its current best (``E_t``: the envelope then, kept as
    the scalar ``sum_h w_h E_t(h)``). A worker whose only change is that its
    best candidate was taken has a tighter bound instead
    (the replacement is the same request for every such worker, and the many
    workers that share a best candidate, all with equal cost, are then
    ordered by the tie-break without being visited). Invariant: the pick is the pair a plain
    greedy that brings *every* worker up to date at every step would take
    (``bounds=False`` does exactly that), whenever each group's two candidates
    are its exact minimizers (one lifetime per group: ``persist``, or lifetimes
    up to :data:`EXACT_LIFETIMES`); with bucketed lifetimes the candidates are
    themselves a heuristic and so is the bound. Stale workers are visited in
    order of their bounds, only while they could go before the best worker
    found (:func:`_before` with the bound), and the visit stops at the first
    bound above its cost."""
    nT, H1 = P.shape
    n = sizes.shape[0]
    ng = glist.shape[0]
    lp = np.arange(n)
    rp = np.arange(n + 1)
    for q in range(n):
        if taken[order[q]]:
            _take_position(lp, rp, q)
    bestd = np.zeros(nT, dtype=np.float64)
    bestj = np.full(nT, -1, dtype=np.int64)
    fresh = np.zeros(nT, dtype=np.bool_)  # evaluated at least once
    dirty = np.zeros(nT, dtype=np.bool_)  # received a request since its evaluation
    sver = np.zeros(nT, dtype=np.int64)  # reservation version at its evaluation
    phit = np.zeros(nT, dtype=np.float64)  # sum_h w_h E(h) at its evaluation
    psit = np.zeros(nT, dtype=np.float64)  # reservation relief at its evaluation
    # current: evaluated, not dirty, the same envelope and (or one slot left) reservation
    # since; kept up to date at those events instead of being tested at every pick
    cur = np.zeros(nT, dtype=np.bool_)
    bound = np.empty(nT, dtype=np.float64)
    bsec = np.empty(nT, dtype=np.float64)  # least cost of the slots other than the best
    bslot = np.zeros(nT, dtype=np.int64)  # slot 2 q + side of the best candidate
    stale = np.empty(nT, dtype=np.int64)
    keys = np.empty(nT, dtype=np.float64)
    cc = np.empty((nT, H1), dtype=P.dtype)
    cpiv = np.empty((nT, ng), dtype=P.dtype)
    cpos = np.full((nT, ng, 2), -1, dtype=np.int64)
    ccost = np.zeros((nT, ng, 2), dtype=np.float64)
    newc = np.empty(H1, dtype=P.dtype)
    newpiv = np.empty((1, ng), dtype=P.dtype)
    idx = np.empty(H1, dtype=np.int64)  # scratch of _pivots
    phi = 0.0
    for h in range(H1):
        phi += wt[h] * E[h]
    psi = 0.0
    sp = 0  # first waiting request in size order
    ver = 0
    smin = sizes[0] * 0 - 1
    lmin = -1
    while placed < U:
        while taken[sorder[sp]]:
            sp += 1
        j0 = sorder[sp]
        if sizes[j0] != smin or lf[j0] != lmin:
            if lmin >= 0:
                psi += _reservation_relief(smin, lmin, sizes[j0], lf[j0], wt)
            smin = sizes[j0]
            lmin = lf[j0]
            ver += 1
            for t in range(nT):  # the reservation moved: current only with one slot left
                if capl[t] != 1:
                    cur[t] = False
        # the best current worker; bounds for the stale ones
        pick = -1
        ns = 0
        for t in range(nT):
            if capl[t] == 0:
                continue
            same = cur[t]
            if same and not taken[bestj[t]]:
                if pick < 0 or _before(t, pick, bestd, bestd, capl, P, spread):
                    pick = t
                continue
            if bounds and same:  # only candidates were taken: an exact bound
                # its best slot now holds the next waiting request on the same side
                # (:func:`_next_waiting`, the same one for every such worker), which costs
                # at least minus its volume (equality when it fits); every other slot at
                # least its cached cost (a taken candidate's replacement lies farther from
                # the pivot), i.e. bsec. Written out here: as a call (even inlined) the
                # whole fill took twice as long (measured on captured G = 256 calls)
                g2 = bslot[t] >> 1
                kq = gkey[g2]
                p = cpos[t, g2, bslot[t] & 1]
                if bslot[t] & 1 == 0:
                    p = _find_left(lp, p)
                    ok = p >= gstart[kq]
                else:
                    p = _find_right(rp, p)
                    ok = p < gstart[kq + 1]
                b = bsec[t]
                if ok:
                    jj = order[p]
                    v = -_volume(sizes[jj], lf[jj], cw, cwh)
                    if v < b:
                        b = v
                bound[t] = b
            elif bounds and fresh[t] and not dirty[t]:
                b = bestd[t] - G * (phi - phit[t]) - G * (capl[t] - 1) * (psi - psit[t])
                bound[t] = b - 1e-9 * (abs(b) + 1.0)  # rounding of the running sums
            else:
                bound[t] = -np.inf
            stale[ns] = t
            ns += 1
        m = 0
        for k in range(ns):  # only those that could go before the best current worker
            t = stale[k]
            if pick < 0 or _before(t, pick, bound, bestd, capl, P, spread):
                stale[m] = t
                keys[m] = bound[t]
                m += 1
        # stable insertion sort of (keys, stale) by key, in place: the order of a
        # mergesort (ties by worker index) without its allocations (tens of entries;
        # measured 10-18% faster fills at G = 256-1024)
        for k in range(1, m):
            kv = keys[k]
            tk = stale[k]
            i = k
            while i > 0 and keys[i - 1] > kv:
                keys[i] = keys[i - 1]
                stale[i] = stale[i - 1]
                i -= 1
            keys[i] = kv
            stale[i] = tk
        for k in range(m):
            t = stale[k]
            if pick >= 0 and bound[t] > bestd[pick]:
                break
            if pick >= 0 and not _before(t, pick, bound, bestd, capl, P, spread):
                continue  # an equal bound that loses the tie-break
            if not fresh[t] or not reuse:
                _evaluate(t, P, E, capl, smin, lmin, cc, cpiv, cpos, ccost, sizes, lf, order, ssorted, lp, rp,
                          gstart, gkey, glist, G, wt, cw, cwh, idx)
            elif not dirty[t] and phit[t] == phi and (sver[t] == ver or capl[t] == 1):
                _requery(t, cc, cpos, ccost, taken, sizes, lf, order, lp, rp, gstart, gkey, G,
                         wt, cw, cwh)
            else:
                _refresh(t, P, E, capl, smin, lmin, cc, cpiv, cpos, ccost, newc, newpiv, taken, sizes, lf,
                         order, ssorted, lp, rp, gstart, gkey, glist, G, wt, cw, cwh, idx)
            _select(t, cpos, ccost, sizes, lf, order, bestj, bestd, bsec, bslot)
            fresh[t] = True
            dirty[t] = False
            sver[t] = ver
            phit[t] = phi
            psit[t] = psi
            cur[t] = True
            if pick < 0 or _before(t, pick, bestd, bestd, capl, P, spread):
                pick = t
        j = bestj[pick]
        if _place(P, E, capl, taken, bit, at, rank, sizes, lf, j, pick) > 0:
            phi0 = phi
            phi = 0.0
            for h in range(H1):
                phi += wt[h] * E[h]
            if phi != phi0:  # the envelope rose: no worker is current
                cur[:] = False
        _take_position(lp, rp, rank[j])
        placed += 1
        dirty[pick] = True
        cur[pick] = False
    return placed


@kernel
def _local_search(P, Mo, capl, sizes, lf, forced, order, ssorted, rank, gstart, gkey, glist, taken, bit, at,
                  max_rounds, G, wt, cw, cwh, tol):
    """Phase 3: local search to a local optimum, at most ``max_rounds`` rounds:
    (a) replace an admitted request by a waiting one (free admission only),
    (b) move or swap admitted requests of the workers that set the envelope.
    Invariant: every accepted change lowers ``J`` by more than ``tol`` and keeps
    the assignment feasible (slots per worker, ``U`` admitted, forced kept)."""
    nT, H1 = P.shape
    n = sizes.shape[0]
    ng = glist.shape[0]
    piv = np.empty((1, max(ng, 1)), dtype=P.dtype)
    idx = np.empty(H1, dtype=np.int64)  # scratch of _pivots
    tv = np.empty((3, H1), dtype=P.dtype)
    ti = np.empty((3, H1), dtype=np.int64)
    for h in range(H1):
        _column_scan(P, Mo, tv, ti, h)
    Pm = np.empty(H1, dtype=P.dtype)
    c = np.empty(H1, dtype=P.dtype)
    adm = np.empty(n, dtype=np.int64)
    slack = np.empty(nT, dtype=P.dtype)
    any_free = False
    for j in range(n):
        if not taken[j]:
            any_free = True
            break
    # per candidate group: an upper bound of the volume of its waiting requests
    # (exact here; a request that returns to waiting raises it, a taken one leaves it)
    vmax = np.full(max(ng, 1), -np.inf)
    rgrp = np.zeros(n, dtype=np.int64)
    for g2 in range(ng):
        k = gkey[g2]
        for q in range(gstart[k], gstart[k + 1]):
            j = order[q]
            rgrp[j] = g2
            if not taken[j]:
                vol = _volume(sizes[j], lf[j], cw, cwh)
                if vol > vmax[g2]:
                    vmax[g2] = vol
    for _round in range(max_rounds):
        improved = False
        # (a) replace an admitted request by a waiting one (free admission)
        if any_free:
            for j in range(n):
                if at[j] < 0 or forced[j]:
                    continue
                t = at[j]
                sj = sizes[j]
                lj = lf[j]
                gain = 0.0  # how much removing j lowers the envelope (weighted)
                for h in range(H1):
                    Pm[h] = P[t, h] - _w(sj, lj, h)
                    o = _excl1(tv, ti, t, h)
                    c[h] = o - Pm[h] - h
                    gain += wt[h] * (tv[0, h] - (o if o > Pm[h] else Pm[h]))
                # replacing j by w changes J by at least -G gain - (vol_w - vol_j), and
                # vol_w <= vmax of w's group: groups (or all) that cannot reach -tol are skipped
                vj = _volume(sj, lj, cw, cwh) - G * gain
                skip = True
                for g2 in range(ng):
                    if vmax[g2] - vj > tol:
                        skip = False
                        break
                if skip:
                    continue
                _pivots(c, G, wt, cw, glist, ng, piv, 0, idx)
                bw = -1
                bd = -tol
                for g2 in range(ng):
                    k = gkey[g2]
                    if vj - vmax[g2] >= bd:
                        continue
                    for side in range(2):
                        if side == 0:
                            p = _grp_le(ssorted, bit, gstart[k], gstart[k + 1], piv[0, g2])
                        else:
                            p = _grp_gt(ssorted, bit, gstart[k], gstart[k + 1], piv[0, g2])
                        if p < 0:
                            continue
                        w = order[p]
                        sw = sizes[w]
                        l = lf[w]
                        d = 0.0
                        for h in range(H1):
                            o = _excl1(tv, ti, t, h)
                            v = Pm[h] + _w(sw, l, h)
                            d += wt[h] * ((v if v > o else o) - tv[0, h])
                        d = G * d - (_volume(sw, l, cw, cwh) - _volume(sj, lj, cw, cwh))
                        if d < bd:
                            bd = d
                            bw = w
                if bw >= 0:
                    sw = sizes[bw]
                    lw = lf[bw]
                    for h in range(H1):
                        P[t, h] = Pm[h] + _w(sw, lw, h)
                    taken[j] = False
                    _bit_add(bit, rank[j], 1)
                    at[j] = -1
                    vol = _volume(sj, lj, cw, cwh)
                    if vol > vmax[rgrp[j]]:
                        vmax[rgrp[j]] = vol
                    taken[bw] = True
                    _bit_add(bit, rank[bw], -1)
                    at[bw] = t
                    _update_worker(P, Mo, tv, ti, t)
                    improved = True
        # (b) moves and swaps for the workers that set the envelope
        nadm = 0
        for j in range(n):
            if at[j] >= 0:
                adm[nadm] = j
                nadm += 1
        for t in range(nT):
            slack[t] = tv[0, 0] - P[t, 0]
            for h in range(1, H1):
                v = tv[0, h] - P[t, h]
                if v < slack[t]:
                    slack[t] = v
        maxslack = slack[0] * 0
        for t in range(nT):
            if slack[t] > maxslack:
                maxslack = slack[t]
        # admitted requests by size: a swap partner j2 needs sj - maxslack <= s2 < sj
        asz = np.empty(nadm, dtype=np.int64)
        for q in range(nadm):
            asz[q] = sizes[adm[q]]
        aord = np.argsort(asz, kind="mergesort")
        adms = adm[:nadm][aord]
        asz = asz[aord]
        for t in range(nT):
            critical = False
            for h in range(H1):
                if ti[0, h] == t and tv[0, h] > tv[1, h]:
                    critical = True
                    break
            if not critical:
                continue
            for q in range(nadm):
                j = adm[q]
                if at[j] != t:
                    continue
                sj = sizes[j]
                lj = lf[j]
                # gain = what removing j from t lowers the envelope by; any move or swap
                # of j has delta >= -gain (+ its raise at h = 0, where every request adds
                # its size), so these prune exactly
                gain = 0.0
                for h in range(H1):
                    Pm[h] = P[t, h] - _w(sj, lj, h)
                    o1 = _excl1(tv, ti, t, h)
                    gain += wt[h] * (tv[0, h] - (o1 if o1 > Pm[h] else Pm[h]))
                if gain <= tol:
                    continue
                o1 = _excl1(tv, ti, t, 0)
                base0 = o1 if o1 > Pm[0] else Pm[0]
                best_kind = 0
                best_t2 = -1
                best_j2 = -1
                best_d = -tol
                # moves to workers with a free slot
                for t2 in range(nT):
                    if t2 == t or capl[t2] == 0 or P[t2, 0] + sj - base0 >= gain:
                        continue
                    d = 0.0
                    for h in range(H1):
                        o = _excl2(tv, ti, t, t2, h)
                        v1 = Pm[h]
                        v2 = P[t2, h] + _w(sj, lj, h)
                        m = o if o > v1 else v1
                        m = m if m > v2 else v2
                        d += wt[h] * (m - tv[0, h])
                    if d < best_d:
                        best_d = d
                        best_kind = 1
                        best_t2 = t2
                # swaps with a smaller admitted request on a worker with room for the difference
                q2lo = np.searchsorted(asz, sj - maxslack, side="left")
                q2hi = np.searchsorted(asz, sj, side="left")
                for q2 in range(q2lo, q2hi):
                    j2 = adms[q2]
                    t2 = at[j2]
                    if (t2 < 0 or t2 == t or sizes[j2] >= sj or slack[t2] < sj - sizes[j2]
                            or P[t2, 0] + sj - sizes[j2] - base0 >= gain):
                        continue
                    s2 = sizes[j2]
                    l2 = lf[j2]
                    d = 0.0
                    for h in range(H1):
                        w1 = _w(sj, lj, h)
                        w2 = _w(s2, l2, h)
                        o = _excl2(tv, ti, t, t2, h)
                        v1 = Pm[h] + w2
                        v2 = P[t2, h] - w2 + w1
                        m = o if o > v1 else v1
                        m = m if m > v2 else v2
                        d += wt[h] * (m - tv[0, h])
                    if d < best_d:
                        best_d = d
                        best_kind = 2
                        best_t2 = t2
                        best_j2 = j2
                if best_kind == 0:
                    continue
                t2 = best_t2
                if best_kind == 1:
                    for h in range(H1):
                        P[t, h] = Pm[h]
                        P[t2, h] += _w(sj, lj, h)
                    capl[t] += 1
                    capl[t2] -= 1
                    at[j] = t2
                else:
                    s2 = sizes[best_j2]
                    l2 = lf[best_j2]
                    for h in range(H1):
                        w1 = _w(sj, lj, h)
                        w2 = _w(s2, l2, h)
                        P[t, h] = Pm[h] + w2
                        P[t2, h] += w1 - w2
                    at[j] = t2
                    at[best_j2] = t
                _update_worker(P, Mo, tv, ti, t)
                _update_worker(P, Mo, tv, ti, t2)
                for tt in (t, t2):
                    slack[tt] = tv[0, 0] - P[tt, 0]
                    for h in range(1, H1):
                        v = tv[0, h] - P[tt, h]
                        if v < slack[tt]:
                            slack[tt] = v
                    if slack[tt] > maxslack:
                        maxslack = slack[tt]
                improved = True
                break  # worker t changed: re-check whether it is still critical next round
        if not improved:
            break


@kernel
def solve_fast(base, free, sizes, life, forced, U, max_rounds, weights, spread=True, reuse=True, bounds=True):
    """Heuristic solution of Eq. (IO); returns request -> worker (or -1).

    ``base`` is ``(G, H + 1)`` ``Lhat_g(h)`` of the active requests, integer
    (point predictors) or float (expected loads of the probabilistic
    predictors); the kernel is compiled for either and does exact arithmetic on
    integers. ``life[j]`` is the number of offsets at which a newly admitted
    request adds ``s_j + h`` (clipped to ``1..H + 1``; ``H + 1`` or more =
    persists over the whole window, the spec's Eq. (IO)). ``forced[j]`` marks
    requests that must be admitted. ``weights[h]`` is the offset weight
    ``delta^h`` of :func:`bfio.solvers.objective.offset_weights` (invariant:
    ``weights[0] = 1 >= weights[h] > 0``; the move pruning below uses it). Costs
    are float64; with unit weights and integer loads they are exact integers.
    ``reuse=False`` turns off phase 2's cached evaluations (same result, slower);
    ``bounds=False`` brings every stale worker up to date at every step instead
    of only those whose lower bound can reach the best (:func:`_fill`). The phases: :func:`_place_forced`, :func:`_fill`,
    :func:`_local_search`.
    """
    G, H1 = base.shape
    n = sizes.shape[0]
    assign = np.full(n, -1, dtype=np.int64)
    if U <= 0 or n == 0:
        return assign
    wt = weights
    cw, cwh = cumulative_weights(wt)
    # touched workers (free slots) and the fixed envelope of the others
    tw, P, capl, Mo, E = touched_workers(base, free)
    nT = tw.shape[0]
    lf = np.empty(n, dtype=np.int64)
    for j in range(n):
        lv = life[j]
        lf[j] = 1 if lv < 1 else (H1 if lv > H1 else lv)
    # size order (ascending, oldest last among equal sizes) and, for the candidate
    # searches, the same order grouped by lifetime bucket (_bucket): group k
    # occupies gstart[k]..gstart[k+1]-1; its pivot is taken at the longest lifetime
    # in it (the smallest headroom: its "fits" candidates fit for every member)
    sorder = waiting_order(sizes)
    NB = _bucket(H1, H1)
    key = np.empty(n, dtype=np.int64)
    kmax = np.zeros(NB + 1, dtype=np.int64)  # longest lifetime per bucket
    gstart = np.zeros(NB + 2, dtype=np.int64)
    for j in range(n):
        key[j] = _bucket(lf[j], H1)
        gstart[key[j] + 1] += 1
        if lf[j] > kmax[key[j]]:
            kmax[key[j]] = lf[j]
    ng = 0
    for k in range(1, NB + 1):
        if gstart[k + 1] > 0:
            ng += 1
    glist = np.empty(ng, dtype=np.int64)  # pivot lifetime of each non-empty group, ascending
    gkey = np.empty(ng, dtype=np.int64)
    q = 0
    for k in range(1, NB + 1):
        if gstart[k + 1] > 0:
            glist[q] = kmax[k]
            gkey[q] = k
            q += 1
    for k in range(1, NB + 2):
        gstart[k] += gstart[k - 1]
    order = np.empty(n, dtype=np.int64)
    fill = gstart.copy()
    for q in range(n):
        j = sorder[q]
        order[fill[key[j]]] = j
        fill[key[j]] += 1
    ssorted = sizes[order]
    taken = np.zeros(n, dtype=np.bool_)
    rank = np.empty(n, dtype=np.int64)  # position of each request in the grouped order
    bit = np.zeros(n + 1, dtype=np.int64)
    for q in range(n):
        rank[order[q]] = q
        _bit_add(bit, q, 1)
    at = np.full(n, -1, dtype=np.int64)  # touched index per request
    # improvements smaller than tol are rounding noise (tol < 1: with unit weights
    # and integer loads every cost is an integer, so nothing real is lost)
    emax = 1.0
    for h in range(H1):
        if E[h] > emax:
            emax = float(E[h])
    tol = 1e-12 * G * emax * cw[H1] * (H1 + 1)
    if tol > 0.25:
        tol = 0.25

    placed = _place_forced(P, E, capl, sizes, lf, forced, sorder, taken, bit, at, rank, U, wt, spread)
    if placed < U:
        _fill(P, E, capl, sizes, lf, sorder, order, ssorted, rank, gstart, gkey, glist, taken, bit, at, placed, U,
              G, wt, cw, cwh, spread, reuse, bounds)
    _local_search(P, Mo, capl, sizes, lf, forced, order, ssorted, rank, gstart, gkey, glist, taken, bit, at,
                  max_rounds, G, wt, cw, cwh, tol)
    for j in range(n):
        if at[j] >= 0:
            assign[j] = tw[at[j]]
    return assign


def size_order(sizes: np.ndarray) -> np.ndarray:
    """Waiting requests by size ascending; among equal sizes the oldest (lowest
    index, the pool is oldest first) comes last, so "largest that fits" prefers it."""
    n = sizes.shape[0]
    return np.lexsort((-np.arange(n), sizes)).astype(np.int64)


def solve_fast_terms(base, free, sizes, forced, U, terms, max_rounds: int = 4, **options) -> np.ndarray:
    """:func:`solve_fast` with the objective's terms of the routing call, a
    :class:`~bfio.solvers.objective.ObjectiveTerms` (Eq. (IO), Section 4): the
    lifetimes and offset weights come from
    :meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_arrays`, and ``base``
    spans its offsets ``0..terms.window``. Same result; ``options`` as :func:`solve_fast`."""
    life, weights = terms.kernel_arrays(base, sizes.shape[0])
    return solve_fast(base, free, sizes, life, forced, U, max_rounds, weights, **options)


def fast_assign(inst, max_rounds: int = 4, forced: np.ndarray | None = None) -> np.ndarray:
    """Solve an :class:`~bfio.solvers.instance.Instance` with the fast heuristic,
    over the offsets ``0..effective_horizon`` (:meth:`ObjectiveTerms.fast
    <bfio.solvers.objective.ObjectiveTerms.fast>` of the instance's terms)."""
    if forced is None:
        forced = inst.forced()
    terms = inst.terms.fast()
    return solve_fast_terms(np.ascontiguousarray(inst.base[:, :terms.offsets]), inst.free, inst.sizes, forced,
                            inst.admissible, terms, int(max_rounds))


__all__ = ["PERSIST", "solve_fast", "solve_fast_terms", "fast_assign", "persisting", "size_order", "cumulative_weights",
           "worker_costs"]
