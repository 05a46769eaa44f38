"""The predicted loads kept across routing calls (bfio.lookahead.tracked_loads, issue 27)
equal the gather of bfio.lookahead.profiles.predicted_loads at every call, and the
radix waiting order equals the comparison sort it replaced."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bfio.policies.bfio as bfio_policy
from bfio.lookahead.profiles import predicted_loads
from bfio.simulator import simulate
from bfio.solvers.touched import ascending_order, waiting_order
from bfio.lookahead.tracked_loads import TrackedLoads, complete
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals


@pytest.fixture
def checked(monkeypatch):
    """Wrap TrackedLoads.loads: every call compared with the gather; returns the tallies."""
    tally = {"calls": 0, "mismatches": 0, "trackers": []}
    original = TrackedLoads.loads

    def loads(self, state, estimate):
        out = original(self, state, estimate)
        ref = predicted_loads(state.slot_request, state.workload.prefill, state.generated, estimate, self.horizon)
        tally["calls"] += 1
        tally["mismatches"] += int(not np.array_equal(out, ref))
        if self not in tally["trackers"]:
            tally["trackers"].append(self)
        return out

    monkeypatch.setattr(TrackedLoads, "loads", loads)
    return tally


OPTIONS = [
    {"horizon": 20},
    {"horizon": 20, "placement": "heap"},
    {"horizon": 100, "discount": 1.0, "admission": "free"},
    {"horizon": 5, "admission": "aging:7"},
    {"predictor": "noisy", "noise_low": 0.6, "noise_high": 0.6, "remaining": "paper"},
    {"predictor": "none"},
    {"predictor": "lognormal", "noise_sigma": 1.0, "remaining": "paper"},
]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(1, 400), G=st.integers(1, 6), B=st.integers(1, 5),
       option=st.sampled_from(range(len(OPTIONS))), arrivals=st.booleans())
def test_tracked_equals_gather_at_every_call(checked, seed, n, G, B, option, arrivals):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(1, 300, n), rng.integers(1, 90, n))
    entry = "backlog"
    if arrivals:
        w = with_arrivals(w, poisson_arrivals(n, 30.0, seed))
        entry = "arrivals"
    before = checked["calls"]
    simulate(w, G, B, "bfio", seed=seed, policy_options=OPTIONS[option], entry=entry, show_progress=False)
    assert checked["calls"] > before
    assert checked["mismatches"] == 0
    # in a simulation every admission is the policy's own: the kept state never needs the slots
    assert all(t.rebuilds == 0 for t in checked["trackers"])


def test_long_estimates_pass_through_the_heap_and_a_full_bucket_grows(checked):
    """Ends beyond the ring (heap), many ends in one step (a bucket past its capacity)."""
    n = 3000
    prefill = np.arange(1, n + 1) % 97 + 1
    decode = np.where(np.arange(n) % 3 == 0, 500, 70)  # a third far beyond the ring's 64 steps
    w = with_arrivals(Workload(prefill, decode), np.zeros(n))  # all waiting at once: 800 admitted at step 0
    simulate(w, 2, 400, "bfio", policy_options={"horizon": 20}, entry="arrivals", show_progress=False)
    assert checked["calls"] > 0 and checked["mismatches"] == 0
    (tracker,) = checked["trackers"]
    assert tracker.capacity > max(64, 4 * 2)  # 800 requests admitted at once end together: grown


def test_a_state_it_did_not_produce_is_rebuilt_from_the_slots():
    """Routing calls on unrelated states (a user driving the policy by hand) stay exact."""
    from bfio.policies.base import RoutingState

    rng = np.random.default_rng(3)
    policy = bfio_policy.BFIO(horizon=10)
    policy.reset(3, 4)
    n = 40
    w = Workload(rng.integers(1, 50, n), rng.integers(1, 30, n))
    est = policy._call_view.decode_estimate(w)
    for step in (5, 9, 2):  # not increasing: a fresh run each time
        slot_request = np.full((3, 4), -1, dtype=np.int64)
        ids = rng.choice(n, 7, replace=False)
        slot_request.flat[rng.choice(12, 7, replace=False)] = ids
        generated = np.zeros(n, dtype=np.int64)
        generated[ids] = rng.integers(0, 25, 7)
        loads = np.array([(w.prefill[r[r >= 0]] + generated[r[r >= 0]]).sum() for r in slot_request])
        active = (slot_request >= 0).sum(axis=1)
        pool = np.setdiff1d(np.arange(n), ids)[:5]
        state = RoutingState(step=step, clock=0.0, workers=3, slots=4, pool=pool, free=4 - active, loads=loads,
                             active=active, workload=w, slot_request=slot_request, generated=generated,
                             enter_step=np.zeros(n, dtype=np.int64))
        tracker = policy._central._tracked(state, est, 10)
        got = tracker.loads(state, est)
        assert np.array_equal(got, predicted_loads(slot_request, w.prefill, generated, est, 10))
    assert tracker.rebuilds >= 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 2**30), max_size=300), st.booleans())
def test_radix_waiting_order_is_the_comparison_sort(sizes, small):
    s = np.asarray([x % 7 + 1 if small else x for x in sizes], dtype=np.int64)
    n = s.shape[0]
    ref = np.argsort(s * (n + 1) + (n - np.arange(n)), kind="mergesort")
    assert np.array_equal(waiting_order(s), ref)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**40), max_size=300), st.booleans())
def test_ascending_order_is_numpys_stable_argsort(values, small):
    """The local search's order of the admitted sizes (issue 42: instead of numba's
    mergesort): ascending, equal values in position order, as np.argsort's mergesort."""
    v = np.asarray([x % 5 if small else x for x in values], dtype=np.int64)
    assert np.array_equal(ascending_order(v), np.argsort(v, kind="mergesort"))



def test_records_widen_to_64_bits_when_an_offset_does_not_fit_in_32():
    """The per-request records start 32-bit (issue 40) and widen, keeping every field,
    when an offset c_i = s_i - a_i leaves int32's range; the loads stay exact."""
    T = TrackedLoads(2, 10, 3)
    assert T.req.dtype == np.int32
    T._enter(0, np.array([0, 1]), np.array([0, 1]), np.array([5, 7]), np.array([2, 9]))
    big = 2 ** 35
    T._enter(0, np.array([2]), np.array([0]), np.array([big]), np.array([3]))
    assert T.req.dtype == np.int64
    out = T._read(0)
    # worker 0: c = 5 (ends at 2) and c = 2^35 (ends at 3); worker 1: c = 7 (ends at 9); t = 0
    assert out[:, 0].tolist() == [5 + big, 7]
    assert out[:, 2].tolist() == [big + 2, 7 + 2]
    assert out[:, 3].tolist() == [0, 7 + 3]
    # its completion subtracts the offset kept in its record (truncated, were it 32-bit)
    complete(np.array([2]), T.req, T.ent, T.wk)
    assert T._read(0)[:, 0].tolist() == [5, 7]
