"""BF-IO's own migrations (issue 45, ``migration = bfio``, bfio.sim.migration):
the planner migrates a running request exactly when the drop of ``J`` exceeds its
cost (hand-built states on both sides of the boundary), never with an infinite
cost or into a wait, the KV cost of a transfer and of a recompute in ``J``'s units,
whole runs conserve requests and tokens, are deterministic, equal the run
without the rule when nothing can pay, and the errors name the option."""

from __future__ import annotations

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.engine.prefill import PrefillModel
from bfio.sim.dispatch import InstantDispatch
from bfio.sim.migration import BFIO_DEFAULTS, MIGRATIONS, RULES
from bfio.sim.state import ClusterState
from bfio.simulator import simulate
from bfio.solvers.migration_plan import MigrationCost, plan_migrations
from bfio.solvers.objective import ObjectiveTerms, imbalance_objective
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)
H = 10


def _fixed(value):
    """A cost of ``value`` on either rank, whatever the request."""
    return MigrationCost(fixed=lambda ids: np.full((len(ids), 2), value))


def _plan(cost, release1=(0, 0, 0), sizes=(1000, 1000), remaining=(50, 50), budget=1):
    """Rank 0 runs two requests (``sizes``, ``remaining`` steps each), rank 1 runs
    nothing (its slots' release offsets ``release1``); nothing is queued; ``J``
    undiscounted over ``0..H``; ``cost`` a :class:`MigrationCost`."""
    terms = ObjectiveTerms.build(H, 1.0, "persist", fast=True)
    h = np.arange(H + 1)
    held, rem = np.array(sizes), np.array(remaining)
    base = np.zeros((2, H + 1))
    for s, r in zip(held, rem):
        base[0] += np.where(h < r, s + h, 0)
    n = len(sizes)
    B = max(n + 1, len(release1))
    slots = np.full((2, B), -1)
    slots[0, :n] = np.arange(n)
    remaining = np.zeros((2, B), dtype=np.int64)
    remaining[0, :n] = rem
    remaining[1, :len(release1)] = release1  # rank 1's own requests (not movable) or free slots
    held_slots = np.zeros((2, B), dtype=np.int64)
    held_slots[0, :n] = held
    queues = (np.zeros(3, dtype=np.int64), np.zeros(0, dtype=np.int64))
    none = np.zeros(0, dtype=np.int64)
    return plan_migrations(base, remaining, queues, none, none, slots, held_slots, slots >= 0, terms, cost, budget,
                           n), base, terms


def _gain(base, terms):
    """What moving request 0 (its profile) from rank 0 to rank 1 lowers ``J`` by."""
    h = np.arange(H + 1)
    moved = np.where(h < 50, 1000 + h, 0)
    after = np.stack([base[0] - moved, base[1] + moved])
    return imbalance_objective(base, terms.weights) - imbalance_objective(after, terms.weights)


def test_a_migration_that_pays_is_planned_and_one_that_does_not_is_not():
    _, base, terms = _plan(_fixed(0.0))
    gain = _gain(base, terms)
    assert gain > 0
    assert _plan(_fixed(0.0))[0] == [(0, 1, False)]
    assert _plan(_fixed(gain * (1 - 1e-6)))[0] == [(0, 1, False)]
    assert _plan(_fixed(gain * (1 + 1e-6)))[0] == []  # cost exceeds the gain
    assert _plan(_fixed(np.inf))[0] == []


def test_the_planner_sees_its_own_earlier_migrations():
    """Three equal requests on rank 0: after one moves, moving a second would only
    swap the ranks' loads, so the later evaluations move nothing more."""
    three = dict(sizes=(1000, 1000, 1000), remaining=(50, 50, 50), budget=3)
    assert _plan(_fixed(0.0), **three)[0] == [(0, 1, False)]


def test_a_running_request_is_not_migrated_into_a_wait():
    """Rank 1 has no free slot (its slots free in 5 steps): the request would wait, so
    nothing moves even at no cost."""
    assert _plan(_fixed(0.0), release1=(5, 5, 5))[0] == []


