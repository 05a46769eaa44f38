"""The cost of one placement under Eq. (IO) and its minimizer (:mod:`bfio.solvers.fast`).

Adding a request of size ``s`` and lifetime ``l`` to a worker with headroom
``c(h) = E(h) - Lhat(h) - h`` changes ``J`` by
``G sum_{h<l} w_h max(0, s - c(h)) - sum_{h<l} w_h (s + h)``, the imbalance's part of
a candidate's cost (:func:`bfio.solvers.terms.kernel.candidate_cost`, the kernels' one
cost function, which adds the other kernel terms' part), convex and piecewise linear in ``s``, smallest at
the weighted quantile of ``c(0..l-1)`` (:func:`_pivots`). Requests are grouped
by lifetime for the candidate searches (:func:`_bucket`). The weights are the
offset weights ``w_h = delta^h`` of :func:`bfio.lookahead.discount.offset_weights`.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import helper as _helper, kernel
from bfio.solvers.terms.kernel import KernelTerms, candidate_cost, cumulative_weights

# Helpers (``bfio.ground.jit.helper``) take arrays but never allocate, so they are compiled
# without the runtime's reference counting (numba's ``_nrt`` target option): a helper
# that numba does not inline otherwise pays an atomic reference count in and out
# for every array argument on every call, which was 23% of a Table-1 routing call
# (profiled with perf; the phases that allocate keep ``bfio.ground.jit.kernel``).


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


@kernel
def worker_costs(C, s, l, G, w):
    """:func:`~bfio.solvers.terms.kernel.candidate_cost` of one request (size ``s``,
    lifetime ``l <= len(w)``) on every row of headrooms ``C`` (``C[g, h] = c_g(h)``) under
    the imbalance alone (offset weights ``w``): the change of ``J`` on each worker."""
    cw, cwh = cumulative_weights(w)
    kt = KernelTerms(np.empty(0, dtype=np.int64), w, cw, cwh, np.zeros(C.shape[0]), False)
    out = np.empty(C.shape[0])
    for g in range(C.shape[0]):
        out[g] = candidate_cost(kt, C[g], s, l, -1, g, G, np.inf)
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
