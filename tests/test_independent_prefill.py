"""Independent ranks with chunked prefill (issue 44, ``barrier: independent`` with
:class:`bfio.engine.prefill.PrefillModel`; :class:`bfio.sim.engine.IndependentPrefillEngine`,
:mod:`bfio.sim.rank_steps`): one rank has no barrier, so it runs the lockstep
schedule; with more ranks each rank's clock moves forward, every request
finishes, its first token comes before its end, a rank's KV stays within its
budget, and on a fixed placement no rank waits for another, so the run ends no
later than the lockstep run."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bfio.engine.prefill import PrefillModel
from bfio.step_model import StepModel
from bfio.step_model.fit import StepCoefficients
from bfio.workloads.workload import Workload


class _NoComm(StepModel):
    """The calibrated step without the DP collective (``comm = 0``): one lockstep
    rank then costs what the same rank costs on its own clock."""

    def coefficients(self, data_dir=None, verify=True):
        c = super().coefficients(data_dir, verify)
        return StepCoefficients(**{**c.to_dict(), "comm": 0.0})


def _workload(rng, n, prompt_max=3000, out_max=200, span_s=5.0):
    return Workload(rng.integers(10, prompt_max, n).astype(np.int64), rng.integers(1, out_max, n).astype(np.int64),
                    np.sort(rng.uniform(0.0, span_s, n)))


def _sim(w, workers, slots, policy, prefill, barrier, model=StepModel, **kw):
    from bfio.simulator import simulate

    return simulate(w, workers, slots, policy, entry="arrivals", prefill=prefill, record_loads=True,
                    step_model=model("calibrated", barrier=barrier), **kw)


@pytest.fixture
def profiles(data_dir, monkeypatch):
    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))


@pytest.mark.parametrize("preemption", ["none", "vllm", "sglang"])
def test_one_rank_is_the_lockstep_run(profiles, preemption):
    """G = 1 with ``comm = 0``: the same series, requests and metrics, bit for bit
    (the event of the one rank is the lockstep step)."""
    w = _workload(np.random.default_rng(3), 250)
    pm = PrefillModel(chunk_tokens=512, kv_tokens=6000, preemption=preemption)
    lock = _sim(w, 1, 8, "fcfs", pm, "lockstep", _NoComm)
    ind = _sim(w, 1, 8, "fcfs", pm, "independent", _NoComm)
    assert ind.series.equals(lock.series) and ind.requests.equals(lock.requests)
    timing = ("route_s", "imbalance_floor_total", "kv_token_s")  # wall times; no barrier: no imbalance floor
    for k, v in lock.metrics.items():
        if not k.startswith(timing):
            assert ind.metrics[k] == v or (v != v and ind.metrics[k] != ind.metrics[k]), k
    if preemption != "none":
        assert lock.metrics["preemptions"] > 0  # the case exercises eviction and recompute


@pytest.mark.parametrize("policy,dispatch", [("jsq_tokens", "central"), ("vllm_dp", "instant"),
                                             ("sglang_total_tokens", "instant")])
def test_independent_prefill_invariants(profiles, policy, dispatch):
    """G = 4 with a tight KV budget and vLLM preemption: the event clock never runs
    backwards, every request finishes and generates exactly its tokens, TTFT <=
    end-to-end, no rank's resident KV exceeds its budget, and runs repeat bit for bit."""
    w = _workload(np.random.default_rng(5), 300)
    pm = PrefillModel(chunk_tokens=512, kv_tokens=8000, preemption="vllm")
    a = _sim(w, 4, 6, policy, pm, "independent", dispatch=dispatch)
    b = _sim(w, 4, 6, policy, pm, "independent", dispatch=dispatch)
    assert a.series.equals(b.series) and a.requests.equals(b.requests)
    s, r = a.series, a.requests
    assert (s["dt"] > 0).all() and (np.diff(s["clock"].to_numpy()) > 0).all()
    assert r["finish_s"].notna().all() and len(r) == len(w)
    assert (r["ttft_s"] <= r["e2e_s"]).all() and (r["ttft_s"] > 0).all()
    assert int(s["active"].sum()) == int(w.decode.sum())  # every output token once (recomputes emit none again)
    assert a.loads.max() <= pm.kv_tokens and s["max_load_pre"].max() == a.loads.max()
    assert a.metrics["preemptions"] > 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1), workers=st.integers(2, 4), slots=st.integers(1, 4),
       n=st.integers(4, 40), chunk=st.sampled_from([64, 256, 2048]),
       memory=st.sampled_from([(None, "none"), (4000, "none"), (3200, "vllm"), (3200, "sglang")]))
