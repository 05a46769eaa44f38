"""BF-IO's objective as terms (issue 43, ``bfio.solvers.terms``): one interface
(the value of ``J``, a candidate's cost, the kernel arrays, the MILP) that every
backend reads. A toy term defined here only (its module: this file; its
registration: ``CALL_TERMS``) counts in ``J``, in instant dispatch, in the
central placement and in the exact backends' MILP; a term an exact backend
cannot express is refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bfio.solvers.terms as terms_pkg
from bfio.ground.errors import ConfigError
from bfio.engine.prefill import PrefillModel
from bfio.simulator import simulate
from bfio.solvers import solve
from bfio.solvers.brute import brute_force
from bfio.solvers.dispatch import bind
from bfio.solvers.model import build_milp
from bfio.solvers.objective import ObjectiveTerms
from bfio.solvers.random_instances import random_feasible, random_instance
from bfio.solvers.terms import Term
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals


class AffinityTerm(Term):
    """A toy term linear in the assignment: ``sum_{j,g} c_jg x_jg``, ``c[j, g]`` the
    cost of request ``requests[j]`` on worker ``g`` (a request's affinity)."""

    name = "affinity"
    linear = True

    def __init__(self, costs: np.ndarray, requests: np.ndarray | None = None):
        self.costs = np.asarray(costs, dtype=np.float64)
        self.requests = np.arange(self.costs.shape[0]) if requests is None else np.asarray(requests)

    def candidate_costs(self, k, loads, add, entry):
        return self.costs[k]

    def value(self, loads, assign):
        on = np.flatnonzero(np.asarray(assign) >= 0)
        return float(self.costs[on, np.asarray(assign)[on]].sum())

    def linear_costs(self, workers):
        return self.costs


class BarrierTerm(AffinityTerm):
    """A toy term that is not linear (as the prefix-cache term): no exact backend holds it."""

    name = "barrier"
    linear = False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), with_term=st.booleans())
def test_J_of_the_interface_equals_the_MILP_objective(seed, with_term):
    """``J`` from the terms (the instance's objective: imbalance plus the toy term)
    equals the MILP's ``c v + offset`` for random feasible assignments of random
    instances (discounted, with lifetimes)."""
    rng = np.random.default_rng(seed)
    inst = random_instance(rng, workers=int(rng.integers(1, 6)), waiting=int(rng.integers(0, 7)),
                           discount="random", lifetimes="random")
    if with_term:
        inst.extra = (AffinityTerm(rng.normal(0.0, 500.0, (inst.waiting, inst.workers))),)
    m = build_milp(inst)
    for _ in range(3):
        a = random_feasible(inst, rng)
        J = inst.objective(a)
        model = m.objective_of(m.vector_from_assign(inst, a))
        assert abs(model - J) <= 1e-7 * max(1.0, abs(J)), (model, J)


def test_an_exact_backend_optimizes_a_linear_term():
    """HiGHS holds the toy term: with a large cost of every worker but 2 it admits
    onto worker 2 only, and its objective is ``J`` of the interface."""
    rng = np.random.default_rng(3)
    inst = random_instance(rng, workers=4, waiting=5, horizon=5, admission="free")
    inst.free = np.array([2, 2, 2, 2])
    costs = np.full((5, 4), 1e7)
    costs[:, 2] = 0.0
    inst.extra = (AffinityTerm(costs),)
    sol = solve(inst, "highs", time_limit_s=20)
    placed = sol.assign[sol.assign >= 0]
    assert placed.size == 5 and (placed == 2).sum() == 2  # U = 5 admitted, worker 2 full
    assert sol.objective == pytest.approx(inst.objective(sol.assign))
    plain = solve(random_instance(np.random.default_rng(3), workers=4, waiting=5, horizon=5, admission="free"),
                  "highs", time_limit_s=20)
    assert plain.objective != sol.objective  # the term changed J


