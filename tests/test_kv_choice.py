"""A migrated request's KV with the prefill model (issue 45, bfio.sim.migration_kv,
bfio.engine.prefill_resume, bfio.sim.transfer): a transferred request is resident on
arrival and never goes through prefill, the prefill model's accounting stays
consistent, the step with a transfer lasts what sim/transfer.py's formula says
(the paper's and the calibrated step with prefill, by hand), ``kv: choose``
takes the cheaper way (transfer on a fast link, recompute on a slow one) and
counts both, a run where nothing pays is the run without the rule, and the
errors name the option."""

from __future__ import annotations

import numpy as np
import pytest

from bfio.ground.constants import PaperConstants
from bfio.ground.errors import ConfigError
from bfio.policies import make_policy
from bfio.engine.prefill import Prefill, PrefillModel
from bfio.engine.prefix import PrefixBlocks
from bfio.sim.dispatch import InstantDispatch
from bfio.sim.engine import make_engine
from bfio.sim.state import ClusterState
from bfio.simulator import simulate
from bfio.solvers.migration_plan import MigrationCost, kv_choices
from bfio.workloads.workload import Workload, poisson_arrivals, with_arrivals

KW = dict(entry="arrivals", dispatch="instant", show_progress=False)
#: a link of 1e9 bytes a second at 1,000 bytes a token: 1e6 tokens a second
LINK = {"transfer_gbps": 8.0, "kv_bytes_per_token": 1000}
CHUNK = 512


def _seated(coef=None, blocks=None, cache_blocks=None, kv="transfer"):
    """Two ranks of four slots with ROLL's rule (``kv: transfer`` over :data:`LINK`) and
    the prefill model: rank 0 runs request 0 (prompt 5,000, prefilled, 10 tokens out),
    request 1 (prompt 2,000, nothing computed) and request 3 (prompt 1,000, prefilled,
    40 out); rank 1 runs request 2 (prompt 1,000, prefilled, 5 out)."""
    work = Workload(np.array([5000, 2000, 1000, 1000]), np.full(4, 1000), blocks=blocks)
    st = ClusterState.empty(work, 2, 4, coef)
    prefill = Prefill(PrefillModel(chunk_tokens=CHUNK, token_s=1e-4, cache_blocks=cache_blocks), work, 2, 4)
    d = InstantDispatch(st, make_policy("jsq_requests"), prefill, 1e-7, migration="roll",
                        migration_options={"kv": kv, "threshold": 10, "freeze_s": 3.0, **LINK})
    for i, g in enumerate((0, 0, 1, 0)):
        d._append(i, g)
    d.queued = 4
    assert d.admit() == 4
    prefill.left[[0, 2, 3]] = 0
    st.generated[:] = [10, 0, 5, 40]
    st.loads[:] = [5000 + 10 + 1000 + 40, 1000 + 5]
    prefill.reserve[:] = [2000, 0]
    return d, st, prefill


def test_a_transferred_request_is_resident_on_arrival_and_computes_nothing():
    d, st, prefill = _seated()
    d.migration.migrate(d, 3, 1)  # kv transfer: its 1,040 resident tokens are sent
    assert st.loads.tolist() == [5010, 1005] and prefill.reserve.tolist() == [2000, 0]
    assert prefill.need(st.workload.prefill)[3] == 1040  # the KV it takes when seated: all it brings
    assert d.admit() == 1 and st.worker_of[3] == 1
    assert prefill.left[3] == 0  # nothing to compute: its prompt and output so far are resident
    assert st.loads.tolist() == [5010, 1005 + 1040] and prefill.reserve.tolist() == [2000, 0]
    assert d.migration.transfer.pending.tolist() == [0.0, pytest.approx(1040 / 1e6)]
    assert prefill.recomputed_tokens == 0 and prefill.resume is None
    m = d.migration.metrics()
    assert m["migration_transfers"] == 1 and m["migration_transfer_tokens"] == 1040
    assert "migration_recomputed_tokens" not in m


