"""The model's capacity and the step time lost to imbalance (issue 44, ``bfio.engine.capacity``, ``bfio.ground.imbalance_share``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from bfio.engine.capacity import capacity, largest_request_loads, request_work
from bfio.ground.imbalance_share import IMBALANCE_FLOOR, IMBALANCE_SHARE, imbalance_share, imbalance_share_of_runs, with_imbalance_share
from bfio.ground.constants import PaperConstants
from bfio.ground.errors import ConfigError
from bfio.engine.prefill import PrefillModel
from bfio.simulator import simulate
from bfio.workloads.workload import Workload


def test_request_work_sums_the_gating_loads():
    # prompt 5, decode 3: loads 5, 6, 7 at the three steps it decodes
    assert request_work(np.array([5]), np.array([3]))[0] == 18.0
    assert request_work(np.array([7]), np.array([1]))[0] == 7.0


def test_identical_requests_run_at_the_capacity():
    """When every request is the same, every router is balanced and a long backlog
    run's rate is the capacity."""
    n, s, o, G, B = 4000, 100, 10, 2, 4
    w = Workload(prefill=np.full(n, s), decode=np.full(n, o))
    cap = capacity(w.prefill, w.decode, G, B)
    r = simulate(w, G, B, "fcfs")
    rate = n / r.metrics["makespan_s"]
    assert rate == pytest.approx(cap.requests_per_s, rel=1e-9)  # 500 full rounds: no partial one
    assert cap.tokens_per_s == pytest.approx(cap.requests_per_s * o)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.integers(1, 6),
       st.sampled_from(["fcfs", "jsq_tokens", "round_robin", "bfio"]))
def test_no_router_beats_the_capacity(seed, workers, slots, policy):
    """Sum over steps of ``C + t_l max L`` is at least ``steps C + t_l work / G`` and a
    run takes at least ``sum o / (G B)`` steps, so no backlog run of any router
    finishes its requests faster than the capacity of its own draw."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    w = Workload(prefill=rng.integers(1, 3000, n), decode=rng.integers(1, 200, n))
    r = simulate(w, workers, slots, policy, seed=seed)
    cap = capacity(w.prefill, w.decode, workers, slots)
    assert n / r.metrics["makespan_s"] <= cap.requests_per_s * (1 + 1e-9)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["fcfs", "jsq_tokens", "bfio"]))
def test_imbalance_share_is_the_step_time_above_the_balanced_step(seed, policy):
    """``share x sum dt`` is what the run's steps took beyond ``steps C + t_l work / G``."""
    rng = np.random.default_rng(seed)
    n, G, B = 300, 4, 8
    w = Workload(prefill=rng.integers(1, 5000, n), decode=rng.integers(1, 300, n))
    r = simulate(w, G, B, policy, seed=seed)
    c = PaperConstants()
    share = imbalance_share(r.series, G)
    busy = float(r.series["dt"].sum())
    balanced = r.steps * c.overhead(B) + c.token_latency_s * r.metrics["work_total"] / G
    assert 0.0 <= share < 1.0
    assert share * busy == pytest.approx(busy - balanced, rel=1e-9, abs=1e-12)
    row = pd.DataFrame([{**r.metrics, "workers": G}])
    assert imbalance_share_of_runs(row).iloc[0] == pytest.approx(share, rel=1e-12)


def test_a_balanced_run_loses_nothing_and_errors_name_the_argument():
    assert imbalance_share({"dt": [0.1, 0.2], "imbalance_pre": [0, 0]}, 4) == 0.0
    assert np.isnan(imbalance_share({"dt": [], "imbalance_pre": []}, 4))
    with pytest.raises(ConfigError, match="workers"):
        capacity([1], [1], 0, 4)
    with pytest.raises(ConfigError, match="decode"):
        capacity([1, 2], [0, 3], 2, 4)
    with pytest.raises(ConfigError, match="one length"):
        capacity([1, 2], [3], 2, 4)


def test_online_loads_can_be_fractions_of_the_capacity():
    """``online.load_basis: capacity`` (issue 44): a load's Poisson rate is that share
    of the model's capacity, and the runs say so; it is the default, and
    ``saturation`` keeps the runs of before (no basis columns)."""
    from bfio.studies.online import online_runs

    study = {"loads": [0.5, 1.05], "central": ["fcfs"], "instant": []}
    setting = {"trace": "burstgpt", "requests": 10, "workers": 2}
    runs, extra = online_runs(setting, "poisson", 200.0, {**study, "load_basis": "capacity"}, [0], 8,
                              capacity_rps=150.0)
    assert [r.arrival.rate for r in runs] == [75.0, 157.5]
    assert all(e["load_basis"] == "capacity" and e["capacity_rps"] == 150.0 for e in extra)
    assert [e["saturation_rps"] for e in extra] == [200.0, 200.0]
    runs, extra = online_runs(setting, "poisson", 200.0, {**study, "load_basis": "saturation"}, [0], 8)
    assert [r.arrival.rate for r in runs] == [100.0, 210.0] and "load_basis" not in extra[0]
    with pytest.raises(ConfigError, match="load_basis"):
        online_runs(setting, "poisson", 200.0, study, [0], 8)  # the default basis needs the capacity


