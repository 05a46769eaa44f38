"""Moving queued requests between ranks' queues (issue 45, bfio.sim.moves):
the re-link, what may move, SGLang PR #37401's balancer rule, BF-IO's moves by
its objective J, and runs with moves off unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from bfio.ground.errors import ConfigError, PolicyError
from bfio.engine.kernels import enqueue
from bfio.policies import make_policy
from bfio.runs.run import RunSpec
from bfio.sim import dispatch as dispatch_mod
from bfio.sim.dispatch import InstantDispatch
from bfio.sim.moves import SglangBalancer
from bfio.sim.state import ClusterState
from bfio.simulator import simulate
from bfio.solvers.dispatch import plan_moves, queue_profiles
from bfio.solvers.objective import ObjectiveTerms, imbalance_objective
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)
TIMINGS = ("wall_s", "route_s_", "solver_s_", "move_plan_s")


def _queued(to, prompts, G=3, B=1, policy="round_robin"):
    """An instant dispatch part whose queues hold requests ``0..`` bound to ``to``."""
    work = Workload(np.asarray(prompts), np.ones(len(prompts), dtype=np.int64))
    st = ClusterState.empty(work, G, B)
    d = InstantDispatch(st, make_policy(policy), None, 1e-4)
    ids = np.arange(len(to), dtype=np.int64)
    enqueue(ids, np.asarray(to, dtype=np.int64), work.prefill, d.head, d.tail, d.next, d.length, d.tokens)
    d.queue_worker[ids] = to
    d.queued = len(to)
    return d


def _consistent(d):
    """Every queue's walk agrees with its head, tail, length, tokens and queue_worker."""
    prompt = d.state.workload.prefill
    for g in range(d.state.workers):
        q = d.queue(g)
        assert len(q) == d.length[g] and prompt[q].sum() == d.tokens[g]
        assert d.tail[g] == (q[-1] if q else -1) and d.head[g] == (q[0] if q else -1)
        assert all(d.queue_worker[i] == g for i in q)
    assert int(d.length.sum()) == d.queued


def test_a_move_relinks_the_request_to_the_tail_of_the_other_queue():
    d = _queued([0, 0, 0, 1], [10, 20, 30, 40])
    d.move(1, 2)  # from the middle of queue 0 to the empty queue 2
    assert d.queue(0) == [0, 2] and d.queue(2) == [1]
    d.move(2, 1)  # the tail of queue 0 behind request 3
    assert d.queue(0) == [0] and d.queue(1) == [3, 2]
    d.move(0, 2)  # the head: queue 0 empties
    assert d.queue(0) == [] and d.queue(2) == [1, 0]
    _consistent(d)
    assert d.tokens.tolist() == [0, 70, 30]


def test_only_a_queued_request_moves():
    d = _queued([0, 1], [10, 20])
    d.admit()  # each rank seats its head: nothing is queued any more
    with pytest.raises(PolicyError, match="not queued"):
        d.move(0, 1)
    with pytest.raises(PolicyError, match="not queued"):
        _queued([0], [10, 20]).move(1, 0)  # never entered


def test_the_balancer_plans_as_the_pr_when_thresholds_are_crossed():
    st = ClusterState.empty(Workload(np.ones(4, dtype=np.int64), np.ones(4, dtype=np.int64)), 4, 1)
    bal = SglangBalancer(st, None, threshold=0.5, min_abs=2, cap_per_round=4)
    # mean 2.5: donor 0 (10 > 3.75, >= 2), recipients 1, 2, 3 (< 1.25); budget min(int(7.5), 4) = 4,
    # each recipient's deficit int(2.5) = 2
    assert bal.orders(np.array([10, 0, 0, 0])) == [(0, 1, 2), (0, 2, 2)]
    assert bal.orders(np.array([3, 2, 2, 3])) == []  # no queue beyond mean * 1.5
    assert bal.orders(np.array([1, 0, 0, 0])) == []  # beyond it, but shorter than min_abs
    assert bal.orders(np.array([0, 0, 0, 0])) == []
    # two donors, largest first, to the smallest recipients first
    assert SglangBalancer(st, None, threshold=0.5, min_abs=2, cap_per_round=8).orders(
        np.array([9, 7, 0, 0])) == [(0, 2, 4), (0, 3, 1), (1, 3, 3)]