@pytest.mark.parametrize("kv", ["transfer", "recompute"])
def test_a_request_that_computed_nothing_moves_free_neither_sent_nor_recomputed(kv):
    """Request 1 is seated with its prompt still all to compute (no cache): it holds no
    KV, so its migration sends nothing and recomputes nothing (its prompt is computed
    on its new rank, as it would have been on its old one): counted free, not as a
    transfer of 0 tokens or a recompute."""
    d, st, prefill = _seated(kv=kv)
    d.migration.migrate(d, 1, 1)
    assert d.admit() == 1 and st.worker_of[1] == 1 and prefill.left[1] == 2000
    m = d.migration.metrics()
    assert m["migrations"] == m["migration_free"] == 1
    assert m.get("migration_transfers", 0) == m.get("migration_transfer_tokens", 0) == 0
    assert m.get("migration_recomputes", 0) == m.get("migration_recomputed_tokens", 0) == 0


def test_a_request_still_in_its_prefill_sends_what_it_computed_and_the_destination_computes_the_rest():
    d, st, prefill = _seated()
    prefill.left[1] = 1200  # 800 of its 2,000 prompt tokens computed
    st.loads[0] += 800
    prefill.reserve[0] = 1200
    d.migration.migrate(d, 1, 1)
    assert st.loads[0] == 5010 + 1040 and prefill.reserve[0] == 0
    d.admit()
    assert st.worker_of[1] == 1 and prefill.left[1] == 1200  # the rest: computed on rank 1, not again
    assert st.loads[1] == 1005 + 800 and prefill.reserve[1] == 1200
    assert d.migration.transfer.tokens == 800
    assert prefill.need(st.workload.prefill)[1] == 2000  # its KV need: the prompt it will hold


def test_a_received_prompt_enters_the_destinations_prefix_cache():
    blocks = PrefixBlocks.from_lists([list(range(100, 110)), [5, 6, 7, 8], [17, 18], [8, 9]], 500)
    d, st, prefill = _seated(blocks=blocks, cache_blocks=100)
    assert prefill.caches[1].probe(np.array([8, 9])) == 0
    lookups = prefill.caches[1].lookups
    d.migration.migrate(d, 3, 1)
    d.admit()
    assert prefill.caches[1].probe(np.array([8, 9])) == 2
    assert prefill.left[3] == 0 and prefill.caches[1].lookups == lookups  # no lookup: nothing to spare


def _one_step(d, st, prefill, coef=None):
    """One step of the run's engine (the prefill step, transfers charged); returns its
    ``dt`` and the request 3's tokens before and after."""
    c = PaperConstants()
    engine = make_engine(prefill, c, st.workers, st.slots, False, coef, "lockstep", d.migration.transfer)
    before = int(st.generated[3])
    engine.run(st, -np.inf)
    return float(engine.series.arrays()["dt"][-1]), before, int(st.generated[3])


def test_the_paper_step_with_prefill_charges_a_transfer_beyond_the_decode_phases_slack():
    d, st, prefill = _seated()
    d.migration.migrate(d, 3, 1)
    d.admit()
    c = PaperConstants()
    dt, before, after = _one_step(d, st, prefill)
    x = 1040 / 1e6  # X of rank 1
    t_l = c.token_latency_s
    plain = c.overhead(4) + t_l * 5010 + 1e-4 * CHUNK  # C + t_l max_g L_g + token_s max_g P_g
    extra = max(0.0, max(t_l * 5010, t_l * (1005 + 1040) + x) - t_l * 5010)
    assert extra > 0 and dt == pytest.approx(plain + extra, rel=1e-12)
    assert after == before + 1  # it decoded in the step: nothing recomputed
    assert d.migration.transfer.waited == pytest.approx(extra, rel=1e-12)


