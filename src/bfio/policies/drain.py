"""Admission ``drain:N``: a request that waited ``N`` steps reserves a worker (issues 27 and 30).

``aging:N`` admits a request that waited ``N`` steps at once, wherever the
placement puts it: a long prompt that BF-IO kept back because it fits nowhere
raises the envelope by nearly its whole size. ``drain:N`` instead gives such a
request a worker: the one where it raises ``J`` least (:func:`placement_cost`,
Eq. (IO)'s change for one request), reserved for it. Until the request is
placed, the reserved worker's free slots take the smallest waiting requests
only, so its load falls as its running requests finish; the request is placed
as soon as it fits there without raising the envelope at any offset of its
lifetime, and at the latest when it has waited ``2 N`` steps (on its worker when
that has a free slot, else on the worker with a free slot where it raises ``J``
least; only when no worker has one does it wait for the next call). Every routing
call still admits exactly ``U`` requests (the rule is work-conserving, as
Eq. (IO)); the other workers and requests are placed by the solver as before.

The rule needs the predicted loads of the call, so it applies to the fast
solver's calls (:meth:`bfio.policies.bfio.BFIO._route_fast`).
"""

from __future__ import annotations

import numpy as np

from bfio.solvers.fast import worker_costs


def placement_cost(c: np.ndarray, size: float, life: int, weights: np.ndarray, workers: int) -> np.ndarray:
    """Change of ``J`` (Eq. (IO)) when a request of ``size`` and ``life`` offsets joins
    each worker, ``G sum_{h<l} w_h max(0, s - c_g(h))`` less the volume it adds (the
    same for every worker, left out); ``c_g(h) = E(h) - Lhat_g(h) - h`` are the
    headrooms (rows: workers): :func:`bfio.solvers.fast.worker_costs` (the fast
    solver's cost of a placement) with the volume added back."""
    w = np.ascontiguousarray(weights, dtype=np.float64)
    volume = float(size) * float(w[:life].sum()) + float((w[:life] * np.arange(life)).sum())
    return worker_costs(np.ascontiguousarray(c, dtype=np.float64), float(size), int(life), float(workers), w) + volume


def plan_drain(base: np.ndarray, free: np.ndarray, sizes: np.ndarray, life: np.ndarray, ages: np.ndarray,
               pool: np.ndarray, due_steps: int, weights: np.ndarray, reserved: dict[int, int],
               place_all: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The placements ``drain:N`` makes before the solver: returns ``(pre, base,
    free)``, ``pre[k]`` the worker of waiting request ``k`` (or -1: the solver
    places it), and the loads and free slots left for the solver.

    ``reserved`` (request id -> worker) persists across calls and is updated in
    place. Invariants: a worker is reserved for at most one request; a reserved
    worker's free slots go to its request when it fits (or is due at ``2 N``, or
    every waiting request is admitted) and otherwise to the smallest waiting
    requests; at most ``free[g]`` placements per worker.
    """
    G, H1 = base.shape
    n = sizes.shape[0]
    pre = np.full(n, -1, dtype=np.int64)
    due = np.flatnonzero(ages >= due_steps)
    live = set(pool[due].tolist())
    for rid in [r for r in reserved if r not in live]:  # placed or gone: the worker is free again
        del reserved[rid]
    if due.size == 0:
        return pre, base, free
    base = base.astype(np.float64)  # a copy: the solver's loads with these placements
    free = free.copy()
    offsets = np.arange(H1, dtype=np.float64)
    E = base.max(axis=0)
    taken = np.zeros(G, dtype=bool)
    taken[list(reserved.values())] = True
    for k in due.tolist():  # oldest first
        rid = int(pool[k])
        s = float(sizes[k])
        lf = int(min(life[k], H1))
        late = ages[k] >= 2 * due_steps
        g = reserved.get(rid)
        if g is None:
            cost = placement_cost(E - base - offsets, s, lf, weights, G)
            cost[taken] = np.inf
            if np.isfinite(cost).any():
                g = int(np.argmin(cost))
                reserved[rid] = g
                taken[g] = True
            elif not late:
                continue  # every worker reserved: waits for the next call
        target = g
        if g is None or free[g] == 0:
            if not late:
                continue
            # the deadline: the worker with a free slot where it raises J least, one that no
            # other request holds if there is such a worker
            cost = placement_cost(E - base - offsets, s, lf, weights, G)
            cost[free == 0] = np.inf
            if np.isfinite(cost[~taken]).any():
                cost[taken] = np.inf
            if not np.isfinite(cost).any():
                continue  # no free slot anywhere: the next call
            target = int(np.argmin(cost))
        fits = bool(np.all(base[target, :lf] + s + offsets[:lf] <= E[:lf]))
        if fits or late or place_all:
            pre[k] = target
            free[target] -= 1
            base[target, :lf] += s + offsets[:lf]
            np.maximum(E, base[target], out=E)
            if g is not None:
                del reserved[rid]
                taken[g] = False  # its reserved worker is free for another request
    # the reserved workers' other free slots: the smallest waiting requests (their load falls)
    rest = [g for g in reserved.values() if free[g] > 0]
    if rest:
        order = np.argsort(sizes, kind="stable")
        avail = order[(pre[order] < 0) & (ages[order] < due_steps)]
        i = 0
        for g in rest:
            while free[g] > 0 and i < avail.size:
                k = int(avail[i])
                lf = int(min(life[k], H1))
                pre[k] = g
                free[g] -= 1
                base[g, :lf] += float(sizes[k]) + offsets[:lf]
                i += 1
    return pre, base, free


__all__ = ["placement_cost", "plan_drain"]
