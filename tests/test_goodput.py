"""Goodput by bisection over the arrival rate (issue 44, ``bfio.studies.goodput``)."""

from __future__ import annotations

import numpy as np
import pytest

from bfio.engine.capacity import capacity
from bfio.ground.errors import ConfigError
from bfio.studies.goodput import SLO, GoodputResult, goodput
from bfio.ground.metrics import latency_stats, steady_stats
from bfio.simulator import simulate
from bfio.workloads.workload import Workload


def _fake(threshold: float, calls: list):
    """Runs whose p99 TTFT crosses 2 s exactly at ``threshold`` requests/s."""
    def run_at(rate):
        calls.append(rate)
        return [{"queue_wait_s_p99": 2.0 * rate / threshold, "tpot_s_p99": 0.01}]
    return run_at


def test_bisection_finds_the_threshold_within_the_tolerance():
    calls = []
    r = goodput(_fake(37.0, calls), capacity_rps=100.0, rel_tol=0.005)
    assert r.goodput_rps <= 37.0 < r.goodput_rps + 0.5 + 1e-9
    assert not r.at_capacity and r.ttft_metric == "queue_wait_s_p99"
    assert [p.rate for p in r.probes] == calls and calls[0] == 100.0
    assert all(p.meets == (p.rate <= 37.0) for p in r.probes)
    assert r.share_of_capacity == pytest.approx(r.goodput_rps / 100.0)


def test_the_ends_of_the_search():
    assert goodput(_fake(500.0, []), capacity_rps=100.0).at_capacity  # meets at capacity: that is the goodput
    none = goodput(_fake(1.0, []), capacity_rps=100.0, low_share=0.05)
    assert none.goodput_rps == 0.0 and len(none.probes) == 2
    tpot = goodput(lambda rate: [{"queue_wait_s_p99": 0.0, "tpot_s_p99": rate / 1000}], 1000.0, SLO(tpot_p99_s=0.2))
    assert tpot.goodput_rps == pytest.approx(200.0, abs=10.0)  # the TPOT target binds


def test_the_targets_and_arguments_are_checked():
    with pytest.raises(ConfigError, match="slo.ttft_p99_s"):
        SLO(ttft_p99_s=0)
    with pytest.raises(ConfigError, match="slo.tpot_p99_s"):
        SLO(tpot_p99_s=float("nan"))
    with pytest.raises(ConfigError, match="capacity_rps"):
        goodput(_fake(1.0, []), capacity_rps=float("inf"))
    with pytest.raises(ConfigError, match="none of ttft_s_p99_steady"):
        goodput(lambda rate: [{"tpot_s_p99": 0.1}], 10.0)
    with pytest.raises(ConfigError, match="p99 TPOT"):
        goodput(lambda rate: [{"queue_wait_s_p99": 0.1}], 10.0)


def test_steady_state_and_decode_keys_are_read_first():
    """A run carrying steady-state (second half) and decode-only keys is judged on
    them: here only they break the targets."""
    metrics = {"queue_wait_s_p99": 0.1, "queue_wait_s_p99_steady": 5.0, "tpot_s_p99": 0.01,
               "tpot_decode_s_p99": 0.01}
    r = goodput(lambda rate: [metrics], 10.0)
    assert r.goodput_rps == 0.0 and r.ttft_metric == "queue_wait_s_p99_steady"
    r = goodput(lambda rate: [{"ttft_s_p99": 0.1, "tpot_s_p99": 9.0, "tpot_decode_s_p99": 0.01}], 10.0)
    assert r.at_capacity and r.ttft_metric == "ttft_s_p99"


def test_steady_stats_drop_the_warm_up():
    """Waits that grow with the arrival (an overloaded queue) are larger over the
    second half than over all requests; the warm-up count is the first half."""
    n = 1000
    arrival = np.arange(n, dtype=float)[::-1].copy()  # ids in reverse arrival order
    start = arrival + arrival / 100.0  # the wait grows with the arrival time
    finish = start + 1.0
    decode = np.full(n, 10.0)
    out = steady_stats(arrival, start, finish, decode)
    whole = latency_stats(arrival, start, finish, decode)
    assert out["warmup_requests"] == n // 2 and out["steady_from_s"] == n // 2
    late = arrival >= n // 2
    assert out["queue_wait_s_p99_steady"] == np.percentile((start - arrival)[late], 99)
    assert out["queue_wait_s_p99_steady"] > whole["queue_wait_s_p50"]
    assert out["e2e_s_p99_steady"] > 0 and out["tpot_s_p99_steady"] == pytest.approx(0.1)
    flat = steady_stats(arrival, arrival + 2.0, arrival + 3.0, decode)
    assert flat["queue_wait_s_p99_steady"] == pytest.approx(2.0)
    assert steady_stats(arrival[:1], start[:1], finish[:1], decode[:1], warmup_share=1.0) == {}


