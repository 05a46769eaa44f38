"""Phase 1 of the fast solver: the requests that must be admitted (:mod:`bfio.solvers.fast`).

:func:`_place` is the one placement primitive of phases 1 and 2 (a request
joins a touched worker: its profile and the envelope rise); :func:`_prefer` is
the tie-break among equal-cost workers both phases use.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import helper as _helper, kernel
from bfio.solvers.fast.costs import _prefix_headroom
from bfio.solvers.fenwick import bit_add as _bit_add
from bfio.solvers.terms.kernel import candidate_cost

# Helpers (``bfio.ground.jit.helper``) take arrays but never allocate, so they are compiled
# without the runtime's reference counting (numba's ``_nrt`` target option): a helper
# that numba does not inline otherwise pays an atomic reference count in and out
# for every array argument on every call, which was 23% of a Table-1 routing call
# (profiled with perf; the phases that allocate keep ``bfio.ground.jit.kernel``).


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


@_helper
def _cheapest_worker(P, E, capl, s, l, j, G, kt, spread, crow):
    """The generic path of phase 1 (a kernel term that depends on the worker,
    ``kt.worker_dependent``): the touched worker with a free slot where request ``j``
    (size ``s``, lifetime ``l``) costs least by
    :func:`~bfio.solvers.terms.kernel.candidate_cost` (every term of ``J``), ties by
    :func:`_prefer` then the lower index; ``crow`` is scratch for the headroom.
    Invariant: exact per candidate (each worker's cost computed in full)."""
    nT = P.shape[0]
    best = -1
    bc = np.inf
    for t in range(nT):
        if capl[t] == 0:
            continue
        for h in range(l):
            crow[h] = E[h] - P[t, h] - h
        cost = candidate_cost(kt, crow, s, l, j, t, G, np.inf)
        if best < 0 or cost < bc or (cost == bc and _prefer(capl, P, t, best, spread)):
            best = t
            bc = cost
    return best


@kernel
def _place_forced(P, E, capl, sizes, lf, forced, sorder, taken, bit, at, rank, U, G, kt, spread):
    """Phase 1: the requests that must be admitted, largest first, each on the
    worker where it raises the envelope least (best fit among the workers where
    it fits: ``s <= pm[t, l - 1]``, the prefix minimum of ``c_t(h) = E(h) - P_t(h) - h``).
    Returns the number placed (at most ``U``). Invariant: no worker receives
    more than its free slots.

    Best fit is the imbalance's shortcut: among the workers where the request fits its
    cost is minus its volume on each, and where none fits it is the weighted raise. A
    kernel term that depends on the worker (``kt.worker_dependent``) breaks it: each
    request then goes where :func:`~bfio.solvers.terms.kernel.candidate_cost` is least
    (:func:`_cheapest_worker`, the generic path)."""
    nT, H1 = P.shape
    wt = kt.w
    crow = np.empty(H1, dtype=P.dtype)
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
        if kt.worker_dependent:
            best = _cheapest_worker(P, E, capl, s, l, j, G, kt, spread, crow)
        else:
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