def test_the_calibrated_step_with_prefill_charges_a_transfer_beyond_the_rank_costs(data_dir, monkeypatch):
    from bfio.step_model import StepModel

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    c = StepModel("calibrated").coefficients(data_dir)
    d, st, prefill = _seated(coef=c)
    d.migration.migrate(d, 3, 1)
    d.admit()
    dt, before, after = _one_step(d, st, prefill, c.array())
    # rank 0: L 5,010, one decoding request (request 1 prefills its first chunk, P 512); rank 1: L 2,045, two decoding
    share = np.array([c.alpha + c.a_kv * 5010 + c.a_n * 1 + c.a_p * CHUNK + c.a_p2 * CHUNK ** 2,
                      c.alpha + c.a_kv * 2045 + c.a_n * 2])
    x = np.array([0.0, 1040 / 1e6])
    plain = share.max() + c.beta * 2 + c.comm
    assert dt == pytest.approx(plain + max(0.0, (share + x).max() - share.max()), rel=1e-12)
    assert after == before + 1


def test_the_transfer_cost_reads_the_calibrated_ranks_shares(data_dir, monkeypatch):
    """With the calibrated step the planner's transfer cost reads each rank's share as the
    step charges it, ``rank_cost(L_g, n_g, P_g)`` (:mod:`bfio.sim.transfer`), not ``t_l
    L_g``: request 3 (1,040 tokens) leaves rank 0 (then ``L`` 5,010, one request
    decoding, request 1's chunk of 512 prefilling) for rank 1 (``L`` 1,005 + 1,040, two
    decoding), its KV over 1e9 bytes a second at 100,000 bytes a token (0.104 s)."""
    from bfio.sim.transfer import KvTransfer
    from bfio.step_model import StepModel

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    c = StepModel("calibrated").coefficients(data_dir)
    d, st, prefill = _seated(coef=c)
    kv = d.migration.kv
    kv.transfer = KvTransfer(2, 8.0, 100_000)
    held = st.workload.prefill + st.generated
    cost, sent = kv_choices(kv.cost_model(c.a_kv, 1.0), np.array([3]), held, np.array([5010.0, 1005.0]),
                            sources=np.array([0]))
    share = np.array([c.alpha + c.a_kv * 5010 + c.a_n * 1 + c.a_p * CHUNK + c.a_p2 * CHUNK ** 2,
                      c.alpha + c.a_kv * 2045 + c.a_n * 2])
    x = 1040 * 100_000 / 1e9
    stall = max(0.0, max(share[0], share[1] + x) - share.max())
    old = max(0.0, max(c.a_kv * 5010, c.a_kv * 2045 + x) - c.a_kv * 5010)  # shares t_l L_g
    assert stall > 0 and abs(stall - old) > 1e-3 * old
    assert cost[0, 1] == pytest.approx(2 * stall / c.a_kv, rel=1e-9) and sent[0, 1]


def _workload(n=300, rate=3.0, seed=5, prompt=30_000):
    rng = np.random.default_rng(seed)
    w = Workload(rng.integers(100, prompt, n), rng.integers(1, 200, n))
    return with_arrivals(w, poisson_arrivals(n, rate, seed))


def test_transferred_requests_in_a_whole_run_never_compute_a_token_twice(monkeypatch):
    """ROLL at a low bar, ``kv: transfer`` with the prefill model: every prompt token is
    computed once (the prefill tokens the steps compute are the prompts' less their
    cache hits), the loads are the resident tokens at every routing call, and every
    request finishes with its tokens."""
    computed, checked = [], []
    real_step, real_call = Prefill.step, InstantDispatch.routing_call

    def step(self, *args, **kwargs):
        out = real_step(self, *args, **kwargs)
        computed.append(int(self.take.sum()))
        return out

    def call(self, entry):
        n = real_call(self, entry)
        st = self.state
        ids = np.where(st.slot_request >= 0, st.slot_request, 0)
        left = self.prefill.left[ids]
        resident = np.where(st.slot_request >= 0, st.workload.prefill[ids] + st.generated[ids] - left, 0)
        assert np.array_equal(st.loads, resident.sum(axis=1))
        assert np.array_equal(self.prefill.reserve, np.where(st.slot_request >= 0, left, 0).sum(axis=1))
        checked.append(n)
        return n

    monkeypatch.setattr(Prefill, "step", step)
    monkeypatch.setattr(InstantDispatch, "routing_call", call)
    work = _workload(rate=20.0)
    res = simulate(work, 4, 8, "round_robin", prefill=PrefillModel(), migration="roll",
                   migration_options={"kv": "transfer", "threshold": 2, "freeze_s": 0.0}, **KW)
    m, r = res.metrics, res.requests
    assert m["migrations"] > 0 and m["migration_transfers"] == m["migrations"] and checked
    assert m["migration_transfer_tokens"] > 0 and "recomputed_tokens" not in m
    assert sum(computed) == int(work.prefill.sum()) == m["prefill_tokens_computed"]
    assert r["finish_s"].notna().all() and res.series["active"].sum() == work.decode.sum()
    assert (r["ttft_s"] > 0).all()


