"""BF-IO with instant dispatch (issue 30): bind each arriving request to the
worker queue that minimizes the discounted predicted imbalance ``J`` over the
window (Eq. (IO)'s objective, :mod:`bfio.solvers.objective`), as the
data-parallel routers of vLLM and SGLang bind a request to one rank's queue
when it arrives (``docs/online.md``).

A worker's predicted load over offsets ``h = 0..W`` is its running requests'
(``s_i + tau_i + h`` while ``h < r_i``, :func:`bfio.lookahead.profiles.predicted_loads`)
plus its queue admitted first-in first-out into the slots they free: a
worker's ``B`` slots are a heap of release offsets (0 for a free slot, ``r_i``
for a running request); each queued request ``j`` in order takes the earliest
one, ``e_j``, adds ``s_j + (h - e_j)`` for ``e_j <= h < e_j + l_j`` and frees it
again at ``e_j + l_j`` (``l_j``: its lifetime, the objective's new-request model).
An arriving request is appended to the queue of every candidate worker in
turn, the others unchanged; it goes where ``J`` of the whole cluster is
smallest; among ties (a request that raises the envelope nowhere, common in a
lightly loaded cluster, or that enters beyond the window on every worker of an
overloaded one) to the earliest admission, then the least weighted predicted
load after it, then the first such worker. The arrivals of one call are bound one at a
time, in arrival order, each seeing the earlier ones' bindings: the batch of a
step is not optimized jointly (a sequential rule, as the engines' routers are).
"""

from __future__ import annotations

import heapq

import numpy as np

from bfio.solvers.objective import ObjectiveTerms


def queue_profiles(base: np.ndarray, release: list[list[int]], queues: list[np.ndarray], sizes: np.ndarray,
                   lifetimes: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, list[list[int]]]:
    """The ``(G, W + 1)`` predicted loads of every worker: ``base`` (its running
    requests) plus its queued requests ``queues[g]`` (ids, FIFO order) admitted
    into the slots of ``release[g]`` (a heap of release offsets, taken over and
    updated); returns the loads and the heaps after the queues. ``counts`` (``(G,
    W + 1)``, the running requests' predicted numbers, updated in place): each
    queued request adds 1 over the offsets it adds its load."""
    loads = np.asarray(base, dtype=float).copy()
    W1 = loads.shape[1]
    for g, queue in enumerate(queues):
        heap = release[g]
        for j in queue:
            e = heapq.heappop(heap)
            end = min(e + int(lifetimes[j]), W1)
            if e < W1:
                loads[g, e:end] += sizes[j] + np.arange(end - e)
                if counts is not None:
                    counts[g, e:end] += 1
            heapq.heappush(heap, e + int(lifetimes[j]))
    return loads, release


