"""The fast solver's ``auto`` placement (:mod:`bfio.solvers.placement`): the greedy
while its modelled cost ``GREEDY_S_PER_UNIT U n_T`` is within ``AUTO_STEP_SHARE`` of
the decode step, the heap otherwise; in BF-IO runs and in
``solve(inst, "fast", placement="auto")``."""

import numpy as np
import pytest

import bfio.solvers.placement as placement_module
from bfio.ground.constants import PaperConstants
from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.simulator import simulate
from bfio.solvers import PLACEMENTS, solve
from bfio.solvers.instance import INSTANCE_SLOTS
from bfio.solvers.placement import AUTO_STEP_SHARE, GREEDY_S_PER_UNIT, resolve_placement
from bfio.solvers.random_instances import random_instance
from bfio.workloads.workload import Workload


def test_auto_is_a_registered_placement():
    assert "auto" in PLACEMENTS and PLACEMENTS[0] == "greedy"
    assert GREEDY_S_PER_UNIT > 0 and 0 < AUTO_STEP_SHARE < 1
    make_policy("bfio", placement="auto")
    with pytest.raises(ConfigError, match="placement"):
        make_policy("bfio", placement="auto", solver="highs")


def test_resolve_weighs_the_greedys_modelled_cost_against_the_step():
    step = 0.01
    budget_units = AUTO_STEP_SHARE * step / GREEDY_S_PER_UNIT  # U n_T the greedy may cost
    free = np.zeros(400, dtype=np.int64)
    free[::4] = 2  # 100 workers with a free slot, 300 full (these do not count)
    n_T = 100
    U_edge = int(budget_units // n_T)
    assert resolve_placement("auto", free, U_edge, step) == "greedy"
    assert resolve_placement("auto", free, U_edge + 1, step) == "heap"
    # a longer step affords more: the same call is greedy at twice the step
    assert resolve_placement("auto", free, U_edge + 1, 2 * step) == "greedy"
    # counting the full workers too would change the answer: they do not count
    assert resolve_placement("auto", np.full(400, 2), U_edge, step) == "heap"
    # before the first step (no step yet: inf) the greedy; the others pass through
    assert resolve_placement("auto", free, 10**9, float("inf")) == "greedy"
    for p in ("greedy", "heap"):
        assert resolve_placement(p, free, 1, step) == p
        assert resolve_placement(p, free, 10**9, step) == p


def test_resolve_follows_the_module_constants(monkeypatch):
    free = np.array([0, 2, 1, 0, 5])
    assert resolve_placement("auto", free, 4, 0.01) == "greedy"
    monkeypatch.setattr(placement_module, "GREEDY_S_PER_UNIT", 1.0)
    assert resolve_placement("auto", free, 4, 0.01) == "heap"
    monkeypatch.setattr(placement_module, "AUTO_STEP_SHARE", 1e9)
    assert resolve_placement("auto", free, 4, 0.01) == "greedy"


def test_the_modelled_step_is_the_simulators():
    c = PaperConstants()
    assert c.step_s(1000, 72) == pytest.approx(c.overhead(72) + c.token_latency_s * 1000)
    assert c.step_of(np.array([5, 1000, 3]), 72) == pytest.approx(c.step_s(1000, 72))
    assert c.step_of(np.array([], dtype=np.int64), 72) == pytest.approx(c.overhead(72))


def test_an_instance_carries_its_calls_step_whether_built_from_a_call_or_loaded(tmp_path):
    """Instance.step_s (auto's budget): given by instance_of_call, computed by the
    instance otherwise (a file, a copy), the same number either way."""
    from dataclasses import replace

    from bfio.solvers.instance import Instance, load_instance, save_instance

    for inst in _instances(2, 6, workers=40):
        want = PaperConstants().step_s(float(inst.base[:, 0].max()), INSTANCE_SLOTS)
        assert inst.step_s == pytest.approx(want, rel=0, abs=0)
        rebuilt = Instance(base=inst.base, free=inst.free, sizes=inst.sizes, ages=inst.ages)
        assert rebuilt.step_s == inst.step_s and replace(inst, extra=()).step_s == inst.step_s
        save_instance(inst, tmp_path / "i.json")
        assert load_instance(tmp_path / "i.json").step_s == inst.step_s


def test_a_captured_call_carries_the_step_of_its_loads_now(data_dir):
    """instance_of_call gives the step it reads off the call's loads: the number the
    instance would compute from its own ``base[:, 0]``."""
    from bfio.solvers.instance import Instance
    from bfio.studies.agreement import capture_instances

    kept = capture_instances("burstgpt", 16, 72, 16 * 200, 20, every=5, limit=10)
    assert kept
    for inst in kept:
        own = Instance(base=inst.base, free=inst.free, sizes=inst.sizes, ages=inst.ages).step_s
        assert inst.step_s == own


# -- BF-IO runs ---------------------------------------------------------------------------------------
def _workload(n=800, seed=2):
    rng = np.random.default_rng(seed)
    return Workload(prefill=rng.integers(50, 4000, n), decode=rng.integers(1, 40, n))


def _run(w, placement, admission):
    return simulate(w, 8, 3, "bfio", seed=4, show_progress=False,
                    policy_options={"horizon": 8, "placement": placement, "admission": admission})


def _stable(metrics):
    """The metrics that do not depend on wall-clock timing."""
    return {k: v for k, v in metrics.items() if not k.startswith(("route_s", "solver_s"))}


def _same_run(a, b, ignore=()):
    ma, mb = _stable(a.metrics), _stable(b.metrics)
    for k in ignore:
        ma.pop(k, None)
        mb.pop(k, None)
    assert ma == mb
    assert a.requests["worker"].equals(b.requests["worker"])
    assert a.requests["start_step"].equals(b.requests["start_step"])


@pytest.fixture(scope="module")
def runs():
    w = _workload()
    return w, {(p, adm): _run(w, p, adm) for p in ("greedy", "heap") for adm in ("free", "drain:10")}


@pytest.mark.parametrize("admission", ["free", "drain:10"])
def test_auto_on_a_small_cluster_is_the_greedy(runs, admission):
    w, ref = runs
    greedy, heap = ref[("greedy", admission)], ref[("heap", admission)]
    # the two placements do differ on this workload, so the equality below says something
    assert not greedy.requests["worker"].equals(heap.requests["worker"])
    auto = _run(w, "auto", admission)
    assert len(auto.requests) == len(w) and auto.requests["finish_step"].notna().all()
    assert auto.metrics["heap_key_refreshes"] == 0  # the heap never ran
    _same_run(auto, greedy, ignore=("heap_key_refreshes",))


@pytest.mark.parametrize("admission", ["free", "drain:10"])
def test_auto_without_a_budget_is_the_heap(runs, monkeypatch, admission):
    w, ref = runs
    monkeypatch.setattr(placement_module, "AUTO_STEP_SHARE", 0.0)
    auto = _run(w, "auto", admission)
    heap = ref[("heap", admission)]
    assert heap.metrics["heap_key_refreshes"] > 0
    _same_run(auto, heap)  # heap_key_refreshes included


# -- solve(inst, "fast", placement="auto") ---------------------------------------------------------
def _instances(seed, count, workers):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        inst = random_instance(rng, workers=workers, waiting=int(rng.integers(5, 60)),
                               horizon=int(rng.choice([0, 5, 12])), discount="random", lifetimes="random")
        if inst.admissible > 0:
            out.append(inst)
    return out


def _same_solution(a, b):
    assert np.array_equal(a.assign, b.assign)
    assert a.objective == b.objective
    assert a.solver == b.solver


def test_solve_auto_on_few_workers_is_the_greedy():
    differ = 0
    for inst in _instances(1, 40, workers=6):
        auto = solve(inst, "fast", placement="auto")
        greedy = solve(inst, "fast", placement="greedy")
        heap = solve(inst, "fast", placement="heap")
        _same_solution(auto, greedy)
        assert auto.solver == "fast"
        inst.check(auto.assign)
        differ += int(not np.array_equal(greedy.assign, heap.assign))
    assert differ > 0  # the greedy is told apart from the heap on these instances


def test_solve_auto_without_a_budget_is_the_heap(monkeypatch):
    monkeypatch.setattr(placement_module, "AUTO_STEP_SHARE", 0.0)
    for inst in _instances(2, 20, workers=6):
        auto = solve(inst, "fast", placement="auto")
        _same_solution(auto, solve(inst, "fast", placement="heap"))
        assert auto.solver == "fast-heap"
        inst.check(auto.assign)


def test_solve_auto_resolves_on_the_instance():
    """An instance's step is modelled from its largest load (the paper's B): auto is the heap
    when the greedy's modelled cost exceeds the budget, the greedy otherwise."""
    seen = set()
    for inst in _instances(3, 12, workers=300):
        step = PaperConstants().step_s(float(inst.base[:, 0].max()), INSTANCE_SLOTS)
        work = inst.admissible * int(np.count_nonzero(inst.free))
        want = "greedy" if work * GREEDY_S_PER_UNIT <= AUTO_STEP_SHARE * step else "heap"
        _same_solution(solve(inst, "fast", placement="auto"), solve(inst, "fast", placement=want))
        seen.add(want)
    assert seen  # at least one side; both sides are checked by the resolve tests
