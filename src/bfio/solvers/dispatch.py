"""BF-IO with instant dispatch (issue 30): bind each arriving request to the
worker queue that minimizes the discounted predicted imbalance ``J`` over the
window (Eq. (IO)'s objective, :mod:`bfio.solvers.objective`), as the
data-parallel routers of vLLM and SGLang bind a request to one rank's queue
when it arrives (``docs/online.md``).

A worker's predicted load over offsets ``h = 0..W`` is its running requests'
(``s_i + tau_i + h`` while ``h < r_i``, :func:`bfio.profiles.predicted_loads`)
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
                   lifetimes: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
    """The ``(G, W + 1)`` predicted loads of every worker: ``base`` (its running
    requests) plus its queued requests ``queues[g]`` (ids, FIFO order) admitted
    into the slots of ``release[g]`` (a heap of release offsets, taken over and
    updated); returns the loads and the heaps after the queues."""
    loads = np.asarray(base, dtype=float).copy()
    W1 = loads.shape[1]
    for g, queue in enumerate(queues):
        heap = release[g]
        for j in queue:
            e = heapq.heappop(heap)
            end = min(e + int(lifetimes[j]), W1)
            if e < W1:
                loads[g, e:end] += sizes[j] + np.arange(end - e)
            heapq.heappush(heap, e + int(lifetimes[j]))
    return loads, release


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
    G, W1 = loads.shape
    h = np.arange(W1)
    weights = terms.weights
    out = np.empty(requests.shape[0], dtype=np.int64)
    for k, j in enumerate(requests):
        entry = np.array([heap[0] for heap in release])  # when each worker's queue would admit it
        life = int(lifetimes[j])
        live = (h[None, :] >= entry[:, None]) & (h[None, :] < entry[:, None] + life)
        add = np.where(live, sizes[j] + (h[None, :] - entry[:, None]), 0.0)
        J = terms.candidate_costs(k, loads, add, entry)
        if free is not None:
            J = np.where(free > 0, J, np.inf)
        # ties (the request raises the envelope nowhere, or enters beyond the window
        # everywhere): the earliest admission, then the least weighted predicted load
        best = np.flatnonzero(J <= J.min() + 1e-9 * max(1.0, abs(J.min())))
        best = best[entry[best] == entry[best].min()]
        g = int(best[np.argmin(((loads + add)[best]) @ weights)])
        out[k] = g
        if free is not None:
            free[g] -= 1
        loads[g] += add[g]
        heapq.heapreplace(release[g], int(entry[g]) + life)
        terms.bound(k, g)
    return out