def _dispatch(kv="transfer", loads=(900_000, 100_000), options=None):
    """An instant dispatch part with BF-IO's migrations over two ranks, request 0
    (20,000 tokens) running on rank 0 beside loads ``loads``."""
    work = Workload(np.array([20_000, 880_000, 100_000]), np.array([100, 100, 100]))
    st = ClusterState.empty(work, 2, 4)
    prefill = PrefillModel() if kv == "recompute" else None
    from bfio.engine.prefill import Prefill

    chunked = None if prefill is None else Prefill(prefill, work, 2, 4)
    d = InstantDispatch(st, make_policy("bfio", horizon=20), chunked, 1e-7, migration="bfio",
                        migration_options={**{k: v for k, v in BFIO_DEFAULTS.items() if k in ("kv",)}, "kv": kv,
                                           **(options or {})})
    for i, g in enumerate((0, 0, 1)):
        d._append(i, g)
    d.queued = 3
    d.admit()
    d.migration.token_latency_s = 1e-7
    st.loads[:] = loads
    return d


def test_a_transfer_costs_what_the_barrier_waits_in_rank_seconds():
    d = _dispatch()
    m = d.migration
    x = m.transfer.seconds_of(np.array([20_000.0]))[0]  # 20,000 tokens over the link
    loads = np.array([[880_000.0], [100_000.0]])  # without request 0
    cost = m.cost(0, loads, [])
    # on rank 1: share 1e-7 (100,000 + 20,000) + x against the top 1e-7 x 880,000
    stall = max(0.0, 1e-7 * 120_000 + x - 1e-7 * 880_000)
    assert cost[1] == pytest.approx(2 * stall / 1e-7)
    assert cost[0] == pytest.approx(2 * x / 1e-7)  # back on the slowest rank: all of it
    # a transfer hidden in the destination's slack costs nothing
    assert m.cost(0, np.array([[880_000.0], [0.0]]), [])[1] == pytest.approx(2 * max(0.0, 2e-3 + x - 0.088) / 1e-7)
    # the call's earlier migrations to the same rank are pending too
    assert m.cost(0, loads, [(2, 1)])[1] > cost[1]
    # the floor bounds the cost from below
    assert m.floor(d, np.array([20_000.0]))[0] <= cost.min() + 1e-9


def test_a_recompute_costs_its_tokens_through_the_prefill_model():
    d = _dispatch("recompute", options={"cost_weight": 2.0})
    cost = d.migration.cost(0, np.zeros((2, 1)), [])
    assert cost == pytest.approx(np.full(2, 2.0 * 2 * 20_000 * PrefillModel().token_s / 1e-7))


def _workload(n=300, rate=40.0, seed=5, prompt=30_000):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, prompt, n), rng.integers(1, 200, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


def test_an_infinite_cost_never_migrates_and_the_run_is_the_run_without_the_rule():
    work = _workload()
    off = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, **KW)
    for options, prefill in (({"kv": "transfer", "transfer_gbps": 1e-12}, None),
                             ({"kv": "recompute", "horizon": 200}, PrefillModel())):
        base = off if prefill is None else simulate(work, 4, 8, "bfio", policy_options={"horizon": 20},
                                                    prefill=prefill, **KW)
        on = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, migration="bfio",
                      migration_options=options, prefill=prefill, **KW)
        assert on.metrics["migrations"] == 0
        assert on.series.equals(base.series)
        assert on.requests.drop(columns="migrations").equals(base.requests)


def test_free_migrations_conserve_requests_and_tokens_and_are_deterministic():
    work = _workload(rate=80.0)
    opts = {"kv": "transfer", "cost_weight": 0.0, "evaluations": 4, "per_rank": 2}
    a, b = (simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, migration="bfio", migration_options=opts,
                     **KW) for _ in range(2))
    m, r = a.metrics, a.requests
    assert m["migrations"] > 0 and m["migrations"] == r["migrations"].sum() == m["migration_transfers"]
    assert r["migrations"].max() == 1  # a request migrates at most once
    assert m["migration_plan_calls"] > 0 and m["migration_interruptions"] > 0
    assert r["finish_s"].notna().all() and a.series["completions"].sum() == len(work)
    assert a.series["active"].sum() == work.decode.sum()
    assert a.requests.equals(b.requests) and a.series.equals(b.series)


