"""Migrating running requests (issue 45, third action): with instant dispatch a rule may *interrupt*
requests of a rank and re-queue them on another rank's queue: a queued one is re-bound
(:meth:`bfio.sim.dispatch.InstantDispatch.move`, free: it holds no KV), a running one is *migrated*
(:meth:`bfio.sim.dispatch.InstantDispatch.migrate`): it leaves its slot, its KV is freed on its
rank, and it joins the tail of the other rank's queue keeping its generated tokens; when seated
there it continues from them. A part of the simulator (``docs/architecture.md``), chosen by
``simulate(migration=..., migration_options=...)`` (``RunSpec.migration``, CLI ``--migration``,
``--migration-option KEY=VALUE``), off (``none``) by default; instant dispatch only (a central pool
has no rank queues to re-queue on: refused by name).

The motivation: a placement is never undone, and long generations keep it a long time;
vllm-project/vllm issue #40279 (open, 2026-04, vLLM 0.19, DP 8) reports most requests stuck on one
or a few ranks after 48-72 hours of generations of 10 minutes and more, the other GPUs idle, worked
around by binding requests to ranks by hand (``data_parallel_rank``).

:meth:`bfio.sim.dispatch.InstantDispatch.routing_call` runs the rule where
queue moves run (:mod:`bfio.sim.moves`): after the call's admissions, then, when
something was re-queued, one more admission. The loop runs steps one at a time
while a migration rule is on (:meth:`Migration.quiet`: the rule reads the ranks
at every routing call).

**The KV of a migrated request** (option ``kv``, :mod:`bfio.sim.migration_kv`):
``recompute`` (the default; ROLL's way) through the prefill model, ``transfer``
over a link charged to the new rank's next step (:mod:`bfio.sim.transfer`; with
or without the prefill model), or ``choose`` (``bfio`` with the prefill model:
per migration the cheaper of the two in the planner's objective).

Counted in every run with a rule: ``migrations`` (running requests moved),
``migrated_requests``, ``migration_queue_moves`` (queued requests re-bound),
``migration_interruptions`` (calls where the rule acted) and, per request, the
``migrations`` column. A migrated request's start stays its first admission's.
With ``queue_moves`` and ``rank_pause`` (issue 45, actions combined): the pause
rule acts first in a routing call, the queue moves next, the migration rule
last, on the requests the others did not act on (:meth:`Migration.eligible`).

Rules (``RULES``, the registry of the rules' names: the CLI's choices and help come from it):

- ``roll``: alibaba/ROLL PR #134, "Dynamic Load Balancing via Request
  Interruption and Migration for vLLM Engines" (open, 2025-08-08), read at its
  head ``4a23861b``: ``roll/distributed/scheduler/generate_scheduler.py``
  (``DynamicSamplingScheduler.get_batch``, ``send_one_interrupted_query_group_to_dp_new``,
  ``get_available_dp_rank``, ``report_response``) and the engine side, the PR's
  vLLM fork (taoluo/vllm, ``vllm/v1/engine/core.py``
  ``EngineCore.abort_to_target_requests_cnt``; the v0 fallback in
  ``roll/distributed/strategy/vllm_strategy.py`` is the same rule).
  **Signal**: the scheduler's ``load_balance_coordinator``, per DP rank the
  requests sent to it and not yet finished, interrupted or aborted: here its
  queued plus running requests (exact: the scheduler counts its own sends).
  **Trigger**: ``spread = max - min`` of those counts; the most loaded rank is
  the first with the maximum; ``interrupt_cnt = spread // 2`` ("half the
  imbalance", against over-correction); it acts when ``spread >= threshold``
  and ``interrupt_cnt > 0``, telling that rank to keep ``count - interrupt_cnt``.
  ``threshold`` = 10, the PR's value in every commit but its last, which sets 1
  "to demo interruption" (with every request sent to rank 0). **Picks** (the
  engine): its waiting requests first, in queue order, then its running ones by
  fewest total tokens ``s_i + tau_i`` (vLLM's ``num_tokens``; ties in running
  order, here admission order), until ``interrupt_cnt``. **Destination**: each
  interrupted request is sent again, one at a time, to
  ``get_available_dp_rank()``, the rank with the fewest in-flight requests
  (lowest rank on ties; the counts count each one sent), as a new request whose
  input is its prompt and its output so far (so vLLM prefills both: the KV is
  recomputed) at the tail of that rank's waiting queue. **Freeze**: after acting
  the rule does not look again until ``freeze_s`` (3 s, on the run's clock)
  has passed (``now - last > freeze_s``). Not modelled: the scheduler's loop
  rate (here it looks at every routing call), the asynchrony of the interrupt
  and of the re-send (here within the call), the scheduler holding back new
  requests while interrupted ones wait to be re-sent (here the call's arrivals
  were bound before), the order of re-sends (the source's is a set's; here the
  interruption order), ``max_running_requests`` (ROLL's flow control of a
  rollout; an online run's queues are not capped). ROLL's own router is
  ``get_available_dp_rank``, the fewest in-flight requests with the lowest rank
  on ties: the project's ``jsq_requests`` (``sglang_total_requests``) with
  instant dispatch.
- ``bfio``: BF-IO chooses its own migrations (issue 45, "BF-IO with actions"):
  the policy's ``plan_migrations`` (:meth:`bfio.policies.bfio.BFIO.plan_migrations`,
  :func:`bfio.solvers.migration_plan.plan_migrations`, numba kernels). Each routing call (after
  ``freeze_s`` seconds from the last call that acted) it evaluates
  ``evaluations`` running requests, each of the rank with the largest weighted
  predicted load ``sum_h w_h Lhat_g(h)`` (at most ``per_rank`` a rank), the one
  whose in-place profile weighs most first; the request leaves its slot (the
  rank's queue may take it) and is bound again as instant BF-IO binds an
  arrival (:func:`~bfio.solvers.dispatch.candidate`, the same predicted loads
  and ``J``): its **gain** on rank ``d`` is ``J`` now minus ``J`` with it on
  ``d``, over BF-IO's own window and discount (option ``horizon`` 0) or
  undiscounted over ``0..horizon``; its **cost** (:meth:`BfioMigration.cost`) is
  ``cost_weight x G x stall / t_l`` in the same units (token-steps: ``t_l (G
  max_g L_g - sum_g L_g)`` are the rank-seconds a step idles, ``G x stall``
  those of a barrier that waits ``stall``), ``stall`` the transfer's charge on
  the next step beyond the destination's slack (:mod:`bfio.sim.transfer`, with
  the transfers already pending and planned in the call) or the seconds the
  run's step charges for the tokens its readmission on ``d`` computes
  (:meth:`bfio.sim.migration_kv.KvWay.prefill_seconds`: the paper's ``token_s`` a
  token, the calibrated step's ``a_p`` a token and ``a_p2`` a chunk's square): its
  prompt less ``d``'s cached prefix, and its generated tokens
  (:meth:`bfio.engine.prefill.Prefill.resume_tokens`, the formula the simulator
  charges); with ``kv: choose`` the cheaper of the two
  per destination, and that way for its KV (:mod:`bfio.sim.migration_kv`,
  :func:`bfio.solvers.migration_plan.kv_cost`). It migrates to the rank of the largest positive
  net gain that would seat it at once, in a free slot and within its KV memory
  (a running request is not put to wait; :func:`bfio.sim.migration_kv.seat_room`);
  a request migrates at most once. A screen that predicts nothing comes first:
  a migration lowers ``J`` by at most ``G sum_h w_h (s_i + tau_i + h)``, so a
  request whose cost's lower bound (:meth:`BfioMigration.floor`) is above that
  is not evaluated, and with ``recompute`` a run where no request can pass
  (the screen falls with the size: :meth:`BfioMigration.never`) never plans
  and lets the loop run steps without routing calls (:meth:`BfioMigration.quiet`).
  ``queued`` 1: first the queued requests BF-IO's ``plan_moves`` re-binds
  (:mod:`bfio.sim.moves`' ``bfio``, free), counted as ``migration_queue_moves``.

  **Why it rarely migrates** (``benchmarks/bfio_actions.py``): a migrated token
  lowers the slowest rank's share of a step by at most ``t_l`` (1.005e-7 s in
  the paper's step) for each step it stays off it; it costs ``kv_bytes_per_token
  / link`` = 1.05e-5 s of transfer (104 steps' worth) or ``token_s`` = 1e-4 s of
  recompute (995 steps' worth) when the barrier waits for it, while BF-IO's own
  window (``H`` = 20, discount 0.6) weighs 2.5 steps at most. A recompute never
  pays within a LongBench request's life (its outputs are at most 346 tokens);
  a transfer pays only when the destination's slack behind the slowest rank
  hides it, which is what the rule's migrations are.
"""

