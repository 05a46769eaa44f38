"""The queue moves' kernel (issue 45, bfio.solvers.move_plan) chooses the moves of
bfio.solvers.dispatch.plan_moves, the rule's Python (kept for calls with extra
terms): on random calls (random loads, slots, queues, movable requests; the
reference's weighted sums in the offsets' order, as the kernel's,
tests/migration_reference.py) and on every call of whole runs (captured, the
reference as it is)."""

from __future__ import annotations

import numpy as np
import pytest

import bfio.policies.bfio_instant as instant
import bfio.solvers.dispatch as dispatch
from bfio.simulator import simulate
from bfio.solvers.move_plan import plan_moves
from bfio.solvers.objective import ObjectiveTerms
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals
from migration_reference import ordered_candidate, ordered_choose


def _call(seed: int):
    rng = np.random.default_rng(seed)
    G, B = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    terms = ObjectiveTerms.build(int(rng.integers(0, 12)), float(rng.choice([1.0, 0.9, 0.6])), "persist", fast=True)
    W1 = terms.weights.shape[0]
    N = 120
    h = np.arange(W1)
    sizes, lifetimes = rng.integers(1, 400, N), rng.integers(1, W1 + 3, N)
    release = rng.integers(0, W1 + 3, (G, B)) * (rng.random((G, B)) < 0.7)
    base = np.zeros((G, W1))
    for g in range(G):
        for r in release[g]:
            base[g] += np.where(h < r, rng.integers(1, 400) + h, 0)
    ids = iter(rng.permutation(N).tolist())
    queues = [[next(ids) for _ in range(int(rng.integers(0, 7)))] for _ in range(G)]
    movable = rng.random(N) < 0.85
    return base, release, queues, sizes, lifetimes, terms, movable, int(rng.integers(1, 10))


def _flat(queues):
    ptr = np.zeros(len(queues) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(q) for q in queues])
    return ptr, np.array([j for q in queues for j in q], dtype=np.int64)


def test_the_kernel_chooses_the_reference_moves_on_random_calls(monkeypatch):
    monkeypatch.setattr(dispatch, "candidate", ordered_candidate)
    monkeypatch.setattr(dispatch, "choose", ordered_choose)
    moved = 0
    for seed in range(3000):
        base, release, queues, sizes, lifetimes, terms, movable, budget = _call(seed)
        got = plan_moves(base, release, _flat(queues), sizes, lifetimes, terms, movable, budget)
        want = dispatch.plan_moves(base, np.sort(release, axis=1).tolist(), queues, sizes, lifetimes,
                                   lambda j: terms, movable, budget)
        assert got == want, seed
        moved += bool(want)
    assert moved > 300


def _workload(n=400, rate=150.0, seed=5):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, 30_000, n), rng.integers(1, 200, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


@pytest.mark.parametrize("kw", [
    {"queue_moves": "bfio"},
    {"queue_moves": "bfio", "rank_pause": "dyntra_lb",
     "rank_pause_options": {"mode": "static", "start_step": 0, "bubble_threshold": 2.0}},
])
def test_the_kernel_chooses_the_reference_moves_in_whole_runs(monkeypatch, kw):
    calls = []
    real = instant.plan_moves_kernel

    def both(base, release, queues, sizes, lifetimes, terms, movable, budget):
        got = real(base, release, queues, sizes, lifetimes, terms, movable, budget)
        ptr, ids = queues
        want = dispatch.plan_moves(base, np.sort(release, axis=1).tolist(),
                                   [ids[ptr[g]:ptr[g + 1]].tolist() for g in range(len(ptr) - 1)], sizes,
                                   lifetimes, lambda j: terms, movable, budget)
        assert got == want
        calls.append(len(got))
        return got

    monkeypatch.setattr(instant, "plan_moves_kernel", both)
    res = simulate(_workload(), 4, 8, "bfio", policy_options={"horizon": 20}, entry="arrivals", dispatch="instant",
                   show_progress=False, **kw)
    assert len(calls) > 20 and sum(calls) == res.metrics["queue_move_count"] > 0
