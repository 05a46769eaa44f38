"""The fast solver's ``auto`` placement (:mod:`bfio.solvers.placement`): the greedy
while at most ``AUTO_GREEDY_WORKERS`` workers have a free slot, the heap above; in
BF-IO runs and in ``solve(inst, "fast", placement="auto")``."""

import numpy as np
import pytest

import bfio.solvers.placement as placement_module
from bfio.errors import ConfigError
from bfio.policies import make_policy
from bfio.simulator import simulate
from bfio.solvers import PLACEMENTS, solve
from bfio.solvers.placement import AUTO_GREEDY_WORKERS, resolve_placement
from bfio.solvers.random_instances import random_instance
from bfio.workload import Workload


def test_auto_is_a_registered_placement():
    assert "auto" in PLACEMENTS and PLACEMENTS[0] == "greedy"
    assert AUTO_GREEDY_WORKERS >= 1
    make_policy("bfio", placement="auto")
    with pytest.raises(ConfigError, match="placement"):
        make_policy("bfio", placement="auto", solver="highs")


def test_resolve_counts_the_workers_with_a_free_slot():
    A = AUTO_GREEDY_WORKERS
    for open_workers, want in ((0, "greedy"), (1, "greedy"), (A - 1, "greedy"), (A, "greedy"),
                               (A + 1, "heap"), (3 * A, "heap")):
        free = np.zeros(4 * A, dtype=np.int64)
        free[np.random.default_rng(open_workers).permutation(4 * A)[:open_workers]] = 3
        assert resolve_placement("auto", free) == want, open_workers
    # full workers do not count, however many there are
    assert resolve_placement("auto", np.zeros(10 * A, dtype=np.int64)) == "greedy"
    free = np.zeros(10 * A, dtype=np.int64)
    free[:A] = 1
    assert resolve_placement("auto", free) == "greedy"
    free[A] = 7
    assert resolve_placement("auto", free) == "heap"
    # the others pass through, whatever the cluster
    for free in (np.ones(2, dtype=np.int64), np.ones(4 * A, dtype=np.int64)):
        assert resolve_placement("greedy", free) == "greedy"
        assert resolve_placement("heap", free) == "heap"


def test_resolve_follows_the_module_threshold(monkeypatch):
    free = np.array([0, 2, 1, 0, 5])
    assert resolve_placement("auto", free) == "greedy"
    monkeypatch.setattr(placement_module, "AUTO_GREEDY_WORKERS", 2)
    assert resolve_placement("auto", free) == "heap"
    monkeypatch.setattr(placement_module, "AUTO_GREEDY_WORKERS", 3)
    assert resolve_placement("auto", free) == "greedy"


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
def test_auto_above_the_threshold_is_the_heap(runs, monkeypatch, admission):
    w, ref = runs
    monkeypatch.setattr(placement_module, "AUTO_GREEDY_WORKERS", 0)
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


def test_solve_auto_with_the_threshold_lowered_is_the_heap(monkeypatch):
    monkeypatch.setattr(placement_module, "AUTO_GREEDY_WORKERS", 0)
    for inst in _instances(2, 20, workers=6):
        auto = solve(inst, "fast", placement="auto")
        _same_solution(auto, solve(inst, "fast", placement="heap"))
        assert auto.solver == "fast-heap"
        inst.check(auto.assign)


def test_solve_auto_resolves_on_the_instance_free_slots():
    """A large instance: auto is the heap when more than AUTO_GREEDY_WORKERS workers have a
    free slot, the greedy otherwise (random_instance leaves some workers full)."""
    seen = set()
    for inst in _instances(3, 4, workers=AUTO_GREEDY_WORKERS + 60):
        open_workers = int(np.count_nonzero(inst.free))
        want = "heap" if open_workers > AUTO_GREEDY_WORKERS else "greedy"
        _same_solution(solve(inst, "fast", placement="auto"), solve(inst, "fast", placement=want))
        seen.add(want)
    assert seen == {"greedy", "heap"}  # both sides of the threshold
