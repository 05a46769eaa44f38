"""Issue 45's actions in one run (queue moves, rank pauses, migrations): on small
random runs (hypothesis) every request finishes, every output token is emitted
once, each action's counts add up to its per-request column, a request is never
both moved and migrated (or re-queued by the migration rule) in one routing call,
a paused request is never migrated, and a run is deterministic."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from bfio.engine.prefill import PrefillModel
from bfio.sim.migration import BfioMigration, Migration
from bfio.sim.moves import QueueMoves
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)
STATIC = {"mode": "static", "start_step": 0}


def _workload(n, rate, seed):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, 20_000, n), rng.integers(1, 120, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


def _watched(monkeypatch):
    """Per routing call, the requests the queue moves moved and those the migration
    rule migrated or re-queued, and the paused requests it migrated."""
    moved, taken, paused = {}, {}, []
    run, migrate, requeue = QueueMoves.run, Migration.migrate, Migration.requeue

    def moves_run(self, dispatch):
        before = self.times.copy()
        n = run(self, dispatch)
        moved.setdefault(dispatch.calls, set()).update(np.flatnonzero(self.times != before).tolist())
        return n

    def watch(original):
        def acted(self, dispatch, i, dst, *sent):
            taken.setdefault(dispatch.calls, set()).add(int(i))
            if dispatch.pause is not None and dispatch.pause.times[i]:
                paused.append(int(i))
            original(self, dispatch, i, dst, *sent)
        return acted

    monkeypatch.setattr(QueueMoves, "run", moves_run)
    monkeypatch.setattr(Migration, "migrate", watch(migrate))
    monkeypatch.setattr(Migration, "requeue", watch(requeue))
    return moved, taken, paused


def _check(res, work, moved, taken, paused):
    r, m = res.requests, res.metrics
    assert r["finish_s"].notna().all() and res.series["completions"].sum() == len(work)
    assert res.series["active"].sum() == work.decode.sum()  # every output token once
    if "moves" in r:
        assert m["queue_move_count"] == r["moves"].sum() and m["queue_moved_requests"] == (r["moves"] > 0).sum()
    if "pauses" in r:
        assert m["request_pauses"] == r["pauses"].sum() and m["paused_requests"] == (r["pauses"] > 0).sum()
    assert m["migrations"] == r["migrations"].sum() and m["migrated_requests"] == (r["migrations"] > 0).sum()
    for call, ids in taken.items():
        assert not ids & moved.get(call, set()), call
    assert not paused


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), G=st.integers(2, 4), B=st.integers(2, 6), rate=st.sampled_from([40.0, 200.0]),
       moves=st.sampled_from(["sglang_balancer", "bfio"]), pause=st.booleans(),
       rule=st.sampled_from(["roll", "bfio"]), queued=st.integers(0, 1))
def test_every_action_on_in_one_run_composes(monkeypatch, seed, G, B, rate, moves, pause, rule, queued):
    """Transfers (the pause rule refuses the prefill model)."""
    work = _workload(60, rate, seed)
    options = {"kv": "transfer", **({"threshold": 1, "freeze_s": 0.0} if rule == "roll" else
                                    {"cost_weight": 0.0, "evaluations": 4, "per_rank": 2, "queued": queued})}
    kw = dict(queue_moves=moves, migration=rule, migration_options=options, **KW)
    if pause:
        kw.update(rank_pause="dyntra_lb", rank_pause_options={**STATIC, "bubble_threshold": 2.0})
    moved, taken, paused = _watched(monkeypatch)
    res = simulate(work, G, B, "bfio", policy_options={"horizon": 20}, **kw)
    _check(res, work, moved, taken, paused)
    again = simulate(work, G, B, "bfio", policy_options={"horizon": 20}, **kw)
    assert again.requests.equals(res.requests) and again.series.equals(res.series)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), rule=st.sampled_from(["roll", "bfio"]))
def test_queue_moves_and_recomputed_migrations_compose(monkeypatch, seed, rule):
    """With the prefill model (recompute; no pause rule there)."""
    work = _workload(60, 20.0, seed)
    options = {"threshold": 1, "freeze_s": 0.0} if rule == "roll" else \
        {"cost_weight": 0.0, "evaluations": 4, "per_rank": 2}
    moved, taken, paused = _watched(monkeypatch)
    res = simulate(work, 3, 4, "bfio", policy_options={"horizon": 20}, prefill=PrefillModel(),
                   queue_moves="bfio", migration=rule, migration_options={"kv": "recompute", **options}, **KW)
    _check(res, work, moved, taken, paused)


def test_the_actions_act_together():
    """A run where all three act (not a vacuous composition)."""
    work = _workload(200, 200.0, 11)
    res = simulate(work, 4, 4, "bfio", policy_options={"horizon": 20}, queue_moves="sglang_balancer",
                   rank_pause="dyntra_lb", rank_pause_options={**STATIC, "bubble_threshold": 2.0}, migration="bfio",
                   migration_options={"kv": "transfer", "cost_weight": 0.0, "evaluations": 4, "per_rank": 2}, **KW)
    m = res.metrics
    assert m["queue_move_count"] > 0 and m["request_pauses"] > 0 and m["migrations"] > 0



def test_the_screen_reads_the_eligible_running_requests_as_eligible_does(monkeypatch):
    """BfioMigration.candidates with eligibility (the screened kernel) is the screen of
    every running request and'ed with Migration.eligible, at every routing call of a
    run where queue moves and pauses act."""
    seen = []
    original = BfioMigration.candidates

    def checked(self, dispatch, offsets=None, eligible=False):
        got = original(self, dispatch, offsets, eligible)
        if eligible:
            every = original(self, dispatch, offsets)
            ok = self.eligible(dispatch)
            assert np.array_equal(got, every & ok)
            seen.append(bool((every & ~ok).any()))
        return got

    monkeypatch.setattr(BfioMigration, "candidates", checked)
    work = _workload(200, 200.0, 11)
    simulate(work, 4, 4, "bfio", policy_options={"horizon": 20}, queue_moves="sglang_balancer",
             rank_pause="dyntra_lb", rank_pause_options={**STATIC, "bubble_threshold": 2.0}, migration="bfio",
             migration_options={"kv": "transfer", "cost_weight": 0.0, "evaluations": 4, "per_rank": 2}, **KW)
    assert seen and any(seen)  # some call screened out a running request that could pay but was not eligible


def test_the_transfer_screen_kernel_is_the_floor_and_bound_of_the_kv_way(monkeypatch):
    """With kv transfer and no prefill model the screen runs in transfer_screen: at every
    routing call its floors and passes are, float for float, those of KvWay.transfer_floor,
    BfioMigration.floor and the policy's migration_bound (the NumPy path)."""
    calls = []
    original = BfioMigration.candidates

    def checked(self, dispatch, offsets=None, eligible=False):
        got = original(self, dispatch, offsets, eligible)
        st = dispatch.state
        ids = st.slot_request[st.slot_request >= 0]
        ids = ids[self.times[ids] == 0]
        if eligible:
            ids = ids[self.eligible(dispatch)[ids]]
        sizes = (st.workload.prefill[ids] + st.generated[ids]).astype(np.float64)
        t_l = float(self.token_latency_s)
        floor = self.floor(dispatch, sizes, st.generated[ids].astype(np.float64), None,
                           self.kv.transfer_floor(dispatch, sizes, None, t_l, offsets))
        bound = self.policy.migration_bound(sizes, st.workers, self.options["horizon"])
        assert np.array_equal(self.floors[ids], floor) and np.array_equal(got[ids], bound > floor)
        assert got.sum() == (bound > floor).sum()
        calls.append(int(got.sum()))
        return got

    monkeypatch.setattr(BfioMigration, "candidates", checked)
    work = _workload(300, 200.0, 5)
    res = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, queue_moves="bfio", migration="bfio",
                   migration_options={"kv": "transfer", "transfer_gbps": 3600.0, "cost_weight": 4.0,
                                      "evaluations": 4, "per_rank": 2}, **KW)
    assert calls and any(calls) and not all(calls)  # some requests pass, some calls screen every one out
    assert res.metrics["migrations"] > 0
