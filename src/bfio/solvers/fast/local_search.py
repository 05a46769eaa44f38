"""Phase 3 of the fast solver: local search to a local optimum (:mod:`bfio.solvers.fast`).

Replacements of admitted requests by waiting ones (free admission), and moves
and swaps of admitted requests between workers for the workers that set the
envelope, each evaluated exactly on the envelope's top three
(:mod:`bfio.solvers.fast.envelope`).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel
from bfio.solvers.fast.costs import _pivots, _w
from bfio.solvers.fast.envelope import _column_scan, _excl1, _excl2, _update_worker
from bfio.solvers.fast.waiting import _grp_gt, _grp_le, _lower
from bfio.solvers.fenwick import bit_add as _bit_add
from bfio.solvers.terms.kernel import _volume
from bfio.solvers.touched import ascending_order


@kernel
def _local_search(P, Mo, capl, sizes, lf, forced, order, ssorted, rank, gstart, gkey, glist, taken, bit, at,
                  max_rounds, G, kt, tol):
    """Phase 3: local search to a local optimum, at most ``max_rounds`` rounds:
    (a) replace an admitted request by a waiting one (free admission only),
    (b) move or swap admitted requests of the workers that set the envelope.
    Invariant: every accepted change lowers ``J`` (every kernel term, ``kt``) by more
    than ``tol`` and keeps the assignment feasible (slots per worker, ``U`` admitted,
    forced kept).

    The deltas are the imbalance's (the envelope's top three), exact for the other
    kernel terms as follows: a replacement and a swap keep each worker's number of
    requests, so a term whose cost depends on the worker alone
    (:attr:`~bfio.solvers.terms.kernel.KernelTerms.worker_cost`; the kernels admit no
    other) cancels in them; a move adds ``worker_cost[t2] - worker_cost[t]`` (in the
    deltas' units, ``J / G``). The pruning bounds are the imbalance's: with such a term
    they may skip an improving move (a heuristic's loss), never accept a worsening one."""
    nT, H1 = P.shape
    wt = kt.w
    cw = kt.cw
    cwh = kt.cwh
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
        aord = ascending_order(asz)  # stable: equal sizes in the order of adm (request index)
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
                    if kt.worker_dependent:
                        d += (kt.worker_cost[t2] - kt.worker_cost[t]) / G
                    if d < best_d:
                        best_d = d
                        best_kind = 1
                        best_t2 = t2
                # swaps with a smaller admitted request on a worker with room for the difference
                q2lo = _lower(asz, 0, nadm, sj - maxslack)
                q2hi = _lower(asz, 0, nadm, sj)
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
