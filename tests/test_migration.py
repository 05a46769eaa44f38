"""Migrating running requests (issue 45, bfio.sim.migration): ROLL PR #134's
rule (signal, half the spread, queued first then shortest running, least loaded
destination, freeze), the KV freed on the source and recomputed or transferred
on the destination with its time charged, requests and tokens conserved, the
counts, runs with migration off unchanged, and the errors that name the option."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.engine.prefill import Prefill, PrefillModel
from bfio.runs.run import RunSpec
from bfio.sim import dispatch as dispatch_mod
from bfio.sim import transfer as transfer_mod
from bfio.sim.dispatch import InstantDispatch
from bfio.sim.migration import ROLL_DEFAULTS, RollMigration
from bfio.sim.state import ClusterState
from bfio.sim.transfer import KvTransfer
from bfio.simulator import simulate
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)
TRANSFER = {"kv": "transfer", "threshold": 2, "freeze_s": 0.0}  # low bars: many migrations in a small run
RECOMPUTE = {"threshold": 2, "freeze_s": 0.0}


def _workload(n=400, rate=60.0, seed=3, prompt=40_000):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, prompt, n), rng.integers(1, 120, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


def _cluster(bound, prompts, B=6, generated=None, prefill=None, options=None):
    """An instant dispatch part with ROLL's rule (its defaults over ``options``):
    requests ``0..`` bound to ``bound`` in order, each rank's first ``B`` seated."""
    G = max(bound) + 1
    work = Workload(np.asarray(prompts, dtype=np.int64), np.full(len(prompts), 1000, dtype=np.int64))
    st = ClusterState.empty(work, G, B)
    chunked = None if prefill is None else Prefill(prefill, work, G, B)
    opts = {**ROLL_DEFAULTS, "kv": "transfer" if prefill is None else "recompute", **(options or {})}
    d = InstantDispatch(st, make_policy("jsq_requests"), chunked, 1e-4, migration="roll", migration_options=opts)
    for i, g in enumerate(bound):
        d._append(i, g)
    d.queued = len(bound)
    d.admit()
    if generated is not None:
        st.generated[:] = generated
        st.loads[:] = np.where(st.slot_request >= 0, work.prefill[st.slot_request] + st.generated[st.slot_request],
                               0).sum(axis=1)
    return d


# -- ROLL's rule ---------------------------------------------------------------------------------------

def test_roll_interrupts_half_the_spread_waiting_first_to_the_least_loaded():
    # rank 0: 6 running + 4 queued = 10 in flight; ranks 1-3: 2 each; spread 8 -> 4 interrupted
    d = _cluster([0] * 10 + [1, 1, 2, 2, 3, 3], [100] * 16, options={"threshold": 2})
    queued = d.queue(0)
    assert d.migration.run(d) == 4
    m = d.migration
    assert m.count == 0 and m.queue_moves == 4 and m.interruptions == 1  # the queue covers all four
    # re-sent one at a time to the fewest in flight, lowest rank on ties: 1, 2, 3, then 1 again
    assert [int(d.queue_worker[i]) for i in queued] == [1, 2, 3, 1]
    assert d.queue(0) == [] and d.length.tolist() == [0, 2, 1, 1] and d.state.active.tolist() == [6, 2, 2, 2]


def test_roll_then_takes_the_running_requests_with_the_fewest_tokens():
    # rank 0: 6 running (prompts 900, 500, 700, 500, 300, 800) + 1 queued; ranks 1, 2: 1 each; spread 6 -> 3
    prompts = [900, 500, 700, 500, 300, 800, 50, 60, 70]
    generated = np.array([0, 0, 0, 0, 250, 0, 0, 0, 0])  # request 4: 300 + 250 = 550 tokens
    d = _cluster([0] * 7 + [1, 2], prompts, generated=generated, options={"threshold": 2})
    load0 = int(d.state.loads[0])
    assert d.migration.run(d) == 3
    # the queued one (6), then the shortest running: 1 and 3 (500 tokens, admission order), not 4 (550)
    assert d.migration.queue_moves == 1 and d.migration.count == 2
    assert d.migration.times.nonzero()[0].tolist() == [1, 3]
    assert 1 not in d.state.slot_request[0] and 3 not in d.state.slot_request[0]
    assert d.state.loads[0] == load0 - 1000  # the KV of 1 and 3 left the source
    assert d.state.active[0] == 4 and d.queued == 3
    assert {int(d.queue_worker[i]) for i in (1, 3, 6)} == {1, 2}


