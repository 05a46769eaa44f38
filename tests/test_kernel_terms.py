"""The terms of ``J`` on the kernel side (issue 43, :mod:`bfio.solvers.terms.kernel`):
a kernel term changes the placements as its cost says (hand-computed cases, the
greedy's fill and forced phase), the one candidate cost
(:func:`~bfio.solvers.terms.kernel.candidate_cost`) is what the greedy and
``drain:N``'s best worker minimize (the same least cost on random calls), and the
terms the shortcuts cannot weigh exactly are refused by name."""

import numpy as np
import pytest

from bfio.solvers.drain import _best_worker
from bfio.solvers.fast import place_fast, solve_fast_terms
from bfio.solvers.heap import solve_heap_terms
from bfio.solvers.objective import ObjectiveTerms
from bfio.solvers.placement import place_terms
from bfio.solvers.terms import Term
from bfio.solvers.terms.kernel import candidate_cost, with_worker_costs


class WorkerPenalty(Term):
    """A kernel term: a constant cost per worker, whatever the request (test-only)."""

    name = "penalty"
    in_kernel = True
    request_independent = True
    worker_independent = False
    linear = True

    def __init__(self, per_worker):
        self.per_worker = np.asarray(per_worker, dtype=np.float64)

    def kernel_worker_costs(self, workers):
        return self.per_worker

    def candidate_costs(self, k, loads, add, entry):
        return self.per_worker

    def value(self, loads, assign):
        return float(self.per_worker[assign[assign >= 0]].sum())


class RequestBonus(WorkerPenalty):
    """A kernel term whose cost depends on the request (refused by the kernels)."""

    name = "bonus"
    request_independent = False


def _one_request(U_forced: bool, penalty):
    """Two idle workers (one free slot each), one request of size 10 over the window
    ``0..0``: on either worker the imbalance's part is ``G max(0, 10 - 0) - 10 = 10``."""
    terms = ObjectiveTerms.build(0)
    if penalty is not None:
        terms = terms.with_terms(WorkerPenalty(penalty))
    base = np.zeros((2, 1), dtype=np.int64)
    return solve_fast_terms(base, np.array([1, 1]), np.array([10]), np.array([U_forced]), 1, terms)


@pytest.mark.parametrize("forced", [False, True])  # the fill, and the forced phase's generic path
def test_a_worker_penalty_moves_the_request_as_its_cost_says(forced):
    # a tie (10 and 10): the first worker
    assert _one_request(forced, None).tolist() == [0]
    # 10 + 5 on worker 0 against 10 + 0 on worker 1
    assert _one_request(forced, [5.0, 0.0]).tolist() == [1]
    # 10 + 5 against 10 + 7
    assert _one_request(forced, [5.0, 7.0]).tolist() == [0]


def _random_call(rng):
    G = int(rng.integers(1, 12))
    H1 = int(rng.integers(1, 8))
    base = rng.integers(0, 300, size=(G, H1)).astype(np.float64)
    E = base.max(axis=0)
    s = int(rng.integers(1, 400))
    lf = int(rng.integers(1, H1 + 1))
    w = np.ones(H1) if rng.random() < 0.3 else 0.8 ** np.arange(H1)
    cost = np.where(rng.random(G) < 0.5, 0.0, rng.integers(-200, 200, G).astype(np.float64))
    return base, E, s, lf, w, cost


def test_the_greedy_and_drain_minimize_the_one_candidate_cost_on_random_calls():
    """One waiting request, one free slot on every worker: the greedy (fill, then its
    local search, which finds no better move) and ``drain:N``'s best worker both place it
    where :func:`candidate_cost` is least."""
    rng = np.random.default_rng(43)
    for _ in range(400):
        base, E, s, lf, w, cost = _random_call(rng)
        G, H1 = base.shape
        kt = with_worker_costs(np.array([lf]), w, cost, bool(np.any(cost != 0)))
        h = np.arange(H1)
        costs = np.array([candidate_cost(kt, E - base[g] - h, s, lf, 0, g, G, np.inf) for g in range(G)])
        free = np.ones(G, dtype=np.int64)
        fast = place_fast(base, free, np.array([s]), np.zeros(1, dtype=bool), 1, 4, kt)[0]
        drain = _best_worker(base, E, s, lf, 0, G, kt, np.zeros(G, dtype=bool), free, np.empty(H1))
        assert costs[fast] == costs.min() and costs[drain] == costs.min(), (costs, fast, drain)
        assert drain == int(np.argmin(costs))  # drain: the first of equal costs


def test_the_kernels_refuse_the_terms_their_shortcuts_cannot_weigh_by_name():
    base = np.zeros((2, 1))
    bonus = ObjectiveTerms.build(0).with_terms(RequestBonus([1.0, 0.0]))
    with pytest.raises(ValueError, match="objective term 'bonus' depends on the request"):
        bonus.kernel_terms(base, 1)
    penalty = ObjectiveTerms.build(0).with_terms(WorkerPenalty([1.0, 0.0]))
    with pytest.raises(ValueError, match="objective term 'penalty' depends on the worker: the heap's keys"):
        solve_heap_terms(base, np.array([1, 1]), np.array([3]), np.zeros(1, dtype=bool), 1, penalty)
    assert penalty.worker_dependent and not ObjectiveTerms.build(0).worker_dependent
    # auto (which would pick the heap with no time budget) runs the greedy instead
    assign, refreshed = place_terms(base, np.array([1, 1]), np.array([3]), np.zeros(1, dtype=bool), 1, penalty,
                                    "auto", 4, 0, 0.0)
    assert assign.tolist() == [1] and refreshed == 0
