"""Instant dispatch (``docs/online.md``): requests are bound to one worker's FIFO
queue on arrival and never moved; each worker admits from the head of its own
queue; the production dispatch rules on hand-checkable states."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bfio.ground.errors import ConfigError, PolicyError
from bfio.policies import DispatchState, Policy, available, make_policy
from bfio.simulator import simulate
from bfio.workloads.workload import Workload

INSTANT = ["jsq_requests", "vllm_dp", "least_tokens", "round_robin", "power_of_two", "random", "vllm_token_lb",
           "sglang_total_requests", "sglang_total_tokens"]


@st.composite
def workloads(draw, arrivals=True):
    n = draw(st.integers(1, 50))
    s = draw(st.lists(st.integers(1, 400), min_size=n, max_size=n))
    o = draw(st.lists(st.integers(1, 25), min_size=n, max_size=n))
    arr = None
    if arrivals:
        gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.002, 0.03, 1.0]), min_size=n, max_size=n))
        arr = np.cumsum(gaps)
    return Workload(np.array(s), np.array(o), arrival_s=arr)


def occupancy_after_routing(req, steps, workers):
    """occ[k, g]: requests resident on g right after the routing at boundary k
    (request i is resident at boundaries start_step .. finish_step - 1)."""
    occ = np.zeros((steps + 1, workers), dtype=int)
    for g, a, b in zip(req.worker, req.start_step, req.finish_step):
        occ[a:b, g] += 1
    return occ


@pytest.mark.parametrize("policy", INSTANT)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), workers=st.integers(1, 4), slots=st.integers(1, 4), seed=st.integers(0, 3),
       online=st.booleans(), k=st.sampled_from([0, 0, 1, 5]))
def test_queues_are_sticky_fifo_and_work_conserving(policy, data, workers, slots, seed, online, k):
    # k: the router routes on load reports every k steps (report_interval; 0 = exact state)
    w = data.draw(workloads(arrivals=online))
    r = simulate(w, workers, slots, policy, seed=seed, dispatch="instant",
                 entry="arrivals" if online else "backlog", policy_options={"report_interval": k})
    req = r.requests
    # bound at arrival, ran there: a queued request is never moved to another queue
    assert req.queue_worker.between(0, workers - 1).all()
    assert (req.worker == req.queue_worker).all()
    assert (req.start_s >= req.arrival_s).all()
    occ = occupancy_after_routing(req, r.steps, workers)
    assert occ.max() <= slots
    for g in range(workers):
        mine = req[req.queue_worker == g]  # dispatch order = arrival order = index order
        # FIFO: a worker starts its queue in the order it was filled
        assert (np.diff(mine.start_step.to_numpy()) >= 0).all()
        # work conserving per worker: whenever one of its requests still waited after a
        # routing call, the worker had no free slot
        for enter, begin in zip(mine.enter_step, mine.start_step):
            if begin > enter:
                assert (occ[enter:begin, g] == slots).all()
    # latency identities hold in instant mode as well
    assert np.allclose(req.e2e_s, req.wait_s + (req.finish_s - req.start_s))


def test_instant_binding_is_final_even_when_another_worker_frees_first():
    # G=2, B=1, round robin: r0 (long) -> w0, r1 (short) -> w1, r2 -> w0 queued behind r0
    w = Workload(np.array([10, 10, 10]), np.array([10, 1, 1]), arrival_s=np.zeros(3))
    inst = simulate(w, 2, 1, "round_robin", entry="arrivals", dispatch="instant").requests
    assert inst.queue_worker.tolist() == [0, 1, 0] and inst.worker.tolist() == [0, 1, 0]
    assert inst.start_step.tolist() == [0, 0, 10]  # waits for r0 although w1 idles from step 1
    cent = simulate(w, 2, 1, "round_robin", entry="arrivals", dispatch="central").requests
    assert cent.worker.tolist() == [0, 1, 1] and cent.start_step[2] == 1
    assert (cent.queue_worker == -1).all()


def test_backlog_instant_binds_requests_when_they_enter_the_pool():
    w = Workload(np.full(40, 7), np.full(40, 3))
    r = simulate(w, 2, 2, "vllm_dp", dispatch="instant")  # pool of 4G = 8
    req = r.requests
    assert (req.worker == req.queue_worker).all()
    assert req.enter_step.iloc[0] == 0 and req.enter_step.iloc[-1] > 0
    # never more than 4G requests revealed and waiting at a routing call
    for k in range(r.steps + 1):
        waiting = ((req.enter_step <= k) & (req.start_step > k)).sum()
        assert waiting <= 8


# -- the rules on hand-checkable states -------------------------------------------------


def dstate(waiting=None, running=None, loads=None, waiting_tokens=None, prefill=(1,), slots=8):
    G = len(next(x for x in (waiting, running, loads, waiting_tokens) if x is not None))
    z = lambda x: np.asarray(x if x is not None else [0] * G, dtype=np.int64)  # noqa: E731
    s = np.asarray(prefill, dtype=np.int64)
    return DispatchState(step=0, clock=0.0, workers=G, slots=slots, waiting=z(waiting),
                         waiting_tokens=z(waiting_tokens), running=z(running), loads=z(loads),
                         free=slots - z(running), workload=Workload(s, np.ones_like(s))), np.arange(len(s))


def test_vllm_dp_scores_four_waiting_plus_running():
    st_, reqs = dstate(waiting=[1, 0, 0], running=[0, 3, 5], prefill=[9, 9, 9])
    # scores 4, 3, 5 -> w1 (now 7); 4, 7, 5 -> w0 (now 8); 8, 7, 5 -> w2
    assert make_policy("vllm_dp").dispatch(st_, reqs).tolist() == [1, 0, 2]
    st_, reqs = dstate(waiting=[0, 0], running=[2, 2], prefill=[1, 1, 1])
    # ties -> lowest index; each binding adds 4 to the chosen score: 2,2 -> 0; 6,2 -> 1; 6,6 -> 0
    assert make_policy("vllm_dp").dispatch(st_, reqs).tolist() == [0, 1, 0]
    # a worker with 5 running beats one with 2 waiting (5 < 8): waiting weighs 4x
    st_, reqs = dstate(waiting=[2, 0], running=[0, 5])
    assert make_policy("vllm_dp").dispatch(st_, reqs).tolist() == [1]


def test_jsq_requests_instant_counts_waiting_plus_running():
    st_, reqs = dstate(waiting=[2, 0], running=[0, 1], loads=[0, 10**9], prefill=[5, 5, 5])
    # keys 2, 1 -> w1; 2, 2 -> w0 (tie, lowest index); 3, 2 -> w1
    assert make_policy("jsq_requests").dispatch(st_, reqs).tolist() == [1, 0, 1]


def test_least_tokens_counts_resident_and_queued_prompt_tokens():
    st_, reqs = dstate(loads=[100, 50, 80], waiting_tokens=[0, 40, 0], running=[9, 0, 9], prefill=[30, 5, 10])
    # keys 100, 90, 80 -> w2 (+30 = 110); 100, 90, 110 -> w1 (+5 = 95); 100, 95, 110 -> w1
    assert make_policy("least_tokens").dispatch(st_, reqs).tolist() == [2, 1, 1]


def test_round_robin_instant_cycles_over_all_workers_and_persists():
    p = make_policy("round_robin")
    p.reset(3, 1)
    st_, _ = dstate(running=[1, 1, 1], slots=1)  # no free slot anywhere: instant dispatch still binds
    assert p.dispatch(st_, np.arange(2)).tolist() == [0, 1]
    assert p.dispatch(st_, np.arange(2)).tolist() == [2, 0]


def test_power_of_two_instant_prefers_fewer_tokens_and_is_seeded():
    st_, reqs = dstate(loads=[0, 10**9], prefill=[1] * 20)
    assert make_policy("power_of_two", seed=1).dispatch(st_, reqs).tolist() == [0] * 20
    st_, reqs = dstate(loads=[0] * 6, prefill=[1] * 50)
    a = make_policy("power_of_two", seed=4).dispatch(st_, reqs)
    assert a.tolist() == make_policy("power_of_two", seed=4).dispatch(st_, reqs).tolist()
    assert set(a.tolist()) <= set(range(6)) and len(set(a.tolist())) > 1


def test_random_instant_is_seeded_and_in_range():
    st_, reqs = dstate(running=[0] * 5, prefill=[1] * 40)
    a = make_policy("random", seed=2).dispatch(st_, reqs)
    assert a.tolist() == make_policy("random", seed=2).dispatch(st_, reqs).tolist()
    assert a.min() >= 0 and a.max() <= 4


@given(w=workloads(arrivals=False), workers=st.integers(1, 4), slots=st.integers(1, 4))
@settings(max_examples=20, deadline=None)
def test_central_mode_of_the_instant_rules_equals_their_central_twins(w, workers, slots):
    # with one shared pool nothing is queued per worker: vllm_dp is jsq_requests, least_tokens is jsq_tokens
    for name, twin in (("vllm_dp", "jsq_requests"), ("least_tokens", "jsq_tokens")):
        a = simulate(w, workers, slots, name).requests
        b = simulate(w, workers, slots, twin).requests
        assert a.equals(b)


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [p for p in ["fcfs", "jsq_tokens"] if p in available()])  # bfio: issue 30
def test_policies_without_instant_dispatch_are_refused_by_name(policy):
    w = Workload(np.array([5, 5]), np.array([2, 2]))
    with pytest.raises(ConfigError, match=f"dispatch: policy '{policy}' does not support dispatch='instant'"):
        simulate(w, 2, 2, policy, dispatch="instant")


def test_unknown_dispatch_is_refused():
    with pytest.raises(ConfigError, match="dispatch: must be 'central' or 'instant'"):
        simulate(Workload(np.array([5]), np.array([2])), 1, 1, "fcfs", dispatch="pooled")


class BadDispatch(Policy):
    name = "bad_dispatch"
    dispatch_modes = ("central", "instant")

    def __init__(self, out):
        super().__init__()
        self.out = out

    def route(self, state):  # pragma: no cover - not used with instant dispatch
        raise AssertionError

    def dispatch(self, state, requests):
        return self.out(state, requests)


@pytest.mark.parametrize("out, match", [
    (lambda s, r: np.full(r.shape[0], -1), "outside 0..1 .*cannot defer"),
    (lambda s, r: np.full(r.shape[0], 2), "outside 0..1"),
    (lambda s, r: np.zeros(r.shape[0] + 1, dtype=int), "shape"),
    (lambda s, r: np.zeros(r.shape[0]), "dtype"),
])
def test_simulator_refuses_invalid_dispatches(out, match):
    with pytest.raises(PolicyError, match=match):
        simulate(Workload(np.array([5, 5]), np.array([2, 2])), 2, 1, BadDispatch(out), dispatch="instant")


@pytest.mark.parametrize("policy", INSTANT)
def test_instant_dispatch_is_deterministic(policy):
    rng = np.random.default_rng(11)
    w = Workload(rng.integers(1, 900, 400), rng.integers(1, 60, 400), arrival_s=np.cumsum(rng.exponential(0.002, 400)))
    a = simulate(w, 5, 6, policy, seed=8, entry="arrivals", dispatch="instant")
    b = simulate(w, 5, 6, policy, seed=8, entry="arrivals", dispatch="instant")
    assert a.requests.equals(b.requests) and a.series.equals(b.series)