from __future__ import annotations

import numpy as np

from bfio.sim.migration_kv import KV_DEFAULTS, KvWay, seat_room
from bfio.sim.migration_screen import NONE, screened, transfer_screen
from bfio.sim.moves import BFIO_EVALUATIONS
from bfio.sim.state import ClusterState, FirstStarts
from bfio.solvers.migration_plan import MigrationCost, kv_choices

#: ROLL PR #134's ``rebalance_threshold`` and ``freeze_interruption_timeout`` (seconds)
ROLL_DEFAULTS = {"threshold": 10, "freeze_s": 3.0, **KV_DEFAULTS}
#: BF-IO's migrations (``bfio``): the weight of a migration's cost against its gain, the
#: objective's window (0: the policy's own; ``H``: undiscounted over ``0..H``), running
#: requests evaluated per routing call and per rank, the seconds the rule waits after
#: acting, and ``queued`` (1: first the queued requests BF-IO's ``plan_moves`` re-binds)
BFIO_DEFAULTS = {"cost_weight": 1.0, "horizon": 0, "evaluations": 1, "per_rank": 1, "freeze_s": 0.0,
                 "queued": 0, **KV_DEFAULTS}


class Migration:
    """The migrations of one run: per request how often it moved while running
    (``times``) and whether it waits to be seated again (``away``); the KV's way
    (``kv``, :class:`~bfio.sim.migration_kv.KvWay`; ``transfer`` its
    :class:`~bfio.sim.transfer.KvTransfer`, or ``None``: recomputed through
    ``prefill``). :meth:`run` is the rule."""

    name = "none"
    #: the rule's options and defaults (the registry of its option names)
    defaults: dict = KV_DEFAULTS

    def __init__(self, state: ClusterState, policy, prefill, options: dict | None = None):
        N = state.requests
        self.policy = policy
        self.options = {**self.defaults, **(options or {})}
        o = self.options
        self.prefill = prefill
        self.kv = KvWay(state, prefill, o)
        self.transfer = self.kv.transfer
        self.times = np.zeros(N, dtype=np.int64)
        self.away = np.zeros(N, dtype=bool)
        self.first = FirstStarts(N)
        self.order = np.zeros(N, dtype=np.int64)  # admission order: a rank's running order
        self._admissions = 0
        self.count = 0
        self.queue_moves = 0
        self.interruptions = 0

    @property
    def recomputed_tokens(self) -> int:
        """The tokens migrated requests recomputed (:class:`~bfio.sim.migration_kv.KvWay`)."""
        return self.kv.recomputed_tokens

    def run(self, dispatch) -> int:
        """The rule's actions in a routing call; returns how many requests it re-queued."""
        raise NotImplementedError

    def quiet(self) -> bool:
        """Whether the rule does nothing in routing calls while nothing waits."""
        return False

    def eligible(self, dispatch) -> np.ndarray | None:
        """Per request, whether the rule may act on it in this routing call, or ``None``
        (every request: the rule runs alone): with queue moves, not one they moved
        in this call (a request is moved or migrated in a call, never both); with a
        pause rule, not one it ever paused (its KV stays on its rank, as the queue
        moves leave it, :mod:`bfio.sim.moves`)."""
        moves, pause = dispatch.moves, dispatch.pause
        if moves is None and pause is None:
            return None
        ok = np.ones(self.times.shape[0], dtype=bool)
        if moves is not None:
            ok &= moves.moved_in != dispatch.calls
        if pause is not None:
            ok &= pause.times == 0
        return ok

    def migrate(self, dispatch, i: int, dst: int, sent: bool | None = None) -> None:
        """Running request ``i`` moves to the tail of rank ``dst``'s queue (counted), its
        KV sent (``sent``; ``None``: the rule's ``kv``, ``transfer`` or ``recompute``)."""
        self.first.keep(i, dispatch.state)
        self.kv.left(dispatch, i, dst, sent)
        self.times[i] += 1
        self.count += 1
        self.away[i] = True

    def requeue(self, dispatch, i: int, dst: int) -> None:
        """Queued request ``i`` is re-bound to the tail of rank ``dst``'s queue (counted)."""
        dispatch.move(i, dst)
        self.queue_moves += 1

    def admitted(self, ids: np.ndarray, state: ClusterState) -> None:
        """Requests ``ids`` were seated, in this order: a migrated one keeps its first
        start and its KV arrives (recomputed by the prefill model, whose tokens to
        compute are counted, or transferred: resident now, its time charged; with the
        prefill model :meth:`bfio.engine.prefill.Prefill.admitted` has made it resident)."""
        self.order[ids] = self._admissions + np.arange(ids.shape[0])
        self._admissions += int(ids.shape[0])
        back = ids[self.away[ids]]
        if not back.size:
            return
        self.away[back] = False
        self.first.restore(back, state)
        self.kv.arrived(back, state)

    def metrics(self) -> dict:
        out = {"migrations": int(self.count), "migrated_requests": int((self.times > 0).sum()),
               "migration_queue_moves": int(self.queue_moves), "migration_interruptions": int(self.interruptions)}
        return {**out, **self.kv.metrics()}