def test_no_barrier_ends_no_later_on_a_fixed_placement(profiles, seed, workers, slots, n, chunk, memory):
    """Every request arrives at 0 and round robin binds request ``k`` to rank ``k mod
    G``: each rank then admits and steps the same batches in both modes (its
    admissions read only its own state), and a lockstep step lasts at least every
    rank's own step, so the independent run's makespan is at most the lockstep one's.
    With preemption a rank's routing call mid-step may admit a step earlier than
    lockstep would (it sees its state before its step's growth); the bound is
    checked there too."""
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(1, 3000, n).astype(np.int64), rng.integers(1, 80, n).astype(np.int64),
                 np.zeros(n))
    pm = PrefillModel(chunk_tokens=chunk, kv_tokens=memory[0], preemption=memory[1])
    lock = _sim(w, workers, slots, "round_robin", pm, "lockstep", dispatch="instant")
    ind = _sim(w, workers, slots, "round_robin", pm, "independent", dispatch="instant")
    assert ind.requests["worker"].equals(lock.requests["worker"])
    assert ind.metrics["makespan_s"] <= lock.metrics["makespan_s"] * (1 + 1e-12)
    assert ind.requests["finish_s"].notna().all()


def test_prefix_study_runs_independent_ranks(profiles):
    """The prefix study's refusal of ``barrier: independent`` is lifted: its section
    validates and a small GRPO setting runs through the study's runner with prefix
    caches on independent ranks (hits found, every request finished), its rows
    differing from the lockstep ones; an unknown barrier is still refused by key."""
    import pandas as pd

    from bfio.ground.errors import ConfigError
    from bfio.studies.prefix_study import run_prefix_study, validate_section

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"prefill_tokens": rng.integers(600, 3000, 50), "decode_tokens": rng.integers(5, 80, 50)})
    setting = {"name": "g", "workload": "grpo", "trace": "azure_conv", "workers": 2, "groups": 2, "group_size": 4,
               "turns": 2, "think_time_s": 1.0}
    prefill = {"chunk_tokens": 1024, "token_s": 1e-4, "kv_tokens_per_rank": 50_000}
    rows = {}
    for barrier in ("lockstep", "independent"):
        section = {"routers": ["vllm_dp", "bfio"], "horizon": 10, "prefill": prefill, "settings": [],
                   "step_model": {"step_model": "calibrated", "barrier": barrier}}
        validate_section(section, {})
        rows[barrier] = run_prefix_study("g", setting, section, [1], 8, frame)
    ind, lock = rows["independent"], rows["lockstep"]
    assert (ind["cache_hit_rate"] > 0).all() and len(ind) == len(lock) == 2
    assert not np.allclose(ind["ttft_s_p99"], lock["ttft_s_p99"])
    with pytest.raises(ConfigError, match="prefix_study.step_model"):
        validate_section({**section, "step_model": {"step_model": "calibrated", "barrier": "none"}}, {})


def test_rank_step_is_fixed_at_its_start():
    """The kernels by hand: rank 0 starts a step with request 0 (prompt 100, chunk
    64) and request 1 decoding; rank 1 is idle. Its time is ``alpha + a_kv L +
    a_n 1 + a_p 64 + a_p2 64^2 + beta 1``; request 2, seated on rank 0 mid-step,
    is not in the batch: at the step's end request 0 has 36 tokens left, request 1
    one more token, request 2 its whole prompt to compute."""
    from bfio.sim.rank_steps import end_rank_steps, start_rank_steps

    coef = np.array([1.0, 0.01, 0.1, 0.001, 1e-6, 0.5, 7.0])  # alpha, a_kv, a_n, a_p, a_p2, beta, comm
    prefill = np.array([100, 50, 30])
    decode = np.array([5, 9, 5])
    generated = np.array([0, 3, 0])
    left = np.array([100, 0, 30])
    order = np.array([0, 1, 2])
    slot_request = np.array([[0, 1, -1], [-1, -1, -1]])
    loads = np.array([0 + 53, 0])  # request 0 nothing resident yet, request 1 50 + 3
    active = np.array([2, 0])
    in_step, started, ends = np.zeros(2, dtype=np.bool_), np.zeros(2), np.full(2, np.inf)
    dts, admitted_by, batch_take = np.zeros(2), np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64)
    take = np.zeros((2, 3), dtype=np.int64)
    start_rank_steps(coef, slot_request, left, order, 64, 64, take, loads, active, in_step, started, ends, dts,
                     admitted_by, batch_take, 2, 10.0)
    expect = 1.0 + 0.01 * 53 + 0.1 * 1 + 0.001 * 64 + 1e-6 * 64 * 64 + 0.5 * 1
    assert in_step.tolist() == [True, False] and dts[0] == pytest.approx(expect) and ends[0] == 10.0 + dts[0]
    assert batch_take[:2].tolist() == [64, 0]
    slot_request[0, 2], loads[0], active[0] = 2, 53, 3  # seated mid-step (admission 2: not in the batch)
    batch_take[2] = 30  # a stale chunk (an earlier step's): not read for a request outside the batch
    reserve = np.array([100 + 30, 0])
    finish, finish_step, first = np.full(3, np.nan), np.full(3, -1), np.full(3, np.nan)
    done, ended, tokens = end_rank_steps(slot_request, prefill, decode, generated, left, order, admitted_by,
                                         batch_take, in_step, finish, finish_step, first, ends[0], 1, loads, active,
                                         reserve, np.zeros(3, dtype=np.int64), 0, np.zeros(6, dtype=np.int64))
    assert (done, ended, tokens) == (0, 0, 1)
    assert left.tolist() == [36, 0, 30] and generated.tolist() == [0, 4, 0] and reserve.tolist() == [66, 0]
    assert loads[0] == 64 + 54 + 0 and active[0] == 3
