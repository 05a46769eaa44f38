"""The migration planner as it was written before its kernels (issue 45; the
Python of ``bfio.solvers.dispatch.plan_migrations`` at commit 6168149), kept in the
tests alone as the reference :mod:`bfio.solvers.migration_plan` must agree with
(``tests/test_migration_plan.py``): ``cost(i, loads, planned)`` is a callable.

``ordered=True``: its weighted sums over the offsets (``x @ w``, the last step of
``J``, of a candidate's ``J``, of a rank's weighted load and of the screen) are
taken in the offsets' order, ``h = 0, 1, ...``, as the kernels take them, instead
of by BLAS, whose order depends on a row's place in the matrix (OpenBLAS's
``dgemv`` sums the fifth of five equal rows in another order than the third): with
it, two destinations whose ``J`` is the same (a request below the envelope on
both) tie exactly, and the first is chosen, as the kernels choose; with BLAS the
choice between them is the rounding's."""

from __future__ import annotations

import heapq

import numpy as np

from bfio.solvers.dispatch import _tolerance, candidate, queue_profiles
from bfio.solvers.objective import ObjectiveTerms, imbalance_candidate_costs


def _dot(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w`` summed in the offsets' order (a sequential sum: ``cumsum``'s last)."""
    return np.cumsum(np.asarray(x, dtype=np.float64) * w, axis=-1)[..., -1]


def _ordered_candidate(loads, release, j, k, sizes, lifetimes, terms):
    """:func:`candidate` with its ``J`` summed in the offsets' order."""
    W1 = loads.shape[1]
    h = np.arange(W1)
    entry = np.array([heap[0] for heap in release])
    life = int(lifetimes[j])
    live = (h[None, :] >= entry[:, None]) & (h[None, :] < entry[:, None] + life)
    add = np.where(live, sizes[j] + (h[None, :] - entry[:, None]), 0.0)
    G = loads.shape[0]
    top = loads.max(axis=0)
    first = loads.argmax(axis=0)
    rest = loads.copy()
    rest[first, h] = -np.inf
    second = rest.max(axis=0) if G > 1 else np.full(W1, -np.inf)
    others = np.where(first[None, :] == np.arange(G)[:, None], second[None, :], top[None, :])
    envelope = np.maximum(others, loads + add)
    J = _dot(G * envelope - (loads.sum(axis=0)[None, :] + add), terms.weights)
    assert np.allclose(J, imbalance_candidate_costs(loads, add, terms.weights), rtol=1e-12)
    return J, entry, add


def plan_migrations(base: np.ndarray, release: list[list[int]], queues: list[list[int]], sizes: np.ndarray,
                    lifetimes: np.ndarray, running: list[np.ndarray], held: np.ndarray, remaining: np.ndarray,
                    terms: ObjectiveTerms, cost, budget: int, per_rank: int,
                    floor: np.ndarray | None = None, ordered: bool = False) -> list[tuple[int, int]]:
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
    dot = _dot if ordered else (lambda x, v: x @ v)
    cand = _ordered_candidate if ordered else candidate
    stay = float(dot(G * loads.max(axis=0) - loads.sum(axis=0), w)) if ordered else float(terms.evaluate(loads))
    for _ in range(budget):
        weighted = dot(loads, w)
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
            if G * float(dot(np.minimum(profile, np.maximum(0.0, loads[g] - others)), w)) <= floor[i]:
                continue
        freed = list(release[g])
        freed.remove(r)
        freed.append(0)
        heapq.heapify(freed)
        row, heap = queue_profiles(base[g:g + 1] - profile, [list(freed)], [queues[g]], sizes, lifetimes)
        without, rel = loads.copy(), list(heaps)  # rel[d] is changed only once d is chosen
        without[g], rel[g] = row[0], heap[0]
        J, entry, add = cand(without, rel, 0, 0, np.array([size]), np.array([r]), terms)
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


def reference_cost(cost, held: np.ndarray):
    """``cost(i, loads, planned)`` of :class:`bfio.solvers.migration_plan.MigrationCost`
    ``cost`` as ``BfioMigration.cost`` computed it before the kernels (NumPy, per call)."""

    def of(i, loads, planned):
        G = loads.shape[0]
        out = np.zeros(G) if cost.fixed is None else np.asarray(cost.fixed(np.array([i])), dtype=float)[0]
        if cost.seconds is None or cost.weight == 0.0:
            return out
        t_l, w, size = cost.token_latency_s, cost.weight, float(held[i])
        pending = np.array(cost.pending, dtype=float)
        if planned:
            j, d = np.array(planned, dtype=np.int64).T
            np.add.at(pending, d, cost.seconds(held[j].astype(np.float64)))
        eye = np.eye(G)
        shares = t_l * (loads[None, :, 0] + size * eye)  # row d: the request on rank d
        top = shares.max(axis=1)
        now = np.maximum(0.0, (shares + pending).max(axis=1) - top)
        x = float(cost.seconds(np.array([size]))[0])
        stall = np.maximum(0.0, (shares + pending + x * eye).max(axis=1) - top) - now
        return out + w * G * stall / t_l

    return of


def ordered_choose(J, entry, loads, add, weights):
    """:func:`bfio.solvers.dispatch.choose` with its weighted loads summed in the offsets' order."""
    from bfio.solvers.dispatch import _near

    best = np.flatnonzero(_near(J, J.min()))
    best = best[entry[best] == entry[best].min()]
    return int(best[np.argmin(_dot((loads + add)[best], weights))])


def ordered_candidate(loads, release, j, k, sizes, lifetimes, terms):
    """:func:`bfio.solvers.dispatch.candidate` with its ``J`` summed in the offsets' order."""
    return _ordered_candidate(loads, release, j, k, sizes, lifetimes, terms)
