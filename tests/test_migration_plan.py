"""The migration planner's kernels (issue 45, bfio.solvers.migration_plan) choose
the same migrations as the planner's Python before them (tests/migration_reference.py):
on random calls (random loads, slots, queues, costs fixed or sent over a link,
floors) and on every call of whole runs (captured), and the transfer cost of the
kernel is the reference's."""

from __future__ import annotations

import numpy as np
import pytest

import bfio.policies.bfio_instant as instant
from bfio.simulator import simulate
from bfio.solvers.migration_plan import MigrationCost, migration_costs, plan_migrations
from bfio.solvers.objective import ObjectiveTerms
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals
from migration_reference import plan_migrations as reference_plan, reference_cost


def _call(seed: int):
    """A random planner call: ``G`` ranks of ``B`` slots, running requests (some may
    migrate), queues, a window of 1-12 offsets, a fixed or a transfer cost."""
    rng = np.random.default_rng(seed)
    G, B = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    H = int(rng.integers(0, 12))
    terms = ObjectiveTerms.build(H, float(rng.choice([1.0, 0.9, 0.6])), "persist", fast=True)
    W1 = terms.weights.shape[0]
    h = np.arange(W1)
    N = 200
    held = rng.integers(1, 400, N)
    remaining = rng.integers(1, W1 + 4, N)
    sizes = rng.integers(1, 300, N)
    lifetimes = rng.integers(1, W1 + 3, N)
    base = np.zeros((G, W1))
    layout, running, queues = [], [], []
    ids = iter(rng.permutation(N).tolist())
    for g in range(G):
        k = int(rng.integers(0, B + 1))
        mine = [next(ids) for _ in range(k)]
        for i in mine:
            base[g] += np.where(h < remaining[i], held[i] + h, 0)
        layout.append((mine, B))
        running.append(np.array([i for i in mine if rng.random() < 0.8], dtype=np.int64))
        queues.append([next(ids) for _ in range(int(rng.integers(0, 3)) * int(rng.random() < 0.5))])
    w = float(rng.choice([0.0, 0.5, 1.0, 4.0]))
    if rng.random() < 0.5:
        table = rng.choice([0.0, 50.0, 500.0, 5000.0], (N, G))
        cost = MigrationCost(fixed=lambda picked: table[picked])
    else:
        gbps = rng.uniform(1e-3, 5e-2)
        cost = MigrationCost(seconds=lambda tokens: tokens * gbps, pending=rng.choice([0.0, 0.5, 3.0], G),
                             weight=w, token_latency_s=float(rng.choice([0.01, 0.1])))
    floor = rng.uniform(0, 4000, N) if rng.random() < 0.3 else None
    budget, per_rank = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    return (base, layout, queues, sizes, lifetimes, running, held, remaining, terms, cost, budget, per_rank,
            floor)


def _slots(release_rows, running_rows):
    """The reference's per-request form of the kernels' per-slot arrays: ``(slots,
    remaining, movable)`` ``(G, B)`` from each rank's running requests in slot order
    (``release_rows[g]``: ``(request, remaining)`` pairs, then free slots)."""
    G, B = len(release_rows), max(len(r) for r in release_rows)
    slots = np.full((G, B), -1, dtype=np.int64)
    remaining = np.zeros((G, B), dtype=np.int64)
    movable = np.zeros((G, B), dtype=bool)
    for g, row in enumerate(release_rows):
        for b, (i, r) in enumerate(row):
            slots[g, b], remaining[g, b], movable[g, b] = i, r, i in set(running_rows[g].tolist())
    return slots, remaining, movable


def _flat(queues):
    ptr = np.zeros(len(queues) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(q) for q in queues])
    return ptr, np.array([j for q in queues for j in q], dtype=np.int64)


def _kernels(base, layout, queues, sizes, lifetimes, running, held, remaining, terms, cost, budget, per_rank, floor):
    """:func:`plan_migrations` on the reference's arguments (``layout``: per rank its
    running requests in slot order and its slot count)."""
    rows = [[(i, int(remaining[i])) for i in ids] + [(-1, 0)] * (B - len(ids)) for ids, B in layout]
    slots, rem, movable = _slots(rows, running)
    held_slots = np.where(slots >= 0, held[np.maximum(slots, 0)], 0)
    return plan_migrations(base, rem, _flat(queues), sizes, lifetimes, slots, held_slots, movable, terms, cost,
                           budget, per_rank, floor)


