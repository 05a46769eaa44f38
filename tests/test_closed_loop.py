"""Closed-loop arrivals (issue 32, :mod:`bfio.workloads.closed_loop`): a turn is sent its
think time after the previous turn completes."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.workloads.closed_loop import ClosedLoopArrivals, FollowUps
from bfio.ground.errors import ConfigError
from bfio.engine.prefill import PrefillModel
from bfio.workloads.sessions import session_requests
from bfio.simulator import simulate
from bfio.workloads.workload import Workload

RNG = np.random.default_rng(0)
PROMPTS, OUTPUTS = RNG.integers(100, 3000, 300), RNG.integers(5, 400, 300)


def _sessions(closed=True, seed=1, sessions=12, turns=4, think=2.0, **kw):
    return session_requests(PROMPTS, OUTPUTS, sessions=sessions, turns=turns, seed=seed, think_time_s=think,
                            closed_loop=closed, **kw)


def _by_turn(r, result):
    q = result.requests.assign(session=r.session, turn=r.turn)
    return q.sort_values(["session", "turn"])


@pytest.mark.parametrize("policy,dispatch", [("fcfs", "central"), ("vllm_dp", "instant"), ("bfio", "instant")])
@pytest.mark.parametrize("prefill", [None, PrefillModel(cache_blocks=1000)])
def test_every_turn_arrives_its_think_time_after_the_previous_one_completes(policy, dispatch, prefill):
    r = _sessions()
    res = simulate(r.workload, 2, 4, policy, entry="arrivals", dispatch=dispatch, show_progress=False,
                   prefill=prefill)
    q = _by_turn(r, res)
    fu = r.workload.follow_ups
    later = q[q["turn"] > 0]
    prev_finish = q.groupby("session")["finish_s"].shift(1)[q["turn"] > 0]
    think = fu.think_s[later.index.to_numpy()]
    np.testing.assert_allclose(later["arrival_s"].to_numpy(), prev_finish.to_numpy() + think, rtol=0, atol=1e-9)
    first = q[q["turn"] == 0]
    np.testing.assert_array_equal(first["arrival_s"].to_numpy(), r.workload.arrival_s[first.index.to_numpy()])


def test_the_open_loop_draw_lets_a_turn_arrive_before_the_previous_one_completes():
    """The contrast the closed loop removes (same arguments, open loop)."""
    r = _sessions(closed=False)
    q = _by_turn(r, simulate(r.workload, 2, 4, "fcfs", entry="arrivals", show_progress=False))
    prev_finish = q.groupby("session")["finish_s"].shift(1)
    assert (q["arrival_s"] < prev_finish - 1e-9).any()


@pytest.mark.parametrize("policy,dispatch", [("fcfs", "central"), ("vllm_dp", "instant")])
@pytest.mark.parametrize("prefill", [None, PrefillModel(cache_blocks=1000)])
def test_fast_forward_gives_the_plain_loop_bit_for_bit(policy, dispatch, prefill):
    r = _sessions(seed=3, think=0.5)
    kw = dict(entry="arrivals", dispatch=dispatch, show_progress=False, prefill=prefill)
    a = simulate(r.workload, 3, 4, policy, **kw)
    b = simulate(r.workload, 3, 4, policy, fast_forward=False, **kw)
    pd.testing.assert_frame_equal(a.requests, b.requests)
    assert a.steps == b.steps


def test_the_closed_loop_draw_is_the_open_loop_draw_with_follow_ups():
    a, b = _sessions(closed=False, seed=5, group_size=3, sessions=9), _sessions(closed=True, seed=5, group_size=3,
                                                                                sessions=9)
    for field in ("prefill", "decode", "arrival_s"):
        np.testing.assert_array_equal(getattr(a.workload, field), getattr(b.workload, field))
    assert a.workload.blocks == b.workload.blocks and a.workload.follow_ups is None
    after = b.workload.follow_ups.after
    for i in range(len(after)):  # turn k follows turn k-1 of the same session; turn 0 follows none
        if b.turn[i] == 0:
            assert after[i] == -1
        else:
            p = after[i]
            assert p < i and b.session[p] == b.session[i] and b.turn[p] == b.turn[i] - 1


def test_follow_ups_name_the_bad_entry():
    with pytest.raises(ConfigError, match="request 1 follows 1"):
        FollowUps(np.array([-1, 1]), np.zeros(2))
    with pytest.raises(ConfigError, match="request 2 follows -2"):
        FollowUps(np.array([-1, 0, -2]), np.zeros(3))
    with pytest.raises(ConfigError, match=r"think_s: request 1 has -1\.0"):
        FollowUps(np.array([-1, 0]), np.array([0.0, -1.0]))
    with pytest.raises(ConfigError, match="think_s: need one entry per request"):
        FollowUps(np.array([-1, 0]), np.zeros(3))
    with pytest.raises(ConfigError, match="follow_ups: need one entry per request"):
        Workload(np.full(3, 10), np.full(3, 5), np.zeros(3), follow_ups=FollowUps(np.array([-1, 0]), np.zeros(2)))
    with pytest.raises(ConfigError, match="follow_ups: closed-loop requests need arrival_s"):
        Workload(np.full(2, 10), np.full(2, 5), follow_ups=FollowUps(np.array([-1, 0]), np.zeros(2)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 30), min_size=1, max_size=30), st.integers(0, 2**31))
def test_every_request_is_handed_out_once_in_time_order(parents, seed):
    """Random forests of follow-ups, completions in any order: each request comes out
    of ``due`` exactly once, never before it is known, ordered by (time, index)."""
    n = len(parents)
    after = np.array([p if p < i else -1 for i, p in enumerate(parents)], dtype=np.int64)
    rng = np.random.default_rng(seed)
    think = rng.uniform(0, 3, n)
    arrival = np.sort(rng.uniform(0, 10, n))
    loop = ClosedLoopArrivals(arrival, FollowUps(after, think))
    seen, clock, out_times = [], 0.0, []
    while len(seen) < n:
        t = loop.next_time()
        assert t is not None
        clock = max(clock, t)
        due = loop.due(clock)
        times = loop.time[due]
        assert (np.diff(times) >= 0).all() and (times <= clock).all()
        out_times += times.tolist()
        seen += due.tolist()
        finish = clock + rng.uniform(0, 2, due.size)  # complete them (any order)
        perm = rng.permutation(due.size)
        loop.completed(due[perm], finish[perm])
    assert sorted(seen) == list(range(n)) and loop.unreleased == 0
    for i in np.flatnonzero(after >= 0):
        assert loop.time[i] >= loop.time[after[i]] + think[i] - 1e-12