def test_the_exact_optimum_with_a_linear_term_is_the_brute_force_one():
    """HiGHS includes the toy term: its optimum is brute force's (which evaluates
    ``J`` by every term's value) on tiny random instances."""
    rng = np.random.default_rng(8)
    for _ in range(15):
        inst = random_instance(rng, workers=int(rng.integers(1, 4)), waiting=int(rng.integers(1, 5)), horizon=3,
                               discount="random", lifetimes="random")
        inst.extra = (AffinityTerm(rng.normal(0.0, 300.0, (inst.waiting, inst.workers))),)
        J, _ = brute_force(inst)
        sol = solve(inst, "highs", time_limit_s=20)
        assert sol.objective == pytest.approx(J, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("solver", ["highs", "gurobi"])
def test_an_exact_backend_refuses_a_term_it_cannot_express_by_name(solver):
    inst = random_instance(np.random.default_rng(4), workers=3, waiting=4, horizon=3)
    inst.extra = (BarrierTerm(np.zeros((4, 3))),)
    with pytest.raises(ConfigError, match=f"solver: objective term 'barrier' cannot be expressed by solver '{solver}'"):
        solve(inst, solver)
    with pytest.raises(ConfigError, match=f"objective term 'barrier' cannot be expressed by solver '{solver}'"):
        build_milp(inst, solver)


def test_the_fast_kernels_refuse_a_term_without_its_kernel_by_name():
    terms = ObjectiveTerms.build(3).with_terms(AffinityTerm(np.zeros((2, 2))))
    with pytest.raises(ValueError, match="objective term 'affinity' has no kernel"):
        terms.kernel_terms(np.zeros((2, 4)), 2)


def test_the_prefix_cache_term_is_refused_by_an_exact_backend_by_name():
    """Issue 43: the exact backends never saw the prefix-cache term; a run with it is
    refused, naming the term, instead of routing without it."""
    n = 60
    rng = np.random.default_rng(5)
    w = with_arrivals(Workload(rng.integers(20, 400, n), rng.integers(1, 40, n)), poisson_arrivals(n, 50.0, 5))
    with pytest.raises(ConfigError, match="objective term 'prefill' cannot be expressed by solver 'highs'"):
        simulate(w, 2, 4, "bfio", entry="arrivals", prefill=PrefillModel(), show_progress=False,
                 policy_options={"horizon": 4, "solver": "highs"})


def test_a_candidate_cost_sums_every_term():
    """Instant dispatch (``bind``) minimizes the candidate costs of every term: the
    toy term moves a request from the least loaded worker to the one it favours."""
    base = np.array([[100.0, 100.0, 100.0], [10.0, 10.0, 10.0], [50.0, 50.0, 50.0]])
    sizes, life = np.array([20]), np.array([3])
    plain = ObjectiveTerms.build(2)
    assert bind(base.copy(), [[0], [0], [0]], np.array([0]), sizes, life, plain).tolist() == [1]
    favour = AffinityTerm(np.array([[1e6, 1e6, 0.0]]))
    terms = plain.with_terms(favour)
    assert bind(base.copy(), [[0], [0], [0]], np.array([0]), sizes, life, terms).tolist() == [2]
    loads = base.copy()
    loads[2] += 20 + np.arange(3)
    assert terms.candidate_costs(0, base, loads - base, np.zeros(3, dtype=np.int64))[2] == pytest.approx(
        terms.evaluate(loads, np.array([2])))


def _favour_last(state, requests, window=None):
    """The toy term's factory: every request strongly prefers the last worker."""
    G = state.workers
    costs = np.full((len(requests), G), 1e9)
    costs[:, G - 1] = 0.0
    return AffinityTerm(costs, requests)


@pytest.mark.parametrize("run", [dict(dispatch="instant"), dict(), dict(solver="highs")])
def test_a_new_term_needs_its_module_and_its_registration_only(monkeypatch, run):
    """Registered in ``CALL_TERMS`` (no other change), the toy term steers instant
    dispatch, the central fast path (placement by candidate costs) and HiGHS."""
    n = 40
    rng = np.random.default_rng(6)
    w = with_arrivals(Workload(rng.integers(20, 400, n), rng.integers(1, 30, n)), poisson_arrivals(n, 20.0, 6))
    opts = {"horizon": 4, **({"solver": run["solver"]} if "solver" in run else {})}
    kw = dict(entry="arrivals", show_progress=False, policy_options=opts, **{k: v for k, v in run.items()
                                                                            if k != "solver"})
    before = simulate(w, 3, 64, "bfio", **kw)
    monkeypatch.setattr(terms_pkg, "CALL_TERMS", (*terms_pkg.CALL_TERMS, _favour_last))
    after = simulate(w, 3, 64, "bfio", **kw)
    worker = "queue_worker" if run.get("dispatch") == "instant" else "worker"
    assert before.requests[worker].nunique() > 1
    assert (after.requests[worker] == 2).all()
