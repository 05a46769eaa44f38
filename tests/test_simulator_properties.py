"""Invariants of the step loop on random small workloads, for every policy
(``../shared/spec/semantics.md``, "The step loop")."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bfio.policies import registered, supporting
from bfio.simulator import simulate
from bfio.workloads.workload import Workload

#: baselines that admit from the pool oldest first (a property of these policies, checked below)
FIFO = ("fcfs", "jsq_tokens", "jsq_requests", "round_robin", "random", "power_of_two", "vllm_dp", "least_tokens",
        "vllm_token_lb", "sglang_total_requests", "sglang_total_tokens")


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 60))
    s = draw(st.lists(st.integers(1, 500), min_size=n, max_size=n))
    o = draw(st.lists(st.integers(1, 25), min_size=n, max_size=n))
    return Workload(np.array(s), np.array(o))


def occupancy(result, workers):
    """Requests resident on each worker at each step, rebuilt from per-request
    start/finish steps: request i is active in steps start_step+1 .. finish_step."""
    req = result.requests
    occ = np.zeros((result.steps + 1, workers), dtype=int)
    for g, a, b in zip(req.worker, req.start_step, req.finish_step):
        occ[a + 1 : b + 1, g] += 1
    return occ


def policies_under_test():
    """Every registered policy with central dispatch (the default of these runs;
    instant-only policies such as atom_least_requests: tests/test_instant_dispatch.py)."""
    return [p for p in registered() if p in supporting("central")]


@pytest.mark.parametrize("policy", policies_under_test())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=workloads(), workers=st.integers(1, 5), slots=st.integers(1, 6), seed=st.integers(0, 3))
def test_step_loop_invariants(policy, w, workers, slots, seed):
    r = simulate(w, workers, slots, policy, seed=seed, record_loads=True)
    req = r.requests
    # every request ran on exactly one worker and finished exactly once, after exactly o steps
    assert req.worker.between(0, workers - 1).all()
    assert req.finish_s.notna().all() and req.start_s.notna().all()
    assert ((req.finish_step - req.start_step) == req.decode).all()
    assert (req.finish_s > req.start_s).all()
    # no worker ever exceeds B slots
    assert occupancy(r, workers).max() <= slots
    # total work: sum_i sum_j w_i^(j) equals sum_k sum_g L_g(k) over all steps
    assert r.loads.sum() == w.total_work == r.series.sum_load_pre.sum()
    assert r.metrics["work_total"] == w.total_work
    # the gating loads are exactly the resident requests' s_i + tau_i
    k = r.steps // 2 + 1
    active = req[(req.start_step < k) & (req.finish_step >= k)]
    expect = np.zeros(workers, dtype=np.int64)
    np.add.at(expect, active.worker.to_numpy(), (active.prefill + (k - 1 - active.start_step)).to_numpy())
    assert np.array_equal(r.loads[k - 1], expect)
    # barrier time: clock is the sum of dt, each dt = C + t_l max L
    assert np.allclose(r.series.dt, r.config["overhead_s"] + r.config["token_latency_s"] * r.series.max_load_pre)
    # the pool never skips a request: admission order respects index order for FIFO baselines
    if policy in FIFO:
        assert (np.diff(req.start_step.to_numpy()) >= 0).all()


@pytest.mark.parametrize("policy", policies_under_test())
@given(w=workloads(), seed=st.integers(0, 5))
@settings(max_examples=10, deadline=None)
def test_identical_config_and_seed_give_identical_results(policy, w, seed):
    a = simulate(w, 3, 4, policy, seed=seed)
    b = simulate(w, 3, 4, policy, seed=seed)
    assert a.requests.equals(b.requests)
    assert a.series.equals(b.series)
    timing = ("route_", "solver_s", "wall")
    ma = {k: v for k, v in a.metrics.items() if not k.startswith(timing)}
    mb = {k: v for k, v in b.metrics.items() if not k.startswith(timing)}
    assert ma.keys() == mb.keys()
    for k in ma:
        assert ma[k] == mb[k] or (np.isnan(ma[k]) and np.isnan(mb[k])), k


@given(w=workloads())
@settings(max_examples=25, deadline=None)
def test_energy_decomposition_holds_on_every_run(w):
    """Theorem 4: E = t_l (P_max W + P_idle ImbTot) + correction, 0 <= correction <= t_l D_gamma ImbTot."""
    m = simulate(w, 3, 2, "fcfs").metrics
    tol = 1e-9 * max(1.0, m["energy_sync_j"])
    assert -tol <= m["energy_correction_j"] <= m["energy_correction_bound_j"] + tol