def _dispatch(kv, gbps, cost_weight=1.0):
    """BF-IO's migrations over two ranks with the prefill model: request 0 (20,000
    tokens, prefilled) runs on rank 0 beside request 1 (880,000), request 2 (100,000)
    on rank 1."""
    opts = {"kv": kv, "cost_weight": cost_weight}
    if kv != "recompute":
        opts["transfer_gbps"] = gbps
    d, _, _ = _bfio_seated(Workload(np.array([20_000, 880_000, 100_000]), np.array([100, 100, 100])),
                           PrefillModel(), opts)
    d.migration.token_latency_s = 1e-7
    return d


def _bfio_seated(work, model, opts):
    """``work``'s requests 0 and 1 seated on rank 0 and request 2 on rank 1 (two ranks of
    four slots, ``model``'s prefill done, loads 900,000 and 100,000) under BF-IO's
    migrations with options ``opts``: the dispatch, its state and its prefill."""
    st = ClusterState.empty(work, 2, 4)
    prefill = Prefill(model, work, 2, 4)
    d = InstantDispatch(st, make_policy("bfio", horizon=20), prefill, 1e-7, migration="bfio", migration_options=opts)
    for i, g in enumerate((0, 0, 1)):
        d._append(i, g)
    d.queued = 3
    d.admit()
    prefill.left[:], prefill.reserve[:] = 0, 0
    st.loads[:] = [900_000, 100_000]
    return d, st, prefill


def test_prefill_cost_is_the_steps_prefill_share_by_hand():
    """:func:`bfio.engine.step_time.prefill_cost`: with the paper's prefill ``token_s`` a
    token; with a calibrated vector ``a_p T + a_p2 (q C^2 + r^2)`` for ``q`` full chunks of
    ``C`` and a rest ``r``; 0 at 0 tokens."""
    from bfio.engine.step_time import prefill_cost, prefill_vector

    tokens = np.array([0.0, 1.0, 2048.0, 5000.0])
    out = prefill_cost(prefill_vector(None, 1e-4), tokens, 2048.0, np.empty(4))
    assert out == pytest.approx(tokens * 1e-4, rel=1e-12)
    vec = np.array([7.0, 3.0, 5.0, 2e-5, 1e-9, 11.0, 13.0])  # alpha, a_kv, a_n, beta, comm: not read
    out = prefill_cost(vec, tokens, 2048.0, np.empty(4))
    expect = [0.0, 2e-5 + 1e-9, 2e-5 * 2048 + 1e-9 * 2048 ** 2, 2e-5 * 5000 + 1e-9 * (2 * 2048 ** 2 + 904 ** 2)]
    assert out == pytest.approx(expect, rel=1e-12)


