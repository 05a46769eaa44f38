"""The set-up phase both placements of the fast solver share
(:mod:`bfio.solvers.fast`, :mod:`bfio.solvers.heap`): which workers a routing
call can touch, their predicted loads, and the order of the waiting requests.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def touched_workers(base, free):
    """The workers with free slots ("touched": the only ones a call changes) and
    the envelope. Returns ``(tw, P, capl, Mo, E)``: ``tw[t]`` the worker of
    touched index ``t`` (ascending), ``P[t] = base[tw[t]]`` and
    ``capl[t] = free[tw[t]]``; ``Mo(h)`` the largest load of the other workers
    (the fixed envelope, 0 if none) and ``E(h) = max(Mo(h), max_t P[t, h])``.
    Invariant: ``E(h) = max_g base[g, h]`` (0 for no worker), all in ``base``'s dtype."""
    G, H1 = base.shape
    nT = 0
    for g in range(G):
        if free[g] > 0:
            nT += 1
    tw = np.empty(nT, dtype=np.int64)
    Mo = np.zeros(H1, dtype=base.dtype)
    k = 0
    for g in range(G):
        if free[g] > 0:
            tw[k] = g
            k += 1
        else:
            for h in range(H1):
                if base[g, h] > Mo[h]:
                    Mo[h] = base[g, h]
    P = np.empty((nT, H1), dtype=base.dtype)
    capl = np.empty(nT, dtype=np.int64)
    E = Mo.copy()
    for t in range(nT):
        capl[t] = free[tw[t]]
        for h in range(H1):
            P[t, h] = base[tw[t], h]
            if P[t, h] > E[h]:
                E[h] = P[t, h]
    return tw, P, capl, Mo, E


@njit(cache=True)
def waiting_order(sizes):
    """Positions of the waiting requests by size ascending; among equal sizes
    the oldest (lowest index: the pool is oldest first) comes last, so a search
    for the largest request that fits takes it first. The keys are distinct, so
    the order is the same for any sort."""
    n = sizes.shape[0]
    return np.argsort(sizes * (n + 1) + (n - np.arange(n)), kind="mergesort")


__all__ = ["touched_workers", "waiting_order"]
