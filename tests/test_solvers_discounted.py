"""Every exact backend solves the same program: the discounted objective with
per-request lifetimes (``../shared/spec/semantics.md``, "BF-IO").

On 200 small random instances with random ``delta`` in (0, 1] and random
new-request lifetimes, brute-force enumeration, HiGHS and Gurobi (within its
restricted-license size limit) reach the same optimum, and the MILP's
objective equals ``Instance.objective`` for every feasible assignment.
"""

import numpy as np
import pytest

from bfio.solvers import solve
from bfio.solvers.random_instances import random_feasible, random_instance
from bfio.solvers.brute import brute_force, enumeration_size
from bfio.solvers.gurobi import gurobi_available
from bfio.solvers.instance import Instance
from bfio.solvers.model import build_milp, model_size

N_INSTANCES = 200
REL_TOL = 1e-9


def _close(a, b) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b))


@pytest.fixture(scope="module")
def instances():
    """Small enough for brute force on every one: G <= 5, at most 6 waiting."""
    rng = np.random.default_rng(20260511)
    out = []
    for _ in range(N_INSTANCES):
        inst = random_instance(rng, workers=int(rng.integers(1, 6)), waiting=int(rng.integers(0, 7)),
                               discount="random", lifetimes="random")
        assert enumeration_size(inst) <= 6 ** 6
        out.append(inst)
    return out


@pytest.fixture(scope="module")
def optima(instances):
    return [brute_force(inst) for inst in instances]


def test_instances_cover_discounts_and_lifetimes(instances):
    deltas = np.array([inst.discount for inst in instances])
    assert (deltas == 1.0).sum() >= 20 and (deltas < 1.0).sum() >= 100 and deltas.min() < 0.2
    short = [np.any(inst.lifetimes <= inst.horizon) for inst in instances if inst.waiting and inst.horizon]
    persist = [np.any(inst.lifetimes == inst.horizon + 1) for inst in instances if inst.waiting]
    assert sum(short) >= 100 and sum(persist) >= 100
    assert sum(inst.admissible < inst.waiting for inst in instances) >= 30  # admission is a real choice


def test_model_objective_equals_instance_objective(instances):
    """c v + offset == J for random feasible assignments, and v satisfies every row."""
    rng = np.random.default_rng(11)
    checked = 0
    for inst in instances:
        m = build_milp(inst)
        assert (m.num_vars, m.num_rows, m.n * m.touched.size) == model_size(inst)
        for _ in range(5):
            a = random_feasible(inst, rng)
            v = m.vector_from_assign(inst, a)
            Av = m.A @ v
            assert np.all(Av >= m.row_lo - 1e-6) and np.all(Av <= m.row_hi + 1e-6)
            assert np.array_equal(m.assign_from_vector(v), a)
            J = inst.objective(a)
            assert _close(m.objective_of(v), J), (m.objective_of(v), J)
            checked += 1
    assert checked == 5 * N_INSTANCES


def test_model_envelope_is_tight_only_at_the_max(instances):
    """Raising any e_h above the tight envelope raises the model objective: the
    identity is not an accident of a zero envelope weight."""
    rng = np.random.default_rng(12)
    for inst in instances[:40]:
        if inst.admissible == 0:
            continue
        m = build_milp(inst)
        v = m.vector_from_assign(inst, random_feasible(inst, rng))
        ie = m.num_vars - (inst.horizon + 1)
        bumped = v.copy()
        bumped[ie:] += 1.0
        assert m.objective_of(bumped) > m.objective_of(v)


def test_brute_force_is_the_minimum_of_instance_objective(instances, optima):
    """Brute force evaluates J through the shared definition: its optimum is
    Instance.objective of its assignment, and no random feasible assignment beats it."""
    rng = np.random.default_rng(13)
    for inst, (J, a) in zip(instances, optima):
        inst.check(a)
        assert J == inst.objective(a)
        for _ in range(5):
            assert inst.objective(random_feasible(inst, rng)) >= J - REL_TOL * max(1.0, abs(J))


def test_highs_matches_brute_force(instances, optima):
    for inst, (J, _) in zip(instances, optima):
        sol = solve(inst, "highs", time_limit_s=60)
        inst.check(sol.assign)
        assert sol.proven_optimal, f"HiGHS did not prove optimality ({sol.status})"
        assert _close(sol.objective, J), (inst.discount, sol.objective, J)
        if inst.integral:  # delta = 1: J is an exact integer
            assert isinstance(sol.objective, int) and sol.objective == J


def test_gurobi_matches_brute_force(instances, optima):
    ok, why = gurobi_available()
    if not ok:
        pytest.skip(why)
    compared = 0
    for inst, (J, _) in zip(instances, optima):
        if not gurobi_available(inst)[0]:
            continue
        sol = solve(inst, "gurobi", time_limit_s=60)
        inst.check(sol.assign)
        assert sol.proven_optimal, f"Gurobi did not prove optimality ({sol.status})"
        assert _close(sol.objective, J), (inst.discount, sol.objective, J)
        compared += 1
    assert compared == N_INSTANCES  # every instance here is far below the restricted-license limit


def test_exact_backends_without_warm_start(instances, optima):
    """The model alone (no fast-solver incumbent to fall back on) reaches the optimum."""
    from bfio.solvers.highs import solve_highs

    for inst, (J, _) in list(zip(instances, optima))[:60]:
        if inst.admissible == 0:
            continue
        sol = solve_highs(inst, time_limit_s=60)
        assert sol.proven_optimal and _close(sol.objective, J)


def test_lifetimes_matter_to_the_optimum():
    """A case where the lifetime changes the optimal placement: HiGHS and brute
    force both see it (a model that ignored lifetimes would pick the other worker)."""
    # worker 0 is loaded only at h = 0, worker 1 only at h >= 1; one request of size 10.
    base = np.array([[100, 0, 0, 0], [0, 60, 60, 60]])
    for life, delta in ((1, 1.0), (4, 1.0), (4, 0.3), (1, 0.5)):
        inst = Instance(base=base, free=[1, 1], sizes=[10], ages=[0], lifetimes=[life], discount=delta)
        J, a = brute_force(inst)
        sol = solve(inst, "highs")
        assert _close(sol.objective, J) and sol.assign.tolist() == a.tolist()
    short = Instance(base=base, free=[1, 1], sizes=[10], ages=[0], lifetimes=[1])
    long = Instance(base=base, free=[1, 1], sizes=[10], ages=[0], lifetimes=[4])
    assert brute_force(short)[1].tolist() != brute_force(long)[1].tolist()
