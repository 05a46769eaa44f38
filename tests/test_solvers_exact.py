"""Exactness of the BF-IO solvers on 200 small random instances of Eq. (IO):
HiGHS and Gurobi reach the same proven optimum, equal to brute-force
enumeration where that is feasible; the fast solver is feasible, never below
the optimum, and its median gap is at most 1%."""

import numpy as np
import pytest

from bfio.solvers import solve
from bfio.solvers.random_instances import random_instance
from bfio.solvers.brute import brute_force, enumeration_size
from bfio.solvers.gurobi import gurobi_available

N_INSTANCES = 200


@pytest.fixture(scope="module")
def instances():
    rng = np.random.default_rng(20261122)
    return [random_instance(rng) for _ in range(N_INSTANCES)]


@pytest.fixture(scope="module")
def highs_solutions(instances):
    return [solve(inst, "highs", time_limit_s=60) for inst in instances]


def test_highs_proves_optimality_and_matches_brute_force(instances, highs_solutions):
    checked = 0
    for inst, sol in zip(instances, highs_solutions):
        inst.check(sol.assign)
        assert sol.proven_optimal, f"HiGHS did not prove optimality ({sol.status})"
        assert sol.objective == inst.objective(sol.assign)
        if enumeration_size(inst) <= 100_000:
            J, a = brute_force(inst)
            assert sol.objective == J
            checked += 1
    assert checked >= 50


def test_gurobi_matches_highs(instances, highs_solutions):
    ok, why = gurobi_available()
    if not ok:
        pytest.skip(why)
    compared = 0
    for inst, h in zip(instances, highs_solutions):
        ok, why = gurobi_available(inst)
        if not ok:
            continue
        g = solve(inst, "gurobi", time_limit_s=60)
        assert g.proven_optimal
        assert g.objective == h.objective
        compared += 1
    if compared == 0:
        pytest.skip("no instance within the Gurobi restricted-license size limit")
    assert compared >= 150


def test_fast_solver_feasible_and_close(instances, highs_solutions):
    gaps = []
    for inst, h in zip(instances, highs_solutions):
        f = solve(inst, "fast")
        inst.check(f.assign)
        assert f.objective >= h.objective
        gaps.append((f.objective - h.objective) / max(h.objective, 1))
    assert np.median(gaps) <= 0.01


def test_admission_rules_respected(instances, highs_solutions):
    for inst, sol in zip(instances, highs_solutions):
        forced = inst.forced()
        assert np.all(sol.assign[forced] >= 0)
        assert int((sol.assign >= 0).sum()) == inst.admissible


def _with_lifetimes(inst, rng):
    from bfio.solvers.instance import Instance

    life = rng.integers(1, inst.horizon + 3, size=inst.waiting)
    return Instance(base=inst.base, free=inst.free, sizes=inst.sizes, ages=inst.ages,
                    admission=inst.admission, lifetimes=life)


def test_predicted_new_requests_fast_vs_brute(instances):
    """new_requests='predicted' (per-request lifetimes): brute force evaluates J
    like Instance.objective, and the fast solver is feasible, never below it,
    with a median gap <= 1%."""
    rng = np.random.default_rng(7)
    gaps = []
    for inst0 in instances:
        inst = _with_lifetimes(inst0, rng)
        a = solve(inst, "fast").assign
        inst.check(a)
        if enumeration_size(inst) > 20_000:
            continue
        J, b = brute_force(inst)
        assert J == inst.objective(b)
        Jf = inst.objective(a)
        assert Jf >= J
        gaps.append((Jf - J) / max(1, abs(J)))
    assert len(gaps) >= 50
    assert float(np.median(gaps)) <= 0.01


def test_predicted_lifetimes_at_full_window_equal_persist(instances):
    from bfio.solvers.instance import Instance

    for inst in instances[:50]:
        full = Instance(base=inst.base, free=inst.free, sizes=inst.sizes, ages=inst.ages,
                        admission=inst.admission, lifetimes=np.full(inst.waiting, inst.horizon + 1))
        a = solve(inst, "fast").assign
        assert full.objective(a) == inst.objective(a)