def test_the_recompute_cost_reads_the_calibrated_steps_prefill(data_dir, monkeypatch):
    """With the calibrated step the planner prices a recompute as the step charges its
    chunks (``a_p`` a token, ``a_p2`` a chunk's square; ``t_l = a_kv``), not at the
    prefill model's ``token_s``: request 0 (20,000 prompt tokens, 5 generated) recomputes
    20,005 tokens on rank 1, 9 chunks of 2,048 and 1,573."""
    from bfio.step_model import StepModel

    monkeypatch.setenv("BFIO_DATA_DIR", str(data_dir))
    c = StepModel("calibrated").coefficients(data_dir)
    work = Workload(np.array([20_000, 880_000, 100_000]), np.array([100, 100, 100]))
    st = ClusterState.empty(work, 2, 4, c)
    prefill = Prefill(PrefillModel(chunk_tokens=2048), work, 2, 4)
    d = InstantDispatch(st, make_policy("bfio", horizon=20), prefill, c.a_kv, migration="bfio",
                        migration_options={"kv": "recompute"})
    for i, g in enumerate((0, 0, 1)):
        d._append(i, g)
    d.queued = 3
    d.admit()
    prefill.left[:], prefill.reserve[:] = 0, 0
    st.generated[0] = 5
    d.migration.token_latency_s = c.a_kv
    cost = d.migration.cost(0, np.array([[880_000.0], [100_000.0]]), [])
    seconds = c.a_p * 20_005 + c.a_p2 * (9 * 2048 ** 2 + 1573 ** 2)
    assert cost[1] == pytest.approx(2 * seconds / c.a_kv, rel=1e-12)  # cost_weight G seconds / t_l


def _never_dispatch(cost_weight):
    """BF-IO's migrations with ``recompute`` under a calibrated step whose prefill is
    all quadratic (``a_p`` 0, ``a_p2`` 1e-9, ``t_l = a_kv`` 1e-7) in chunks of 100: a
    chunk's cost grows faster than its tokens, so a request of 141 tokens (a chunk and
    41) costs less a token than one of 90."""
    from bfio.step_model.fit import StepCoefficients

    c = StepCoefficients(alpha=0.0, a_kv=1e-7, a_n=0.0, a_p=0.0, a_p2=1e-9, beta=0.0, comm=0.0)
    work = Workload(np.array([90, 141]), np.array([50, 50]))
    st = ClusterState.empty(work, 2, 4, c)
    prefill = Prefill(PrefillModel(chunk_tokens=100), work, 2, 4)
    return InstantDispatch(st, make_policy("bfio", horizon=20), prefill, 1e-7, migration="bfio",
                           migration_options={"kv": "recompute", "cost_weight": cost_weight})


@pytest.mark.parametrize("cost_weight", [1.0, 2.0, 3.0, 1000.0])
def test_never_holds_only_where_no_size_can_pass_the_screen(cost_weight):
    """:meth:`BfioMigration.never` says no request can ever pay only when the screen
    (bound above floor) fails at every size; at ``cost_weight`` 3 the screen fails at the
    smallest prompt (90) and grows faster there than the bound, yet passes at 141: not
    never (a two-point test at the smallest prompt would have said never); at 1000 never."""
    d = _never_dispatch(cost_weight)
    m = d.migration
    m.token_latency_s = 1e-7
    sizes = np.arange(90.0, 2000.0)
    passes = m.policy.migration_bound(sizes, 2, 0) > m.floor(d, sizes)
    assert not (m.never(d) and passes.any())
    if cost_weight == 3.0:
        assert not passes[0] and passes[141 - 90] and not m.never(d)
    if cost_weight == 1000.0:  # every token costs more than the bound gains: never
        assert m.never(d)


@pytest.mark.parametrize("kv_tokens, rooms", [(8000, [5500.0, 5000.0, np.inf]), (2800, [300.0, -np.inf, np.inf])])
def test_seat_room_is_what_admission_would_leave_behind_the_queue(kv_tokens, rooms):
    """:func:`bfio.sim.migration_kv.seat_room` by hand: rank 0 runs request 0 (2,500
    tokens to hold), rank 1 runs request 2 (1,000) with request 1 (2,000) queued, rank 2
    is idle. With 8,000 KV tokens a rank: 5,500 left on rank 0, 5,000 on rank 1 once
    request 1 is seated, any on the idle rank. With 2,800: 300 on rank 0; request 1
    waits for memory on rank 1 (nothing behind it is seated: -inf)."""
    from bfio.sim.migration_kv import seat_room

    work = Workload(np.array([2500, 2000, 1000, 1000]), np.full(4, 100))
    st = ClusterState.empty(work, 3, 4)
    prefill = Prefill(PrefillModel(chunk_tokens=CHUNK, kv_tokens=kv_tokens), work, 3, 4)
    d = InstantDispatch(st, make_policy("jsq_requests"), prefill, 1e-7)
    for i, g in ((0, 0), (2, 1)):
        d._append(i, g)
    d.queued = 2
    assert d.admit() == 2
    d._append(1, 1)
    d.queued = 1
    room, growth = seat_room(d)
    assert growth == 0.0 and room.tolist() == rooms


