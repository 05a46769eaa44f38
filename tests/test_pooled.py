"""The balanced (pooled) reference (issue 44, ``bfio.sim.pooled``): the goodput
study's router-independent bound. Its step is never longer than any placement's
of the same requests, with one rank it is the cluster's own run, and on small
clusters its goodput is at least every router's (checked, since the argument for
the whole run needs an assumption: the module docstring)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.engine.capacity import capacity
from bfio.ground.errors import ConfigError
from bfio.studies.goodput import SLO, goodput
from bfio.engine.prefill import PrefillModel, allot_chunks
from bfio.sim.pooled import REFERENCES, reference_run, step_vector
from bfio.sim.setup import setup
from bfio.simulator import simulate
from bfio.step_model import StepModel
from bfio.engine.step_time import balanced_dt, lockstep_dt, lockstep_prefill_dt
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KV = PrefillModel(chunk_tokens=512, kv_tokens=20000, preemption="vllm")


def _workload(n=300, rate=30.0, seed=0, prompt=3000, out=200):
    rng = np.random.default_rng(seed)
    return with_arrivals(Workload(rng.integers(10, prompt, n), rng.integers(5, out, n)), poisson_arrivals(n, rate, seed))


@pytest.mark.parametrize("step_model", ["paper", "calibrated"])
@pytest.mark.parametrize("prefill", [None, KV], ids=["decode", "prefill-kv-preemption"])
@pytest.mark.parametrize("reference", ["balanced", "divisible"])
def test_with_one_rank_the_reference_is_the_ordinary_run(step_model, prefill, reference):
    """G = 1: no imbalance exists, so the reference is the FCFS run itself, bit for bit."""
    w = _workload()
    plain = simulate(w, 1, 8, "fcfs", entry="arrivals", prefill=prefill, step_model=step_model)
    ref = simulate(w, 1, 8, "fcfs", entry="arrivals", prefill=prefill, step_model=step_model, reference=reference)
    assert ref.requests.equals(plain.requests) and ref.series.equals(plain.series)
    timing = ("wall_s", "route_s_")
    assert {k: v for k, v in ref.metrics.items() if not k.startswith(timing)} == pytest.approx(
        {k: v for k, v in plain.metrics.items() if not k.startswith(timing)}, nan_ok=True, rel=0, abs=0)
    assert ref.config["reference"] == {"name": reference, "pooled_ranks": 1}


def test_the_pooled_rank_holds_the_clusters_resources():
    w = _workload(50)
    run = reference_run(setup(w, 4, 8, "fcfs", seed=0, constants=None, entry="arrivals", policy_options=None,
                              dispatch="central", admission_mode=None, prefill=KV, step_model=StepModel("calibrated")),
                        "balanced")
    assert (run.workers, run.slots, run.pooled_ranks) == (1, 32, 4)
    assert run.prefill.kv_tokens == 4 * 20000 and run.prefill.chunk_tokens == 4 * 512
    assert run.prefill.request_chunk == 512  # no prompt computed faster than its own rank could
    assert run.step_coef[7:].tolist() == [4.0, 0.0, 1.0]


@pytest.mark.parametrize("kwargs, words", [
    ({"policy": "jsq_tokens"}, "policy 'fcfs'"),
    ({"dispatch": "instant", "policy": "vllm_dp"}, "dispatch 'central'"),
    ({"reference": "pooled"}, "must be one of none, balanced, divisible"),
    ({"step_model": StepModel("calibrated", barrier="independent")}, "lockstep"),
    ({"prefill": PrefillModel(cache_blocks=10)}, "prefix caches"),
])
def test_a_reference_refuses_what_it_does_not_model(kwargs, words):
    w = _workload(20)
    args = {"policy": "fcfs", "dispatch": "central", "reference": "balanced", **kwargs}
    with pytest.raises(ConfigError, match=words) as e:
        simulate(w, 4, 8, args.pop("policy"), entry="arrivals", **args)
    assert str(e.value).startswith("reference:")  # the argument named


def _random_state(rng, G, B, n_req):
    """A random placement of ``n_req`` requests on ``G`` ranks of ``B`` slots, some
    prefilling (``left > 0``, ``take`` their chunk), and the same requests in one pool."""
    prefill = rng.integers(1, 5000, n_req)
    generated = rng.integers(0, 300, n_req)
    left = np.where(rng.random(n_req) < 0.3, np.minimum(rng.integers(1, 3000, n_req), prefill), 0)
    slot_request = np.full((G, B), -1, dtype=np.int64)
    take = np.zeros((G, B), dtype=np.int64)
    slots = rng.permutation(G * B)[:n_req]
    loads = np.zeros(G, dtype=np.int64)
    active = np.zeros(G, dtype=np.int64)
    for i, k in enumerate(slots):
        g, b = divmod(int(k), B)
        slot_request[g, b] = i
        take[g, b] = min(left[i], int(rng.integers(1, 2049))) if left[i] else 0
        loads[g] += prefill[i] + generated[i] - left[i]
        active[g] += 1
    pool = slot_request[slot_request >= 0][None, :]
    pool_take = take[slot_request >= 0][None, :]
    return prefill, generated, left, slot_request, take, loads, active, pool, pool_take


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), G=st.integers(1, 8), fill=st.floats(0.05, 1.0), indivisible=st.booleans())
def test_the_reference_step_is_never_longer_than_any_placements(seed, G, fill, indivisible):
    """The step-wise half of the argument (``bfio.sim.pooled``): for random placements
    of the same requests, the pooled step is at most the lockstep step, calibrated
    (decode and chunked prefill) and the paper's."""
    rng = np.random.default_rng(seed)
    B = 6
    n_req = max(1, int(fill * G * B))
    prefill, generated, left, slot_request, take, loads, active, pool, pool_take = _random_state(rng, G, B, n_req)
    coef = StepModel("calibrated").coefficients().array()
    vec = np.concatenate([coef, [G, 0.0, float(indivisible)]])
    whole = np.array([loads.sum()], dtype=np.int64)
    chunked = lockstep_prefill_dt(coef, slot_request, left, take, loads)
    assert balanced_dt(vec, pool, prefill, generated, left, pool_take, whole, True) <= chunked * (1 + 1e-12)
    # decode only: every seated request decodes, its load s + tau
    dec_loads = np.array([sum(prefill[i] + generated[i] for i in row if i >= 0) for row in slot_request])
    whole_dec = np.array([dec_loads.sum()], dtype=np.int64)
    assert (balanced_dt(vec, pool, prefill, generated, left, pool_take, whole_dec, False)
            <= lockstep_dt(coef, dec_loads, active) * (1 + 1e-12))
    C, t_l, token_s = 4.9e-3, 1.0e-7, 1.0e-4
    paper = np.zeros(10)
    paper[[0, 1, 3, 7, 8, 9]] = [C, t_l, token_s, G, 1.0, float(indivisible)]
    p_max = max(int(take[g].sum()) for g in range(G))
    assert (balanced_dt(paper, pool, prefill, generated, left, pool_take, whole, True)
            <= (C + t_l * loads.max() + token_s * p_max) * (1 + 1e-12))


