"""BF-IO's queue moves (issue 45, ``queue_moves = bfio`` and the migration rule's
``queued`` option, :mod:`bfio.sim.moves`) as a numba kernel: the rule of
:func:`bfio.solvers.dispatch.plan_moves` for a call whose objective is the
imbalance alone (no extra term: without the prefill model and the calibrated
step's per-request term), each evaluation a few microseconds instead of a
Python loop of NumPy calls (with every action on, the moves' Python planner was
a third of a LongBench run's time: ``benchmarks/actions_cost.py``). A call with
extra terms goes through :func:`bfio.solvers.dispatch.plan_moves` (each term's
candidate costs are Python). The phases are :mod:`bfio.solvers.queue_kernels`'."""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel
from bfio.solvers.dispatch import TOLERANCE
from bfio.solvers.objective import ObjectiveTerms
from bfio.solvers.queue_kernels import _admit_queue, _candidate_costs, _choose, _replace_min


@kernel
def _plan_moves(base, release, qptr, qids, sizes, lifetimes, movable, w, budget, out_j, out_d):
    """The loop of :func:`bfio.solvers.dispatch.plan_moves` (its docstring): ``base``
    ``(G, W + 1)`` the running requests' loads, ``release`` ``(G, B)`` their slots'
    release offsets (any order), the queues ``qids[qptr[g]:qptr[g + 1]]``; returns
    the number of moves written to ``out_j``, ``out_d``. Invariant: each evaluation
    sees the queues and predicted loads with every earlier move of the call applied."""
    G, W1 = base.shape
    rel0 = np.sort(release)
    cap = qptr[G] + budget
    queue = np.empty((G, cap), dtype=np.int64)
    length = np.zeros(G, dtype=np.int64)
    tokens = np.zeros(G, dtype=np.int64)
    loads = base.copy()
    rel = rel0.copy()
    for g in range(G):
        for q in range(qptr[g], qptr[g + 1]):
            queue[g, length[g]] = qids[q]
            length[g] += 1
            tokens[g] += sizes[qids[q]]
        _admit_queue(loads[g], rel[g], qids[qptr[g]:qptr[g + 1]], sizes, lifetimes)
    kept = np.zeros(G, dtype=np.bool_)
    without = np.empty_like(loads)
    row_rel = np.empty(rel.shape[1], dtype=rel.dtype)
    J = np.empty(G)
    entry = np.empty(G, dtype=np.int64)
    n = 0
    for _ in range(budget):
        g = -1
        for k in range(G):  # the latest next admission, then the most queued prompt tokens, then the first
            if length[k] == 0 or kept[k] or not movable[queue[k, length[k] - 1]]:
                continue
            if g < 0 or rel[k, 0] > rel[g, 0] or (rel[k, 0] == rel[g, 0] and tokens[k] > tokens[g]):
                g = k
        if g < 0:
            break
        j = queue[g, length[g] - 1]
        without[:] = loads
        without[g] = base[g]
        row_rel[:] = rel0[g]
        _admit_queue(without[g], row_rel, queue[g, :length[g] - 1], sizes, lifetimes)
        for k in range(G):
            entry[k] = row_rel[0] if k == g else rel[k, 0]
        size, life = float(sizes[j]), lifetimes[j]
        _candidate_costs(without, entry, size, life, w, J)
        d = _choose(J, entry, without, size, life, w)
        lower = J[d] < J[g] and not J[g] <= J[d] + TOLERANCE * max(1.0, abs(J[d]))
        earlier = J[d] <= J[g] + TOLERANCE * max(1.0, abs(J[g])) and entry[d] < entry[g]
        if d == g or not (lower or earlier):
            kept[g] = True
            continue
        length[g] -= 1
        tokens[g] -= sizes[j]
        queue[d, length[d]] = j
        length[d] += 1
        tokens[d] += sizes[j]
        e = entry[d]
        if e < W1:
            for h in range(e, min(e + life, W1)):
                without[d, h] += size + (h - e)
        rel[g] = row_rel
        _replace_min(rel[d], e + life)
        loads[:] = without
        out_j[n] = j
        out_d[n] = d
        n += 1
    return n


def plan_moves(base: np.ndarray, release: np.ndarray, queues: tuple[np.ndarray, np.ndarray], sizes: np.ndarray,
               lifetimes: np.ndarray, terms: ObjectiveTerms, movable: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """:func:`bfio.solvers.dispatch.plan_moves` by :func:`_plan_moves` for ``terms``
    without extra terms (refused otherwise): ``release`` ``(G, B)`` the slots'
    release offsets, ``queues`` ``(ptr, ids)`` (:func:`bfio.solvers.queue_kernels.flat_queues`),
    ``movable`` per request. Returns ``(request, worker)`` pairs in order."""
    if terms.extra:
        raise ValueError(f"the queue moves' kernel scores the imbalance term alone; got the extra terms "
                         f"{[t.name for t in terms.extra]} (use bfio.solvers.dispatch.plan_moves)")
    out_j = np.empty(max(1, int(budget)), dtype=np.int64)
    out_d = np.empty_like(out_j)
    n = _plan_moves(np.array(base, dtype=np.float64, order="C"), np.asarray(release, dtype=np.int64), queues[0],
                    queues[1], np.asarray(sizes, dtype=np.int64), np.asarray(lifetimes, dtype=np.int64),
                    np.asarray(movable, dtype=np.bool_), np.ascontiguousarray(terms.weights, dtype=np.float64),
                    int(budget), out_j, out_d)
    return [(int(out_j[k]), int(out_d[k])) for k in range(n)]


__all__ = ["plan_moves"]