def test_bfio_is_a_rule_of_the_registry():
    assert "bfio" in RULES and MIGRATIONS == ("none", *RULES)


@pytest.mark.parametrize("policy, options, message", [
    ("vllm_dp", {"kv": "transfer"}, "migration: 'bfio' asks the policy .* 'vllm_dp' plans no migrations"),
    ("bfio", {"kv": "transfer", "cost_weight": -1}, "migration_options: cost_weight of 'bfio' must be >= 0"),
    ("bfio", {"kv": "transfer", "evaluations": 0}, "migration_options: evaluations of 'bfio' must be >= 1"),
    ("bfio", {"kv": "transfer", "horizon": -3}, "migration_options: horizon of 'bfio' must be >= 0"),
    ("bfio", {"kv": "transfer", "queued": 2}, "migration_options: queued of 'bfio' must be 0 or 1"),
    ("bfio", {"kv": "transfer", "threshold": 2}, "migration_options: unknown option.* threshold"),
    ("bfio", {}, "migration_options: kv 'recompute' of 'bfio' .*prefill model"),
])
def test_bad_bfio_migration_options_are_refused_by_name(policy, options, message):
    with pytest.raises(ConfigError, match=message):
        simulate(_workload(n=20), 2, 4, policy, migration="bfio", migration_options=options, **KW)


