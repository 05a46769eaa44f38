"""Fast-forward of the step loop (issue 14): running the steps between two routing
calls that can change anything in one kernel call gives, bit for bit, what the
plain step loop (one step, then a routing call) gives: every metric, step count,
per-step series, per-request row and recorded load."""

import math

import numpy as np
import pandas as pd
import pytest

from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals

#: wall-clock measurements, the only fields that may differ between two runs
TIMING = {"wall_s", "route_s_p50", "route_s_p99", "route_s_total", "solver_s_p50", "solver_s_p99", "solver_s_max",
          "solver_s_total"}


def _workload(n, seed, arrivals=None):
    rng = np.random.default_rng(seed)
    s = rng.integers(1, 400, n).astype(np.int64)
    o = rng.integers(1, 60, n).astype(np.int64)
    return Workload(s, o, arrivals)


def _bursty_arrivals(n, seed):
    """Bursts of simultaneous arrivals separated by long and short gaps: idle
    cluster, nearly empty steps and busy stretches in one run."""
    rng = np.random.default_rng(seed)
    gaps = np.where(rng.random(n) < 0.3, rng.exponential(2.0, n), np.where(rng.random(n) < 0.5, 0.0, 0.01))
    return np.cumsum(gaps)


def _same(a, b):
    assert a.steps == b.steps and a.window_steps == b.window_steps
    ma = {k: v for k, v in a.summary().items() if k not in TIMING}
    mb = {k: v for k, v in b.summary().items() if k not in TIMING}
    assert ma.keys() == mb.keys()
    for k in ma:
        va, vb = ma[k], mb[k]
        if isinstance(va, float) and math.isnan(va):
            assert isinstance(vb, float) and math.isnan(vb), k
        else:
            assert va == vb, (k, va, vb)
    pd.testing.assert_frame_equal(a.series, b.series, check_exact=True)
    pd.testing.assert_frame_equal(a.requests, b.requests, check_exact=True)
    if a.loads is None:
        assert b.loads is None
    else:
        np.testing.assert_array_equal(a.loads, b.loads)


def _both(workload, G, B, policy, **kw):
    fast = simulate(workload, G, B, policy, show_progress=False, fast_forward=True, **kw)
    plain = simulate(workload, G, B, policy, show_progress=False, fast_forward=False, **kw)
    _same(fast, plain)
    return fast


CENTRAL = ["fcfs", "jsq_tokens", "jsq_requests", "random", "power_of_two", "round_robin"]


@pytest.mark.parametrize("policy", CENTRAL)
def test_bursty_arrivals_central(policy):
    w = _workload(300, 1, _bursty_arrivals(300, 2))
    r = _both(w, 3, 4, policy, entry="arrivals", seed=5, record_loads=True)
    assert r.metrics["idle_s_run"] > 0  # the cluster went idle between bursts


@pytest.mark.parametrize("policy", ["vllm_dp", "least_tokens", "jsq_requests", "random"])
def test_bursty_arrivals_instant(policy):
    w = _workload(300, 3, _bursty_arrivals(300, 4))
    _both(w, 3, 4, policy, entry="arrivals", dispatch="instant", seed=7, record_loads=True)


@pytest.mark.parametrize("rate", [0.5, 20.0, 500.0])
def test_poisson_arrivals(rate):
    w = _workload(250, 5, poisson_arrivals(250, rate, 6))
    _both(w, 4, 3, "jsq_tokens", entry="arrivals")
    _both(w, 4, 3, "vllm_dp", entry="arrivals", dispatch="instant")


@pytest.mark.parametrize("policy", ["fcfs", "jsq_tokens", "random"])
def test_backlog(policy):
    # the drain after the last request entered the pool is fast-forwarded too
    _both(_workload(400, 8), 4, 5, policy, seed=3, record_loads=True)


def test_bfio_arrivals():
    w = _workload(150, 9, _bursty_arrivals(150, 10))
    _both(w, 3, 4, "bfio", entry="arrivals", policy_options={"horizon": 3})


def test_series_growth_inside_a_fast_forward():
    # one request decoding for many steps: a single kernel call fills and grows the series buffer
    w = Workload(np.array([5, 7], dtype=np.int64), np.array([5000, 3000], dtype=np.int64), np.array([0.0, 100.0]))
    r = _both(w, 2, 1, "fcfs", entry="arrivals", record_loads=True)
    assert r.steps > 5000 and r.loads.shape == (r.steps, 2)