def _brute_largest(first, last, base, steps):
    out = np.full(steps, -1.0)
    for k in range(1, steps + 1):
        live = [base[i] + k for i in range(len(first)) if first[i] <= k <= last[i]]
        if live:
            out[k - 1] = max(live)
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 20), st.integers(-30, 3000)), min_size=1, max_size=25),
       st.integers(1, 40))
def test_largest_request_loads_is_the_per_step_maximum(rows, steps):
    first = np.array([r[0] for r in rows], dtype=np.int64)
    last = first + np.array([r[1] for r in rows], dtype=np.int64)
    base = np.array([r[2] for r in rows], dtype=np.float64)
    order = np.argsort(-base, kind="stable").astype(np.int64)
    got = largest_request_loads(first, last, base, order, steps)
    np.testing.assert_array_equal(got, _brute_largest(first, last, base, steps))


@pytest.mark.parametrize("prefill", [None, PrefillModel(chunk_tokens=64)])
def test_a_lone_request_is_all_floor(prefill):
    """One request on two workers: the whole imbalance is its indivisibility (with
    the prefill model, its prefill steps are left out of the floor)."""
    r = simulate(Workload(np.array([300]), np.array([40])), 2, 4, "fcfs", prefill=prefill)
    floor, total = r.metrics["imbalance_floor_total"], r.metrics["imbalance_total"]
    if prefill is None:
        assert floor == total
    else:
        assert 0 < floor < total


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 4), st.integers(1, 4),
       st.sampled_from(["fcfs", "jsq_tokens", "bfio", "round_robin"]), st.booleans())
def test_no_router_loses_less_than_the_floor(seed, workers, slots, policy, with_prefill):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    w = Workload(rng.integers(1, 500, n), rng.integers(1, 60, n))
    r = simulate(w, workers, slots, policy, prefill=PrefillModel(chunk_tokens=128) if with_prefill else None)
    assert 0 <= r.metrics["imbalance_floor_total"] <= r.metrics["imbalance_total"]
    runs = pd.DataFrame([{**r.metrics, "workers": workers}])
    shares = with_imbalance_share(runs)
    assert shares[IMBALANCE_FLOOR].iloc[0] <= shares[IMBALANCE_SHARE].iloc[0] + 1e-12


def test_one_request_per_worker_is_all_floor():
    """With one slot a worker and no more requests than workers, every worker
    holds one request: the most loaded holds the largest, so the floor is the
    whole imbalance."""
    w = Workload(np.array([5000, 10, 10, 10]), np.array([200, 300, 300, 300]))
    r = simulate(w, 4, 1, "fcfs")
    assert r.metrics["imbalance_floor_total"] == r.metrics["imbalance_total"] > 0


def test_the_share_reads_each_runs_own_cost_a_kv_token():
    """A calibrated lockstep run's share counts its KV term's cost a token (a_kv),
    a paper run's t_l; independent ranks wait at no barrier (NaN)."""
    from bfio.step_model import StepModel

    rng = np.random.default_rng(5)
    w = Workload(rng.integers(1, 2000, 60), rng.integers(1, 80, 60))
    paper = simulate(w, 3, 4, "fcfs")
    calibrated = StepModel(step_model="calibrated")
    lock = simulate(w, 3, 4, "fcfs", step_model=calibrated)
    free = simulate(w, 3, 4, "fcfs", step_model=StepModel(step_model="calibrated", barrier="independent"))
    assert paper.metrics["kv_token_s"] == PaperConstants().token_latency_s
    assert lock.metrics["kv_token_s"] == calibrated.coefficients().a_kv
    runs = pd.DataFrame([{**r.metrics, "workers": 3} for r in (paper, lock, free)])
    share = with_imbalance_share(runs)[IMBALANCE_SHARE]
    expected = [r.metrics["kv_token_s"] * r.metrics["imbalance_total"] / 3 / r.metrics["makespan_s"]
                for r in (paper, lock)]
    assert share.iloc[:2].tolist() == pytest.approx(expected) and np.isnan(share.iloc[2])