def test_goodput_of_simulated_runs_is_a_met_rate_below_the_capacity():
    """On one small cluster the goodput is at most the model's capacity, the runs at
    that rate meet the targets and a rate within the tolerance above it does not."""
    rng = np.random.default_rng(3)
    n, G, B = 600, 4, 8
    prefill, decode = rng.integers(10, 4000, n), rng.integers(5, 200, n)
    cap = capacity(prefill, decode, G, B).requests_per_s
    slo = SLO(ttft_p99_s=0.3, tpot_p99_s=0.05)

    def run_at(rate):
        out = []
        for seed in (0, 1):
            gaps = np.random.default_rng(seed).exponential(1.0 / rate, n)
            w = Workload(prefill=prefill, decode=decode, arrival_s=np.cumsum(gaps))
            out.append(simulate(w, G, B, "jsq_tokens", entry="arrivals", seed=seed).metrics)
        return out

    r = goodput(run_at, cap, slo, rel_tol=0.02)
    assert 0 < r.goodput_rps < cap and not r.at_capacity and r.ttft_metric == "queue_wait_s_p99_steady"
    met = [p for p in r.probes if p.meets]
    failed = [p for p in r.probes if not p.meets]
    assert max(p.rate for p in met) == r.goodput_rps
    assert min(p.rate for p in failed) <= r.goodput_rps + 0.02 * cap + 1e-9
    assert all(p.ttft_p99_s <= slo.ttft_p99_s for p in met)


def test_the_latency_floor_is_a_lone_request_on_an_idle_rank():
    """The floor's TPOT is a lone request's mean step, and its TTFT its prompt's
    chunks: a simulated lone request meets them exactly (paper step) or from above."""
    from bfio.engine.capacity import latency_floor
    from bfio.engine.prefill import PrefillModel
    from bfio.step_model import StepModel

    w = Workload(np.array([3000]), np.array([41]))
    r = simulate(w, 2, 4, "fcfs")
    floor = latency_floor(w.prefill, w.decode, 4)
    assert floor["tpot_floor_s"] == pytest.approx(r.metrics["tpot_s_p99"], rel=1e-9) and floor["ttft_floor_s"] == 0
    model = StepModel(step_model="calibrated")
    r = simulate(w, 2, 4, "fcfs", prefill=PrefillModel(chunk_tokens=1024), step_model=model)
    floor = latency_floor(w.prefill, w.decode, 4, coefficients=model.coefficients(), chunk_tokens=1024)
    assert 0 < floor["ttft_floor_s"] <= r.metrics["ttft_s_p99"] + 1e-12
    assert floor["tpot_floor_s"] <= r.metrics["tpot_decode_s_p99"] * (1 + 1e-9)


def test_ahead_only_beyond_both_brackets():
    """A bisection is ahead of another only when it met the targets at a rate where the
    other failed: thresholds 40 and 37 at a 1% bracket are apart, at a 10% one not."""
    def result(threshold, rel_tol):
        return goodput(_fake(threshold, []), capacity_rps=100.0, rel_tol=rel_tol)

    fine_a, fine_b = result(40.0, 0.01), result(37.0, 0.01)
    assert fine_a.ahead_of(fine_b) and not fine_b.ahead_of(fine_a)
    lo, hi = fine_b.bracket
    assert lo <= 37.0 < hi and hi - lo <= 1.0 + 1e-9 and lo == fine_b.goodput_rps
    coarse_a, coarse_b = result(40.0, 0.1), result(37.0, 0.1)
    assert not coarse_a.ahead_of(coarse_b) and not coarse_b.ahead_of(coarse_a)  # one bracket holds both
    # adjacent brackets on the bisection's common grid: the met rate of one is the failed rate of the other
    near_a, near_b = result(38.0, 0.01), result(37.0, 0.01)
    assert near_a.bracket[0] == near_b.bracket[1] and near_a.ahead_of(near_b)
    assert not result(37.5, 0.01).ahead_of(result(37.2, 0.01))  # the same bracket
    same = result(37.0, 0.01)
    assert not same.ahead_of(fine_b) and not fine_b.ahead_of(same)
    top = goodput(_fake(500.0, []), capacity_rps=100.0)  # met at the capacity: no failed rate
    assert top.bracket == (100.0, float("inf")) and top.ahead_of(fine_a) and not fine_a.ahead_of(top)


def test_probes_round_trip_through_a_study_row():
    r = goodput(_fake(37.0, []), capacity_rps=100.0, rel_tol=0.01)
    back = GoodputResult.of_probes(r.probes_json(), r.capacity_rps, r.ttft_metric)
    assert back == r
    top = goodput(_fake(500.0, []), capacity_rps=100.0)
    assert GoodputResult.of_probes(top.probes_json(), 100.0, top.ttft_metric) == top
    none = goodput(_fake(1.0, []), capacity_rps=100.0)
    assert GoodputResult.of_probes(none.probes_json(), 100.0, none.ttft_metric) == none
