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


def _tolerance(x: float) -> float:
    """The ties' tolerance around a value ``x`` of ``J`` (relative, at least absolute 1e-9)."""
    return 1e-9 * max(1.0, abs(x))


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


def plan_migrations(base: np.ndarray, release: list[list[int]], queues: list[list[int]], sizes: np.ndarray,
                    lifetimes: np.ndarray, running: list[np.ndarray], held: np.ndarray, remaining: np.ndarray,
                    terms: ObjectiveTerms, cost, budget: int, per_rank: int,
                    floor: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Running requests to migrate (issue 45, ``migration = bfio``,
    :mod:`bfio.sim.migration`): at most ``budget`` evaluations, each of one running
    request of the worker with the largest weighted predicted load ``sum_h w_h
    Lhat_g(h)`` (among ties the first) that has one left to try (at most
    ``per_rank`` each), its request with the largest weighted in-place profile
    first (``held_i + h`` while ``h < remaining_i``: the one whose departure lowers
    that worker's load the most over the window). The request leaves its slot
    (the worker's queue then takes it: :func:`queue_profiles` with that slot free)
    and is bound again as :func:`bind` binds an arrival (:func:`candidate`: at the
    tail of each worker's queue, adding ``held_i + (h - e)`` for ``e <= h < e +
    remaining_i``). Its gain on worker ``d`` is ``J`` now (``terms.evaluate`` of the
    predicted loads, the request in place) minus ``J`` with it on ``d``
    (``terms.candidate_costs``), in ``J``'s units (token-steps, weighted); its cost
    ``cost(i, loads, out)`` (per worker, the same units; ``loads`` without it;
    ``out`` the migrations planned so far in the call) is subtracted. It migrates
    to the worker of the largest net gain when that is positive (beyond the
    ties' tolerance), that worker is another one and would
    seat it at once (``e = 0``: a running request is not put to wait); moves are
    applied to the predicted loads as they are made, and a request is evaluated
    once a call. ``base``, ``release`` (per worker a heap of its slots' release
    offsets: ``remaining_i`` or 0 for a free slot) and ``queues`` as for
    :func:`queue_profiles`; ``running[g]`` worker ``g``'s running requests that
    may migrate; ``held[i] = s_i + tau_i``, ``remaining[i] = r_i`` (>= 1) indexed
    by request. ``floor[i]`` (optional): a lower bound of request ``i``'s cost over
    the workers, valid before the call's first migration; until then an
    evaluation whose worker has an empty queue is skipped when the most its
    departure can lower ``J``, ``G sum_h w_h min(profile_i(h), (Lhat_g(h) -
    max_{g' != g} Lhat_g'(h))^+)`` (the envelope falls at most to the next rank;
    joining a worker never lowers it), is at most ``floor[i]``: it would not
    migrate (the same plan, fewer evaluations). Returns ``(request, worker)``
    pairs in order."""
    G, W1 = base.shape
    h = np.arange(W1)
    w = terms.weights
    base = np.asarray(base, dtype=float).copy()
    release = [list(r) for r in release]
    queues = [list(q) for q in queues]
    loads, heaps = queue_profiles(base, [list(r) for r in release], queues, sizes, lifetimes)
    # sum_h w_h (held_i + h) [h < r_i] = held_i c0[r_i] + c1[r_i] (prefix sums of w_h and h w_h)
    c0 = np.concatenate(([0.0], np.cumsum(w)))
    c1 = np.concatenate(([0.0], np.cumsum(h * w)))
    counts = [min(per_rank, len(ids)) for ids in running]
    order: dict[int, list[int]] = {}  # a worker's candidates, ordered when it is first evaluated
    tried = [0] * G
    out: list[tuple[int, int]] = []
    stay = float(terms.evaluate(loads))  # J now (updated with each migration)
    for _ in range(budget):
        weighted = loads @ w
        open_ = [g for g in range(G) if tried[g] < counts[g]]
        if not open_:
            break
        g = max(open_, key=lambda x: (weighted[x], -x))
        if g not in order:
            ids = np.asarray(running[g], dtype=np.int64)
            r = np.minimum(remaining[ids], W1)
            order[g] = ids[np.argsort(-(held[ids] * c0[r] + c1[r]), kind="stable")][:counts[g]].tolist()
        i = order[g][tried[g]]
        tried[g] += 1
        r, size = int(remaining[i]), float(held[i])
        profile = np.where(h < r, size + h, 0.0)
        if floor is not None and not out and not queues[g]:
            others = np.delete(loads, g, axis=0).max(axis=0) if G > 1 else np.zeros(W1)
            if G * float(np.minimum(profile, np.maximum(0.0, loads[g] - others)) @ w) <= floor[i]:
                continue
        freed = list(release[g])
        freed.remove(r)
        freed.append(0)
        heapq.heapify(freed)
        row, heap = queue_profiles(base[g:g + 1] - profile, [list(freed)], [queues[g]], sizes, lifetimes)
        without, rel = loads.copy(), list(heaps)  # rel[d] is changed only once d is chosen
        without[g], rel[g] = row[0], heap[0]
        J, entry, add = candidate(without, rel, 0, 0, np.array([size]), np.array([r]), terms)
        net = stay - J - np.asarray(cost(i, without, out), dtype=float)
        net[g] = -np.inf
        net[entry > 0] = -np.inf
        d = int(np.argmax(net))
        if not net[d] > _tolerance(stay):
            continue
        base[g] -= profile
        release[g] = freed
        base[d] += add[d]  # seated at once (e = 0): running there from now on
        release[d].remove(0)  # e = 0 after its queue: a free slot before it
        release[d].append(r)
        heapq.heapify(release[d])
        without[d] += add[d]
        heapq.heapreplace(rel[d], int(entry[d]) + r)
        loads, heaps = without, rel
        stay = float(J[d])
        out.append((int(i), d))
    return out
