"""KV memory with engine-faithful preemption (issue 44, bfio.sim.preemption).

The scenario tests port the preemption cases of vLLM's scheduler tests
(``tests/v1/core/test_scheduler.py`` at vLLM ``619e4b31``) and the retract
order of SGLang's ``ScheduleBatch.retract_decode``; each names its source."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.engine.prefill import Prefill, PrefillModel
from bfio.sim import preemption as preemption_mod
from bfio.sim.dispatch import CentralDispatch, InstantDispatch
from bfio.sim.state import ClusterState
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)


def _two(s, o, kv, rule, chunk=4096, arrivals=(0.0, 0.0)):
    w = with_arrivals(Workload(np.asarray(s), np.asarray(o)), np.asarray(arrivals, dtype=float))
    return simulate(w, 1, 4, "round_robin", prefill=PrefillModel(chunk_tokens=chunk, kv_tokens=kv, preemption=rule),
                    **KW)


def test_the_newest_running_request_is_preempted_and_recomputes_prompt_and_output():
    """vLLM ``test_preempt_during_execution``: two 80-token requests on a KV cache
    that holds both prompts but not their growth; scheduling the first again
    preempts the second (``Scheduler.schedule``: ``self.running.pop()``), which
    keeps the token it sampled. Here: A and B (100-token prompts, 50 tokens out)
    on 230 tokens; after 15 steps 200 + 2*15 + 2 > 230, so B (the newest) is
    evicted with tau = 15 and recomputes 100 + 15 tokens once A has finished."""
    res = _two([100, 100], [50, 50], 230, "vllm")
    r, m = res.requests, res.metrics
    assert r["preemptions"].tolist() == [0, 1]
    assert m["preemptions"] == 1 and m["preempted_requests"] == 1
    assert m["recomputed_tokens"] == 100 + 15  # prompt + generated, through the prefill model
    assert r["finish_s"].notna().all()
    assert r.loc[1, "finish_s"] > r.loc[0, "finish_s"]
    # every output token emitted once: the recompute's last chunk yields token 16, not a second token 1
    assert res.series["active"].sum() == 100
    # TTFT and start stay those of the first admission (both first tokens at step 1)
    assert r.loc[1, "ttft_s"] == r.loc[0, "ttft_s"] and r.loc[1, "start_s"] == 0.0


def test_without_preemption_the_rank_overruns_its_memory():
    """The same run with preemption 'none' (today's model): nothing is evicted and
    the rank's resident KV passes the budget (the issue's 9.4x)."""
    w = with_arrivals(Workload(np.array([100, 100]), np.array([50, 50])), np.zeros(2))
    res = simulate(w, 1, 4, "round_robin", prefill=PrefillModel(chunk_tokens=4096, kv_tokens=230), record_loads=True,
                   **KW)
    assert res.loads.max() > 230 and "preemptions" not in res.metrics and "preemptions" not in res.requests
    on = simulate(w, 1, 4, "round_robin", record_loads=True, **KW,
                  prefill=PrefillModel(chunk_tokens=4096, kv_tokens=230, preemption="vllm"))
    assert on.loads.max() <= 230


def test_vllm_evicts_the_newest_and_sglang_the_longest_prompt_among_equal_outputs():
    """A (300-token prompt) admitted before B (100) on 420 tokens; both prefill in
    step 1, so they have equal output counts when memory runs out (400 + 2*10 + 2
    > 420). vLLM's FCFS pop takes the newest, B; SGLang's ``retract_decode`` sorts
    by ``(len(output_ids), -len(origin_input_ids))`` descending and pops the last:
    among equal outputs the longest prompt, A."""
    vllm = _two([300, 100], [100, 100], 420, "vllm")
    sgl = _two([300, 100], [100, 100], 420, "sglang")
    assert vllm.requests["preemptions"].tolist()[1] >= 1 and vllm.requests["preemptions"].tolist()[0] == 0
    assert sgl.requests["preemptions"].tolist()[0] >= 1 and sgl.requests["preemptions"].tolist()[1] == 0
    assert vllm.metrics["recomputed_tokens"] >= 100 + 10 and sgl.metrics["recomputed_tokens"] >= 300 + 10


def test_sglang_retracts_the_fewest_outputs_first_vllm_the_newest():
    """SGLang ``retract_decode``: output length is the first key, whatever the age;
    vLLM's FCFS pop takes the newest. Requests 0, 1, 2 (equal prompts, 30, 5 and
    20 tokens out) on 175 tokens: 3 * 40 + 55 + 3 > 175 -> one leaves: SGLang
    takes 1 (fewest outputs), vLLM takes 2 (newest)."""
    for rule, victim in (("sglang", 1), ("vllm", 2)):
        state, part = _dispatch_with_running("instant", rule, [40, 40, 40, 30], [60] * 4, 175, [30, 5, 20])
        assert part.preemption.run(state) == [victim]


def _dispatch_with_running(kind, rule, prompts, outputs, kv, generated):
    """A cluster of one rank running requests ``0..k-1`` (``generated`` tokens each,
    prefill done) and a dispatch part over it; request ``k`` waits (its queue or pool)."""
    n = len(prompts)
    w = with_arrivals(Workload(np.asarray(prompts), np.asarray(outputs)), np.zeros(n))
    state = ClusterState.empty(w, 1, 4)
    prefill = Prefill(PrefillModel(chunk_tokens=4096, kv_tokens=kv, preemption=rule), w, 1, 4)
    policy = make_policy("fcfs")
    policy.reset(1, 4)
    part = (InstantDispatch if kind == "instant" else CentralDispatch)(state, policy, prefill, 1e-4)
    k = len(generated)
    running = np.arange(k)
    state.slot_request[0, :k] = running
    state.active[0] = k
    state.worker_of[running] = 0
    state.generated[running] = generated
    state.loads[0] = int(sum(prompts[:k]) + sum(generated))
    prefill.order[running] = np.arange(k)
    prefill._admissions = k
    if kind == "instant":
        part.queue_worker[:] = 0
        part.requeue([k])  # the waiting request, queued before the evictions
    else:
        part.pool = np.array([k], dtype=np.int64)
    return state, part


@pytest.mark.parametrize("kind", ["instant", "central"])
def test_a_preempted_request_goes_to_the_front_vllm_or_the_back_sglang(kind):
    """vLLM ``Scheduler._preempt_request``: ``self.waiting.prepend_request(request)``,
    so the preempted request is admitted before the ones that waited (vLLM
    ``test_preempt_during_execution`` then schedules it first); SGLang
    ``_extend_requests_to_queue``: ``waiting_queue.extend`` (the back). Requests 0,
    1, 2 run (3 waits) on 150 tokens; 3 * 40 + 3 * 10 + 3 > 150 -> vLLM evicts 2,
    SGLang 2 as well (equal outputs and prompts: the newest)."""
    for rule, front in (("vllm", True), ("sglang", False)):
        state, part = _dispatch_with_running(kind, rule, [40, 40, 40, 30], [50, 50, 50, 50], 150, [10, 10, 10])
        evicted = part.preemption.run(state)
        assert evicted == [2] and state.active[0] == 2 and 2 not in state.slot_request[0]
        assert state.loads[0] == 100 and part.prefill.reserve[0] == 0 and part.prefill.resume[2] == 10
        part.requeue(evicted)
        order = _waiting(part, kind)
        assert order == ([2, 3] if front else [3, 2])
        assert part.preemption.blocked[0]  # no admission on this rank in this call (vLLM: if not preempted_reqs)
        assert part.admit() == 0


def test_several_victims_leave_the_last_evicted_at_the_front():
    """vLLM prepends each victim as it pops it (newest first), so of two victims the
    older one ends at the head of the waiting queue."""
    state, part = _dispatch_with_running("instant", "vllm", [40, 40, 40, 40, 30], [60] * 5, 150, [10, 10, 10, 10])
    evicted = part.preemption.run(state)
    assert evicted == [3, 2]
    part.requeue(evicted)
    assert _waiting(part, "instant") == [2, 3, 4]


def _waiting(part, kind):
    if kind == "central":
        return part.pool.tolist()
    out, i = [], int(part.head[0])
    while i >= 0:
        out.append(i)
        i = int(part.next[i])
    return out


def test_a_request_larger_than_the_memory_is_refused_by_row():
    w = with_arrivals(Workload(np.array([100, 900, 50]), np.array([10, 200, 5])), np.zeros(3))
    with pytest.raises(ConfigError, match=r"prefill\.kv_tokens: request 1's prompt and output of 1,100 tokens "
                                          r"exceed a rank's KV memory of 1,000 tokens \(1 such requests\)"):
        simulate(w, 2, 4, "round_robin", prefill=PrefillModel(kv_tokens=1000, preemption="vllm"), **KW)
    # without preemption the same run is admitted (growth is not bounded)
    simulate(w, 2, 4, "round_robin", prefill=PrefillModel(kv_tokens=1000), **KW)
    with pytest.raises(ConfigError, match=r"prefill\.preemption: 'vllm' .* set prefill\.kv_tokens"):
        PrefillModel(preemption="vllm")
    for bad in ("lifo", None, 1):
        with pytest.raises(ConfigError, match="prefill.preemption: must be one of none, vllm, sglang"):
            PrefillModel(kv_tokens=10, preemption=bad)


def test_off_records_what_it_recorded_before():
    """``preemption='none'``: the config and summary carry no new key."""
    assert "preemption" not in PrefillModel(kv_tokens=10).to_dict()
    assert PrefillModel(kv_tokens=10, preemption="sglang").to_dict()["preemption"] == "sglang"


def _checked_run(w, G, B, policy, dispatch, model):
    """``simulate`` recording, at every routing call (after every step, before any
    eviction), the largest KV any rank holds or has reserved."""
    seen = []
    run = preemption_mod.Preemption.run

    def checked(self, state):
        seen.append(int(self.prefill.committed(state.loads).max()))
        return run(self, state)

    preemption_mod.Preemption.run = checked
    try:
        res = simulate(w, G, B, policy, entry="arrivals", dispatch=dispatch, show_progress=False, record_loads=True,
                       prefill=model)
    finally:
        preemption_mod.Preemption.run = run
    return res, seen


@pytest.mark.parametrize("form", [("instant", "round_robin"), ("central", "fcfs")])
def test_admission_leaves_room_for_the_next_token(form):
    """Two 100-token prompts on 201 tokens: the second would fit its prompt (200)
    but not the first token both emit after the step (202), so it waits (vLLM
    allocates the running requests' next slots before it admits)."""
    w = with_arrivals(Workload(np.array([100, 100]), np.array([50, 50])), np.zeros(2))
    res, seen = _checked_run(w, 1, 4, form[1], form[0], PrefillModel(chunk_tokens=4096, kv_tokens=201,
                                                                      preemption="vllm"))
    assert max(seen) <= 201 and res.metrics["preemptions"] == 0
    assert res.requests.loc[1, "start_s"] >= res.requests.loc[0, "finish_s"]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.sampled_from(["vllm", "sglang"]),
       st.sampled_from([("instant", "round_robin"), ("instant", "vllm_dp"), ("central", "fcfs"),
                        ("central", "jsq_tokens")]),
       st.lists(st.tuples(st.integers(1, 300), st.integers(1, 60), st.floats(0, 0.2)), min_size=1, max_size=25),
       st.floats(1.0, 3.0), st.sampled_from([16, 64, 4096]))