def _both(args, ordered=True):
    base, layout, queues, sizes, lifetimes, running, held, remaining, terms, cost, budget, per_rank, floor = args
    release = [sorted([int(remaining[i]) for i in ids] + [0] * (B - len(ids))) for ids, B in layout]
    got = _kernels(*args)
    assert all(sent == cost.sends for *_, sent in got)  # the KV's one way when the cost does not choose
    got = [(i, d) for i, d, _ in got]
    want = reference_plan(base, release, queues, sizes, lifetimes, running, held, remaining, terms,
                          reference_cost(cost, held), budget, per_rank, floor, ordered)
    return got, want


def test_the_kernels_choose_the_reference_migrations_on_random_calls():
    moved = 0
    for seed in range(3000):
        got, want = _both(_call(seed))
        assert got == want, seed
        moved += bool(want)
    assert moved > 300  # the calls exercise migrations, not only empty plans


def test_the_kernels_leave_their_arguments_unchanged():
    args = _call(7)
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    _both(args)
    for a, b in zip(args, copies):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)


def test_the_transfer_cost_is_the_reference_formula():
    rng = np.random.default_rng(3)
    for _ in range(200):
        G = int(rng.integers(1, 6))
        held = rng.integers(1, 5000, 10)
        cost = MigrationCost(seconds=lambda t: t * 1e-5, pending=rng.choice([0.0, 0.01], G), weight=2.0,
                             token_latency_s=1e-6)
        loads = rng.integers(0, 20_000, (G, 3)).astype(float)
        planned = [(int(rng.integers(0, 10)), int(rng.integers(0, G))) for _ in range(int(rng.integers(0, 3)))]
        got = migration_costs(cost, np.array([4]), held, loads[:, 0], planned)[0]
        assert got == pytest.approx(reference_cost(cost, held)(4, loads, planned), rel=1e-12, abs=1e-9)


def _workload(n=400, rate=80.0, seed=5):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, 30_000, n), rng.integers(1, 200, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


@pytest.mark.parametrize("options", [
    {"kv": "transfer", "transfer_gbps": 3600.0, "cost_weight": 4.0, "evaluations": 4, "per_rank": 2},
    {"kv": "transfer", "cost_weight": 0.0, "evaluations": 4, "per_rank": 2, "horizon": 50},
])
def test_the_kernels_choose_the_reference_migrations_in_whole_runs(monkeypatch, options):
    calls = []
    real = instant.plan_migrations

    def both(base, remaining, queues, sizes, lifetimes, slots, held, movable, terms, cost, budget, per_rank,
             floor=None):
        got = real(base, remaining, queues, sizes, lifetimes, slots, held, movable, terms, cost, budget, per_rank,
                   floor)
        N = len(sizes)
        busy = slots >= 0
        held_n, rem_n = np.zeros(N, dtype=np.int64), np.ones(N, dtype=np.int64)
        held_n[slots[busy]], rem_n[slots[busy]] = held[busy], remaining[busy]
        ptr, ids = queues
        want = reference_plan(base, np.sort(remaining, axis=1).tolist(),  # the rows as heaps
                              [ids[ptr[g]:ptr[g + 1]].tolist() for g in range(len(ptr) - 1)], sizes, lifetimes,
                              [row[ok] for row, ok in zip(slots, movable)], held_n, rem_n, terms,
                              reference_cost(cost, held_n), budget, per_rank, floor)
        assert [(i, d) for i, d, _ in got] == want
        calls.append(len(got))
        return got

    monkeypatch.setattr(instant, "plan_migrations", both)
    res = simulate(_workload(), 4, 8, "bfio", policy_options={"horizon": 20}, entry="arrivals", dispatch="instant",
                   migration="bfio", migration_options=options, show_progress=False)
    assert len(calls) > 50 and sum(calls) == res.metrics["migrations"] > 0


def test_one_evaluation_computes_the_per_request_costs_of_its_candidate_alone():
    """With one evaluation a call the planner asks the cost for the one candidate it
    evaluates (first_evaluated), and plans as the reference does (the full table)."""
    checked = 0
    for seed in range(400):
        base, layout, queues, sizes, lifetimes, running, held, remaining, terms, cost, _, per_rank, floor = \
            _call(seed)
        if cost.fixed is None:
            continue
        asked = []
        table = cost.fixed

        def fixed(ids):
            asked.append(np.asarray(ids).tolist())
            return table(ids)

        args = (base, layout, queues, sizes, lifetimes, running, held, remaining, terms,
                MigrationCost(fixed=fixed), 1, per_rank, floor)
        _kernels(*args)
        assert len(asked) <= 1 and all(len(a) == 1 for a in asked), seed  # one request, once
        checked += len(asked)
        got, want = _both(args)
        assert got == want, seed
    assert checked > 50
