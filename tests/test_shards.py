"""The fast solver split into shards of a large cluster (issue 16,
:mod:`bfio.solvers.shards`): same constraints as the unsharded call, the same
result when no split is needed, and a J close to the unsharded one."""

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.solvers.random_instances import random_instance
from bfio.solvers.fast import persisting, solve_fast
from bfio.solvers.shards import check_shard_workers, shares, solve_sharded


def _args(inst):
    life = persisting(inst.waiting) if inst.lifetimes is None else inst.lifetimes
    return (np.ascontiguousarray(inst.base), inst.free, inst.sizes, life, inst.forced(), inst.admissible, 4,
            np.ascontiguousarray(inst.weights))


def _instances(seed, count, workers=40):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        inst = random_instance(rng, workers=workers, waiting=int(rng.integers(20, 160)), horizon=int(rng.choice([0, 5, 12])),
                               discount="random", lifetimes="random")
        if inst.admissible > 0:
            yield inst


def _check_feasible(inst, assign):
    forced = inst.forced()
    got = assign >= 0
    assert got.sum() == inst.admissible
    assert np.all(forced <= got), "a request that must be admitted was left waiting"
    per_worker = np.bincount(assign[got], minlength=inst.workers)
    assert np.all(per_worker <= inst.free)


def test_sharded_calls_keep_every_constraint_of_the_program():
    split = 0
    for inst in _instances(3, 60):
        args = _args(inst)
        for shard in (1, 4, 9):
            _check_feasible(inst, solve_sharded(*args, shard_workers=shard))
        split += int((inst.free > 0).sum() > 9)
    assert split > 30  # the instances do get split


def test_no_split_when_the_open_workers_fit_one_shard():
    for inst in _instances(4, 30):
        args = _args(inst)
        whole = solve_fast(*args)
        assert np.array_equal(solve_sharded(*args, shard_workers=inst.workers), whole)
        assert np.array_equal(solve_sharded(*args, shard_workers=0), whole)


def test_sharded_objective_stays_close_to_the_whole_call():
    """Mean J over instances within 3% of the unsharded fast solver's."""
    whole, sharded = [], []
    for inst in _instances(5, 60, workers=48):
        args = _args(inst)
        whole.append(inst.objective(solve_fast(*args)))
        sharded.append(inst.objective(solve_sharded(*args, shard_workers=12)))
    assert np.mean(sharded) <= 1.03 * np.mean(whole), (np.mean(sharded), np.mean(whole))


def test_shares_split_admissions_by_free_slots_and_keep_forced_ones():
    u = shares(10, np.array([6, 2, 2]), np.array([0, 0, 0]), np.array([6, 2, 2]))
    assert u.sum() == 10 and u.tolist() == [6, 2, 2]
    u = shares(4, np.array([4, 4]), np.array([0, 3]), np.array([4, 4]))
    assert u.sum() == 4 and u[1] >= 3
    assert shares(4, np.array([4, 1]), np.array([0, 2]), np.array([4, 1])) is None  # 2 forced, 1 slot


def test_forced_requests_that_do_not_fit_a_shard_fall_back_to_one_call():
    base = np.arange(4, dtype=np.int64)[:, None]  # dealt by load: workers 0, 2 and 1, 3
    free = np.array([5, 1, 5, 1])
    sizes = np.array([70, 60, 50, 40, 30, 20, 10])
    forced = np.array([True] * 6 + [False])  # 3 forced per shard; shard 1 has 2 slots
    args = (base, free, sizes, persisting(7), forced, 6, 4, np.ones(1))
    assign = solve_sharded(*args, shard_workers=2)
    assert np.array_equal(assign, solve_fast(*args))
    assert (assign >= 0).sum() == 6 and np.all(assign[forced] >= 0)


@pytest.mark.parametrize("bad", [-1, 2.5, True, "64"])
def test_bad_shard_workers_name_the_option(bad):
    with pytest.raises(ConfigError, match="shard_workers"):
        check_shard_workers(bad)
    with pytest.raises(ConfigError, match="shard_workers"):
        make_policy("bfio", shard_workers=bad)


@pytest.mark.parametrize("predictor", ["oracle", "geometric"])
def test_policy_routes_in_shards_and_serves_every_request(predictor):
    """The policy path: integer (oracle) and expected (geometric) loads, a cluster of
    8 workers split into shards of 3; every request served, deterministic, and the
    same run as the unsharded policy when the shards hold every worker."""
    from bfio.simulator import simulate
    from bfio.workloads.workload import Workload

    rng = np.random.default_rng(2)
    w = Workload(prefill=rng.integers(50, 5000, 400), decode=rng.integers(1, 40, 400))
    opts = {"horizon": 6, "predictor": predictor, "admission": "free"}
    split = simulate(w, 8, 5, "bfio", seed=1, policy_options={**opts, "shard_workers": 3})
    assert split.requests["worker"].ge(0).all() and len(split.requests) == 400
    again = simulate(w, 8, 5, "bfio", seed=1, policy_options={**opts, "shard_workers": 3})
    assert split.requests["worker"].equals(again.requests["worker"])
    whole = simulate(w, 8, 5, "bfio", seed=1, policy_options={**opts, "shard_workers": 0})
    wide = simulate(w, 8, 5, "bfio", seed=1, policy_options={**opts, "shard_workers": 8})
    assert whole.requests["worker"].equals(wide.requests["worker"])
    assert not whole.requests["worker"].equals(split.requests["worker"])  # the split does route differently
