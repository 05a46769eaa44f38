"""Option ``completions`` (issue 44): a router on lagged reports that sees the
output stream takes finished requests off the ranks it counted them on
(:mod:`bfio.policies.completion_stream`)."""

from dataclasses import replace

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import DispatchState, make_policy, supporting
from bfio.simulator import simulate
from bfio.workloads.workload import Workload

PREFILL = np.array([100, 200, 40, 70, 10], dtype=np.int64)


def dstate(step, slot_request, generated, waiting, waiting_tokens, completed=()):
    sr = np.asarray(slot_request, dtype=np.int64)
    gen = np.asarray(generated, dtype=np.int64)
    ids = np.where(sr >= 0, sr, 0)
    loads = np.where(sr >= 0, PREFILL[ids] + gen[ids], 0).sum(axis=1)
    running = (sr >= 0).sum(axis=1)
    return DispatchState(step=step, clock=0.01 * step, workers=2, slots=2, waiting=np.asarray(waiting),
                         waiting_tokens=np.asarray(waiting_tokens), running=running, loads=loads,
                         free=2 - running, workload=Workload(PREFILL, np.full(5, 50)), slot_request=sr,
                         generated=gen, completed=np.asarray(completed, dtype=np.int64))


def scenario(completions):
    """round_robin binds 0 -> rank 0, 1 -> rank 1, 2 -> rank 0 (queued); at step 10
    a report (0 and 1 running with 5 and 3 tokens, 2 queued on rank 0) and 3 -> rank 1
    after it; by step 12 requests 0, 2 (admitted after the report) and 3 finished."""
    p = make_policy("round_robin", report_interval=10, completions=completions)
    p.reset(2, 2)
    empty = dstate(0, [[-1, -1], [-1, -1]], [0] * 5, [0, 0], [0, 0])
    assert p.dispatch(empty, np.array([0, 1, 2])).tolist() == [0, 1, 0]
    report = dstate(10, [[0, -1], [1, -1]], [5, 3, 0, 0, 0], [1, 0], [40, 0])
    assert p.dispatch(report, np.array([3])).tolist() == [1]
    later = dstate(12, [[-1, -1], [1, -1]], [6, 5, 1, 1, 0], [0, 0], [0, 0], completed=[0, 2, 3])
    return p.router_view(later)


def test_streamed_takes_each_finished_request_off_where_the_report_counted_it():
    reported, streamed = scenario("reported"), scenario("streamed")
    # the report plus the router's own binding (request 3, 70 tokens, on rank 1)
    assert reported.loads.tolist() == [105, 203] and reported.running.tolist() == [1, 1]
    assert reported.waiting.tolist() == [1, 1] and reported.waiting_tokens.tolist() == [40, 70]
    # 0 was running with 105 tokens; 2 was queued (40); 3 was bound after the report (70)
    assert streamed.loads.tolist() == [0, 203] and streamed.running.tolist() == [0, 1]
    assert streamed.free.tolist() == [2, 1]
    assert streamed.waiting.tolist() == [0, 0] and streamed.waiting_tokens.tolist() == [0, 0]


def test_a_request_moved_between_ranks_is_taken_off_where_the_report_saw_it():
    """An engine moved queued request 2 from rank 0 (where the router bound it) to
    rank 1's queue before the report (issue 45's queue moves): when it finishes, it
    leaves rank 1's queue count, as the report counted it, not rank 0's."""
    p = make_policy("round_robin", report_interval=10, completions="streamed")
    p.reset(2, 2)
    empty = dstate(0, [[-1, -1], [-1, -1]], [0] * 5, [0, 0], [0, 0])
    assert p.dispatch(empty, np.array([0, 1, 2])).tolist() == [0, 1, 0]
    report = dstate(10, [[0, -1], [1, -1]], [5, 3, 0, 0, 0], [0, 1], [0, 40])
    report = replace(report, queue_head=np.array([-1, 2]), queue_next=np.full(5, -1))
    p.router_view(report)  # the report: request 2 queued on rank 1
    later = dstate(12, [[0, -1], [1, -1]], [7, 5, 1, 0, 0], [0, 0], [0, 0], completed=[2])
    view = p.router_view(later)
    assert view.waiting.tolist() == [0, 0] and view.waiting_tokens.tolist() == [0, 0]


def test_a_finished_request_no_report_counted_and_the_router_never_bound_is_an_error():
    p = make_policy("least_tokens", report_interval=10, completions="streamed")
    p.reset(2, 2)
    report = dstate(10, [[-1, -1], [1, -1]], [5, 3, 0, 0, 0], [0, 0], [0, 0])
    p.dispatch(report, np.array([3]))
    with pytest.raises(RuntimeError, match="request 0 finished but no report counted it"):
        p.router_view(dstate(11, [[-1, -1], [1, -1]], [6, 4, 0, 1, 0], [0, 0], [0, 0], completed=[0]))


def workload(n=500, seed=44, gap_s=0.002, decode=80):
    rng = np.random.default_rng(seed)
    return Workload(rng.integers(1, 3000, n), rng.integers(1, decode, n),
                    arrival_s=np.cumsum(rng.exponential(gap_s, n)))


def signature(r):
    return (r.requests[["worker", "start_step", "finish_step"]].to_numpy().tobytes(),
            r.series["dt"].to_numpy().tobytes())


