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