def test_the_indivisible_step_charges_the_largest_request():
    """One long prompt's chunk holds its rank at the barrier whatever the router: the
    balanced step charges it, the divisible one a 1/G share of it."""
    coef = StepModel("calibrated").coefficients().array()
    G = 16
    prefill, generated, left = np.array([40000]), np.array([0]), np.array([40000])
    pool, take, whole = np.array([[0]]), np.array([[2048]]), np.array([0])
    alone = lockstep_prefill_dt(coef, pool, left, take, whole)  # the chunk alone on one rank
    bal = balanced_dt(np.concatenate([coef, [G, 0, 1]]), pool, prefill, generated, left, take, whole, True)
    div = balanced_dt(np.concatenate([coef, [G, 0, 0]]), pool, prefill, generated, left, take, whole, True)
    assert bal == pytest.approx(alone) and div < 0.2 * alone


def test_one_requests_chunk_is_capped_in_the_pool():
    """``request_chunk_tokens``: the pool's budget is G chunks, one request takes one."""
    slot_request = np.array([[0, 1, 2]])
    left, order = np.array([5000, 100, 3000]), np.array([0, 1, 2])
    take = np.zeros((1, 3), dtype=np.int64)
    assert allot_chunks(slot_request, left, order, 4096, 2048, take) == 4096
    assert take.tolist() == [[2048, 100, 1948]]
    assert allot_chunks(slot_request, left, order, 4096, 4096, take) == 4096  # no cap: oldest first
    assert take.tolist() == [[4096, 0, 0]]
    with pytest.raises(ConfigError, match="request_chunk_tokens"):
        PrefillModel(chunk_tokens=512, request_chunk_tokens=1024)


REGIMES = {
    "paper": (None, None, SLO(0.3, 0.05)),
    "calibrated-kv": (PrefillModel(chunk_tokens=1024, kv_tokens=30000, preemption="vllm"), StepModel("calibrated"),
                      SLO(1.0, 0.05)),
}
ROUTERS = [("fcfs", "central", None), ("jsq_tokens", "central", None), ("vllm_dp", "instant", None),
           ("sglang_total_tokens", "instant", None), ("bfio", "instant", {"horizon": 20})]


@pytest.mark.parametrize("regime", list(REGIMES))
def test_the_balanced_goodput_is_at_least_every_routers(regime):
    """Small clusters (G = 4, B = 8, 400 requests), each seed its own bisection on one
    grid: the balanced reference's goodput at least every router's on every seed (a
    bisection bracket of slack, the resolution of the comparison), and at most the
    divisible reference's (which splits requests too)."""
    prefill_model, step_model, slo = REGIMES[regime]
    rng = np.random.default_rng(3)
    n, G, B = 400, 4, 8
    prompt, decode = rng.integers(10, 4000, n), rng.integers(5, 200, n)
    coefficients = None if step_model is None else step_model.coefficients()
    cap = capacity(prompt, decode, G, B, coefficients=coefficients, prefill_model=prefill_model).requests_per_s
    tol = 0.02

    def best(seed, policy, dispatch, options=None, reference="none"):
        def run_at(rate):
            w = with_arrivals(Workload(prompt, decode), poisson_arrivals(n, rate, seed))
            return [simulate(w, G, B, policy, entry="arrivals", seed=seed, dispatch=dispatch, prefill=prefill_model,
                             step_model=step_model, policy_options=options, reference=reference).metrics]
        return goodput(run_at, cap, slo, rel_tol=tol).goodput_rps

    for seed in (0, 1):
        bound = best(seed, "fcfs", "central", reference="balanced")
        assert bound <= best(seed, "fcfs", "central", reference="divisible") + tol * cap
        for policy, dispatch, options in ROUTERS:
            assert best(seed, policy, dispatch, options) <= bound + tol * cap, (policy, dispatch, seed)


def test_references_are_a_registry():
    assert list(REFERENCES) == ["none", "balanced", "divisible"]
    w = _workload(20)
    run = setup(w, 2, 4, "fcfs", seed=0, constants=None, entry="arrivals", policy_options=None, dispatch="central",
                admission_mode=None, prefill=None, step_model=None)
    assert step_vector(run, True)[7:].tolist() == [2.0, 1.0, 1.0]
