"""Baseline policy semantics and the simulator's refusal of invalid assignments."""

import numpy as np
import pytest

from bfio.ground.errors import ConfigError, PolicyError
from bfio.policies import Policy, RoutingState, make_policy
from bfio.simulator import simulate
from bfio.workloads.workload import Workload


def state(pool_s, free, loads, active=None, workers=None):
    G = len(free)
    s = np.asarray(pool_s, dtype=np.int64)
    w = Workload(s, np.ones_like(s))
    return RoutingState(step=0, clock=0.0, workers=G, slots=int(max(free)), pool=np.arange(len(s)),
                        free=np.asarray(free), loads=np.asarray(loads, dtype=np.int64),
                        active=np.asarray(active if active is not None else [0] * G),
                        workload=w, slot_request=np.full((G, max(free)), -1), generated=np.zeros(len(s), int),
                        enter_step=np.zeros(len(s), int))


def test_fcfs_fills_workers_in_index_order():
    out = make_policy("fcfs").route(state([5, 1, 9, 2, 7], free=[2, 0, 2], loads=[0, 0, 0]))
    assert out.tolist() == [0, 0, 2, 2, -1]


def test_jsq_tokens_picks_least_loaded_with_lowest_index_on_ties():
    out = make_policy("jsq_tokens").route(state([10, 10, 3, 1], free=[2, 2, 2], loads=[5, 5, 20]))
    # 10 -> w0 (tie w0/w1), 10 -> w1 (5<15), 3 -> w0 (15 tie 15 -> lowest index), 1 -> w1 (15<18)
    assert out.tolist() == [0, 1, 0, 1]


def test_jsq_requests_counts_active_requests():
    out = make_policy("jsq_requests").route(state([100, 1, 1], free=[3, 3], loads=[0, 999], active=[2, 0]))
    assert out.tolist() == [1, 1, 0]


def test_round_robin_pointer_persists():
    p = make_policy("round_robin")
    p.reset(3, 2)
    assert p.route(state([1, 1], free=[2, 2, 2], loads=[0, 0, 0])).tolist() == [0, 1]
    assert p.route(state([1, 1], free=[2, 0, 2], loads=[0, 0, 0])).tolist() == [2, 0]


def test_power_of_two_prefers_the_lighter_of_two_and_respects_capacity():
    p = make_policy("power_of_two", seed=3)
    out = p.route(state([1] * 6, free=[1, 5], loads=[0, 10**9]))
    assert np.bincount(out, minlength=2).tolist() == [1, 5]
    out = make_policy("power_of_two", seed=3).route(state([1], free=[5, 5], loads=[0, 10**9]))
    assert out.tolist() == [0]


def test_random_is_seeded_and_uses_only_free_workers():
    a = make_policy("random", seed=7).route(state([1] * 8, free=[4, 0, 4, 0], loads=[0] * 4))
    b = make_policy("random", seed=7).route(state([1] * 8, free=[4, 0, 4, 0], loads=[0] * 4))
    assert a.tolist() == b.tolist() and set(a.tolist()) == {0, 2}


def test_unknown_policy_names_the_key():
    with pytest.raises(ConfigError, match="policy: unknown policy 'nope'"):
        make_policy("nope")


class Overfill(Policy):
    name = "overfill"

    def route(self, state):
        return np.zeros(state.pool.shape[0], dtype=np.int64)


class OutOfRange(Policy):
    name = "out_of_range"

    def route(self, state):
        return np.full(state.pool.shape[0], state.workers, dtype=np.int64)


class Lazy(Policy):
    name = "lazy"

    def route(self, state):
        return np.full(state.pool.shape[0], -1, dtype=np.int64)


@pytest.mark.parametrize("policy, match", [
    (Overfill(), "worker 0 got .* free slots"),
    (OutOfRange(), "outside 0..1"),
    (Lazy(), "admitted nothing"),
])
def test_simulator_refuses_invalid_assignments(policy, match):
    w = Workload(np.full(10, 5), np.full(10, 3))
    with pytest.raises(PolicyError, match=match):
        simulate(w, 2, 2, policy)


def test_one_request_on_one_worker_by_hand():
    # s=10, o=3 on G=1, B=1: gating loads 10, 11, 12; dt = C + t_l L
    r = simulate(Workload(np.array([10]), np.array([3])), 1, 1, "fcfs", record_loads=True)
    assert r.loads[:, 0].tolist() == [10, 11, 12] and r.steps == 3
    C = r.config["overhead_s"]
    assert r.requests.finish_s[0] == pytest.approx(3 * C + 1.005e-7 * 33)
    assert r.metrics["tpot"] == pytest.approx((3 * C + 1.005e-7 * 33) / 3)


def test_arrivals_mode_waits_for_arrivals():
    w = Workload(np.array([5, 5]), np.array([2, 2]), arrival_s=np.array([0.0, 100.0]))
    r = simulate(w, 1, 4, "fcfs", entry="arrivals")
    assert r.requests.start_s.tolist()[1] == pytest.approx(100.0)
    assert r.requests.wait_s.max() == pytest.approx(0.0)