def _seat_room_dispatch(prompts, seated, queued, kv_tokens, G=3, B=16):
    """A dispatch whose ranks ran admission on the requests ``seated`` (``(request, rank)``
    pairs, some of which may wait for memory) and then hold ``queued`` at their queues'
    tails."""
    work = Workload(np.asarray(prompts), np.full(len(prompts), 100))
    st = ClusterState.empty(work, G, B)
    prefill = Prefill(PrefillModel(chunk_tokens=CHUNK, kv_tokens=kv_tokens), work, G, B)
    d = InstantDispatch(st, make_policy("jsq_requests"), prefill, 1e-7)
    for part in (seated, queued):
        for i, g in part:
            d._append(i, g)
        d.queued += len(part)
        if part is seated:
            d.admit()
    return d


@pytest.mark.parametrize("seed", range(12))
def test_seat_room_is_the_size_admission_seats_at_the_tail(seed):
    """:func:`bfio.sim.migration_kv.seat_room` against admission itself, on random ranks
    (requests seated, some waiting for memory, more queued): a request joining a rank's
    tail is seated by the next admission (slots to spare) exactly when its tokens are
    at most that rank's room (tried at the room and one token either side, and on a
    rank with no room or any room)."""
    from bfio.sim.migration_kv import seat_room

    rng = np.random.default_rng(seed)
    G, n = 3, int(rng.integers(2, 12))
    prompts = rng.integers(200, 3000, n).tolist()
    ranks = rng.integers(0, G, n)
    cut = int(rng.integers(0, n + 1))
    seated = [(i, int(ranks[i])) for i in range(cut)]
    queued = [(i, int(ranks[i])) for i in range(cut, n)]
    kv = int(rng.integers(3000, 9000))
    room, growth = seat_room(_seat_room_dispatch(prompts, seated, queued, kv))
    assert growth == 0.0
    tried = 0
    for g in range(G):
        sizes = [50, kv] if np.isinf(room[g]) else [int(room[g]) - 1, int(room[g]), int(room[g]) + 1]
        for size in (s for s in sizes if 0 < s <= kv):
            d = _seat_room_dispatch(prompts + [size], seated, queued + [(n, g)], kv)
            d.admit()
            assert (d.state.worker_of[n] == g and (d.state.slot_request == n).any()) == (size <= room[g]), \
                (g, size, room[g])
            tried += 1
    assert tried > 0


def _plan_two_ranks(cost):
    """One evaluation of the migration planner on two ranks: rank 0 runs two requests of
    1,000 tokens with 50 steps left, rank 1 is empty (window 0..10, undiscounted)."""
    from bfio.solvers.migration_plan import plan_migrations
    from bfio.solvers.objective import ObjectiveTerms

    H = 10
    terms = ObjectiveTerms.build(H, 1.0, "persist", fast=True)
    h = np.arange(H + 1)
    base = np.zeros((2, H + 1))
    base[0] = 2 * np.where(h < 50, 1000 + h, 0)
    slots = np.array([[0, 1, -1], [-1, -1, -1]])
    remaining = np.array([[50, 50, 0], [0, 0, 0]])
    held = np.array([[1000, 1000, 0], [0, 0, 0]])
    queues = (np.zeros(3, dtype=np.int64), np.zeros(0, dtype=np.int64))
    none = np.zeros(0, dtype=np.int64)
    return plan_migrations(base, remaining, queues, none, none, slots, held, slots >= 0, terms, cost, 1, 2)