@pytest.mark.parametrize("bound, threshold, acts", [
    ([0] * 4 + [1], 2, True),    # 4 vs 1: spread 3 >= 2, half of it 1
    ([0] * 4 + [1], 4, False),   # spread 3 < threshold 4
    ([0] * 2 + [1], 1, False),   # spread 1: half of it is 0, nothing to interrupt
])
def test_roll_acts_only_at_its_threshold(bound, threshold, acts):
    d = _cluster(bound, [100] * len(bound), B=6, options={"threshold": threshold})
    assert bool(d.migration.run(d)) is acts


def test_roll_freezes_after_an_interruption():
    d = _cluster([0] * 8 + [1], [100] * 9, options={"threshold": 2, "freeze_s": 3.0})
    st = d.state
    st.clock = 10.0
    assert d.migration.run(d) > 0
    for i in d.queue(1):  # undo: every interrupted request back on rank 0 (8 in flight against 1)
        d.move(i, 0)
    st.clock = 13.0  # 3 s later: still frozen (the source's test is now - last > freeze)
    assert d.migration.run(d) == 0
    st.clock = 13.0 + 1e-9
    assert d.migration.run(d) > 0 and d.migration.interruptions == 2


# -- the KV: freed on the source, recomputed or transferred on the destination -----------------------

def test_a_recomputed_migration_frees_the_source_and_prefills_again_on_the_destination():
    d = _cluster([0] * 6 + [1], [1000] * 7, prefill=PrefillModel(chunk_tokens=4096), options={"threshold": 2})
    st, pf = d.state, d.prefill
    pf.left[:] = 0  # every prompt computed
    st.loads[:] = [6000, 1000]
    pf.reserve[:] = 0
    st.generated[:6] = [40, 30, 20, 10, 5, 50]  # request 4 has the fewest tokens
    st.loads[0] += 155
    assert d.migration.run(d) == 2  # spread 5 -> 2: requests 4 (1005 tokens) and 3 (1010)
    assert st.loads[0] == 6155 - 1005 - 1010 and pf.reserve[0] == 0
    assert d.queue(1) == [4, 3]
    d.admit()  # rank 1 has free slots: both are seated there and recompute prompt + generated
    assert st.worker_of[[3, 4]].tolist() == [1, 1]
    assert pf.left[4] == 1005 and pf.left[3] == 1010
    assert d.migration.metrics()["migration_recomputed_tokens"] == 2015 == pf.recomputed_tokens
    assert st.generated[[3, 4]].tolist() == [10, 5]  # its output so far is kept


def test_a_transfer_is_charged_beyond_the_destinations_slack_only():
    t = KvTransfer(3, gbps=8.0, bytes_per_token=1000)  # 1e9 bytes/s: 1e6 tokens a second
    t.arrive(np.array([2]), np.array([500_000]))  # 0.5 s into rank 2
    assert t.pending.tolist() == [0.0, 0.0, 0.5]
    assert t.charge(np.array([1.0, 0.7, 0.4])) == 0.0  # within rank 2's slack: 0.4 + 0.5 < 1.0
    t.arrive(np.array([2]), np.array([300_000]))
    assert t.charge(np.array([1.0, 0.7, 0.9])) == pytest.approx(0.2)  # 0.9 + 0.3 - 1.0
    assert t.pending.sum() == 0 and t.count == 2 and t.tokens == 800_000
    assert t.waited == pytest.approx(0.2) and t.seconds == pytest.approx(0.8)


