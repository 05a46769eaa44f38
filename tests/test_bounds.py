"""The lower bound at scale (issue 40, :mod:`bfio.solvers.bounds`): on small random
instances of Eq. (IO) ``trivial_bound <= lp_bound <= J* (HiGHS, proven) <= J(auto)``
and ``lp_bound <= J`` of random feasible assignments; the safe Lagrangian
read-back is a lower bound for any multipliers."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfio.solvers import solve, trivial_bound
from bfio.ground.errors import ConfigError
from bfio.solvers.bounds import LP_SOLVERS, lp_bound, relaxation, safe_lagrangian
from bfio.solvers.instance import Instance
from bfio.solvers.random_instances import random_feasible, random_instance

TOL = 1e-7


def _tol(x):
    return TOL * max(1.0, abs(float(x)))


@pytest.fixture(scope="module")
def cases():
    rng = np.random.default_rng(4040)
    out = []
    for k in range(40):
        inst = random_instance(rng, workers=int(rng.integers(2, 7)), waiting=int(rng.integers(1, 12)),
                               discount="random" if k % 2 else None, lifetimes="random" if k % 3 else None)
        if inst.admissible == 0:
            continue
        opt = solve(inst, "highs", time_limit_s=30)
        out.append((inst, opt, lp_bound(inst, details=True)))
    return out


def test_bound_is_between_trivial_bound_and_the_proven_optimum(cases):
    assert len(cases) >= 25
    for inst, opt, b in cases:
        assert opt.proven_optimal
        assert b.value >= trivial_bound(inst) - _tol(b.value)
        assert b.value <= opt.objective + _tol(opt.objective), (b, opt.objective)
        auto = solve(inst, "fast", placement="auto")
        assert opt.objective <= auto.objective + _tol(auto.objective)


def test_safe_readback_matches_the_lp_and_the_bound_improves_somewhere(cases):
    # the Lagrangian at HiGHS's duals is the LP's optimum up to its tolerances (the
    # interior point's, IPM_TOLERANCE, are looser than the simplex's)
    for inst, _, b in cases:
        assert b.status in ("Optimal", "Unknown")  # HiGHS's word for an IPM stopped at IPM_TOLERANCE
        assert abs(b.lagrangian - b.lp) <= 1e-4 * max(1.0, abs(b.lp), abs(b.trivial))
        s = lp_bound(inst, lp_solver="simplex", details=True)
        assert s.status == "Optimal"
        assert abs(s.lagrangian - s.lp) <= 1e-6 * max(1.0, abs(s.lp))
    # and the relaxation is strictly better than the trivial bound on some instances
    assert sum(b.value > b.trivial + 1e-6 * max(1.0, abs(b.trivial)) for _, _, b in cases) >= 5


def test_bound_below_random_feasible_assignments(cases):
    rng = np.random.default_rng(7)
    for inst, _, b in cases:
        for _ in range(20):
            a = random_feasible(inst, rng)
            assert b.value <= float(inst.objective(a)) + _tol(b.value)


def test_lagrangian_is_a_lower_bound_for_any_multipliers(cases):
    rng = np.random.default_rng(11)
    for inst, opt, b in cases[:15]:
        lp = relaxation(inst)
        for _ in range(5):
            y = rng.normal(scale=rng.choice([0.1, 10.0, 1e3]), size=lp["A"].shape[0])
            assert safe_lagrangian(lp, y) <= opt.objective + _tol(opt.objective)


def test_a_tight_instance_is_bounded_exactly():
    # two empty workers with one slot each, two requests of equal size persisting:
    # one per worker is optimal and balanced, J* = 0; the bound must be 0 too
    inst = Instance(base=np.zeros((2, 4), dtype=np.int64), free=np.array([1, 1]), sizes=np.array([5, 5]),
                    ages=np.array([0, 0]))
    assert solve(inst, "highs").objective == 0
    assert abs(lp_bound(inst)) <= 1e-9


def test_both_lp_algorithms_bound_the_optimum_and_agree(cases):
    # the interior point (no crossover, the default) and the simplex solve the same LP:
    # each read-back is a lower bound, and they agree to HiGHS's tolerances
    for inst, opt, b in cases:
        s = lp_bound(inst, lp_solver="simplex", details=True)
        assert s.value <= opt.objective + _tol(opt.objective)
        assert abs(s.value - b.value) <= 1e-4 * max(1.0, abs(s.value), abs(s.trivial)), (s, b)


def test_an_unknown_lp_solver_is_refused_by_name():
    inst = Instance(base=np.zeros((2, 2), dtype=np.int64), free=np.array([1, 1]), sizes=np.array([3, 4]),
                    ages=np.array([0, 0]))
    with pytest.raises(ConfigError, match="lp_solver: expected ipm | simplex, got 'barrier'"):
        lp_bound(inst, lp_solver="barrier")


def test_a_time_limit_leaves_a_valid_bound(cases):
    # stopped before optimality, the read-back at whatever duals HiGHS has is still a lower bound
    for inst, opt, _ in cases[:10]:
        for solver in LP_SOLVERS:
            b = lp_bound(inst, time_limit_s=1e-6, lp_solver=solver)
            assert trivial_bound(inst) - _tol(b) <= b <= opt.objective + _tol(opt.objective)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.sampled_from(LP_SOLVERS))
def test_bound_below_optimum_hypothesis(seed, solver):
    rng = np.random.default_rng(seed)
    inst = random_instance(rng, workers=int(rng.integers(1, 5)), waiting=int(rng.integers(0, 8)),
                           discount="random", lifetimes="random")
    b = lp_bound(inst, lp_solver=solver)
    if inst.admissible == 0:
        assert b == trivial_bound(inst)
        return
    opt = solve(inst, "highs", time_limit_s=30)
    assert opt.proven_optimal
    assert trivial_bound(inst) - _tol(b) <= b <= opt.objective + _tol(opt.objective)