def test_the_planner_migrates_only_where_the_request_fits_in_kv_memory():
    """A destination with a free slot but less KV room than the request's ``s_i + tau_i``
    would keep it waiting: no migration there (``MigrationCost.room``)."""
    def plan(room):
        return _plan_two_ranks(MigrationCost(fixed=lambda ids: np.zeros((len(ids), 2)), room=np.array([np.inf, room])))

    assert plan(999.0) == [] and plan(-np.inf) == []
    assert plan(1000.0) == [(0, 1, False)] and plan(np.inf) == [(0, 1, False)]


def test_a_transfers_shares_read_the_resident_loads_the_step_reads():
    """``MigrationCost.share_loads``: the shares of the transfer's charge are the ranks'
    resident tokens (the next step's, moved with the call's migrations), not the
    predicted loads at offset 0. Rank 0 runs two requests of 1,000 tokens; a transfer
    of one takes 0.05 s. Predicted, rank 0 without it holds 1,000 and rank 1 (with it)
    1,000: no slack, the barrier waits 0.05 s (1e6 token-steps): no migration. With
    rank 0 resident at 1e6 tokens (0.1 s of share) the transfer hides in rank 1's
    slack: it migrates, its KV sent."""
    def plan(share_loads):
        return _plan_two_ranks(MigrationCost(seconds=lambda t: t * 5e-5, pending=np.zeros(2), token_latency_s=1e-7,
                                             share_loads=share_loads))

    assert plan(None) == [] and plan(np.array([2000.0, 0.0])) == []
    assert plan(np.array([1e6, 0.0])) == [(0, 1, True)]


def _cached_dispatch(kv):
    """:func:`_dispatch`'s ranks and requests with prefix caches (blocks of 10,000 tokens)
    and a slow link (1 Gb/s: a transfer never pays); request 0 has generated 5 tokens."""
    work = Workload(np.array([20_000, 880_000, 100_000]), np.array([100, 100, 100]),
                    blocks=PrefixBlocks.from_lists([[1, 2], list(range(100, 188)), list(range(200, 210))], 10_000))
    opts = {"kv": kv} if kv == "recompute" else {"kv": kv, "transfer_gbps": 1.0}
    d, st, prefill = _bfio_seated(work, PrefillModel(cache_blocks=1000), opts)
    st.generated[0] = 5
    prefill.caches[0].insert(work.blocks.blocks_of(0))  # its own rank caches its prompt
    return d, st, prefill


@pytest.mark.parametrize("kv", ["recompute", "choose"])
def test_the_screen_reads_the_destinations_cache_not_a_hit_it_assumes(kv):
    """A running request whose prompt no other rank caches recomputes it whole
    anywhere it goes (20,005 tokens at 1e-4 s, against a gain of at most ``G sum_h w_h
    (s_i + tau_i + h)`` ~ 1e5 token-steps): it is no candidate and takes no
    evaluation (the screen assumed a hit of all but its last prompt token: 6 tokens,
    1.2e4 token-steps). Once rank 1 caches its prompt, its floor is those 6 tokens'."""
    d, st, prefill = _cached_dispatch(kv)
    m = d.migration
    scale = 2 * 1e-4 / 1e-7  # cost_weight G token_s / t_l
    assert not m.candidates(d)[0]
    assert m.floors[0] == pytest.approx(scale * (20_000 + 5), rel=1e-12)  # its own rank's cache left out
    prefill.caches[1].insert(st.workload.blocks.blocks_of(0))
    assert m.candidates(d)[0]
    assert m.floors[0] == pytest.approx(scale * (1 + 5), rel=1e-12)  # the last prompt token and its output


@pytest.mark.parametrize("gbps, way", [(400.0, "transfer"), (1.0, "recompute")])
def test_choose_takes_the_cheaper_way_per_destination(gbps, way):
    """20,000 tokens: recomputed 2 s at 1e-4 s a token; sent over 400 Gb/s 0.21 s (less
    the destination's slack), over 1 Gb/s 84 s: the choice flips with the link."""
    loads = np.array([[880_000.0], [100_000.0]])
    rec = _dispatch("recompute", gbps).migration.cost(0, loads, [])
    sent = _dispatch("transfer", gbps).migration.cost(0, loads, [])
    cost, send = _dispatch("choose", gbps).migration.choice(0, loads, [])
    assert cost == pytest.approx(np.minimum(rec, sent), rel=1e-12)
    assert (send == (sent <= rec)).all()
    assert bool(send[1]) == (way == "transfer")
    assert (rec[1] > sent[1]) == (way == "transfer")


