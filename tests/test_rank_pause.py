"""Pausing ranks' admissions (issue 45, bfio.sim.pause): a paused rank admits
nothing while paused, the counts, DyntraLB's planner (vllm-ascend PR #12292)
on its source's own unit-test cases, DyntraLB's runs, runs with pauses off
unchanged, and the errors that name the option."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.runs.run import RunSpec
from bfio.sim import dispatch as dispatch_mod
from bfio.sim import pause as pause_mod
from bfio.sim.dyntra_lb import _first_of_each, plan, plan_requests, rank_rows
from bfio.sim.pause import DyntraLbPause, RankPause
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)
STATIC = {"mode": "static", "start_step": 0}


def _workload(n=400, rate=60.0, seed=3, prompt=40_000):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, prompt, n), rng.integers(1, 120, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


# -- the planner, on the cases of the source's tests (tests/ut/patch/platform/test_patch_dyntra_lb_core.py) --

def test_planner_threshold_one_is_one_absolute_block():
    got = plan([[3], [1]], [[], [2]], threshold=1.0)
    assert got[1]["out_blk"] == [1] and got[1]["in_blk"] == [2]


def test_planner_threshold_below_one_is_a_ratio_of_the_maximum():
    frozen = {"out_blk": [], "in_blk": [], "freeze": True}
    assert plan([[3], [1]], [[], [2]], threshold=0.5) == [frozen, frozen]


def test_planner_drops_only_for_a_modelled_throughput_gain():
    frozen = {"out_blk": [], "in_blk": [], "freeze": True}
    assert plan([[60, 40], [60]], [[], []], threshold=5.0) == [frozen, frozen]  # the fixed latency dominates
    assert plan([[4000, 1000], [1000]], [[], []], threshold=1.0)[0]["out_blk"] == [4000]


def test_planner_fills_free_slots_from_the_queue_heads_and_cancels_equal_out_and_in():
    got = plan([[10, 20], [5]], [[30, 1], [40, 2]], max_num_seqs=3, threshold=1.0)
    assert got[1] == {"out_blk": [], "in_blk": [40, 2], "freeze": False}  # two free slots, both heads in
    assert got[0]["in_blk"][0] == 30 and got[0]["out_blk"] == [10]  # then a swap on rank 0
    # a balanced cluster: the fill alone, nothing swapped
    assert plan([[7], [7]], [[3], [3]], max_num_seqs=2, threshold=5.0) == [
        {"out_blk": [], "in_blk": [3], "freeze": False}] * 2


def _matched(ids, blocks, wanted):
    out = np.empty(len(ids), dtype=np.int64)
    k = _first_of_each(ids, blocks, len(ids), np.asarray(wanted, dtype=np.int64), len(wanted), out, 0)
    return out[:k].tolist()


def test_plans_are_matched_to_requests_by_block_count_in_order():
    ids, blocks = np.array([5, 6, 7, 8]), np.array([3, 9, 3, 9])
    assert _matched(ids, blocks, [9, 3]) == [5, 6]
    assert _matched(ids, blocks, [3, 3, 4]) == [5, 7]
    assert _matched(ids, blocks, [9, 9, 9]) == [6, 8]


def _rows_by_hand(sr, order, size, head, nxt, length, block):
    """The planner's rows as the rule read them before its kernel: per rank its running
    requests in admission order, then its queue's first 2B - running, with block counts."""
    G, B = sr.shape
    out = []
    for g in range(G):
        run = sorted((int(order[i]), b, int(i)) for b, i in enumerate(sr[g]) if i >= 0)
        run = [i for _, _, i in run]
        queue, i = [], head[g]
        while i >= 0:
            queue.append(int(i))
            i = nxt[i]
        wait = queue[:min(length[g], 2 * B - len(run))]
        out.append((run, [(size[i] + block - 1) // block for i in run], wait,
                    [(size[i] + block - 1) // block for i in wait]))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rank_rows_are_the_running_in_admission_order_and_the_queue_heads(seed):
    rng = np.random.default_rng(seed)
    G, B, N = 4, 5, 60
    ids = rng.permutation(N)
    sr = np.full((G, B), -1, dtype=np.int64)
    busy = rng.random((G, B)) < 0.7
    sr[busy] = ids[:busy.sum()]
    order = rng.integers(0, 8, N).astype(np.int64)  # ties: slot order decides
    prefill, generated = rng.integers(1, 700, N).astype(np.int64), rng.integers(0, 300, N).astype(np.int64)
    head, nxt, length = np.full(G, -1, dtype=np.int64), np.full(N, -1, dtype=np.int64), np.zeros(G, dtype=np.int64)
    rest = ids[busy.sum():]
    for g in range(G):
        q = rest[g::G][:rng.integers(0, 14)]
        length[g] = q.shape[0]
        if q.shape[0]:
            head[g] = q[0]
            nxt[q[:-1]] = q[1:]
    M = 2 * B
    rows = [np.zeros((G, M), np.int64) for _ in range(4)]
    n_run, n_wait = np.zeros(G, np.int64), np.zeros(G, np.int64)
    rank_rows(sr, order, prefill, generated, head, nxt, length, 128, rows[0], rows[1], n_run, rows[2], rows[3], n_wait)
    for g, (run, run_b, wait, wait_b) in enumerate(_rows_by_hand(sr, order, prefill + generated, head, nxt, length,
                                                                  128)):
        assert rows[0][g, :n_run[g]].tolist() == run and rows[1][g, :n_run[g]].tolist() == run_b
        assert rows[2][g, :n_wait[g]].tolist() == wait and rows[3][g, :n_wait[g]].tolist() == wait_b
    # the plan as requests: rank by rank, a frozen rank's ins dropped
    out_b, in_b = np.zeros((G, M), np.int64), np.zeros((G, M), np.int64)
    n_out, n_in = np.zeros(G, np.int64), np.zeros(G, np.int64)
    freeze = rng.random(G) < 0.5
    want_p, want_a = [], []
    for g in range(G):
        outs = rng.choice(rows[1][g, :n_run[g]], size=min(2, n_run[g]), replace=False) if n_run[g] else []
        ins = rows[3][g, :n_wait[g]][:2]
        n_out[g], n_in[g] = len(outs), len(ins)
        out_b[g, :n_out[g]], in_b[g, :n_in[g]] = outs, ins
        want_p += _matched(rows[0][g, :n_run[g]], rows[1][g, :n_run[g]], list(outs))
        if not freeze[g]:
            want_a += _matched(rows[2][g, :n_wait[g]], rows[3][g, :n_wait[g]], list(ins))
    paused, admitted = np.empty(G * M, np.int64), np.empty(G * M, np.int64)
    p, a = plan_requests(rows[0], rows[1], n_run, rows[2], rows[3], n_wait, out_b, n_out, in_b, n_in, freeze, paused,
                         admitted)
    assert paused[:p].tolist() == want_p and admitted[:a].tolist() == want_a


# -- the part: a paused rank admits nothing ----------------------------------------------------------

class _EveryTenth(RankPause):
    """A test rule: at routing calls at steps that are multiples of 10, with
    something running (an idle cluster lifts pauses), rank 0 is paused for ``k`` steps."""

    name = "every_tenth"
    defaults = {"k": 3}

    def __init__(self, state, policy, options=None):
        super().__init__(state, policy, options)
        self.at = []

    def run(self, dispatch):
        st = dispatch.state
        if st.step % 10 == 0 and st.step not in self.at and st.active.any():
            self.at.append(st.step)
            self.pause_rank(0, self.options["k"], st.step)
        return 0


@pytest.fixture
def toy_rule(monkeypatch):
    monkeypatch.setitem(pause_mod.RULES, "every_tenth", _EveryTenth)
    monkeypatch.setattr(pause_mod, "RANK_PAUSES", (*pause_mod.RANK_PAUSES, "every_tenth"))
    made = []
    original = pause_mod.make_pause

    def make(*args):
        made.append(original(*args))
        return made[-1]

    monkeypatch.setattr(dispatch_mod, "make_pause", make)
    return made


@pytest.mark.parametrize("k", [1, 3])
def test_a_paused_rank_admits_nothing_during_its_pause(toy_rule, k):
    work = _workload(n=300, rate=400.0, prompt=3000)  # queues long enough that rank 0 always has someone waiting
    res = simulate(work, 4, 4, "round_robin", rank_pause="every_tenth", rank_pause_options={"k": k}, **KW)
    rule = toy_rule[-1]
    r, m = res.requests, res.metrics
    starts = r.loc[r["worker"] == 0, "start_step"].to_numpy()
    windows = [(t, t + k) for t in rule.at]
    assert windows and not any(((starts >= a) & (starts < b)).any() for a, b in windows)
    assert m["rank_pauses"] == len(rule.at)
    assert m["paused_rank_steps"] == sum(min(b, res.steps) - a for a, b in windows)
    assert m["request_pauses"] == 0 and (r["pauses"] == 0).all()
    assert res.series["active"].sum() == work.decode.sum() and r["finish_s"].notna().all()
    # the check can fail: without the pause rank 0 admits inside those windows
    free = simulate(work, 4, 4, "round_robin", **KW).requests
    starts = free.loc[free["worker"] == 0, "start_step"].to_numpy()
    assert any(((starts >= a) & (starts < b)).any() for a, b in windows)


# -- DyntraLB's runs --------------------------------------------------------------------------------

def test_dyntra_lb_runs_keep_loads_and_tokens_exact(monkeypatch):
    """Every routing call ends with each rank's load its running requests' ``s_i +
    tau_i``; every token is generated once, every request finishes on the rank it
    was bound to; a paused request resumes with its first start."""
    checked = []
    original = dispatch_mod.InstantDispatch.routing_call

    def watched(self, entry):
        n = original(self, entry)
        st = self.state
        w = st.workload
        expect = np.where(st.slot_request >= 0, w.prefill[st.slot_request] + st.generated[st.slot_request], 0)
        assert np.array_equal(st.loads, expect.sum(axis=1)) and np.array_equal(st.active, (st.slot_request >= 0).sum(1))
        checked.append(n)
        return n

    monkeypatch.setattr(dispatch_mod.InstantDispatch, "routing_call", watched)
    work = _workload()
    res = simulate(work, 4, 8, "vllm_dp", rank_pause="dyntra_lb", rank_pause_options=STATIC, **KW)
    r, m = res.requests, res.metrics
    assert checked and m["request_pauses"] > 0 and m["rank_pauses"] > 0 and m["dyntra_lb_plans"] > 0
    assert m["request_pauses"] == r["pauses"].sum() and m["paused_requests"] == (r["pauses"] > 0).sum()
    assert m["paused_rank_steps"] <= m["rank_pauses"]  # one step each, the last ones cut at the run's end
    assert res.series["active"].sum() == work.decode.sum() and r["finish_s"].notna().all()
    assert (r["worker"] == r["queue_worker"]).all()
    assert (r["start_s"] >= r["arrival_s"]).all() and (r["finish_s"] > r["start_s"]).all()
    assert res.config["rank_pause"] == "dyntra_lb" and res.config["rank_pause_options"]["mode"] == "static"


def test_with_a_plan_a_rank_admits_only_what_was_planned(monkeypatch):
    """In a routing call with a plan, the dispatch's own admissions (queue heads,
    arrivals of the call) take nothing: every admission is the plan's."""
    seen = []
    original_plan, original_admit = DyntraLbPause.plan, dispatch_mod.InstantDispatch.admit
    state = {"planned": False}

    def planned(self, dispatch):
        state["planned"] = True
        return original_plan(self, dispatch)

    def admit(self):
        n = original_admit(self)
        seen.append((state["planned"], n))
        return n

    def call(self, entry, _orig=dispatch_mod.InstantDispatch.routing_call):
        state["planned"] = False
        return _orig(self, entry)

    monkeypatch.setattr(DyntraLbPause, "plan", planned)
    monkeypatch.setattr(dispatch_mod.InstantDispatch, "admit", admit)
    monkeypatch.setattr(dispatch_mod.InstantDispatch, "routing_call", call)
    simulate(_workload(), 4, 8, "vllm_dp", rank_pause="dyntra_lb", rank_pause_options=STATIC, **KW)
    assert any(p for p, _ in seen) and any(n for p, n in seen if not p)
    assert all(n == 0 for p, n in seen if p)


def test_dynamic_mode_waits_for_a_long_request():
    """Below ``long_req_block_threshold`` nothing plans: the run is the run without pauses."""
    work = _workload(prompt=20_000)  # < 700 blocks of 128 tokens
    a = simulate(work, 4, 8, "vllm_dp", **KW)
    b = simulate(work, 4, 8, "vllm_dp", rank_pause="dyntra_lb", rank_pause_options={"start_step": 0}, **KW)
    assert b.metrics["dyntra_lb_plans"] == 0 and b.metrics["rank_pauses"] == 0
    assert a.requests.equals(b.requests.drop(columns="pauses")) and a.series.equals(b.series)
    c = simulate(work, 4, 8, "vllm_dp", rank_pause="dyntra_lb",
                 rank_pause_options={"start_step": 0, "long_req_block_threshold": 100, "dynamic_max_step": 5}, **KW)
    assert 0 < c.metrics["dyntra_lb_plans"] < c.steps


def test_pauses_are_deterministic_and_off_is_the_run_as_before():
    work = _workload(n=250)
    a, b = (simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, rank_pause="dyntra_lb",
                     rank_pause_options=STATIC, **KW) for _ in range(2))
    assert a.requests.equals(b.requests) and a.series.equals(b.series) and a.metrics["request_pauses"] > 0
    c = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, **KW)
    d = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, rank_pause="none", **KW)
    assert c.requests.equals(d.requests) and c.series.equals(d.series) and c.config == d.config
    assert "pauses" not in c.requests and "rank_pauses" not in c.metrics and "rank_pause" not in c.config


def test_a_paused_request_is_never_moved(monkeypatch):
    moved = []
    original = dispatch_mod.InstantDispatch.move

    def watched(self, i, dst):
        moved.append(self.pause.times[i])
        original(self, i, dst)

    monkeypatch.setattr(dispatch_mod.InstantDispatch, "move", watched)
    res = simulate(_workload(rate=400.0), 4, 8, "random", queue_moves="sglang_balancer", rank_pause="dyntra_lb",
                   rank_pause_options=STATIC, **KW)
    assert moved and not any(moved) and res.metrics["request_pauses"] > 0


# -- errors name the option ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"rank_pause": "freeze"}, "rank_pause: must be one of none, dyntra_lb"),
    ({"rank_pause": "dyntra_lb", "dispatch": "central"}, "rank_pause: 'dyntra_lb' .*only dispatch 'instant'"),
    ({"rank_pause_options": {"mode": "static"}}, "rank_pause_options: .*without a pause rule"),
    ({"rank_pause": "dyntra_lb", "rank_pause_options": {"bubble": 2}}, "rank_pause_options: unknown option.* bubble"),
    ({"rank_pause": "dyntra_lb", "rank_pause_options": {"bubble_threshold": 0}},
     "rank_pause_options: bubble_threshold of 'dyntra_lb' must be > 0"),
    ({"rank_pause": "dyntra_lb", "rank_pause_options": {"mode": "always"}}, "rank_pause_options: mode"),
    ({"rank_pause": "dyntra_lb", "rank_pause_options": {"start_step": 2.5}},
     "rank_pause_options: start_step of 'dyntra_lb' must be a whole number"),
    ({"rank_pause": "dyntra_lb", "rank_pause_options": {"start_step": 10, "end_step": 5}},
     "rank_pause_options: end_step"),
    ({"rank_pause": "dyntra_lb", "prefill": "kv"}, "rank_pause: 'dyntra_lb' .*prefill model"),
])
def test_bad_pause_options_are_refused_by_name(kwargs, message):
    from bfio.engine.prefill import PrefillModel

    kw = {**KW, **kwargs}
    if kw.get("prefill") == "kv":
        kw["prefill"] = PrefillModel(kv_tokens=100_000)
    with pytest.raises(ConfigError, match=message):
        simulate(_workload(n=20), 2, 4, "vllm_dp", **kw)


