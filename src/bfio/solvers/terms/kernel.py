"""The terms of BF-IO's objective ``J`` as the numba kernels take them (Section 4, Eq. (IO); issue 43).

The fast, heap, shard and drain placements receive the terms of a routing call
as ONE argument, a :class:`KernelTerms` (a named tuple of arrays, which numba
compiles to a struct: a field is read at no cost, and the tuple is passed on
whole), built once per call by
:meth:`ObjectiveTerms.kernel_terms <bfio.solvers.objective.ObjectiveTerms.kernel_terms>`;
and they cost a candidate, request ``j`` of size ``s`` and lifetime ``l`` on
worker ``g``, with ONE function, :func:`candidate_cost`: the imbalance's part plus
every other kernel term's part. The greedy's fill, the
heap's choice between its two candidates, the greedy's forced phase when a term
depends on the worker, and ``drain:N``'s best worker all call it.

A term the kernels weigh (``in_kernel = True``) is linear in the assignment and
independent of the request (:attr:`bfio.solvers.terms.Term.request_independent`):
its cost of a placement on worker ``g`` is a constant of the call,
:meth:`~bfio.solvers.terms.Term.kernel_worker_costs`, summed over the terms into
:attr:`KernelTerms.worker_cost`. Such a term is therefore added with its module and
its factory in :data:`bfio.solvers.terms.CALL_TERMS` only. A term whose kernel cost
depends on the request (or on the placements before it) needs a field here and its
part in :func:`candidate_cost`, and the imbalance-only shortcuts that choose a
request by its size alone (``_pivots``, the heap's largest-that-fits, the local
search's replacements) are not exact for it: the kernels refuse it by name
(:meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_terms`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bfio.ground.jit import helper as _helper, kernel


class KernelTerms(NamedTuple):
    """The terms of ``J`` at one routing call, as the kernels take them (module docstring):

    - ``life``: ``(n,)`` int64 lifetimes ``l_j`` of the waiting requests
      (:data:`bfio.solvers.objective.PERSIST` when they persist; the kernels clip them to ``1..H + 1``);
    - ``w``: ``(H + 1,)`` the offset weights ``w_h = delta^h``;
    - ``cw``, ``cwh``: ``(H + 2,)`` their prefix sums (:func:`cumulative_weights`);
    - ``worker_cost``: ``(workers,)`` float64, the kernel terms' cost of any request on
      each worker, summed (zeros: the imbalance alone); indexed like the kernel's workers
      (all of them, or the touched ones after :func:`for_workers`);
    - ``worker_dependent``: True when some kernel term's cost depends on the worker (the
      heap's ``_key`` and the greedy's best fit are not exact then)."""

    life: np.ndarray
    w: np.ndarray
    cw: np.ndarray
    cwh: np.ndarray
    worker_cost: np.ndarray
    worker_dependent: bool

    def requests(self, idx: np.ndarray) -> KernelTerms:
        """These terms for the waiting requests ``idx`` alone (a shard's, or those left)."""
        return self._replace(life=self.life[idx])


#: what a routing call's terms share with the run's other calls, kept (a run's weights are
#: one array, its worker count one number): ``id(w) -> (w, cw, cwh)`` and ``G -> zeros``;
#: read-only arrays (no kernel writes a field of :class:`KernelTerms`)
_PREFIX_SUMS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
_NO_COSTS: dict[int, np.ndarray] = {}
_KEPT = 64


def _prefix_sums(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cumulative_weights` of ``w``, computed once per weights array (kept while
    ``w`` is: the entry holds it, so its ``id`` is not reused)."""
    kept = _PREFIX_SUMS.get(id(w))
    if kept is not None and kept[0] is w:
        return kept[1], kept[2]
    if len(_PREFIX_SUMS) >= _KEPT:
        _PREFIX_SUMS.clear()
    cw, cwh = cumulative_weights(w)
    _PREFIX_SUMS[id(w)] = (w, cw, cwh)
    return cw, cwh


def imbalance_only(life: np.ndarray, weights: np.ndarray, workers: int) -> KernelTerms:
    """The :class:`KernelTerms` of the imbalance of Eq. (IO) alone: lifetimes ``life``,
    offset weights ``weights`` (``weights[0] = 1 >= weights[h] > 0``), ``workers`` workers."""
    G = int(workers)
    zeros = _NO_COSTS.get(G)
    if zeros is None:
        if len(_NO_COSTS) >= _KEPT:
            _NO_COSTS.clear()
        zeros = _NO_COSTS[G] = np.zeros(G, dtype=np.float64)
    return with_worker_costs(life, weights, zeros, False)


def with_worker_costs(life: np.ndarray, weights: np.ndarray, worker_cost: np.ndarray,
                      worker_dependent: bool) -> KernelTerms:
    """The :class:`KernelTerms` of the imbalance plus terms whose costs per worker sum to
    ``worker_cost``."""
    w = np.ascontiguousarray(weights, dtype=np.float64)
    cw, cwh = _prefix_sums(w)
    return KernelTerms(np.asarray(life, dtype=np.int64), w, cw, cwh,
                       np.ascontiguousarray(worker_cost, dtype=np.float64), bool(worker_dependent))


@kernel
def cumulative_weights(w):
    """``(cw, cwh)`` with ``cw[l] = sum_{h<l} w_h`` and ``cwh[l] = sum_{h<l} w_h h``
    (``l = 0..len(w)``): the prefix sums :func:`candidate_cost` and :func:`_volume` read."""
    H1 = w.shape[0]
    cw = np.zeros(H1 + 1, dtype=np.float64)
    cwh = np.zeros(H1 + 1, dtype=np.float64)
    for h in range(H1):
        cw[h + 1] = cw[h] + w[h]
        cwh[h + 1] = cwh[h] + w[h] * h
    return cw, cwh


@kernel
def for_workers(kt, tw):
    """``kt`` with :attr:`~KernelTerms.worker_cost` indexed by the kernel's touched
    workers ``tw`` (touched index ``t`` -> worker ``tw[t]``). Invariant: every other field is ``kt``'s."""
    return KernelTerms(kt.life, kt.w, kt.cw, kt.cwh, kt.worker_cost[tw], kt.worker_dependent)


@_helper
def _volume(s, l, cw, cwh):
    """Weighted volume ``sum_{h<l} w_h (s + h)`` a request adds to ``sum_g Lhat_g``."""
    return s * cw[l] + cwh[l]


@_helper
def candidate_cost(kt, c, s, l, j, g, G, cap):
    """THE cost of a candidate (Eq. (IO), every term of ``J``): the change of ``J`` when
    request ``j`` (size ``s``, lifetime ``l``) joins worker ``g`` (an index of
    ``kt.worker_cost``) whose headroom is ``c`` (``c(h) = E(h) - Lhat_g(h) - h``, less
    what the caller reserves): the imbalance's part
    ``G sum_{h<l} w_h max(0, s - c(h)) - sum_{h<l} w_h (s + h)`` (the change of
    ``sum_h w_h [G max_g Lhat_g(h) - sum_g Lhat_g(h)]``; ``cw[l] = sum_{h<l} w_h``,
    ``cwh[l] = sum_{h<l} w_h h``; for ``l = H + 1`` and unit weights ``delta(s) - H (H + 1) / 2``,
    a constant shift) plus the other kernel terms' part, ``kt.worker_cost[g]``.

    ``cap``: the scan may stop once the cost cannot be below it (``np.inf``: never); the
    value returned is then at least ``cap`` (the imbalance's sum only grows along the
    scan). Invariant: a cost below ``cap`` is exact (the same operations whatever ``cap``).
    Convex and piecewise linear in ``s`` for a fixed worker, smallest at the weighted
    quantile of ``c(0..l-1)`` (:func:`bfio.solvers.fast.costs._pivots`: the terms' part
    does not depend on the request, so it does not move the minimizer)."""
    vol = _volume(s, l, kt.cw, kt.cwh)
    rest = kt.worker_cost[g]
    w = kt.w
    tot = 0.0
    for h in range(l):
        d = s - c[h]
        if d > 0:
            tot += w[h] * d
            if G * tot - vol + rest >= cap:
                break
    return G * tot - vol + rest


@_helper
def candidate_floor(kt, s, l, g):
    """The least cost a candidate (size ``s``, lifetime ``l``) can have on worker ``g``:
    :func:`candidate_cost` when it raises the envelope nowhere (the imbalance's part is
    then minus its volume)."""
    return kt.worker_cost[g] - _volume(s, l, kt.cw, kt.cwh)


__all__ = ["KernelTerms", "imbalance_only", "with_worker_costs", "cumulative_weights", "for_workers",
           "candidate_cost", "candidate_floor"]
