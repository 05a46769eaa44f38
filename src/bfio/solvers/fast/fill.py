"""Phase 2 of the fast solver: fill the remaining slots, best pair first (:mod:`bfio.solvers.fast`).

:func:`_fill` takes, one placement at a time, the (worker, request) pair of most
negative cost; each worker's evaluation (:func:`_evaluate`) is cached and
brought up to date only when it could still win (:func:`_requery`,
:func:`_refresh`, with the lower bounds of :func:`_fill`'s docstring).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import helper as _helper, kernel
from bfio.solvers.fast.costs import _pivots
from bfio.solvers.fast.place import _place, _prefer
from bfio.solvers.terms.kernel import candidate_cost, candidate_floor
from bfio.solvers.fast.waiting import _cand_gt, _cand_le, _find_left, _find_right, _next_waiting, _take_position

# Helpers (``bfio.ground.jit.helper``) take arrays but never allocate, so they are compiled
# without the runtime's reference counting (numba's ``_nrt`` target option): a helper
# that numba does not inline otherwise pays an atomic reference count in and out
# for every array argument on every call, which was 23% of a Table-1 routing call
# (profiled with perf; the phases that allocate keep ``bfio.ground.jit.kernel``).


@_helper
def _evaluate(t, P, E, capl, smin, lmin, cc, cpiv, cpos, ccost, sizes, lf, order, ssorted, lp, rp, gstart, gkey,
              glist, G, kt, idx):
    """Worker ``t``'s candidates from scratch: its reserved headroom
    ``c(h) = E(h) - P_t(h) - h - r (s_min + h) [h < l_min]`` (``r`` further free
    slots keep room for copies of the smallest waiting request), each group's
    pivot (:func:`~bfio.solvers.fast.costs._pivots`), and the two waiting requests around it with their
    costs (:func:`~bfio.solvers.terms.kernel.candidate_cost`)."""
    H1 = P.shape[1]
    ng = glist.shape[0]
    r = capl[t] - 1
    c = cc[t]
    for h in range(H1):
        c[h] = E[h] - P[t, h] - h - (r * (smin + h) if h < lmin else 0)
    _pivots(c, G, kt.w, kt.cw, glist, ng, cpiv, t, idx)
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
                ccost[t, g2, side] = candidate_cost(kt, c, sizes[jj], lf[jj], jj, t, G, np.inf)


@_helper
def _requery(t, cc, cpos, ccost, taken, sizes, lf, order, lp, rp, gstart, gkey, G, kt):
    """Replace worker ``t``'s candidates that were taken since its evaluation by
    the next waiting request on the same side of the same pivot. Exact while
    ``c`` and the pivots are unchanged: the waiting set only shrinks in phase 2,
    so an untaken candidate is still the nearest one, and a taken one's
    replacement is :func:`~bfio.solvers.fast.waiting._next_waiting` from its position."""
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
                ccost[t, g2, side] = candidate_cost(kt, cc[t], sizes[jj], lf[jj], jj, t, G, np.inf)


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
             rp, gstart, gkey, glist, G, kt, idx):
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
        _requery(t, cc, cpos, ccost, taken, sizes, lf, order, lp, rp, gstart, gkey, G, kt)
        return
    c = cc[t]
    for h in range(first, H1):
        c[h] = newc[h]
    _pivots(c, G, kt.w, kt.cw, glist, ng, newpiv, 0, idx)
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
                    ccost[t, g2, side] = candidate_cost(kt, c, sizes[jj], lf[jj], jj, t, G, np.inf)
            elif p >= 0 and lf[order[p]] > first:
                jj = order[p]
                ccost[t, g2, side] = candidate_cost(kt, c, sizes[jj], lf[jj], jj, t, G, np.inf)


@_helper
def _before(t, u, vt, vu, capl, P, spread):
    """Worker ``t`` with value ``vt[t]`` goes before ``u`` with ``vu[u]``: lower
    value, then :func:`~bfio.solvers.fast.place._prefer`, then the lower index (the order a scan over the
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
          G, kt, spread, reuse, bounds):
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
    up to :data:`~bfio.solvers.fast.costs.EXACT_LIFETIMES`); with bucketed lifetimes the candidates are
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
    wt = kt.w
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
                psi += _reservation_relief(smin, lmin, sizes[j0], lf[j0], kt.w)
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
                # (:func:`~bfio.solvers.fast.waiting._next_waiting`, the same one for every such worker), which costs
                # at least its floor, minus its volume plus the worker's terms (candidate_floor; equality
                # when it fits); every other slot at
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
                    v = candidate_floor(kt, sizes[jj], lf[jj], t)
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
                          gstart, gkey, glist, G, kt, idx)
            elif not dirty[t] and phit[t] == phi and (sver[t] == ver or capl[t] == 1):
                _requery(t, cc, cpos, ccost, taken, sizes, lf, order, lp, rp, gstart, gkey, G, kt)
            else:
                _refresh(t, P, E, capl, smin, lmin, cc, cpiv, cpos, ccost, newc, newpiv, taken, sizes, lf,
                         order, ssorted, lp, rp, gstart, gkey, glist, G, kt, idx)
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