def test_the_balancer_moves_the_newest_queued_requests_and_is_throttled():
    d = _queued([0] * 6, [5] * 6, G=3)
    bal = SglangBalancer(d.state, None, threshold=0.5, min_abs=2, cap_per_round=4, interval_ms=100.0)
    d.moves = bal
    # mean 2: donor 0 (6), recipients 1, 2 (deficit 2 each), budget min(4, 4): the newest two to
    # rank 1, the next newest two to rank 2
    assert bal.run(d) == 4
    assert d.queue(0) == [0, 1] and d.queue(1) == [4, 5] and d.queue(2) == [2, 3]
    _consistent(d)
    assert bal.count == 4 and bal.times.tolist() == [0, 0, 1, 1, 1, 1]
    d.move(2, 0), d.move(3, 0)  # imbalanced again, but within the interval: no plan
    d.state.clock = 0.05
    assert bal.run(d) == 0
    d.state.clock = 0.1
    assert bal.run(d) == 2


def _J(base, release, queues, sizes, life, terms):
    loads, _ = queue_profiles(base, [list(r) for r in release], queues, sizes, life)
    return float(imbalance_objective(loads, terms.weights))


def test_bfio_moves_a_tail_when_that_lowers_J_and_only_then():
    # worker 0 runs a request for 6 more steps, two requests wait behind it; worker 1 is idle
    W = 10
    base = np.zeros((2, W + 1))
    base[0, :6] = 50
    release = [[6], [0]]
    sizes, life = np.array([30, 40]), np.array([4, 4])
    terms = ObjectiveTerms.build(W)
    queues = [[0, 1], []]
    moves = plan_moves(base, release, queues, sizes, life, lambda j: terms, np.ones(2, dtype=bool), 4)
    assert moves and moves[0] == (1, 1)  # the tail goes to the idle worker
    now = [list(q) for q in queues]
    for j, g in moves:  # each move, applied in order, lowers J (or ties it and starts earlier)
        before = _J(base, release, now, sizes, life, terms)
        src = next(k for k, q in enumerate(now) if j in q)
        assert now[src][-1] == j  # a tail
        now[src].remove(j)
        now[g].append(j)
        assert _J(base, release, now, sizes, life, terms) <= before
    assert _J(base, release, now, sizes, life, terms) < _J(base, release, queues, sizes, life, terms)
    # a symmetric cluster: no move lowers J
    sym = plan_moves(np.vstack([base[0], base[0]]), [[6], [6]], [[0], [1]], sizes, life, lambda j: terms,
                     np.ones(2, dtype=bool), 4)
    assert sym == []
    # a tail that may not move (preempted) is kept
    assert plan_moves(base, release, queues, sizes, life, lambda j: terms, np.array([True, False]), 4) == []


def _workload(n=500, rate=150.0, seed=4):
    rng = np.random.default_rng(seed)
    return with_arrivals(Workload(rng.integers(20, 2500, n), rng.integers(1, 200, n)),
                         poisson_arrivals(n, rate, seed))


@pytest.mark.parametrize("policy, rule", [("sglang_total_tokens", "sglang_balancer"), ("bfio", "sglang_balancer"),
                                          ("bfio", "bfio")])