def test_simulate_cli_takes_the_bfio_rule_and_its_options_from_the_registry(data_dir, capsys):
    import argparse
    import json

    from bfio.cli import main
    from bfio.cli.simulate import add_action_flags
    from bfio.sim.migration import RULES as MIGRATION_RULES

    p = argparse.ArgumentParser()
    add_action_flags(p, "--migration", MIGRATION_RULES, "migrate")
    text = " ".join(p.format_help().split())
    for name, cls in MIGRATION_RULES.items():  # every rule, its summary and each option's default, once
        assert f"{name} ({cls.summary})" in text
        assert f"{name}'s: " + ", ".join(f"{k} (default {v})" for k, v in cls.defaults.items()) in text
    base = ["simulate", "--trace", "burstgpt", "--requests", "200", "--workers", "4", "--slots", "4", "--policy",
            "bfio", "--dispatch", "instant", "--arrival-mode", "poisson", "--arrival-rate", "400",
            "--data-dir", str(data_dir), "--migration", "bfio", "--migration-option", "kv=transfer"]
    assert main(base + ["--migration-option", "cost_weight=0", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["migration"] == "bfio" and out["migration_plan_calls"] > 0
    assert main(base + ["--migration-option", "evaluations=0"]) != 0
    assert "--migration-option: evaluations of 'bfio' must be >= 1" in capsys.readouterr().err
    assert main(base[:base.index("--policy") + 1] + ["vllm_dp"] + base[base.index("--policy") + 2:]) != 0
    assert "plans no migrations" in capsys.readouterr().err


def test_a_recompute_costs_only_what_the_destination_has_not_cached_and_is_charged_that():
    """Issue 45: a migrated request whose prompt's leading blocks the destination
    caches recomputes its uncached prompt and its generated tokens; the planner's
    cost and the simulator's charge read one formula (``Prefill.resume_tokens``)."""
    from bfio.engine.prefill import Prefill
    from bfio.engine.prefix import PrefixBlocks

    work = Workload(np.array([256, 64]), np.array([100, 100]), blocks=PrefixBlocks.from_lists([[1, 2, 3, 4], [9]], 64))
    st = ClusterState.empty(work, 2, 4)
    prefill = Prefill(PrefillModel(cache_blocks=10), work, 2, 4)
    d = InstantDispatch(st, make_policy("bfio", horizon=20), prefill, 1e-7, migration="bfio",
                        migration_options={"kv": "recompute", "cost_weight": 3.0})
    d._append(0, 0)
    d.queued = 1
    d.admit()
    prefill.left[0], prefill.reserve[0], st.generated[0], st.loads[0] = 0, 0, 7, 256 + 7  # prefilled, 7 tokens out
    prefill.caches[1].insert(np.array([1, 2]))  # rank 1 holds the first two of its four blocks
    tokens = prefill.resume_tokens(0, 7)
    assert tokens.tolist() == [256 + 7, 256 - 128 + 7]
    d.migration.token_latency_s = 1e-7
    cost = d.migration.cost(0, np.zeros((2, 1)), [])
    assert cost == pytest.approx(3.0 * 2 * tokens * PrefillModel().token_s / 1e-7)
    # the screen's floor stays below every destination's cost (a hit may spare all but one prompt token)
    assert d.migration.floor(d, np.array([263.0]), np.array([7.0]))[0] <= cost.min()
    assert not d.migration.never(d)  # with caches a request's size alone does not bound its cost
    d.migration.migrate(d, 0, 1)
    assert d.admit() == 1 and st.worker_of[0] == 1
    assert d.migration.recomputed_tokens == prefill.left[0] == tokens[1]


def test_the_planners_probes_are_the_caches_now(monkeypatch):
    """A whole run with prefix caches (GRPO groups) and BF-IO's migrations: every probe
    the planner reads (its hits kept while a rank's cache is unchanged) is a fresh
    walk of every rank's cache at that moment."""
    from bfio.engine.prefill import Prefill
    from bfio.workloads.sessions import session_requests

    rng = np.random.default_rng(4)
    s, o = rng.integers(500, 8000, 48), rng.integers(5, 120, 48)
    work = session_requests(s, o, sessions=6, turns=2, seed=4, think_time_s=0.2, block_tokens=64,
                            group_size=4).workload
    real, seen = Prefill._probed_hits, []

    def probed(self, i, versions=None):
        out = real(self, i, versions)
        fresh = [self._prefix_hit(i, g, lookup=False) for g in range(len(self.caches))]
        assert out.tolist() == fresh
        seen.append(i)
        return out

    monkeypatch.setattr(Prefill, "_probed_hits", probed)
    simulate(work, 4, 4, "bfio", policy_options={"horizon": 20}, prefill=PrefillModel(cache_blocks=40),
             migration="bfio", migration_options={"kv": "recompute", "cost_weight": 0.0}, **KW)
    assert len(seen) > len(set(seen)) > 10  # requests probed again, after caches changed or not


def test_a_run_recomputes_what_the_planner_costed():
    """A whole run with prefix caches (GRPO groups): every migration's recompute, as the
    planner costs it when it migrates, is what the simulator charged."""
    from bfio.workloads.sessions import session_requests

    rng = np.random.default_rng(4)
    s, o = rng.integers(500, 8000, 48), rng.integers(5, 120, 48)
    work = session_requests(s, o, sessions=6, turns=2, seed=4, think_time_s=0.2, block_tokens=64,
                            group_size=4).workload  # GRPO groups of 4: a group's prompts are shared
    planned, whole = [], []
    real = InstantDispatch.migrate

    def migrate(self, i, dst, sent):
        planned.append(int(self.prefill.resume_tokens(i, int(self.state.generated[i]))[dst]))
        whole.append(int(self.state.workload.prefill[i] + self.state.generated[i]))
        return real(self, i, dst, sent)

    InstantDispatch.migrate = migrate
    try:
        res = simulate(work, 4, 4, "bfio", policy_options={"horizon": 20}, prefill=PrefillModel(cache_blocks=400),
                       migration="bfio", migration_options={"kv": "recompute", "cost_weight": 0.0}, **KW)
    finally:
        InstantDispatch.migrate = real
    m = res.metrics
    assert m["migrations"] == len(planned) > 0
    assert any(p < w for p, w in zip(planned, whole))  # some destination held a prefix
    assert m["migration_recomputed_tokens"] == sum(planned)
    assert res.requests["finish_s"].notna().all() and res.series["active"].sum() == work.decode.sum()