def test_memory_holds_after_every_step_and_every_request_finishes_once(G, B, rule, form, rows, slack, chunk):
    """Random small workloads: after every step each rank's KV (resident plus
    prompts still to compute) is within ``kv_tokens`` (a request alone always fits:
    larger ones are refused), every request finishes exactly once, every output
    token is emitted once, and the counts agree."""
    s = np.array([r[0] for r in rows])
    o = np.array([r[1] for r in rows])
    kv = int(max(s + o) * slack)
    w = with_arrivals(Workload(s, o), np.sort(np.array([r[2] for r in rows])))
    dispatch, policy = form
    res, seen = _checked_run(w, G, B, policy, dispatch, PrefillModel(chunk_tokens=chunk, kv_tokens=kv,
                                                                      preemption=rule))
    assert seen and max(seen) <= kv and res.loads.max() <= kv
    r = res.requests
    assert r["finish_s"].notna().all() and (r["finish_step"] >= r["start_step"]).all()
    assert res.series["completions"].sum() == len(s)
    assert res.series["active"].sum() == o.sum()
    assert res.metrics["preemptions"] == r["preemptions"].sum()
    assert res.metrics["preempted_requests"] == (r["preemptions"] > 0).sum()
    assert res.metrics["recomputed_tokens"] >= res.metrics["preemptions"]