def test_transfer_runs_charge_the_step_and_keep_the_records_consistent(monkeypatch):
    charged = []
    original = transfer_mod.KvTransfer.charge

    def watched(self, shares):
        extra = original(self, shares)
        charged.append(extra)
        return extra

    monkeypatch.setattr(transfer_mod.KvTransfer, "charge", watched)
    work = _workload(rate=120.0)
    res = simulate(work, 4, 8, "round_robin", migration="roll", migration_options=TRANSFER, **KW)
    m, r, s = res.metrics, res.requests, res.series
    assert m["migrations"] > 0 and any(e > 0 for e in charged)
    assert m["migration_transfer_wait_s"] == pytest.approx(sum(charged)) and sum(charged) > 0
    assert m["migration_transfers"] == m["migrations"]  # every migrated request is seated again once
    link = ROLL_DEFAULTS["transfer_gbps"] * 1e9 / 8 / ROLL_DEFAULTS["kv_bytes_per_token"]  # tokens a second
    assert m["migration_transfer_s"] == pytest.approx(m["migration_transfer_tokens"] / link)
    # the charged steps' clock, dt and completions agree: a step ends at the clock of its row, a step
    # starts where the last one ended or later (an idle jump), and the jumps are the run's idle time
    clock, dt = s["clock"].to_numpy(), s["dt"].to_numpy()
    jumps = np.diff(clock) - dt[1:]
    assert (jumps > -1e-9).all() and clock[0] - dt[0] + jumps.sum() == pytest.approx(m["idle_s_run"])
    assert np.array_equal(r["finish_s"].to_numpy(), clock[r["finish_step"].to_numpy() - 1])
    assert np.allclose(s["energy_post"], s["power_mean_post"] * 4 * dt)


def test_a_calibrated_step_charges_a_transfer_beyond_the_rank_costs(data_dir, monkeypatch):
    """With the calibrated step a rank's share is its ``rank_cost(L_g, n_g, 0)``:
    a charged step lasts ``dt + max(0, max_g (share_g + X_g) - max_g share_g)``."""
    from bfio.step_model import StepModel

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    seen = []
    original = transfer_mod.TransferEngine.run

    def run(self, state, until):
        pending, loads, active = self.transfer.pending.copy(), state.loads.copy(), state.active.copy()
        done = original(self, state, until)
        if pending.any():
            seen.append((pending, loads, active, self.inner.series.arrays()["dt"][-1]))
        return done

    monkeypatch.setattr(transfer_mod.TransferEngine, "run", run)
    step = StepModel("calibrated")
    c = step.coefficients(data_dir)
    res = simulate(_workload(rate=20.0), 4, 8, "round_robin", step_model=step, migration="roll",
                   migration_options=TRANSFER, **KW)
    assert seen and res.metrics["migration_transfer_wait_s"] > 0
    for pending, loads, active, dt in seen:
        shares = c.alpha + c.a_kv * loads + c.a_n * active
        plain = shares.max() + c.beta * active.max() + c.comm
        assert dt == pytest.approx(plain + max(0.0, (shares + pending).max() - shares.max()), rel=1e-9)


# -- whole runs: conservation, counts, exact loads ----------------------------------------------------

@pytest.mark.parametrize("options, prefill", [(TRANSFER, None), (RECOMPUTE, PrefillModel()),
                                              (TRANSFER, PrefillModel())])
