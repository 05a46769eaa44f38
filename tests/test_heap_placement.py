"""The ``heap`` placement of the fast solver (issue 27, :mod:`bfio.solvers.heap`):
every constraint of Eq. (IO), deterministic, the documented preference
(largest-that-fits, no raise while anything fits), and its J against the greedy
measured, not assumed."""

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.simulator import simulate
from bfio.solvers import PLACEMENTS
from bfio.solvers.random_instances import random_instance
from bfio.solvers.fast import persisting, solve_fast
from bfio.solvers.heap import heavy_light, solve_heap
from bfio.workloads.workload import Workload


def _instances(seed, count, workers=40):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        inst = random_instance(rng, workers=workers, waiting=int(rng.integers(20, 160)),
                               horizon=int(rng.choice([0, 5, 12])), discount="random", lifetimes="random")
        if inst.admissible > 0:
            yield inst


def _heap(inst):
    life = persisting(inst.waiting) if inst.lifetimes is None else inst.lifetimes
    return solve_heap(np.ascontiguousarray(inst.base), inst.free, inst.sizes, life, inst.forced(),
                      inst.admissible, np.ascontiguousarray(inst.weights))[0]


def test_placements_take_the_loads_as_float64(monkeypatch):
    """One compiled specialization per placement kernel (issue 42): solve_fast,
    solve_heap and the shards hand the kernels C-contiguous float64 loads,
    whatever dtype the predictor gave; loads float64 cannot hold exactly are refused."""
    import bfio.solvers.fast as fast
    import bfio.solvers.heap as heap
    from bfio.solvers.shards import solve_sharded
    from bfio.solvers.touched import solver_loads

    seen = []

    def spy(result):
        def kernel(base, *args, **options):
            seen.append((base.dtype, base.flags.c_contiguous))
            return result(base, *args)
        return kernel

    monkeypatch.setattr(fast, "_solve_fast", spy(lambda base, free, sizes, *a: np.full(sizes.shape[0], -1)))
    monkeypatch.setattr(heap, "_solve_heap", spy(lambda base, free, sizes, *a: (np.full(sizes.shape[0], -1), 0)))
    sizes, life, forced = np.array([5, 7]), persisting(2), np.zeros(2, dtype=bool)
    for base in (np.arange(12).reshape(4, 3), np.arange(12.0).reshape(4, 3), np.arange(24).reshape(4, 6)[:, ::2]):
        fast.solve_fast(base, np.ones(4, dtype=np.int64), sizes, life, forced, 1, 4, np.ones(3))
        heap.solve_heap(base, np.ones(4, dtype=np.int64), sizes, life, forced, 1, np.ones(3))
        solve_sharded(base, np.ones(4, dtype=np.int64), sizes, life, forced, 2, 4, np.ones(3), shard_workers=2)
    assert len(seen) >= 9 and set(seen) == {(np.dtype(np.float64), True)}
    loads = np.arange(6.0).reshape(2, 3)
    assert solver_loads(loads) is loads  # already as the kernels take it: no copy


def test_loads_float64_cannot_hold_exactly_are_refused():
    """Integer loads below 2^53 are exact in float64 (bfio.solvers.touched.solver_loads);
    from 2^53 on the shared set-up (touched_workers) refuses them, in both placements."""
    from bfio.solvers.touched import EXACT_FLOAT_INT, solver_loads, touched_workers

    free = np.array([1, 0])
    below = np.array([[EXACT_FLOAT_INT - 1], [0]], dtype=np.int64)
    assert solver_loads(below)[0, 0] == EXACT_FLOAT_INT - 1
    assert touched_workers(solver_loads(below), free)[4][0] == EXACT_FLOAT_INT - 1
    sizes, life, forced = np.array([5]), persisting(1), np.zeros(1, dtype=bool)
    for at in ((0, 0), (1, 0)):  # a worker with a free slot, and one without
        big = below.copy()
        big[at] = EXACT_FLOAT_INT
        with pytest.raises(ValueError, match="2\\^53"):
            solve_fast(big, free, sizes, life, forced, 1, 4, np.ones(1))
        with pytest.raises(ValueError, match="2\\^53"):
            solve_heap(big, free, sizes, life, forced, 1, np.ones(1))