LOAD_RULES = ["sglang_total_tokens", "least_tokens", "vllm_dp", "jsq_requests"]


@pytest.mark.parametrize("policy,options", [(p, {}) for p in LOAD_RULES]
                         + [("bfio", {"horizon": 20, "predictor": "prompt_survival", "report_age": "advance"})])
def test_a_report_every_step_has_nothing_to_stream(policy, options):
    # reports are taken at a step's first call and requests finish between steps:
    # with K = 1 no request finishes within a report's life, so streaming changes nothing
    w = workload()
    runs = [simulate(w, 4, 6, policy, seed=2, entry="arrivals", dispatch="instant",
                     policy_options={**options, "report_interval": 1, "completions": c})
            for c in ("reported", "streamed")]
    assert signature(runs[0]) == signature(runs[1])


@pytest.mark.parametrize("policy,options", [(p, {}) for p in LOAD_RULES]
                         + [("bfio", {"horizon": 20, "predictor": "prompt_survival", "report_age": "advance"})])
def test_streamed_completions_change_lagged_routing_and_stay_deterministic(policy, options):
    w = workload()
    opts = {**options, "report_interval": 10}
    go = lambda **o: simulate(w, 4, 6, policy, seed=2, entry="arrivals", dispatch="instant",  # noqa: E731
                              policy_options={**opts, **o})
    streamed = go(completions="streamed")
    assert signature(streamed) == signature(go(completions="streamed"))
    assert signature(streamed) != signature(go())


@pytest.mark.parametrize("queue_moves,prefill", [("none", False), ("sglang_balancer", False), ("none", True)])
def test_the_streamed_view_counts_what_the_report_had_less_what_finished(monkeypatch, queue_moves, prefill):
    """Checked against the exact states of a run, recounted by request sets: the
    view's running requests per rank are the report's that have not finished, its
    queued ones the report's and the router's bindings since, less the finished;
    with an engine's queue moves (issue 45) a request is taken off where the report
    counted it."""
    from bfio.policies.sglang_total_tokens import SglangTotalTokens

    seen = []
    original = SglangTotalTokens.select

    def select(self, view, requests):
        seen.append(view)
        return original(self, view, requests)

    monkeypatch.setattr(SglangTotalTokens, "select", select)
    exact = []
    original_dispatch = SglangTotalTokens.dispatch

    def dispatch(self, state, requests):
        out = original_dispatch(self, state, requests)
        sr = np.array(state.slot_request)
        ids = sr[sr >= 0]
        held = dict(zip(ids.tolist(), (state.workload.prefill[ids] + state.generated[ids] if state.prefill is None
                                       else state.prefill.resident_tokens(ids, state.generated)).tolist()))
        # what the rank's load counts is the sum of its running requests' resident tokens
        assert [sum(held[i] for i in row[row >= 0].tolist()) for row in sr] == list(state.loads)
        exact.append((int(state.step), sr, [int(x) for x in state.completed],
                      _queued(state), np.asarray(requests).tolist(), np.asarray(out).tolist(), held,
                      np.array(state.loads)))
        return out

    monkeypatch.setattr(SglangTotalTokens, "dispatch", dispatch)
    K = 7
    from bfio.engine.prefill import PrefillModel

    # with chunked prefill, arrivals over the whole run and short outputs: requests seated
    # mid-prompt at a report finish before the next one
    work = workload(800, seed=46, gap_s=0.02, decode=12) if prefill else workload(1500, seed=45)
    result = simulate(work, 4, 6, "sglang_total_tokens", seed=2, entry="arrivals",
                      dispatch="instant", policy_options={"report_interval": K, "completions": "streamed"},
                      queue_moves=queue_moves, prefill=PrefillModel(chunk_tokens=256) if prefill else None)
    if queue_moves != "none":
        assert result.metrics["queue_move_count"] > 0  # the moves happened
    report = None
    for view, (step, sr, completed, queued, requests, out, held, loads) in zip(seen, exact):
        if report is None or step // K != report["window"]:
            report = {"window": step // K, "running": [set(sr[g][sr[g] >= 0].tolist()) for g in range(4)],
                      "queued": [set(q) for q in queued], "done": set(completed), "held": held}
        finished = set(completed) - report["done"]
        assert view.running.tolist() == [len(r - finished) for r in report["running"]]
        assert view.loads.tolist() == [sum(report["held"][i] for i in r - finished) for r in report["running"]]
        assert view.waiting.tolist() == [len(q - finished) for q in report["queued"]]
        assert (view.loads >= 0).all() and (view.free == 6 - view.running).all()
        for i, g in zip(requests, out):  # the router's own bindings join its count
            report["queued"][g].add(i)


def _queued(state):
    out = []
    for g in range(state.workers):
        q, i = [], int(state.queue_head[g])
        while i >= 0:
            q.append(i)
            i = int(state.queue_next[i])
        out.append(q)
    return out


def test_completions_is_an_option_of_every_instant_router_and_refused_by_value():
    for name in supporting("instant"):
        from bfio.policies import policy_class
        assert "completions" in {o.name for o in policy_class(name).options}, name
    with pytest.raises(ConfigError, match="completions"):
        make_policy("sglang_total_tokens", completions="live")
    with pytest.raises(ConfigError, match="completions"):
        simulate(workload(50), 2, 4, "bfio", policy_options={"completions": "streamed"})