class RollMigration(Migration):
    """ROLL PR #134's interruption and migration (module docstring)."""

    name = "roll"
    defaults = ROLL_DEFAULTS
    summary = "alibaba/ROLL PR #134: the most loaded rank gives up half the spread of in-flight requests"

    def __init__(self, state: ClusterState, policy, prefill, options: dict | None = None):
        super().__init__(state, policy, prefill, options)
        self.last = None  # the clock of the last interruption

    def run(self, dispatch) -> int:
        st, o = dispatch.state, self.options
        if self.last is not None and not st.clock - self.last > o["freeze_s"]:
            return 0
        counts = dispatch.length + st.active  # in flight: queued and running
        src = int(np.argmax(counts))
        spread = int(counts[src] - counts.min())
        k = spread // 2
        if spread < o["threshold"] or k <= 0:
            return 0
        self.last = st.clock
        self.interruptions += 1
        picks = self.picks(dispatch, src, k)
        counts = counts.copy()
        counts[src] -= len(picks)
        for i, running in picks:
            dst = int(np.argmin(counts))
            counts[dst] += 1
            if running:
                self.migrate(dispatch, i, dst)
            else:
                self.requeue(dispatch, i, dst)
        return len(picks)

    def picks(self, dispatch, g: int, k: int) -> list[tuple[int, bool]]:
        """``abort_to_target_requests_cnt``: ``k`` requests of rank ``g``, its queue
        first (head first), then its running ones by fewest ``s_i + tau_i`` (ties in
        admission order); ``(request, running)`` pairs."""
        st = dispatch.state
        ok = self.eligible(dispatch)
        if ok is None:
            out = [(i, False) for i in dispatch.queue(g, limit=k)]
        else:
            out = [(i, False) for i in dispatch.queue(g) if ok[i]][:k]
        if len(out) < k:
            row = st.slot_request[g]
            ids = row[row >= 0]
            if ok is not None:
                ids = ids[ok[ids]]
            ids = ids[np.argsort(self.order[ids], kind="stable")]
            ids = ids[np.argsort(st.workload.prefill[ids] + st.generated[ids], kind="stable")]
            out += [(int(i), True) for i in ids[:k - len(out)]]
        return out


