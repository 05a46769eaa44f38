"""The set-up phase both placements of the fast solver share
(:mod:`bfio.solvers.fast`, :mod:`bfio.solvers.heap`): the loads as their kernels
take them (:func:`solver_loads`), which workers a routing call can touch, their
predicted loads, and the order of the waiting requests.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel

#: Integers of at most this magnitude are exact in float64 (2^53).
EXACT_FLOAT_INT = 2 ** 53


def solver_loads(base) -> np.ndarray:
    """The predicted loads ``Lhat_g(h)`` as the placements' kernels take them:
    C-contiguous float64, whatever the predictor gave (integer token counts of
    the point predictors, float expected loads of the probabilistic ones), so
    each kernel is compiled once, not once per dtype (issue 42). A float64
    C-contiguous ``base`` is returned as it is (about 1 us a routing call).

    Invariant: an integer ``base`` gives the placement an integer one gave
    before. Its values, and every sum and difference the kernels form of them
    (the loads of a worker, the envelope, the headrooms ``E(h) - Lhat_g(h) - h``,
    all token counts far below 2^53), are integers of magnitude below 2^53,
    which float64 holds exactly, and IEEE addition, subtraction and comparison
    of exact integers are exact; the costs were float64 already. Loads of
    2^53 or more (rounded here) are refused by :func:`touched_workers`."""
    return np.ascontiguousarray(base, dtype=np.float64)


@kernel
def touched_workers(base, free):
    """The workers with free slots ("touched": the only ones a call changes) and
    the envelope. Returns ``(tw, P, capl, Mo, E)``: ``tw[t]`` the worker of
    touched index ``t`` (ascending), ``P[t] = base[tw[t]]`` and
    ``capl[t] = free[tw[t]]``; ``Mo(h)`` the largest load of the other workers
    (the fixed envelope, 0 if none) and ``E(h) = max(Mo(h), max_t P[t, h])``.
    Invariant: ``E(h) = max_g base[g, h]`` (0 for no worker), all in ``base``'s dtype
    (float64 from both placements: :func:`solver_loads`); loads (non-negative)
    of :data:`EXACT_FLOAT_INT` or more raise ``ValueError``: float64 would not
    hold them, nor their sums, exactly."""
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
    for h in range(H1):
        if E[h] >= EXACT_FLOAT_INT:
            raise ValueError("predicted loads of 2^53 tokens or more: not exact in float64")
    return tw, P, capl, Mo, E


#: bits of one radix digit of :func:`waiting_order` (2,048 buckets)
RADIX_BITS = 11


@kernel
def waiting_order(sizes):
    """Positions of the waiting requests by size ascending; among equal sizes
    the oldest (lowest index: the pool is oldest first) comes last, so a search
    for the largest request that fits takes it first.

    A least-significant-digit radix sort (digits of :data:`RADIX_BITS`, as many
    as the largest size needs: two below 2^22 tokens), stable and started from
    the newest position, so equal sizes keep newest first: the same order as
    ``argsort(sizes * (n + 1) + (n - position))``, in ``O(n)`` instead of the
    ``O(n log n)`` comparison sort (0.19 ms at ``n = 4,096``)."""
    n = sizes.shape[0]
    order = np.empty(n, dtype=np.int64)
    for p in range(n):
        order[p] = n - 1 - p  # newest first: stability keeps it among equal sizes
    if n < 2:
        return order
    top = 0
    for p in range(n):
        if sizes[p] > top:
            top = sizes[p]
    nb = 1 << RADIX_BITS
    mask = nb - 1
    tmp = np.empty(n, dtype=np.int64)
    count = np.empty(nb + 1, dtype=np.int64)
    shift = 0
    while (top >> shift) > 0:
        count[:] = 0
        for p in range(n):
            count[((sizes[order[p]] >> shift) & mask) + 1] += 1
        for d in range(nb):
            count[d + 1] += count[d]
        for p in range(n):
            j = order[p]
            d = (sizes[j] >> shift) & mask
            tmp[count[d]] = j
            count[d] += 1
        order, tmp = tmp, order
        shift += RADIX_BITS
    return order


#: Up to this many values :func:`ascending_order` sorts by insertion (no allocation
#: beyond the result; faster there than the radix sort, which clears 2,048 counters per digit).
INSERTION_MAX = 96


@kernel
def ascending_order(values):
    """Positions of ``values`` (non-negative integers) by value ascending, equal
    values in position order: the permutation ``np.argsort(values,
    kind="mergesort")`` gives. Up to :data:`INSERTION_MAX` values a stable
    insertion sort; above, :func:`waiting_order` (equal values last position
    first) of the reversed array, read back. The local search orders the
    admitted sizes with it instead of compiling numba's mergesort (1.6 s of
    ``bfio compile``, issue 42); per call it took at most 1 us more than the
    mergesort at 5 to 1,000 values (97-128) and less elsewhere (2026-11-27)."""
    n = values.shape[0]
    if n <= INSERTION_MAX:
        order = np.empty(n, dtype=np.int64)
        for p in range(n):
            v = values[p]
            k = p
            while k > 0 and values[order[k - 1]] > v:
                order[k] = order[k - 1]
                k -= 1
            order[k] = p
        return order
    order = waiting_order(values[::-1].copy())
    for p in range(n):
        order[p] = n - 1 - order[p]
    return order


__all__ = ["EXACT_FLOAT_INT", "INSERTION_MAX", "solver_loads", "touched_workers", "waiting_order", "ascending_order"]