@pytest.mark.parametrize("rule", ["vllm", "sglang"])
def test_with_prefix_caches_preemption_keeps_memory_and_tokens(rule):
    """Multi-turn sessions with per-rank prefix caches (issue 32): a readmitted
    request looks its prompt up again (vLLM resumes with ``get_computed_blocks``);
    memory holds after every step, every request finishes and every output token
    is emitted once."""
    from bfio.workloads.sessions import session_requests

    rng = np.random.default_rng(3)
    s, o = rng.integers(100, 2000, 200), rng.integers(5, 200, 200)
    w = session_requests(s, o, sessions=8, turns=4, seed=3, think_time_s=0.5, block_tokens=64,
                         group_size=1).workload
    kv = int((w.prefill + w.decode).max()) + 2000
    for dispatch, policy in (("instant", "vllm_dp"), ("central", "fcfs")):
        res, seen = _checked_run(w, 2, 8, policy, dispatch, PrefillModel(chunk_tokens=512, kv_tokens=kv,
                                                                          cache_blocks=200, preemption=rule))
        assert max(seen) <= kv and res.requests["finish_s"].notna().all()
        assert res.metrics["preemptions"] > 0
        assert res.series["active"].sum() == w.decode.sum()


def test_a_readmission_recomputes_only_what_its_rank_has_not_cached():
    """vLLM ``Scheduler.schedule``, waiting loop: a resumed request (``num_computed_tokens
    == 0``) gets its locally cached tokens again and computes ``num_tokens -
    num_computed_tokens``: prompt + generated less the cached prefix."""
    from bfio.engine.prefix import PrefixBlocks

    w = with_arrivals(Workload(np.array([128, 128]), np.array([10, 10]),
                               blocks=PrefixBlocks.from_lists([[1, 2], [3, 4]], 64)), np.zeros(2))
    state = ClusterState.empty(w, 1, 4)
    prefill = Prefill(PrefillModel(chunk_tokens=4096, kv_tokens=1000, cache_blocks=10, preemption="vllm"), w, 1, 4)
    prefill.caches[0].insert(np.array([1, 2]))  # request 0's prompt is cached on rank 0
    ids = np.array([0])
    state.worker_of[ids] = 0
    state.loads[0] = 128  # seated: s_0
    prefill.requeued[0], prefill.resume[0] = True, 7  # preempted after 7 tokens
    prefill.admitted(ids, state.worker_of, state.loads)
    # 127 of 128 prompt tokens cached (the last is always computed): 1 + 7 to compute
    assert prefill.left[0] == 8 and prefill.recomputed_tokens == 8 and state.loads[0] == 127
    assert prefill.committed(state.loads)[0] == 128 + 7