class BfioMigration(Migration):
    """BF-IO's own migrations (module docstring, ``bfio``): the policy's
    ``plan_migrations`` (:meth:`bfio.policies.bfio.BFIO.plan_migrations`) with
    :meth:`cost` as each migration's cost."""

    name = "bfio"
    defaults = BFIO_DEFAULTS
    summary = "BF-IO migrates a running request when the drop of its objective J exceeds the KV's cost; policy bfio"

    def __init__(self, state: ClusterState, policy, prefill, options: dict | None = None):
        super().__init__(state, policy, prefill, options)
        self.last = None  # the clock of the last call that migrated
        self.token_latency_s = None  # the dispatch's t_l (its first call)
        self.state = state
        self.dispatch = None  # the dispatch of the last routing call (quiet)
        self.closed = None  # (step, clock) of the last call in which no running request could pay
        self._never = None  # recompute: no request can ever pay (never)
        self.floors = np.zeros(state.requests)  # per running request, the last floor (candidates)

    def run(self, dispatch) -> int:
        st, o = dispatch.state, self.options
        self.dispatch = dispatch
        if self.last is not None and not st.clock - self.last > o["freeze_s"]:
            return 0
        moves = []
        if o["queued"] and dispatch.queued:  # free: a queued request holds no KV (bfio.sim.moves)
            ok = self.eligible(dispatch)
            movable = ~self.away if ok is None else ~self.away & ok
            moves = self.policy.plan_moves(dispatch.dispatch_state(), movable, BFIO_EVALUATIONS)
            for i, dst in moves:
                self.requeue(dispatch, int(i), int(dst))
        # the ranks' shares beyond t_l L_g, read by the screen and the cost: once a call
        offsets = self.kv.share_offsets() if self.transfer is not None else None
        # the screen of the eligible running requests alone (re-binding queued ones changes no eligibility)
        movable = self.candidates(dispatch, offsets, eligible=True) if not self.never(dispatch) else None
        plan = []
        self.closed = None
        if movable is None or not movable.any():
            self.closed = (st.step, st.clock)  # nothing may pay in this state (quiet)
        else:
            plan = self.policy.plan_migrations(dispatch.dispatch_state(), movable, self.cost_model(offsets),
                                               o["evaluations"],
                                               o["per_rank"], o["horizon"], self.floors)
        if not plan and not moves:
            return 0
        self.last = st.clock
        self.interruptions += 1
        for i, dst, sent in plan:
            self.migrate(dispatch, i, dst, sent)
        return len(plan) + len(moves)

    def candidates(self, dispatch, offsets: np.ndarray | None = None, eligible: bool = False) -> np.ndarray:
        """Per request, whether it runs, has not migrated yet (a request migrates at most
        once) and may pay: the most its migration can lower ``J``
        (:meth:`bfio.policies.bfio.BFIO.migration_bound`) exceeds :meth:`floor`, a lower
        bound of its cost (``offsets``: the call's
        :meth:`bfio.sim.migration_kv.KvWay.share_offsets`, else computed here);
        ``eligible``: and :meth:`eligible` (the screen, request by request, of those
        alone; the others' ``floors`` are left as they were: the planner reads a
        floor only for a request that passes)."""
        st = dispatch.state
        self.token_latency_s = dispatch.token_latency_s
        moves, pause = (dispatch.moves, dispatch.pause) if eligible else (None, None)
        ids, sizes = screened(st.slot_request, self.times, NONE if moves is None else moves.moved_in,
                              dispatch.calls, NONE if pause is None else pause.times, st.workload.prefill,
                              st.generated)
        out = np.zeros(self.times.shape[0], dtype=bool)
        if ids.size and self.kv.mode == "transfer" and self.prefill is None:  # the floor is the link's alone
            t_l, tr = float(self.token_latency_s), self.transfer
            s0, s1 = self.policy.migration_sums(self.options["horizon"])
            transfer_screen(ids, sizes, float(tr.bytes_per_token), tr.bytes_per_s,
                            self.kv.transfer_slack(dispatch, t_l, offsets),
                            float(self.options["cost_weight"] * st.workers), t_l, st.workers, s0, s1, self.floors, out)
        elif ids.size:
            sent = None if self.transfer is None or self.prefill is None else \
                self.prefill.sent_tokens(ids, st.generated).astype(np.float64)
            transfer = self.kv.transfer_floor(dispatch, sizes, sent, float(self.token_latency_s), offsets)
            floor = self.floor(dispatch, sizes, st.generated[ids].astype(np.float64), sent, transfer)
            bound = self.policy.migration_bound(sizes, st.workers, self.options["horizon"])
            floor = self.cached(dispatch, ids, bound, floor, transfer)
            self.floors[ids] = floor  # the planner's bound before the call's first migration
            out[ids] = bound > floor
        return out

    def cached(self, dispatch, ids: np.ndarray, bound: np.ndarray, floor: np.ndarray,
               transfer: np.ndarray) -> np.ndarray:
        """:meth:`floor` with prefix caches read where they decide: the floor assumes a
        recompute hits its whole prompt on some rank; a request that passes the screen
        only by that assumption (its bound above that floor, not above a transfer's)
        gets the recompute's cost on the rank that caches most of its prompt, its own
        left out (:meth:`bfio.sim.migration_kv.KvWay.cached_floor`), so a request no
        rank's cache makes cheap takes no evaluation from one that may pay. ``transfer``:
        per request the transfer's floor (:meth:`bfio.sim.migration_kv.KvWay.transfer_floor`)."""
        kv = self.kv
        if kv.mode == "transfer" or self.prefill.caches is None:
            return floor
        scale = self.options["cost_weight"] * dispatch.state.workers / float(self.token_latency_s)
        sent_floor = transfer
        finite = ~np.isinf(sent_floor)  # no transfer: inf, not 0 x inf (not computed either: no warning)
        sent_floor = np.where(finite, scale * np.where(finite, sent_floor, 0.0), np.inf)
        check = (bound > floor) & ~(bound > sent_floor)
        if check.any():
            floor = floor.copy()
            floor[check] = np.minimum(scale * kv.cached_floor(ids[check]), sent_floor[check])
        return floor

    def quiet(self) -> bool:
        """With ``recompute``, no running request may pay (:meth:`candidates`) and nothing
        queued is to be moved: the loop runs the steps up to the next arrival without
        routing calls, exactly (the screen does not read the loads, and between two
        routing calls the running requests only grow or finish). With ``transfer`` the
        screen reads the ranks' slack, which changes every step: never quiet."""
        d = self.dispatch
        if d is None or self.transfer is not None or (self.options["queued"] and d.queued):
            return False
        return self.closed == (d.state.step, d.state.clock) or self.never(d) or not self.candidates(d).any()

    def never(self, dispatch) -> bool:
        """With ``recompute``, whether no request of the workload can ever pay: the
        screen of :meth:`candidates` compares a bound linear in a request's size with
        a floor that does not read the loads and grows by at least its first token's
        cost with every token (the step's prefill cost of ``T`` tokens,
        :meth:`bfio.sim.migration_kv.KvWay.prefill_seconds`: ``token_s T``, or the
        calibrated ``a_p T + a_p2 (q C^2 + r^2)``, whose every increment is at least
        ``a_p + a_p2``), so when the bound grows no faster than that and the screen
        fails at the workload's smallest prompt it fails for every running request (a
        size is its prompt and what it has generated); with prefix caches a hit can
        spare all but the generated tokens, so never. Decided once."""
        if self._never is None:
            self._never = False
            if self.transfer is None and self.prefill.caches is None:
                st = dispatch.state
                self.token_latency_s = dispatch.token_latency_s
                p = float(st.workload.prefill.min())
                bound = self.policy.migration_bound(np.array([p, p + 1.0]), st.workers, self.options["horizon"])
                floor = self.floor(dispatch, np.array([p, 0.0, 1.0]))
                self._never = bool(bound[0] <= floor[0] and bound[1] - bound[0] <= floor[2] - floor[1])
        return self._never

    def floor(self, dispatch, size: np.ndarray, generated: np.ndarray | None = None,
              sent: np.ndarray | None = None, transfer: np.ndarray | None = None) -> np.ndarray:
        """A lower bound of :meth:`cost` over the destinations of each running request
        of sizes ``size`` (``s_i + tau_i``; ``generated``: its ``tau_i``), from the state
        alone: ``recompute`` its cost, or with prefix caches that of ``tau_i + 1`` tokens
        (a cache hit leaves at least the last prompt token to compute,
        :func:`bfio.engine.prefill.cached_tokens`); ``transfer`` the
        charge ``max(0, X_i - t_l (M - m) - max_g pending_g)``, ``M`` the largest
        rank's load with its whole queue admitted (an upper bound of the predicted
        ``Lhat_g(0)``), ``m`` the smallest rank's load (a lower bound), so no
        destination's slack behind the slowest rank exceeds ``t_l (M - m)`` (``X_i`` of
        the tokens it sends, ``sent``, else ``size``); ``choose`` the smaller of the two
        (:meth:`bfio.sim.migration_kv.KvWay.stall_floor`; ``transfer``: its transfer part
        already computed in this state)."""
        G, t_l, w = dispatch.state.workers, float(self.token_latency_s), self.options["cost_weight"]
        return w * G * self.kv.stall_floor(dispatch, size, generated, sent, t_l, transfer) / t_l

    def cost_model(self, offsets: np.ndarray | None = None) -> MigrationCost:
        """What migrating a running request costs the planner
        (:class:`~bfio.solvers.migration_plan.MigrationCost`), in ``J``'s units
        (token-steps): ``cost_weight x G x stall / t_l``, ``stall`` the seconds every
        rank waits at the barrier for it (``G x stall`` rank-seconds idle, as ``t_l (G
        max_g L_g - sum_g L_g)`` are in a step; ``t_l`` the dispatch's seconds per
        resident token of the slowest rank). ``recompute``: per destination the tokens
        its readmission there computes (:meth:`bfio.engine.prefill.Prefill.resume_tokens`: its
        prompt less that rank's cached prefix, and its generated tokens; the formula
        the simulator charges) at the seconds the run's step charges for them
        (:meth:`bfio.sim.migration_kv.KvWay.prefill_seconds`; the barrier waits for them
        when no other rank prefills). ``transfer``: the charge of :mod:`bfio.sim.transfer` on the
        next step, ``max(0, max_g (share_g + X_g) - max_g share_g)`` with the request's
        ``X_i`` (of its resident tokens with the prefill model,
        :meth:`bfio.engine.prefill.Prefill.sent_tokens`) added to the destination's pending
        transfers and the call's earlier migrations, less what those already cost;
        each rank's share as the next step reads it (:meth:`bfio.sim.transfer.TransferEngine.shares`):
        ``t_l L_g`` of its resident tokens without the request (its tokens on the
        destination; moved with the call's earlier migrations), plus with the
        calibrated step ``rank_cost(0, n_g, P_g)`` (:func:`bfio.sim.transfer.share_offsets`:
        the step's ``rank_cost(L_g, n_g, P_g)``, the request counted off its source and
        on its destination; :func:`bfio.solvers.migration_plan._transfer_costs`). ``choose``:
        per destination the cheaper of the two, and that way for its KV
        (:func:`bfio.solvers.migration_plan.kv_cost`). ``offsets``: the call's
        :meth:`bfio.sim.migration_kv.KvWay.share_offsets`, else computed here."""
        t_l, w = float(self.token_latency_s), float(self.options["cost_weight"])
        if self.dispatch is None:
            return self.kv.cost_model(t_l, w, offsets)
        room, growth = seat_room(self.dispatch)
        return self.kv.cost_model(t_l, w, offsets, room, growth)

    def cost(self, i: int, loads: np.ndarray, planned: list[tuple]) -> np.ndarray:
        """Per destination rank, what migrating running request ``i`` costs the planner
        (:meth:`cost_model`) with the predicted loads ``loads`` ``(G, W + 1)`` without
        it and the call's earlier migrations ``planned`` (``(request, rank)`` or
        ``(request, rank, sent)``)."""
        return self.choice(i, loads, planned)[0]

    def choice(self, i: int, loads: np.ndarray, planned: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`cost` and, per destination, whether the planner would send the KV
        (:func:`bfio.solvers.migration_plan.kv_choices`)."""
        held = self.state.workload.prefill + self.state.generated
        out, sent = kv_choices(self.cost_model(), np.array([i]), held, loads[:, 0], planned,
                               sources=self.state.worker_of[[i]])
        return out[0], sent[0]


RULES = {"roll": RollMigration, "bfio": BfioMigration}
MIGRATIONS = ("none", *RULES)


def make_migration(migration: str, options: dict, state: ClusterState, policy, prefill) -> Migration | None:
    """The migration part of a run (``None``: no migrations, the loop as before)."""
    if migration == "none":
        return None
    return RULES[migration](state, policy, prefill, options)