def test_runs_with_moves_finish_every_request_once_and_only_unadmitted_ones_move(monkeypatch, policy, rule):
    seen = []
    original = InstantDispatch.move

    def watched(self, i, dst):
        seen.append((i, np.isnan(self.state.start[i]), self.state.worker_of[i]))
        original(self, i, dst)

    monkeypatch.setattr(dispatch_mod.InstantDispatch, "move", watched)
    work = _workload()
    opts = {"horizon": 20} if policy == "bfio" else None
    res = simulate(work, 4, 8, policy, queue_moves=rule, policy_options=opts, **KW)
    r, m = res.requests, res.metrics
    assert m["queue_move_count"] > 0 and m["queue_move_count"] == len(seen) == r["moves"].sum()
    assert m["queue_moved_requests"] == (r["moves"] > 0).sum()
    assert all(not_started and worker < 0 for _, not_started, worker in seen)  # never admitted before
    assert r["finish_s"].notna().all() and len(r) == len(work)
    assert res.series["active"].sum() == work.decode.sum()  # every output token generated once
    assert (r["worker"] == r["queue_worker"]).all()  # each admitted from the queue it was last moved to
    assert res.config["queue_moves"] == rule


def test_moves_are_deterministic():
    work = _workload(n=300)
    a, b = (simulate(work, 4, 8, "bfio", queue_moves="bfio", policy_options={"horizon": 20}, **KW) for _ in range(2))
    assert a.requests.equals(b.requests) and a.series.equals(b.series)
    assert a.metrics["queue_move_count"] == b.metrics["queue_move_count"] > 0


def test_no_moves_is_the_run_as_before():
    work = _workload(n=300)
    a = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, **KW)
    b = simulate(work, 4, 8, "bfio", queue_moves="none", policy_options={"horizon": 20}, **KW)
    assert a.requests.equals(b.requests) and a.series.equals(b.series) and a.config == b.config
    assert "moves" not in a.requests and "queue_move_count" not in a.metrics and "queue_moves" not in a.config
    strip = (lambda m: {k: v for k, v in m.items() if not k.startswith(TIMINGS)})
    assert strip(a.metrics) == strip(b.metrics)


def test_moves_are_refused_where_they_cannot_apply():
    work = _workload(n=20)
    with pytest.raises(ConfigError, match="queue_moves: .*only dispatch 'instant'"):
        simulate(work, 2, 4, "bfio", entry="arrivals", dispatch="central", queue_moves="sglang_balancer")
    with pytest.raises(ConfigError, match="queue_moves: 'bfio' .*plans no moves"):
        simulate(work, 2, 4, "sglang_total_tokens", queue_moves="bfio", **KW)
    with pytest.raises(ConfigError, match="queue_moves: must be one of"):
        simulate(work, 2, 4, "bfio", queue_moves="steal", **KW)
    with pytest.raises(ConfigError, match="queue_moves"):
        RunSpec("longbench", 10, 2, 4, "bfio_h20", 0, queue_moves="bfio")
    spec = RunSpec("longbench", 10, 2, 4, "bfio_h20", 0, dispatch="instant", queue_moves="bfio")
    assert spec.ident()["queue_moves"] == "bfio"
    assert "queue_moves" not in RunSpec("longbench", 10, 2, 4, "bfio_h20", 0).ident()


def test_simulate_cli_moves_queued_requests_and_names_its_flag(data_dir, capsys):
    """``--queue-moves`` reaches the run (its summary counts the moves) and is
    refused, by its flag, without instant dispatch."""
    import json

    from bfio.cli import main

    base = ["simulate", "--trace", "burstgpt", "--requests", "300", "--workers", "4", "--slots", "4", "--policy",
            "sglang_total_tokens", "--dispatch", "instant", "--arrival-mode", "poisson", "--arrival-rate", "400",
            "--data-dir", str(data_dir)]
    assert main(base + ["--queue-moves", "sglang_balancer", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["queue_move_count"] > 0 and out["queue_moves"] == "sglang_balancer"
    assert main(base + ["--json", "-"]) == 0
    assert "queue_moves" not in json.loads(capsys.readouterr().out)
    assert main([a if a != "instant" else "central" for a in base] + ["--queue-moves", "sglang_balancer"]) != 0
    assert "--queue-moves: " in capsys.readouterr().err
