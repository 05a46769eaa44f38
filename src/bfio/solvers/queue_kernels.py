"""The phases of instant BF-IO's re-binding kernels (issue 45: the queue moves'
:mod:`bfio.solvers.move_plan`, the migrations' :mod:`bfio.solvers.migration_plan`):
the Python of :mod:`bfio.solvers.dispatch` (``queue_profiles``, ``candidate``,
``choose``) as small numba phases, each stating its invariant. A worker's slot
release offsets are a sorted row (the values of that module's heaps: a heap's
``heap[0]``, ``heappop``, ``heapreplace`` and ``remove`` are the row's first entry,
its removal and a sorted insert). The weighted sums over the offsets are taken in
the offsets' order (``h = 0, 1, ...``), so equal rows give equal values whatever
their place (BLAS's order depends on a row's place: ``tests/migration_reference.py``).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import helper, kernel
from bfio.solvers.dispatch import TOLERANCE


@helper
def _replace_min(row, value):
    """A sorted row of release offsets loses its least entry and gains ``value``
    (``heapq.heapreplace``). Invariant: the row stays sorted ascending."""
    B = row.shape[0]
    k = 1
    while k < B and row[k] < value:
        row[k - 1] = row[k]
        k += 1
    row[k - 1] = value


@helper
def _swap_value(row, old, value):
    """A sorted row loses one entry equal to ``old`` (``list.remove``) and gains
    ``value``. Invariant: the row stays sorted ascending; returns False (row
    unchanged) when ``old`` is not in it."""
    B = row.shape[0]
    p = 0
    while p < B and row[p] != old:
        p += 1
    if p == B:
        return False
    for k in range(p, B - 1):
        row[k] = row[k + 1]
    k = B - 1
    while k > 0 and row[k - 1] > value:
        row[k] = row[k - 1]
        k -= 1
    row[k] = value
    return True


@helper
def _admit_queue(row, rel, qids, sizes, lifetimes):
    """A worker's predicted loads ``row`` (``W + 1``) gain its queue ``qids`` (FIFO)
    admitted into its slots ``rel`` (sorted release offsets, updated): request ``j``
    takes the earliest, ``e``, adds ``s_j + (h - e)`` for ``e <= h < min(e + l_j, W +
    1)`` and frees it at ``e + l_j``. Invariant: ``row`` and ``rel`` are
    :func:`bfio.solvers.dispatch.queue_profiles`' row and heap of that worker."""
    W1 = row.shape[0]
    for q in range(qids.shape[0]):
        j = qids[q]
        e = rel[0]
        life = lifetimes[j]
        if e < W1:
            for h in range(e, min(e + life, W1)):
                row[h] += sizes[j] + (h - e)
        _replace_min(rel, e + life)


@helper
def _objective(loads, w):
    """``J = sum_h w_h (G max_g L_g(h) - sum_g L_g(h))`` of loads ``(G, W + 1)``
    (:func:`bfio.solvers.objective.imbalance_objective`, float)."""
    G, W1 = loads.shape
    out = 0.0
    for h in range(W1):
        top = loads[0, h]
        total = 0.0
        for g in range(G):
            v = loads[g, h]
            total += v
            if v > top:
                top = v
        out += (G * top - total) * w[h]
    return out


@helper
def _candidate_costs(loads, entry, size, life, w, out):
    """``out[d]``: ``J`` of ``loads`` ``(G, W + 1)`` when worker ``d`` alone gains
    ``size + (h - entry[d])`` for ``entry[d] <= h < entry[d] + life``
    (:func:`bfio.solvers.objective.imbalance_candidate_costs`: the envelope is the
    larger of the others' top and ``d``'s new load). Invariant: ``O(G W)``, ``loads``
    unchanged."""
    G, W1 = loads.shape
    for d in range(G):
        out[d] = 0.0
    for h in range(W1):
        first = 0
        top = loads[0, h]
        second = -np.inf
        total = 0.0
        for g in range(G):
            v = loads[g, h]
            total += v
            if g == 0:
                continue
            if v > top:
                second = top
                top = v
                first = g
            elif v > second:
                second = v
        for d in range(G):
            a = 0.0
            if entry[d] <= h < entry[d] + life:
                a = size + (h - entry[d])
            env = second if d == first else top
            mine = loads[d, h] + a
            if mine > env:
                env = mine
            out[d] += (G * env - (total + a)) * w[h]


@kernel
def flat_queues(head, nxt, length):
    """Every worker's FIFO queue (the singly linked lists ``head[g]`` -> ``nxt[i]`` ->
    ... -> -1 of :class:`bfio.sim.dispatch.InstantDispatch`) as ``(ptr, ids)``: worker
    ``g``'s queue is ``ids[ptr[g]:ptr[g + 1]]``, head first. Invariant: ``ptr[g + 1]
    - ptr[g] = length[g]`` for a consistent list."""
    G = head.shape[0]
    ptr = np.zeros(G + 1, dtype=np.int64)
    for g in range(G):
        ptr[g + 1] = ptr[g] + length[g]
    ids = np.empty(ptr[G], dtype=np.int64)
    for g in range(G):
        k, i = ptr[g], head[g]
        while i >= 0 and k < ptr[g + 1]:
            ids[k] = i
            k += 1
            i = nxt[i]
    return ptr, ids


@helper
def _choose(J, entry, loads, size, life, w):
    """The worker :func:`bfio.solvers.dispatch.choose` picks for a request of ``size``
    and ``life`` appended to each worker's queue (admitted at ``entry[d]``): the
    least ``J``; among ties (within the ties' tolerance) the earliest admission,
    then the least weighted load ``sum_h w_h (L_d(h) + add_d(h))``, then the first.
    Invariant: the result is a worker whose ``J`` is within the tolerance of the least."""
    G, W1 = loads.shape
    low = J[0]
    for d in range(1, G):
        if J[d] < low:
            low = J[d]
    bar = low + TOLERANCE * max(1.0, abs(low))
    first = -1
    for d in range(G):
        if J[d] <= bar and (first < 0 or entry[d] < first):
            first = entry[d]
    best, out = np.inf, -1
    for d in range(G):
        if J[d] <= bar and entry[d] == first:
            v = 0.0
            for h in range(W1):
                a = size + (h - entry[d]) if entry[d] <= h < entry[d] + life else 0.0
                v += (loads[d, h] + a) * w[h]
            if out < 0 or v < best:
                best, out = v, d
    return out
