"""drain:N's best-worker search (:func:`bfio.solvers.drain._best_worker`, issue 40)
picks the worker the full scan picked: the argmin, first on ties, of
:func:`bfio.solvers.fast.worker_costs` over the allowed workers, on random
calls with ties made on purpose (repeated rows, requests that fit several
workers unraised) and on the due requests of a simulated run."""

import numpy as np

import bfio.solvers.central as bfio_module
from bfio.solvers.drain import _best_worker as _best_worker_terms
from bfio.simulator import simulate
from bfio.solvers.fast import worker_costs
from bfio.solvers.terms.kernel import imbalance_only
from bfio.workloads.workload import Workload


def _best_worker(base, E, s, lf, G, w, skip, room):
    """:func:`bfio.solvers.drain._best_worker` under the imbalance alone (weights ``w``)."""
    kt = imbalance_only(np.empty(0, dtype=np.int64), w, base.shape[0])
    return _best_worker_terms(base, E, s, lf, -1, G, kt, skip, room, np.empty(base.shape[1]))


def _reference(base, E, s, lf, G, w, skip, room):
    """The scan before issue 40: every allowed worker's cost, the first smallest."""
    h = np.arange(base.shape[1], dtype=np.float64)
    cost = worker_costs(E[None, :] - base - h[None, :], s, lf, G, w)
    allowed = ~skip & (room > 0)
    if not allowed.any():
        return -1
    best = np.inf
    arg = -1
    for g in np.flatnonzero(allowed):
        if cost[g] < best:
            best, arg = cost[g], int(g)
    return arg


def _case(rng):
    G = int(rng.integers(1, 40))
    H1 = int(rng.integers(1, 15))
    base = rng.integers(0, 2000, size=(G, H1)).astype(np.float64)
    if G > 2 and rng.random() < 0.5:  # repeated rows: equal costs, the first must win
        base[rng.integers(0, G, size=G // 2)] = base[rng.integers(0, G)]
    E = base.max(axis=0) + (rng.integers(0, 300) if rng.random() < 0.5 else 0)
    s = int(rng.integers(1, 2500))
    lf = int(rng.integers(1, H1 + 1))
    w = np.ones(H1) if rng.random() < 0.3 else 0.8 ** np.arange(H1)
    skip = rng.random(G) < 0.3
    room = rng.integers(0, 3, size=G).astype(np.int64) if rng.random() < 0.5 else np.ones(G, dtype=np.int64)
    return base, E.astype(np.float64), s, lf, G, w, skip, room


def test_best_worker_is_the_full_scans_argmin_on_random_calls():
    rng = np.random.default_rng(40)
    for _ in range(3000):
        args = _case(rng)
        assert _best_worker(*args) == _reference(*args), args


def test_best_worker_on_the_due_requests_of_a_run(monkeypatch):
    """Every due request of every drain call of a run where long prompts wait: the
    search on the call's loads (first search of the call) equals the full scan."""
    seen = {"due": 0}
    real = bfio_module.plan_drain

    def plan(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all):
        life, weights = kt.life, kt.w
        b = np.asarray(base, dtype=np.float64)
        E = b.max(axis=0)
        G = b.shape[0]
        taken = np.zeros(G, dtype=np.bool_)
        for g in reserved.values():
            taken[g] = True
        for k in np.flatnonzero(ages >= due_steps):
            lf = int(min(life[k], b.shape[1]))
            for room in (np.ones(G, dtype=np.int64), np.asarray(free, dtype=np.int64)):
                args = (b, E, int(sizes[k]), lf, G, np.asarray(weights, dtype=np.float64), taken, room)
                assert _best_worker(*args) == _reference(*args)
            seen["due"] += 1
        return real(base, free, sizes, kt, ages, pool, due_steps, reserved, place_all)

    monkeypatch.setattr(bfio_module, "plan_drain", plan)
    rng = np.random.default_rng(3)
    n = 3000
    prefill = np.where(rng.random(n) < 0.05, rng.integers(3000, 9000, n), rng.integers(10, 400, n))
    w = Workload(prefill.astype(np.int64), rng.integers(1, 120, n).astype(np.int64))
    simulate(w, 12, 6, "bfio", policy_options={"horizon": 20, "admission": "drain:10"}, show_progress=False)
    assert seen["due"] > 50