def test_migrated_requests_finish_once_with_all_their_tokens(monkeypatch, options, prefill):
    """Every routing call ends with each rank's load its running requests' resident
    tokens; every request finishes once, with its ``o_i`` tokens; the counts add up."""
    checked, migrated, starts = [], [], {}
    original, original_migrate = dispatch_mod.InstantDispatch.routing_call, dispatch_mod.InstantDispatch.migrate

    def watched(self, entry):
        n = original(self, entry)
        st, w = self.state, self.state.workload
        ids = np.where(st.slot_request >= 0, st.slot_request, 0)
        left = 0 if self.prefill is None else self.prefill.left[ids]
        expect = np.where(st.slot_request >= 0, w.prefill[ids] + st.generated[ids] - left, 0).sum(axis=1)
        assert np.array_equal(st.loads, expect)
        checked.append(n)
        return n

    def migrate(self, i, dst, sent):
        held = self.prefill is None or self.prefill.sent_tokens(np.array([i]), self.state.generated)[0] > 0
        migrated.append((i, int(self.state.worker_of[i]), dst, int(self.state.generated[i]), held))
        starts.setdefault(i, self.state.start[i])
        return original_migrate(self, i, dst, sent)

    monkeypatch.setattr(dispatch_mod.InstantDispatch, "routing_call", watched)
    monkeypatch.setattr(dispatch_mod.InstantDispatch, "migrate", migrate)
    work = _workload(rate=20.0)
    res = simulate(work, 4, 8, "round_robin", migration="roll", migration_options=options, prefill=prefill, **KW)
    r, m = res.requests, res.metrics
    assert sum(t > 0 for *_, t, _ in migrated) >= 5  # requests that had generated tokens moved
    assert checked and migrated and m["migrations"] == len(migrated) == r["migrations"].sum()
    assert m["migrated_requests"] == (r["migrations"] > 0).sum() and m["migration_interruptions"] > 0
    assert r["finish_s"].notna().all() and len(set(res.series.index)) == res.steps
    assert res.series["completions"].sum() == len(work)
    assert res.series["active"].sum() == work.decode.sum()  # output tokens: each generated once
    moved = r.loc[r["migrations"] > 0]
    assert moved["start_s"].to_dict() == starts  # its start is its first admission's
    assert (moved["start_s"] >= moved["arrival_s"]).all() and (moved["finish_s"] > moved["start_s"]).all()
    free = [i for i, *_, held in migrated if not held]  # it held no KV: nothing recomputed (migration_kv)
    assert m["migration_free"] == len(free)
    if "kv" not in options:  # what was recomputed: each migrated request's prompt and output so far
        assert m["migration_recomputed_tokens"] == sum(work.prefill[i] + t for i, _, _, t, held in migrated if held)
        assert m["migration_recomputes"] + m["migration_free"] == m["migrations"]
        # the prefill model counts a free one's prompt, computed on its new rank, among its recomputed tokens
        assert m["recomputed_tokens"] == m["migration_recomputed_tokens"] + int(work.prefill[free].sum())
    assert res.config["migration"] == "roll" and res.config["migration_options"]["kv"] == options.get("kv",
                                                                                                        "recompute")


def test_the_roll_baseline_moves_load_off_a_rank_that_took_too_much():
    """Every request sent to rank 0 (the PR's own demonstration): ROLL's rule
    spreads them, so the run ends sooner than without it."""
    class _Rank0(type(make_policy("round_robin"))):
        name = "rank0"

        def select(self, state, requests):
            return np.zeros(requests.shape[0], dtype=np.int64)

    work = _workload(n=200, rate=400.0, prompt=3000)
    a = simulate(work, 4, 8, _Rank0(), **KW)
    b = simulate(work, 4, 8, _Rank0(), migration="roll", migration_options=TRANSFER, **KW)
    assert (a.requests["worker"] == 0).all() and (b.requests["worker"] != 0).any()
    assert b.metrics["migration_queue_moves"] > 0 and b.metrics["throughput_run"] > a.metrics["throughput_run"]


def test_migrations_are_deterministic_and_off_is_the_run_as_before():
    work = _workload(n=250)
    a, b = (simulate(work, 4, 8, "vllm_dp", migration="roll", migration_options=TRANSFER, **KW) for _ in range(2))
    assert a.requests.equals(b.requests) and a.series.equals(b.series) and a.metrics["migration_interruptions"] > 0
    c = simulate(work, 4, 8, "vllm_dp", **KW)
    d = simulate(work, 4, 8, "vllm_dp", migration="none", **KW)
    assert c.requests.equals(d.requests) and c.series.equals(d.series) and c.config == d.config
    assert "migrations" not in c.requests and "migrations" not in c.metrics and "migration" not in c.config


def test_migrations_run_the_same_with_and_without_fast_forward():
    work = _workload(n=200, rate=8.0)  # idle spells
    a, b = (simulate(work, 4, 8, "vllm_dp", migration="roll", migration_options=TRANSFER, fast_forward=ff, **KW)
            for ff in (True, False))
    assert a.requests.equals(b.requests) and a.series.equals(b.series)