def test_run_spec_records_pauses_only_when_on():
    with pytest.raises(ConfigError, match="rank_pause"):
        RunSpec("longbench", 10, 2, 4, "vllm_dp", 0, rank_pause="dyntra_lb")
    spec = RunSpec("longbench", 10, 2, 4, "vllm_dp", 0, dispatch="instant", rank_pause="dyntra_lb",
                   rank_pause_options=(("bubble_threshold", 50.0),))
    assert spec.ident()["rank_pause"] == "dyntra_lb" and spec.ident()["pause_bubble_threshold"] == 50.0
    assert "rank_pause" not in RunSpec("longbench", 10, 2, 4, "vllm_dp", 0).ident()


def test_simulate_cli_pauses_and_names_its_flags(data_dir, capsys):
    from bfio.cli import main

    base = ["simulate", "--trace", "burstgpt", "--requests", "300", "--workers", "4", "--slots", "4", "--policy",
            "vllm_dp", "--dispatch", "instant", "--arrival-mode", "poisson", "--arrival-rate", "400",
            "--data-dir", str(data_dir)]
    on = ["--rank-pause", "dyntra_lb", "--rank-pause-option", "mode=static", "--rank-pause-option", "start_step=0"]
    assert main(base + on + ["--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dyntra_lb_plans"] > 0 and out["rank_pause"] == "dyntra_lb"
    assert main(base + ["--json", "-"]) == 0
    assert "rank_pause" not in json.loads(capsys.readouterr().out)
    assert main(base + on + ["--rank-pause-option", "bubble_threshold=-1"]) != 0
    assert "--rank-pause-option: bubble_threshold" in capsys.readouterr().err
    assert main(base + ["--rank-pause-option", "oops"]) != 0
    assert "--rank-pause-option: expected KEY=VALUE" in capsys.readouterr().err
    assert main([a if a != "instant" else "central" for a in base] + on) != 0
    assert "--rank-pause: " in capsys.readouterr().err


@pytest.mark.parametrize("options", [STATIC, {"start_step": 0, "long_req_block_threshold": 150, "dynamic_max_step": 3}])
def test_pauses_run_the_same_with_and_without_fast_forward(options):
    """The loop runs steps without routing calls only while the rule is quiet
    (``InstantDispatch.quiet``): the plain step loop gives the same run."""
    work = _workload(n=200, rate=8.0)  # idle spells: new waves, dynamic mode switching off and on
    a, b = (simulate(work, 4, 8, "vllm_dp", rank_pause="dyntra_lb", rank_pause_options=options, fast_forward=ff,
                     **KW) for ff in (True, False))
    assert a.requests.equals(b.requests) and a.series.equals(b.series)
    assert a.metrics["dyntra_lb_plans"] == b.metrics["dyntra_lb_plans"] > 0
