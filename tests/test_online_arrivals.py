"""Online arrivals (``docs/online.md``): idle jumps, arrival-respecting starts,
latency identities, whole-run metrics, trace replay and Poisson arrivals."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bfio.ground.errors import ConfigError
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals, replay_workload, with_arrivals

ONLINE_POLICIES = ["fcfs", "jsq_tokens", "jsq_requests", "vllm_dp", "least_tokens", "round_robin", "power_of_two"]
INSTANT_POLICIES = ["jsq_requests", "vllm_dp", "least_tokens", "round_robin", "power_of_two", "random", "vllm_token_lb",
                    "sglang_total_tokens"]


@st.composite
def online_workloads(draw):
    n = draw(st.integers(1, 40))
    s = draw(st.lists(st.integers(1, 300), min_size=n, max_size=n))
    o = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    # gaps from 0 to far beyond a step (steps last ~5 ms): bursts and idle periods
    gaps = draw(st.lists(st.sampled_from([0.0, 0.001, 0.02, 0.3, 5.0]), min_size=n, max_size=n))
    return Workload(np.array(s), np.array(o), arrival_s=np.cumsum(gaps))


def modes():
    return [("central", p) for p in ONLINE_POLICIES] + [("instant", p) for p in INSTANT_POLICIES]


@pytest.mark.parametrize("dispatch, policy", modes())
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=online_workloads(), workers=st.integers(1, 4), slots=st.integers(1, 4), seed=st.integers(0, 3))
def test_online_invariants(dispatch, policy, w, workers, slots, seed):
    r = simulate(w, workers, slots, policy, seed=seed, entry="arrivals", dispatch=dispatch)
    req, m = r.requests, r.metrics
    arrival = w.arrival_s
    # no request starts before it arrives; every request finishes after exactly o steps
    assert (req.start_s.to_numpy() >= arrival).all()
    assert ((req.finish_step - req.start_step) == req.decode).all()
    # idle jumps are not steps: every counted step has at least one active request,
    # and the clock is the sum of the step times plus the jumped idle time
    assert (r.series.active > 0).all() and len(r.series) == r.steps
    assert r.series.dt.sum() + m["idle_s_run"] == pytest.approx(req.finish_s.max(), rel=1e-9, abs=1e-12)
    assert m["makespan_run_s"] == pytest.approx(req.finish_s.max())
    # latency identities, from the per-request frame and from the workload's own arrival times
    wait = req.start_s.to_numpy() - arrival
    decode_time = (req.finish_s - req.start_s).to_numpy()
    assert np.allclose(req.arrival_s, arrival)
    assert np.allclose(req.e2e_s, wait + decode_time)
    assert np.allclose(req.tpot_s, decode_time / req.decode)
    for name, x in (("queue_wait_s", wait), ("tpot_s", decode_time / w.decode), ("e2e_s", wait + decode_time)):
        for p in (50, 90, 99):
            assert m[f"{name}_p{p}"] == pytest.approx(np.percentile(x, p), rel=1e-9, abs=1e-12)
        assert m[f"{name}_mean"] == pytest.approx(x.mean(), rel=1e-9, abs=1e-12)
    assert m["tpot_s_mean"] == pytest.approx(m["tpot"])
    # whole-run metrics: every token of every request over the whole makespan
    assert m["throughput_run"] * m["makespan_run_s"] == pytest.approx(w.decode.sum())
    assert m["avg_imbalance_run"] == pytest.approx(r.series.imbalance_post.mean())
    idle_energy = workers * r.config["p_idle_w"] * m["idle_s_run"]
    assert m["energy_j_run"] == pytest.approx(r.series.energy_post.sum() + idle_energy)


def test_idle_cluster_jumps_to_next_arrival_without_a_step():
    # G=1, B=1: request 0 runs steps 1..3; the cluster is then empty until t=100
    w = Workload(np.array([10, 20]), np.array([3, 2]), arrival_s=np.array([0.0, 100.0]))
    r = simulate(w, 1, 1, "fcfs", entry="arrivals")
    assert r.steps == 5
    assert r.requests.start_s[1] == 100.0 and r.requests.start_step[1] == 3
    first_done = r.requests.finish_s[0]
    assert r.metrics["idle_s_run"] == pytest.approx(100.0 - first_done)
    assert r.metrics["queue_wait_s_p99"] == pytest.approx(0.0)
    # the second request's e2e is its own decode time only
    assert r.requests.e2e_s[1] == pytest.approx(r.requests.finish_s[1] - 100.0)


def test_first_arrival_after_zero_is_an_idle_jump():
    w = Workload(np.array([10]), np.array([2]), arrival_s=np.array([7.5]))
    r = simulate(w, 2, 2, "jsq_tokens", entry="arrivals")
    assert r.requests.start_s[0] == 7.5 and r.steps == 2 and r.metrics["idle_s_run"] == 7.5


def test_a_request_arriving_mid_step_waits_for_the_step_boundary():
    # request 1 arrives during request 0's first step; with a free slot it starts at that step's end
    w = Workload(np.array([10, 10]), np.array([3, 3]), arrival_s=np.array([0.0, 1e-4]))
    r = simulate(w, 1, 2, "fcfs", entry="arrivals")
    step1_end = r.series.clock.iloc[0]
    assert step1_end > 1e-4
    assert r.requests.start_s[1] == pytest.approx(step1_end) and r.requests.start_step[1] == 1
    assert r.requests.wait_s[1] == pytest.approx(step1_end - 1e-4)


def test_backlog_wait_is_measured_from_pool_entry():
    w = Workload(np.full(30, 5), np.full(30, 2))
    r = simulate(w, 2, 1, "fcfs")  # pool of 8: later requests enter as the pool drains
    req = r.requests
    assert (req.arrival_s >= 0).all() and req.arrival_s.iloc[-1] > 0
    assert np.allclose(req.wait_s, req.start_s - req.arrival_s)
    assert r.metrics["idle_s_run"] == 0.0
    assert r.metrics["energy_j_run"] == pytest.approx(r.series.energy_post.sum())
    # with no idle gaps, the whole-run throughput is tokens over the summed step times
    assert r.metrics["throughput_run"] == pytest.approx(w.decode.sum() / r.series.dt.sum())


@pytest.mark.parametrize("dispatch, policy", [("central", "power_of_two"), ("instant", "vllm_dp"),
                                              ("instant", "random"), ("central", "least_tokens")])
def test_same_seed_same_metrics(dispatch, policy):
    rng = np.random.default_rng(5)
    base = Workload(rng.integers(1, 500, 300), rng.integers(1, 40, 300))
    w = with_arrivals(base, poisson_arrivals(300, 400.0, seed=9))
    a = simulate(w, 4, 8, policy, seed=3, entry="arrivals", dispatch=dispatch)
    b = simulate(w, 4, 8, policy, seed=3, entry="arrivals", dispatch=dispatch)
    assert a.requests.equals(b.requests) and a.series.equals(b.series)
    skip = ("route_", "wall")
    assert {k: v for k, v in a.metrics.items() if not k.startswith(skip)} == \
        {k: v for k, v in b.metrics.items() if not k.startswith(skip)}


# -- trace replay ---------------------------------------------------------------------


@st.composite
def traces(draw):
    n = draw(st.integers(1, 50))
    s = np.array(draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n)))
    o = np.array(draw(st.lists(st.integers(1, 1000), min_size=n, max_size=n)))
    a = np.array(draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=n, max_size=n)))
    return s, o, a


@given(t=traces(), data=st.data(), scale=st.sampled_from([0.05, 0.5, 1.0, 3.0]), seed=st.integers(0, 100))
@settings(max_examples=60, deadline=None)
def test_replay_keeps_timestamp_order_and_scales_time(t, data, scale, seed):
    s, o, a = t
    n = data.draw(st.integers(1, len(s)))
    w = replay_workload(s, o, a, n=n, seed=seed, time_scale=scale, name="x")
    assert len(w) == n and w.name == "x"
    order = np.argsort(a, kind="stable")
    # the replayed rows are a contiguous window of the trace sorted by time, never resampled
    # (rows and times scaled from the window's first timestamp)
    def is_window(k):
        rows = order[k:k + n]
        expect = (a[rows] - a[rows[0]]) * scale
        return (np.array_equal(w.prefill, s[rows]) and np.array_equal(w.decode, o[rows])
                and np.allclose(w.arrival_s, expect, rtol=1e-12, atol=1e-9 * max(1.0, scale)))

    assert any(is_window(k) for k in range(len(s) - n + 1))
    assert w.arrival_s[0] == 0.0
    assert (np.diff(w.arrival_s) >= 0).all()


def test_replay_whole_trace_and_offsets():
    s = np.arange(1, 11)
    a = np.arange(10, dtype=float)[::-1] * 2.0  # reverse time order in the file
    w = replay_workload(s, s, a)
    assert w.prefill.tolist() == list(range(10, 0, -1))  # oldest timestamp first
    assert w.arrival_s.tolist() == [2.0 * k for k in range(10)]
    assert replay_workload(s, s, a, n=4).prefill.tolist() == [10, 9, 8, 7]  # seed None -> offset 0
    offsets = {int(replay_workload(s, s, a, n=4, seed=k).prefill[0]) for k in range(40)}
    assert len(offsets) > 1 and offsets <= set(range(4, 11))  # windows 0..6 start at s = 10..4
    assert replay_workload(s, s, a, n=4, seed=7).prefill.tolist() == replay_workload(s, s, a, n=4, seed=7).prefill.tolist()


def test_time_scale_compresses_replayed_arrivals():
    a = np.array([100.0, 101.0, 103.0, 110.0])
    w = replay_workload([5, 5, 5, 5], [1, 1, 1, 1], a, time_scale=0.1)
    assert np.allclose(w.arrival_s, [0.0, 0.1, 0.3, 1.0])


@pytest.mark.parametrize("kwargs, match", [
    ({"time_scale": 0}, "time_scale"), ({"time_scale": -1.0}, "time_scale"),
    ({"time_scale": float("nan")}, "time_scale"), ({"time_scale": float("inf")}, "time_scale"),
    ({"n": 0}, "requests"), ({"n": 5}, "requests: trace replay takes 1..4 rows"),
])
def test_replay_refuses_bad_options(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        replay_workload([1, 2, 3, 4], [1, 1, 1, 1], [0.0, 1.0, 2.0, 3.0], **kwargs)


def test_replay_refuses_bad_arrivals():
    with pytest.raises(ConfigError, match="arrival_s"):
        replay_workload([1, 2], [1, 1], [0.0])
    with pytest.raises(ConfigError, match="arrival_s: row 1"):
        replay_workload([1, 2], [1, 1], [0.0, float("nan")])


# -- Poisson arrivals -----------------------------------------------------------------


def test_poisson_arrivals_are_seeded_increasing_and_at_the_rate():
    a = poisson_arrivals(20000, 50.0, seed=1)
    assert np.array_equal(a, poisson_arrivals(20000, 50.0, seed=1))
    assert not np.array_equal(a, poisson_arrivals(20000, 50.0, seed=2))
    assert (np.diff(a) > 0).all() and a[0] > 0
    gaps = np.diff(np.concatenate([[0.0], a]))
    # mean gap 1/rate within 5 standard errors (sd of an exponential = its mean)
    assert abs(gaps.mean() - 0.02) < 5 * 0.02 / np.sqrt(len(gaps))
    # exponential gaps: coefficient of variation 1
    assert 0.95 < gaps.std() / gaps.mean() < 1.05


@pytest.mark.parametrize("rate", [0, -3.0, float("nan"), float("inf")])
def test_poisson_refuses_bad_rates(rate):
    with pytest.raises(ConfigError, match="arrival_rate"):
        poisson_arrivals(10, rate, seed=0)


def test_arrivals_mode_needs_arrival_times():
    with pytest.raises(ConfigError, match="entry"):
        simulate(Workload(np.array([1]), np.array([1])), 1, 1, "fcfs", entry="arrivals")


def test_admission_mode_is_a_deprecated_name_of_entry():
    """Issue 14: the simulator's switch is ``entry``; ``admission_mode`` still
    works for one release, with a DeprecationWarning, and gives the same run."""
    rng = np.random.default_rng(4)
    w = with_arrivals(Workload(rng.integers(1, 50, 40), rng.integers(1, 20, 40)), np.sort(rng.random(40)))
    new = simulate(w, 2, 3, "jsq_tokens", entry="arrivals")
    with pytest.warns(DeprecationWarning, match="entry"):
        old = simulate(w, 2, 3, "jsq_tokens", admission_mode="arrivals")
    pd.testing.assert_frame_equal(new.series, old.series)
    assert new.config["entry"] == "arrivals"