def test_the_planner_records_its_choice_and_the_simulator_follows_it():
    """The planner's kernel returns each migration's way (``kv_cost``); a migration it
    sends adds to the pending transfers of the later evaluations, one it recomputes
    does not."""
    def plan(recompute, seconds_per_token):
        return _plan_two_ranks(MigrationCost(fixed=lambda ids: np.full((len(ids), 2), recompute),
                                             seconds=lambda t: t * seconds_per_token, pending=np.zeros(2), weight=1.0,
                                             token_latency_s=1e-7, choose=True))

    assert plan(1e6, 0.0) == [(0, 1, True)]  # the link is free
    assert plan(0.0, 1.0) == [(0, 1, False)]  # the link is slow, the recompute free
    got, sent = kv_choices(MigrationCost(fixed=lambda ids: np.full((len(ids), 2), 0.0), seconds=lambda t: t * 0.0,
                                         pending=np.zeros(2), token_latency_s=1e-7, choose=True),
                           np.array([0]), np.array([1000, 1000]), np.array([0.0, 0.0]))
    assert got.tolist() == [[0.0, 0.0]] and sent.all()  # ties go to the transfer (it computes nothing)


@pytest.mark.parametrize("gbps, way", [(1e6, "transfer"), (1e-3, "recompute")])
def test_choose_in_a_whole_run_counts_both_ways(gbps, way):
    work = _workload(rate=3.0)
    res = simulate(work, 4, 8, "bfio", policy_options={"horizon": 20}, prefill=PrefillModel(), migration="bfio",
                   migration_options={"kv": "choose", "cost_weight": 1e-9, "transfer_gbps": gbps, "evaluations": 4,
                                      "per_rank": 2}, **KW)
    m = res.metrics
    ways = m["migration_recomputes"] + m["migration_transfers"]
    assert m["migrations"] > 0 and ways + m["migration_free"] == m["migrations"]
    if way == "transfer":
        assert m["migration_transfers"] == ways and m["migration_recomputed_tokens"] == 0
    else:  # a request that had computed nothing ties (both ways compute its prompt there): free, 0 tokens
        assert m["migration_recomputes"] > 0 and m["migration_transfers"] == m["migration_transfer_tokens"] == 0
    assert res.requests["finish_s"].notna().all() and res.series["active"].sum() == work.decode.sum()


def test_choose_where_nothing_pays_is_the_run_without_the_rule():
    work = _workload()
    opts = {"horizon": 20}
    off = simulate(work, 4, 8, "bfio", policy_options=opts, prefill=PrefillModel(), **KW)
    on = simulate(work, 4, 8, "bfio", policy_options=opts, prefill=PrefillModel(), migration="bfio",
                  migration_options={"kv": "choose", "transfer_gbps": 1e-9}, **KW)
    assert on.metrics["migrations"] == 0
    assert on.series.equals(off.series)
    assert on.requests.drop(columns="migrations").equals(off.requests)


@pytest.mark.parametrize("kwargs, message", [
    ({"migration": "bfio", "migration_options": {"kv": "choose"}},
     "migration_options: kv 'choose' of 'bfio' recomputes .*prefill model"),
    ({"migration": "roll", "migration_options": {"kv": "choose"}, "prefill": PrefillModel()},
     "migration_options: kv 'choose' weighs .* rule 'roll' weighs no cost"),
    ({"migration": "bfio", "migration_options": {"kv": "both"}, "prefill": PrefillModel()},
     "migration_options: kv of 'bfio' must be one of recompute, transfer, choose"),
])
def test_what_choose_cannot_do_is_refused_by_name(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        simulate(_workload(n=20), 2, 4, "bfio", policy_options={"horizon": 20}, **{**KW, **kwargs})