# -- errors name the option -------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"migration": "llumnix"}, "migration: must be one of none, roll"),
    ({"migration": "roll", "dispatch": "central", "prefill": "on"}, "migration: 'roll' .*only dispatch 'instant'"),
    ({"migration_options": {"threshold": 3}}, "migration_options: .*without a migration rule"),
    ({"migration": "roll", "migration_options": {"freeze": 2}}, "migration_options: unknown option.* freeze"),
    ({"migration": "roll", "migration_options": {"threshold": 0}, "prefill": "on"},
     "migration_options: threshold of 'roll' must be >= 1"),
    ({"migration": "roll", "migration_options": {"threshold": 2.5}}, "migration_options: threshold of 'roll' must "
                                                                      "be a whole number"),
    ({"migration": "roll", "migration_options": {"freeze_s": -1}, "prefill": "on"}, "migration_options: freeze_s"),
    ({"migration": "roll", "migration_options": {"kv": "copy"}}, "migration_options: kv of 'roll' must be one of"),
    ({"migration": "roll"}, "migration_options: kv 'recompute' .*prefill model"),
    ({"migration": "roll", "migration_options": {"kv": "choose"}, "prefill": "on"},
     "migration_options: kv 'choose' weighs .* rule 'roll' weighs no cost"),
    ({"migration": "roll", "migration_options": {"transfer_gbps": 100}, "prefill": "on"},
     "migration_options: transfer_gbps apply to kv 'transfer'"),
    ({"migration": "roll", "migration_options": {"kv": "transfer", "transfer_gbps": 0}},
     "migration_options: transfer_gbps of 'roll' must be > 0"),
])
def test_bad_migration_options_are_refused_by_name(kwargs, message):
    kw = {**KW, **kwargs}
    if kw.get("prefill") == "on":
        kw["prefill"] = PrefillModel()
    with pytest.raises(ConfigError, match=message):
        simulate(_workload(n=20), 2, 4, "vllm_dp", **kw)


def test_run_spec_records_migrations_only_when_on():
    with pytest.raises(ConfigError, match="migration"):
        RunSpec("longbench", 10, 2, 4, "vllm_dp", 0, migration="roll")
    spec = RunSpec("longbench", 10, 2, 4, "vllm_dp", 0, dispatch="instant", migration="roll",
                   migration_options=(("kv", "transfer"), ("threshold", 4)))
    assert spec.ident()["migration"] == "roll" and spec.ident()["migrate_threshold"] == 4
    assert "migration" not in RunSpec("longbench", 10, 2, 4, "vllm_dp", 0).ident()


def test_simulate_cli_migrates_and_names_its_flags(data_dir, capsys):
    from bfio.cli import main

    base = ["simulate", "--trace", "burstgpt", "--requests", "300", "--workers", "4", "--slots", "4", "--policy",
            "round_robin", "--dispatch", "instant", "--arrival-mode", "poisson", "--arrival-rate", "400",
            "--data-dir", str(data_dir)]
    on = ["--migration", "roll", "--migration-option", "kv=transfer", "--migration-option", "threshold=2"]
    assert main(base + on + ["--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["migration_interruptions"] > 0 and out["migration"] == "roll"
    assert main(base + on) == 0
    assert "migrations (roll):" in capsys.readouterr().out
    assert main(base + ["--json", "-"]) == 0
    assert "migration" not in json.loads(capsys.readouterr().out)
    assert main(base + on + ["--migration-option", "freeze_s=-1"]) != 0
    assert "--migration-option: freeze_s" in capsys.readouterr().err
    assert main(base + ["--migration", "roll"]) != 0  # kv recompute without the prefill model
    assert "--migration-option: kv 'recompute'" in capsys.readouterr().err
    assert main(base + ["--migration-option", "oops"]) != 0
    assert "--migration-option: expected KEY=VALUE" in capsys.readouterr().err
    assert main([a if a != "instant" else "central" for a in base] + on) != 0
    assert "--migration: " in capsys.readouterr().err
