"""Admission ``drain:N``: a request that waited ``N`` steps reserves a worker (issues 27 and 30).

``aging:N`` admits a request that waited ``N`` steps at once, wherever the
placement puts it: a long prompt that BF-IO kept back because it fits nowhere
raises the envelope by nearly its whole size. ``drain:N`` instead gives such a
request a worker: the one where it raises ``J`` least (the kernels' one cost of a
placement, :func:`bfio.solvers.terms.kernel.candidate_cost`, every kernel term of the
call), reserved for it. Until the request is
placed, the reserved worker's free slots take the smallest waiting requests
only, so its load falls as its running requests finish; the request is placed
as soon as it fits there without raising the envelope at any offset of its
lifetime, and at the latest when it has waited ``2 N`` steps (on its worker when
that has a free slot, else on the worker with a free slot where it raises ``J``
least; only when no worker has one does it wait for the next call). Every routing
call still admits exactly ``U`` requests (the rule is work-conserving, as
Eq. (IO)); the other workers and requests are placed by the solver as before.

The rule needs the predicted loads of the call, so it applies to the fast
solver's calls (:class:`bfio.solvers.central.CentralCall`).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel
from bfio.solvers.terms.kernel import KernelTerms, candidate_cost, candidate_floor


@kernel
def _best_worker(base, E, s, lf, k, G, kt, skip, room, crow):
    """The worker where request ``k`` (size ``s``, ``lf`` offsets) raises ``J`` least by
    :func:`~bfio.solvers.terms.kernel.candidate_cost` (every kernel term of the call
    ``kt``; the first on ties), among those not in ``skip`` with ``room[g] > 0`` (the
    free slots, or ones for any worker); -1 if none. ``room`` is an array, not a flag:
    one compiled specialization serves both uses; ``crow`` is scratch for a worker's
    headroom ``c(h) = E[h] - base[g, h] - h``.

    Stopping early (issue 40), exactly: a worker's scan stops once its cost cannot be
    below the best so far (``candidate_cost``'s ``cap``); and, when no kernel term depends
    on the worker, no cost is below the request's floor (minus its volume: nothing raised,
    :func:`~bfio.solvers.terms.kernel.candidate_floor`), so the scan of the workers ends at
    the first worker that reaches it. ``O(G lf)`` at worst, ``O(g* lf)`` when worker
    ``g*`` takes the request unraised."""
    best = np.inf
    arg = -1
    for g in range(base.shape[0]):
        if skip[g] or room[g] == 0:
            continue
        for h in range(lf):
            crow[h] = E[h] - base[g, h] - h
        cost = candidate_cost(kt, crow, s, lf, k, g, G, best)
        if cost < best:
            best = cost
            arg = g
            if not kt.worker_dependent and best == candidate_floor(kt, s, lf, g):
                break
    return arg


@kernel
def _drain_core(base, free, sizes, ages, due, resv, due_steps, kt, place_all):
    """:func:`plan_drain`'s placements on ``base`` (float64) and ``free`` (both
    modified in place); ``due`` the due positions, oldest first, ``resv[i]`` the
    worker reserved for ``due[i]`` (-1: none; updated in place); ``kt`` the call's kernel
    terms (worker costs indexed by worker). Returns ``pre``."""
    G, H1 = base.shape
    n = sizes.shape[0]
    life = kt.life
    crow = np.empty(H1)  # scratch of _best_worker
    pre = np.full(n, -1, dtype=np.int64)
    E = np.zeros(H1)
    for g in range(G):
        for h in range(H1):
            if base[g, h] > E[h]:
                E[h] = base[g, h]
    taken = np.zeros(G, dtype=np.bool_)
    for i in range(due.shape[0]):
        if resv[i] >= 0:
            taken[resv[i]] = True
    nothing = np.zeros(G, dtype=np.bool_)
    anywhere = np.ones(G, dtype=np.int64)  # room for _best_worker: every worker
    for i in range(due.shape[0]):  # oldest first
        k = due[i]
        s = sizes[k]  # an integer: added to float loads exactly (and costed as fast's placements are)
        lf = min(life[k], H1)
        late = ages[k] >= 2 * due_steps
        g = resv[i]
        if g < 0:
            g = _best_worker(base, E, s, lf, k, G, kt, taken, anywhere, crow)
            if g >= 0:
                resv[i] = g
                taken[g] = True
            elif not late:
                continue  # every worker reserved: waits for the next call
        target = g
        if g < 0 or free[g] == 0:
            if not late:
                continue
            # the deadline: the worker with a free slot where it raises J least, one that
            # no other request holds if there is such a worker
            target = _best_worker(base, E, s, lf, k, G, kt, taken, free, crow)
            if target < 0:
                target = _best_worker(base, E, s, lf, k, G, kt, nothing, free, crow)
            if target < 0:
                continue  # no free slot anywhere: the next call
        fits = True
        for h in range(lf):
            if base[target, h] + s + h > E[h]:
                fits = False
                break
        if fits or late or place_all:
            pre[k] = target
            free[target] -= 1
            for h in range(lf):
                base[target, h] += s + h
                if base[target, h] > E[h]:
                    E[h] = base[target, h]
            if g >= 0:
                taken[g] = False  # its reserved worker is free for another request
                resv[i] = -1
    # the reserved workers' other free slots: the smallest waiting requests (their load falls)
    need = 0
    for i in range(due.shape[0]):
        if resv[i] >= 0:
            need += free[resv[i]]
    smallest = _smallest_waiting(sizes, ages, pre, due_steps, need)
    q = 0
    for i in range(due.shape[0]):
        g = resv[i]
        if g < 0:
            continue
        while free[g] > 0 and q < smallest.shape[0]:
            k = smallest[q]
            lf = min(life[k], H1)
            pre[k] = g
            free[g] -= 1
            for h in range(lf):
                base[g, h] += float(sizes[k]) + h
            q += 1
    return pre


@kernel
def _smallest_waiting(sizes, ages, pre, due_steps, m):
    """The ``m`` smallest requests not placed and not due (size, then position:
    the oldest first among equal sizes), in that order; fewer if fewer wait.
    ``O(n log m)``: a bounded insertion, ``m`` being a few slots."""
    out = np.empty(m, dtype=np.int64)
    cnt = 0
    for k in range(sizes.shape[0]):
        if pre[k] >= 0 or ages[k] >= due_steps:
            continue
        if cnt == m and (m == 0 or sizes[k] >= sizes[out[m - 1]]):
            continue  # not among the m smallest (a later equal size stays behind)
        b = cnt - 1 if cnt < m else m - 2
        while b >= 0 and sizes[out[b]] > sizes[k]:
            out[b + 1] = out[b]
            b -= 1
        out[b + 1] = k
        if cnt < m:
            cnt += 1
    return out[:cnt]


def plan_drain(base: np.ndarray, free: np.ndarray, sizes: np.ndarray, kt: KernelTerms, ages: np.ndarray,
               pool: np.ndarray, due_steps: int, reserved: dict[int, int],
               place_all: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The placements ``drain:N`` makes before the solver: returns ``(pre, base,
    free)``, ``pre[k]`` the worker of waiting request ``k`` (or -1: the solver
    places it), and the loads and free slots left for the solver.

    ``reserved`` (request id -> worker) persists across calls and is updated in
    place (only waiting requests due now keep one). Invariants: a worker is
    reserved for at most one request; a reserved worker's free slots go to its
    request when it fits (or is due at ``2 N``, or every waiting request is
    admitted) and otherwise to the smallest waiting requests; a request due at
    ``2 N`` whose worker is full goes to the worker with a free slot where it
    raises ``J`` least; at most ``free[g]`` placements per worker.
    """
    n = sizes.shape[0]
    due = np.flatnonzero(ages >= due_steps)
    if due.size == 0:
        reserved.clear()  # placed or gone: their workers are free again
        return np.full(n, -1, dtype=np.int64), base, free
    ids = pool[due].tolist()
    resv = np.array([reserved.get(r, -1) for r in ids], dtype=np.int64)
    base = base.astype(np.float64)  # a copy: the solver's loads with these placements
    free = np.array(free, dtype=np.int64)
    pre = _drain_core(base, free, np.asarray(sizes, dtype=np.int64), np.asarray(ages, dtype=np.int64), due, resv,
                      int(due_steps), kt, bool(place_all))
    reserved.clear()
    reserved.update({r: int(g) for r, g in zip(ids, resv.tolist()) if g >= 0})
    return pre, base, free


__all__ = ["plan_drain"]