def candidate(loads: np.ndarray, release: list[list[int]], j: int, k: int, sizes: np.ndarray,
              lifetimes: np.ndarray, terms: ObjectiveTerms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Request ``j`` (the ``k``-th of the call's ``terms``) appended to each worker's
    queue in turn: ``J`` per worker (:meth:`ObjectiveTerms.candidate_costs
    <bfio.solvers.objective.ObjectiveTerms.candidate_costs>`), the offset at which
    each would admit it and the load it would add there, ``(G, W + 1)``."""
    W1 = loads.shape[1]
    h = np.arange(W1)
    entry = np.array([heap[0] for heap in release])  # when each worker's queue would admit it
    life = int(lifetimes[j])
    live = (h[None, :] >= entry[:, None]) & (h[None, :] < entry[:, None] + life)
    add = np.where(live, sizes[j] + (h[None, :] - entry[:, None]), 0.0)
    return terms.candidate_costs(k, loads, add, entry), entry, add


#: the ties' tolerance of ``J``: relative, at least absolute (:func:`_tolerance`; the migration
#: planner's kernels, :mod:`bfio.solvers.migration_plan`)
TOLERANCE = 1e-9


def _tolerance(x: float) -> float:
    """The ties' tolerance around a value ``x`` of ``J`` (relative, at least absolute :data:`TOLERANCE`)."""
    return TOLERANCE * max(1.0, abs(x))


def _near(J: np.ndarray, best: float) -> np.ndarray:
    """``J`` within the ties' tolerance of ``best``."""
    return J <= best + _tolerance(best)


def choose(J: np.ndarray, entry: np.ndarray, loads: np.ndarray, add: np.ndarray, weights: np.ndarray) -> int:
    """The worker :func:`bind` picks: the least ``J``; among ties (the request raises
    the envelope nowhere, or enters beyond the window everywhere) the earliest
    admission, then the least weighted predicted load."""
    best = np.flatnonzero(_near(J, J.min()))
    best = best[entry[best] == entry[best].min()]
    return int(best[np.argmin(((loads + add)[best]) @ weights)])


def bind(loads: np.ndarray, release: list[list[int]], requests: np.ndarray, sizes: np.ndarray,
         lifetimes: np.ndarray, terms: ObjectiveTerms, free: np.ndarray | None = None) -> np.ndarray:
    """The worker of each of ``requests`` (arrival order): the one whose queue,
    with the request appended, gives the smallest ``J``, every term of the call's
    ``terms`` (:meth:`ObjectiveTerms.candidate_costs
    <bfio.solvers.objective.ObjectiveTerms.candidate_costs>`: the discounted
    imbalance ``sum_h w_h (G max_g L_g(h) - sum_g L_g(h))`` plus the extra terms,
    e.g. the prefix-cache term, ``requests[k]`` their ``k``-th request); ``loads``
    and ``release`` are updated with each binding. ``free`` (central admission,
    each worker's free slots): only a worker with a free slot left is chosen, and
    it loses one (updated in place)."""
    weights = terms.weights
    out = np.empty(requests.shape[0], dtype=np.int64)
    for k, j in enumerate(requests):
        J, entry, add = candidate(loads, release, j, k, sizes, lifetimes, terms)
        if free is not None:
            J = np.where(free > 0, J, np.inf)
        g = choose(J, entry, loads, add, weights)
        out[k] = g
        if free is not None:
            free[g] -= 1
        loads[g] += add[g]
        heapq.heapreplace(release[g], int(entry[g]) + int(lifetimes[j]))
        terms.bound(k, g)
    return out


def plan_moves(base: np.ndarray, release: list[list[int]], queues: list[list[int]], sizes: np.ndarray,
               lifetimes: np.ndarray, terms_for, movable: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Queued requests to re-bind (issue 45, :mod:`bfio.sim.moves`): at most
    ``budget`` evaluations, each of the tail of one queue, the queue whose next
    admission comes latest (the most backed-up worker; among ties, e.g. ranks
    whose slots are free but whose KV memory holds the queue back, which the
    predicted loads do not model, the most queued prompt tokens, then the first)
    among those whose tail is ``movable`` and not yet kept. The tail is taken out of its queue and bound
    again as :func:`bind` binds an arrival (:func:`candidate`, :func:`choose`:
    the same ``J``, the same ties); it moves when that worker is another one and
    ``J`` falls, or ``J`` ties and it would be admitted strictly earlier there
    (else it and its queue are kept for this call). Moves are applied to the
    predicted loads as they are made, so each evaluation sees the earlier ones.
    ``base``, ``release`` (per worker a heap of slot release offsets before its
    queue) and ``queues`` (FIFO ids) as for :func:`queue_profiles`;
    ``terms_for(j)`` the call's terms for request ``j`` alone (its ``k = 0``).
    Returns ``(request, worker)`` pairs in order."""
    queues = [list(q) for q in queues]
    loads, heaps = queue_profiles(base, [list(r) for r in release], queues, sizes, lifetimes)
    kept: set[int] = set()
    out: list[tuple[int, int]] = []
    for _ in range(budget):
        ends = [(heaps[g][0], int(sizes[queues[g]].sum()), -g) for g in range(len(queues))
                if queues[g] and g not in kept and movable[queues[g][-1]]]
        if not ends:
            break
        g = -max(ends)[2]
        j = queues[g][-1]
        row, heap = queue_profiles(base[g:g + 1], [list(release[g])], [queues[g][:-1]], sizes, lifetimes)
        without, rel = loads.copy(), [list(r) for r in heaps]
        without[g], rel[g] = row[0], heap[0]
        terms = terms_for(j)
        J, entry, add = candidate(without, rel, j, 0, sizes, lifetimes, terms)
        d = choose(J, entry, without, add, terms.weights)
        lower = J[d] < J[g] and not _near(J[g:g + 1], J[d])[0]
        earlier = _near(J[d:d + 1], J[g])[0] and entry[d] < entry[g]
        if d == g or not (lower or earlier):
            kept.add(g)
            continue
        queues[g].pop()
        queues[d].append(j)
        without[d] += add[d]
        heapq.heapreplace(rel[d], int(entry[d]) + int(lifetimes[j]))
        terms.bound(0, d)
        loads, heaps = without, rel
        out.append((int(j), int(d)))
    return out