def test_heap_keeps_every_constraint_of_the_program():
    for inst in _instances(7, 80):
        assign = _heap(inst)
        got = assign >= 0
        assert got.sum() == inst.admissible
        assert np.all(inst.forced() <= got), "a request that must be admitted was left waiting"
        assert np.all(np.bincount(assign[got], minlength=inst.workers) <= inst.free)
        assert np.array_equal(assign, _heap(inst))  # deterministic


def test_empty_cluster_is_spread_not_stacked():
    """All workers empty, every request must be admitted: no worker takes more than its share."""
    rng = np.random.default_rng(0)
    G, n = 64, 256
    assign, _ = solve_heap(np.zeros((G, 14), dtype=np.int64), np.full(G, 72), rng.integers(10, 3000, n),
                           persisting(n), np.ones(n, dtype=bool), n, np.ones(14))
    per_worker = np.bincount(assign, minlength=G)
    assert per_worker.max() - per_worker.min() <= 1


def test_largest_request_that_fits_is_taken_without_raising():
    # one open slot, headroom 100 at every offset (H = 0): the 90 fits, the 150 would raise
    base = np.array([[1000], [900]], dtype=np.int64)
    sizes = np.array([10, 150, 90, 40])
    assign, _ = solve_heap(base, np.array([0, 1]), sizes, persisting(4), np.zeros(4, dtype=bool), 1, np.ones(1))
    assert assign.tolist() == [-1, -1, 1, -1]


def test_heap_objective_against_the_greedy_is_measured():
    """Mean J of the heap placement within 25% of the greedy's (it has no local search):
    a regression guard, the measured gap is in docs/bfio.md."""
    greedy, heap = [], []
    for inst in _instances(5, 60, workers=48):
        life = persisting(inst.waiting) if inst.lifetimes is None else inst.lifetimes
        g = solve_fast(np.ascontiguousarray(inst.base), inst.free, inst.sizes, life, inst.forced(),
                       inst.admissible, 4, np.ascontiguousarray(inst.weights))
        greedy.append(inst.objective(g))
        heap.append(inst.objective(_heap(inst)))
    assert np.mean(heap) <= 1.25 * np.mean(greedy)


def test_placement_option_from_the_registry():
    assert PLACEMENTS[0] == "greedy"
    w = Workload(np.arange(50, 250, 2), np.arange(1, 101) % 17 + 1)
    runs = {p: simulate(w, 4, 3, "bfio", seed=1, policy_options={"horizon": 5, "placement": p},
                        show_progress=False) for p in PLACEMENTS}
    assert "heap_key_refreshes" in runs["heap"].metrics and "heap_key_refreshes" not in runs["greedy"].metrics
    for r in runs.values():  # every request served
        assert len(r.requests) == 100 and r.requests["finish_step"].notna().all()
    with pytest.raises(ConfigError, match="placement"):
        make_policy("bfio", placement="lpt")
    with pytest.raises(ConfigError, match="placement"):
        make_policy("bfio", placement="heap", solver="highs")


@pytest.mark.parametrize("G, weights", [(8, np.ones(5)), (5, np.ones(5)), (2, np.ones(5)), (3, 0.6 ** np.arange(12)),
                                        (64, 0.6 ** np.arange(12)), (1, np.array([1.0]))])
def test_heap_offsets_split_heavy_and_light(G, weights):
    """heavy_light: the offsets whose weight alone reaches W / G, the others, each ascending
    (what _solve_heap's keys and bench_route_phases' replay read)."""
    W = float(sum(weights))
    heavy, light = heavy_light(weights, G, W)
    assert heavy.tolist() == [h for h in range(weights.size) if G * weights[h] >= W]
    assert light.tolist() == [h for h in range(weights.size) if G * weights[h] < W]
    assert sorted(heavy.tolist() + light.tolist()) == list(range(weights.size))
