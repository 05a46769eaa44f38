"""BF-IO's placement at production scale: largest-that-fits on a heap of headrooms (issue 27).

The greedy of :mod:`bfio.solvers.fast` looks at every worker with free slots
for every placement and re-derives every headroom when the envelope rises, so a
routing call costs ``O(U n_T)`` and grows like ``G^2``. This kernel keeps the
same objective (Eq. (IO), weights ``delta^h`` of
:func:`bfio.solvers.objective.offset_weights`, lifetimes ``l_j``) and the same
reading of it (the fast solver's module docstring): with ``E(h) = max_g
Lhat_g(h)``, request ``j`` placed on worker ``g`` raises the envelope iff
``s_j > c_g = min_{h < l_j} (E(h) - Lhat_g(h) - h)``, the worker's *headroom*;
a placement that raises nothing lowers ``J`` by its weighted volume, one that
raises ``E`` costs ``G`` per raised token. So it places, in turn:

1. the requests that must be admitted (admission ``fifo``/``aging``), largest
   first, each on the worker with the most headroom;
2. the remaining slots one at a time: the worker with the most headroom (top of
   a max-heap keyed by headroom) takes the **largest** waiting request that
   fits it while leaving the smallest waiting size for each of its other free
   slots, so nothing is raised while anything fits anywhere (largest
   volume first, as the greedy); when nothing fits, the smallest waiting
   request goes there (the least raise).

Only the chosen worker's headroom changes while nothing is raised (``O(log
n_T + H_eff)`` per placement, the request found by a binary search and a
path-compressed "next waiting to the left" pointer). A raise of ``E`` changes
every headroom, and the heap is rebuilt (``O(n_T H_eff)``); raises are rare in
the steady state (counted in the result). A call is therefore

    O(G H_eff + n log n + U (log n_T + H_eff) + raises n_T H_eff)

against the greedy's ``O(G H_eff + U n_T (...))``. Headrooms are taken over the
whole window (``l_j = H_eff + 1``): a short-lived request is placed as if it
persisted, which can only make the choice more cautious. There is no local
search (its rounds cost as much as the greedy's fill at ``G = 1024``).
Measurements against the greedy and the exact backends: ``docs/bfio.md``,
"Production scale".
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _headroom(P, E, t, H1):
    """``min_h (E(h) - P[t, h] - h)`` over the window (float64)."""
    c = E[0] - P[t, 0]
    for h in range(1, H1):
        v = E[h] - P[t, h] - h
        if v < c:
            c = v
    return c


@njit(cache=True)
def _sift_down(hk, hi, pos, i, m):
    """Restore the max-heap below position ``i`` (keys ``hk``, items ``hi``, ``pos[item]`` its position)."""
    while True:
        left = 2 * i + 1
        if left >= m:
            return
        big = left
        if left + 1 < m and hk[left + 1] > hk[left]:
            big = left + 1
        if hk[big] <= hk[i]:
            return
        hk[i], hk[big] = hk[big], hk[i]
        hi[i], hi[big] = hi[big], hi[i]
        pos[hi[i]] = i
        pos[hi[big]] = big
        i = big


@njit(cache=True)
def _heapify(hk, hi, pos, m):
    """Max-heap invariant over the first ``m`` entries: ``hk[parent] >= hk[child]``."""
    for i in range(m):
        pos[hi[i]] = i
    for i in range(m // 2 - 1, -1, -1):
        _sift_down(hk, hi, pos, i, m)


@njit(cache=True)
def _left_waiting(left, p):
    """Largest position ``<= p`` whose request still waits (``-1`` if none);
    ``left`` is a path-compressed pointer forest, ``left[p] = p`` while ``p`` waits."""
    r = p
    while r >= 0 and left[r] != r:
        r = left[r]
    while p >= 0 and left[p] != p:  # compress
        nxt = left[p]
        left[p] = r
        p = nxt
    return r


@njit(cache=True)
def _take(left, right, p):
    """Mark position ``p`` taken: both pointer forests skip it from now on."""
    left[p] = p - 1
    right[p] = p + 1


@njit(cache=True)
def _right_waiting(right, p, n):
    """Smallest position ``>= p`` whose request still waits (``n`` if none)."""
    r = p
    while r < n and right[r] != r:
        r = right[r]
    while p < n and right[p] != p:
        nxt = right[p]
        right[p] = r
        p = nxt
    return r


@njit(cache=True)
def _add(P, E, t, s, lf, H1):
    """Add request (size ``s``, lifetime ``lf`` offsets) to touched worker ``t``;
    returns True when the envelope ``E`` rose at some offset."""
    raised = False
    for h in range(min(lf, H1)):
        P[t, h] += s + h
        if P[t, h] > E[h]:
            E[h] = P[t, h]
            raised = True
    return raised


@njit(cache=True)
def _key(P, E, capl, t, H1, smin):
    """Heap key of touched worker ``t``: its headroom (``capl``, ``smin``: see the selection)."""
    return _headroom(P, E, t, H1)


@njit(cache=True)
def solve_heap(base, free, sizes, life, forced, U):
    """Place exactly ``U`` waiting requests (every ``forced`` one among them) on
    workers with free slots, at most ``free[g]`` per worker; returns request ->
    worker (or -1) and the number of envelope raises that rebuilt the heap.

    ``base`` is the ``(G, H_eff + 1)`` predicted loads of the active requests
    (integer or float), ``life[j]`` the offsets at which request ``j`` adds
    ``s_j + h`` once admitted. Invariants kept at every placement: the
    assignment is feasible, the heap holds exactly the touched workers with a
    free slot left, and every heap key is the worker's key under the current
    envelope (rebuilt after any raise).
    """
    G, H1 = base.shape
    n = sizes.shape[0]
    assign = np.full(n, -1, dtype=np.int64)
    if U <= 0 or n == 0:
        return assign, 0
    nT = 0
    for g in range(G):
        if free[g] > 0:
            nT += 1
    tw = np.empty(nT, dtype=np.int64)
    P = np.empty((nT, H1), dtype=np.float64)
    capl = np.empty(nT, dtype=np.int64)
    E = np.zeros(H1, dtype=np.float64)
    k = 0
    for g in range(G):
        if free[g] > 0:
            tw[k] = g
            capl[k] = free[g]
            for h in range(H1):
                P[k, h] = base[g, h]
            k += 1
        for h in range(H1):
            if base[g, h] > E[h]:
                E[h] = base[g, h]
    # waiting requests by size ascending (oldest last among equal sizes: taken first)
    order = np.argsort(sizes * (n + 1) + (n - np.arange(n)))
    ss = np.empty(n, dtype=np.float64)
    left = np.arange(n)
    right = np.arange(n)
    for p in range(n):
        ss[p] = sizes[order[p]]
    hk = np.empty(nT, dtype=np.float64)
    hi = np.arange(nT)
    pos = np.empty(nT, dtype=np.int64)
    m = nT
    smin = ss[0]
    for t in range(nT):
        hk[t] = _key(P, E, capl, t, H1, smin)
    _heapify(hk, hi, pos, m)
    raises = 0
    rebuilds = 0
    stale = False
    placed = 0
    # 1. forced requests, largest first, each on the worker with the most headroom
    for p in range(n - 1, -1, -1):
        j = order[p]
        if not forced[j] or placed >= U or m == 0:
            continue
        while True:  # lazy keys (see phase 2); rebuilt before a placement that would raise E
            t = hi[0]
            c = _key(P, E, capl, t, H1, smin)
            if c < hk[0]:
                hk[0] = c
                _sift_down(hk, hi, pos, 0, m)
                continue
            hk[0] = c
            if c < sizes[j] and stale:
                for q in range(m):
                    hk[q] = _key(P, E, capl, hi[q], H1, smin)
                _heapify(hk, hi, pos, m)
                stale = False
                rebuilds += 1
                continue
            break
        _take(left, right, p)
        assign[j] = tw[t]
        placed += 1
        capl[t] -= 1
        raised = _add(P, E, t, sizes[j], life[j], H1)
        if capl[t] == 0:
            m -= 1
            hk[0], hi[0] = hk[m], hi[m]
        if raised:
            raises += 1
            stale = True
        if capl[t] > 0 and m > 0 and hi[0] == t:
            hk[0] = _key(P, E, capl, t, H1, smin)
        _sift_down(hk, hi, pos, 0, m)
    # 2. the other slots: the most headroom takes the largest request that fits
    while placed < U and m > 0:
        lo = _right_waiting(right, 0, n)
        if lo >= n:
            break
        smin = ss[lo]
        # lazy keys: a raise of E only raises other workers' headrooms, so a stored
        # key is a lower bound (up to smin's growth); refresh the top until it holds
        while True:
            t = hi[0]
            c = _key(P, E, capl, t, H1, smin)
            if c >= hk[0]:
                hk[0] = c
                break
            hk[0] = c
            _sift_down(hk, hi, pos, 0, m)
        # largest waiting request that fits and leaves the smallest waiting size for
        # each of the worker's other free slots (upper bound by binary search)
        c -= (capl[t] - 1) * smin
        a, b = 0, n
        while a < b:
            mid = (a + b) // 2
            if ss[mid] <= c:
                a = mid + 1
            else:
                b = mid
        p = _left_waiting(left, a - 1)
        if p < 0:
            if stale:  # the keys predate a raise: bring them all up to date, then decide
                for q in range(m):
                    hk[q] = _key(P, E, capl, hi[q], H1, smin)
                _heapify(hk, hi, pos, m)
                stale = False
                rebuilds += 1
                continue
            p = lo  # nothing fits anywhere: the smallest raises the envelope least
        j = order[p]
        _take(left, right, p)
        assign[j] = tw[t]
        placed += 1
        capl[t] -= 1
        raised = _add(P, E, t, sizes[j], life[j], H1)
        if capl[t] == 0:
            m -= 1
            hk[0], hi[0] = hk[m], hi[m]
        if raised:
            raises += 1
            stale = True
        if capl[t] > 0 and m > 0 and hi[0] == t:
            hk[0] = _key(P, E, capl, t, H1, smin)
        _sift_down(hk, hi, pos, 0, m)
    return assign, rebuilds


__all__ = ["solve_heap"]
