"""The default BF-IO solver: a greedy placement plus local search for Eq. (IO).

Write ``E(h) = max_g Lhat_g(h)`` for the envelope of predicted loads and
``w_h = delta^h`` for the offset weights (:mod:`bfio.solvers.objective`).
Because exactly ``U`` requests are admitted and request ``j`` adds ``s_j + h``
at offset ``h < l_j`` (its lifetime),

    J = G sum_h w_h E(h) - sum_h w_h sum_g base_g(h) - sum_{admitted j} sum_{h<l_j} w_h (s_j + h),

so the integer program trades the envelope (weight ``G w_h`` per token at
offset ``h``) against admitted weighted volume. Adding a request of size ``s``
and lifetime ``l`` to worker ``g`` changes ``J`` by

    delta_g(s) = G sum_{h<l} w_h max(0, s - c_g(h)) - sum_{h<l} w_h (s + h),   c_g(h) = E(h) - Lhat_g(h) - h,

a convex piecewise-linear function of ``s`` whose minimum is at the weighted
quantile of ``c_g(0..l-1)`` (:func:`~bfio.solvers.fast.costs._pivots`; with unit weights the
``ceil(l / G)``-th smallest, for ``G > H`` the *headroom* ``min_h c_g(h)``: the
largest request that does not raise the envelope at any offset). The solver

1. places the requests that must be admitted (admission ``fifo``/``aging``, or
   all of them when ``U = |R_wait|``) largest first, each on the worker where it
   raises the envelope least (best fit among the workers where it fits);
2. fills the remaining slots one at a time, each time taking the
   (worker, request) pair with the most negative ``delta`` (the two waiting
   requests around the minimizer of ``delta_g`` are the only candidates, by
   convexity), keeping room on workers with several free slots for their
   remaining slots;
3. runs a local search to a local optimum: replace an admitted request by a
   waiting one (free admission only), and move or swap admitted requests
   between workers for the workers that set the envelope.

Every step keeps the assignment feasible, so the result always satisfies
Eq. (IO)'s constraints. Only workers with free slots change; the others enter
through the fixed envelope ``Mo(h)``.

One kernel serves both ``new_requests`` modes. A new request ``j`` has a
lifetime ``l_j`` in ``1..H + 1`` offsets (``persist``: ``H + 1`` for all, pass
:func:`persisting`; ``predicted``: the predictor's ``o_hat_j``). The waiting
requests are grouped into lifetime buckets (:func:`~bfio.solvers.fast.costs._bucket`); each bucket offers
the two requests around its pivot (taken at its longest lifetime), and every
candidate's cost uses its own lifetime. With a single group ``l = H + 1`` and
unit weights every step is the persisting, undiscounted algorithm, operation
for operation.

The lifetimes, the weights and the other terms' costs are the routing call's
objective terms as ONE argument, a :class:`~bfio.solvers.terms.kernel.KernelTerms`
(:meth:`bfio.solvers.objective.ObjectiveTerms.kernel_terms`, handed over by
:func:`solve_fast_terms`); the cost of one placement is
:func:`~bfio.solvers.terms.kernel.candidate_cost`, the kernels' one cost function
(where a new term of ``J`` goes: :mod:`bfio.solvers.terms`, "How to add a term").
``delta_g(s)`` above is its imbalance's part; a kernel term adds a cost of the
worker, which moves no pivot, and the phases stay exact for it as their
docstrings say (phase 1 costs every worker, phase 3's moves add it).

``base`` may be integer (point predictors: ``oracle``, ``noisy``, ``none``) or
float (expected loads of the ``empirical``/``geometric`` predictors); the
kernels take it as float64 (:func:`bfio.solvers.touched.solver_loads`), exact
for integer loads, so each is compiled once (issue 42: one specialization per
dtype had doubled the solver's compile).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel
from bfio.solvers.fast.costs import _bucket, worker_costs
from bfio.solvers.fast.fill import _fill
from bfio.solvers.fast.local_search import _local_search
from bfio.solvers.fast.place import _place_forced
from bfio.solvers.fenwick import bit_add as _bit_add
from bfio.solvers.objective import PERSIST, persisting
from bfio.solvers.terms.kernel import cumulative_weights, for_workers, imbalance_only
from bfio.solvers.touched import solver_loads, touched_workers, waiting_order


def solve_fast(base, free, sizes, life, forced, U, max_rounds, weights, **options):
    """Heuristic solution of Eq. (IO) under the imbalance alone; returns request ->
    worker (or -1): :func:`place_fast` with the :class:`~bfio.solvers.terms.kernel.KernelTerms`
    of lifetimes ``life`` and offset weights ``weights``
    (:func:`~bfio.solvers.terms.kernel.imbalance_only`).

    ``base`` is ``(G, H + 1)`` ``Lhat_g(h)`` of the active requests, integer
    (point predictors) or float (expected loads of the probabilistic
    predictors); the kernel :func:`_solve_fast` takes it as float64
    (:func:`bfio.solvers.touched.solver_loads`: exact for integer loads, so one
    specialization serves both). ``life[j]`` is the number of offsets at which
    a newly admitted request adds ``s_j + h`` (clipped to ``1..H + 1``;
    ``H + 1`` or more = persists over the whole window, the spec's Eq. (IO)).
    ``forced[j]`` marks requests that must be admitted. ``weights[h]`` is the
    offset weight ``delta^h`` of :func:`bfio.lookahead.discount.offset_weights`
    (invariant: ``weights[0] = 1 >= weights[h] > 0``; the move pruning of the
    local search uses it). Costs are float64; with unit weights and integer
    loads they are exact integers. ``options`` as :func:`place_fast`."""
    kt = imbalance_only(life, weights, np.shape(base)[0])
    return place_fast(base, free, sizes, forced, U, max_rounds, kt, **options)


def place_fast(base, free, sizes, forced, U, max_rounds, kt, **options):
    """Heuristic solution of Eq. (IO) with every kernel term of the routing call, ``kt``
    (:class:`~bfio.solvers.terms.kernel.KernelTerms`: the lifetimes, the offset weights,
    the other terms' costs); returns request -> worker (or -1); ``base`` and ``forced``
    as :func:`solve_fast`. ``options`` (each ``True`` unless given):
    ``spread`` (the tie-break :func:`~bfio.solvers.fast.place._prefer`),
    ``reuse=False`` turns off phase 2's cached evaluations (same result,
    slower), ``bounds=False`` brings every stale worker up to date at every step
    instead of only those whose lower bound can reach the best
    (:func:`~bfio.solvers.fast.fill._fill`). The phases:
    :func:`~bfio.solvers.fast.place._place_forced`,
    :func:`~bfio.solvers.fast.fill._fill`,
    :func:`~bfio.solvers.fast.local_search._local_search`.
    """
    return _solve_fast(solver_loads(base), free, sizes, forced, U, max_rounds, kt, **options)


@kernel
def _solve_fast(base, free, sizes, forced, U, max_rounds, kt, spread=True, reuse=True, bounds=True):
    """The kernel of :func:`place_fast` (its docstring), on float64 loads
    ``base`` (invariant: :func:`~bfio.solvers.touched.solver_loads`)."""
    G, H1 = base.shape
    n = sizes.shape[0]
    assign = np.full(n, -1, dtype=np.int64)
    if U <= 0 or n == 0:
        return assign
    life = kt.life
    cw = kt.cw
    # touched workers (free slots) and the fixed envelope of the others; the terms'
    # worker costs indexed like them
    tw, P, capl, Mo, E = touched_workers(base, free)
    nT = tw.shape[0]
    kt = for_workers(kt, tw)
    lf = np.empty(n, dtype=np.int64)
    for j in range(n):
        lv = life[j]
        lf[j] = 1 if lv < 1 else (H1 if lv > H1 else lv)
    # size order (ascending, oldest last among equal sizes) and, for the candidate
    # searches, the same order grouped by lifetime bucket (_bucket): group k
    # occupies gstart[k]..gstart[k+1]-1; its pivot is taken at the longest lifetime
    # in it (the smallest headroom: its "fits" candidates fit for every member)
    sorder = waiting_order(sizes)
    NB = _bucket(H1, H1)
    key = np.empty(n, dtype=np.int64)
    kmax = np.zeros(NB + 1, dtype=np.int64)  # longest lifetime per bucket
    gstart = np.zeros(NB + 2, dtype=np.int64)
    for j in range(n):
        key[j] = _bucket(lf[j], H1)
        gstart[key[j] + 1] += 1
        if lf[j] > kmax[key[j]]:
            kmax[key[j]] = lf[j]
    ng = 0
    for k in range(1, NB + 1):
        if gstart[k + 1] > 0:
            ng += 1
    glist = np.empty(ng, dtype=np.int64)  # pivot lifetime of each non-empty group, ascending
    gkey = np.empty(ng, dtype=np.int64)
    q = 0
    for k in range(1, NB + 1):
        if gstart[k + 1] > 0:
            glist[q] = kmax[k]
            gkey[q] = k
            q += 1
    for k in range(1, NB + 2):
        gstart[k] += gstart[k - 1]
    order = np.empty(n, dtype=np.int64)
    fill = gstart.copy()
    for q in range(n):
        j = sorder[q]
        order[fill[key[j]]] = j
        fill[key[j]] += 1
    ssorted = sizes[order]
    taken = np.zeros(n, dtype=np.bool_)
    rank = np.empty(n, dtype=np.int64)  # position of each request in the grouped order
    bit = np.zeros(n + 1, dtype=np.int64)
    for q in range(n):
        rank[order[q]] = q
        _bit_add(bit, q, 1)
    at = np.full(n, -1, dtype=np.int64)  # touched index per request
    # improvements smaller than tol are rounding noise (tol < 1: with unit weights
    # and integer loads every cost is an integer, so nothing real is lost)
    emax = 1.0
    for h in range(H1):
        if E[h] > emax:
            emax = float(E[h])
    tol = 1e-12 * G * emax * cw[H1] * (H1 + 1)
    if tol > 0.25:
        tol = 0.25

    placed = _place_forced(P, E, capl, sizes, lf, forced, sorder, taken, bit, at, rank, U, G, kt, spread)
    if placed < U:
        _fill(P, E, capl, sizes, lf, sorder, order, ssorted, rank, gstart, gkey, glist, taken, bit, at, placed, U,
              G, kt, spread, reuse, bounds)
    _local_search(P, Mo, capl, sizes, lf, forced, order, ssorted, rank, gstart, gkey, glist, taken, bit, at,
                  max_rounds, G, kt, tol)
    for j in range(n):
        if at[j] >= 0:
            assign[j] = tw[at[j]]
    return assign


def size_order(sizes: np.ndarray) -> np.ndarray:
    """Waiting requests by size ascending; among equal sizes the oldest (lowest
    index, the pool is oldest first) comes last, so "largest that fits" prefers it."""
    n = sizes.shape[0]
    return np.lexsort((-np.arange(n), sizes)).astype(np.int64)


def solve_fast_terms(base, free, sizes, forced, U, terms, max_rounds: int = 4, **options) -> np.ndarray:
    """:func:`place_fast` with the objective's terms of the routing call, a
    :class:`~bfio.solvers.objective.ObjectiveTerms` (Eq. (IO), Section 4), as the
    kernels take them (:meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_terms`);
    ``base`` spans its offsets ``0..terms.window``. ``options`` as :func:`place_fast`."""
    return place_fast(base, free, sizes, forced, U, max_rounds, terms.kernel_terms(base, sizes.shape[0]), **options)


def fast_assign(inst, max_rounds: int = 4, forced: np.ndarray | None = None) -> np.ndarray:
    """Solve an :class:`~bfio.solvers.instance.Instance` with the fast heuristic,
    over the offsets ``0..effective_horizon`` (:meth:`ObjectiveTerms.fast
    <bfio.solvers.objective.ObjectiveTerms.fast>` of the instance's terms)."""
    if forced is None:
        forced = inst.forced()
    terms = inst.terms.fast()
    return solve_fast_terms(np.ascontiguousarray(inst.base[:, :terms.offsets]), inst.free, inst.sizes, forced,
                            inst.admissible, terms, int(max_rounds))


__all__ = ["PERSIST", "solve_fast", "place_fast", "solve_fast_terms", "fast_assign", "persisting", "size_order",
           "cumulative_weights", "worker_costs"]
