"""Moving queued requests between ranks (issue 45, first action): with instant
dispatch a request is bound to one rank's FIFO queue on arrival; a *move*
re-binds a request still in its queue (not admitted, so no prefill has started
and no KV is held: a move costs nothing) to the tail of another rank's queue.
A part of the simulator (``docs/architecture.md``), chosen by
``simulate(queue_moves=...)`` (``RunSpec.queue_moves``, CLI ``--queue-moves``),
off (``none``) by default; only instant dispatch has queues to move between
(the central pool is refused).

:meth:`bfio.sim.dispatch.InstantDispatch.routing_call` runs it after the call's
admissions: preemption, admissions into the slots the last step freed, the new
arrivals bound, their admissions, then the moves on the queues as they then
stand (what still waits is what no slot took), then, only when something moved,
one more admission (a request moved to a rank with a free slot starts at once).
:meth:`~bfio.sim.dispatch.InstantDispatch.move` re-links the request
(``head``/``tail``/``next``/``length``/``tokens``/``queue_worker``); it refuses
a request not in a queue. Every move is counted: metrics ``queue_move_count`` and
``queue_moved_requests``, per request the ``moves`` column.

A request that was preempted and put back in a queue does not move (the PR
below excludes retracted requests), nor one a pause rule paused while it ran
(:mod:`bfio.sim.pause`: its KV stays on its rank), nor one a migration rule
migrated that waits for its seat (:mod:`bfio.sim.migration`: the rule chose its
rank). With a migration rule the moves run first; the migration rule then
leaves alone what they moved in the call.

Rules (``MOVES``):

- ``sglang_balancer``: SGLang PR #37401 (sgl-project/sglang, "feat(dp): DP
  waiting-queue load balancing with PD-prefill migration (mori)", open,
  2026-09-01), ``DPQueueBalancer.plan`` as read in a public copy of its module
  (the ``queue_lb`` feature: ``MigrationOrder``, ``DPQueueBalancer``,
  ``SchedulerMigrationAgent``; its repository path was not recoverable, so its
  tie to the PR is by content: the PR's text names the same ``MigrationOrder(src,
  dst, count)`` and the same eligibility): ``mean`` of the ranks' waiting-queue lengths
  (``num_waiting_reqs``); nothing if ``mean <= 0``; donors ``waiting > mean (1 +
  threshold)`` and ``waiting >= min_abs``, largest first; recipients ``waiting <
  mean (1 - threshold)``, smallest first; ``excess = int(waiting - mean)``,
  ``deficit = int(mean - waiting)``; each donor's budget ``min(excess,
  cap_per_round)`` is matched greedily to the recipients in order, ``move =
  min(budget, deficit)``, as ``MigrationOrder(src, dst, count)``; throttled to
  one plan per ``interval_ms`` (``maybe_plan``; here on the simulated clock).
  Confirmed: that rule, the four parameters' names, that only queued,
  un-prefilled requests move (the PR text: "Mid-chunk / retracted /
  pre-handshake requests are excluded"). Not confirmed (the PR's server-args
  section and its scheduler-side migrate-out code were not found): the
  parameters' defaults (ours: :data:`SGLANG_DEFAULTS`) and which ``count``
  requests leave the source (ours: the newest, from the tail, appended in their
  order to the destination's tail). The migration's latency (a ZMQ hop between
  ranks) is not modelled: a move takes effect in the routing call that plans it.
- ``bfio``: the policy's ``plan_moves`` (:meth:`bfio.policies.bfio.BFIO.plan_moves`):
  the tails of the most backed-up queues re-bound by the same ``J`` and ties as
  instant BF-IO's arrivals (:func:`bfio.solvers.dispatch.plan_moves`; its numba
  kernel :func:`bfio.solvers.move_plan.plan_moves` when ``J`` is the imbalance
  alone), moved when
  ``J`` falls (or ties and the request starts earlier); at most
  :data:`BFIO_EVALUATIONS` evaluations per routing call. A request may move
  again in a later call (a move is free here; no cap per request). The
  predicted loads admit a queue into free slots and do not see a rank's KV
  memory holding its queue back (with ``PrefillModel.kv_tokens``).
"""

from __future__ import annotations

import math

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.sim.state import ClusterState

#: our defaults of PR #37401's parameters (its own defaults were not found):
#: ``threshold`` (relative to the mean queue), ``min_abs`` (a donor's least queue),
#: ``cap_per_round`` (a donor's most moves per plan), ``interval_ms`` (0: every call)
SGLANG_DEFAULTS = {"threshold": 0.5, "min_abs": 2, "cap_per_round": 4, "interval_ms": 0.0}

#: queued requests BF-IO evaluates per routing call (each: one queue's tail)
BFIO_EVALUATIONS = 8


class QueueMoves:
    """The moves of one run: per request how often it moved (``times``) and the
    total (``count``); :meth:`plan` is the rule."""

    name = "none"

    def __init__(self, state: ClusterState, policy):
        self.policy = policy
        self.times = np.zeros(state.requests, dtype=np.int64)
        #: per request the routing call (:attr:`bfio.sim.dispatch.InstantDispatch.calls`) of its last move
        self.moved_in = np.zeros(state.requests, dtype=np.int64)
        self.count = 0

    def plan(self, dispatch, movable: np.ndarray) -> list[tuple[int, int]]:
        """``(request, rank)`` moves, in order (rule-specific)."""
        raise NotImplementedError

    def run(self, dispatch) -> int:
        """Plan and carry out the moves of one routing call; returns how many."""
        pre = dispatch.preemption
        movable = np.ones(self.times.shape[0], dtype=bool) if pre is None else pre.times == 0
        if dispatch.pause is not None:  # a paused running request keeps its KV on its rank
            movable &= dispatch.pause.times == 0
        if dispatch.migration is not None:  # a migrated request waits for its seat where it was sent
            movable &= ~dispatch.migration.away
        orders = self.plan(dispatch, movable)
        for i, dst in orders:
            dispatch.move(int(i), int(dst))
            self.times[i] += 1
            self.moved_in[i] = dispatch.calls
        self.count += len(orders)
        return len(orders)

    def metrics(self) -> dict:
        return {"queue_move_count": int(self.count), "queue_moved_requests": int((self.times > 0).sum())}


class SglangBalancer(QueueMoves):
    """SGLang PR #37401's ``DPQueueBalancer`` (module docstring)."""

    name = "sglang_balancer"

    def __init__(self, state: ClusterState, policy, threshold: float | None = None, min_abs: int | None = None,
                 cap_per_round: int | None = None, interval_ms: float | None = None):
        super().__init__(state, policy)
        d = SGLANG_DEFAULTS
        self.threshold = d["threshold"] if threshold is None else float(threshold)
        self.min_abs = d["min_abs"] if min_abs is None else int(min_abs)
        self.cap_per_round = d["cap_per_round"] if cap_per_round is None else int(cap_per_round)
        self.interval_s = (d["interval_ms"] if interval_ms is None else float(interval_ms)) / 1000.0
        self._last = -math.inf

    def orders(self, waiting: np.ndarray) -> list[tuple[int, int, int]]:
        """``DPQueueBalancer.plan`` on the ranks' queue lengths: ``(src, dst, count)``."""
        waiting = [int(q) for q in waiting]
        if len(waiting) < 2:
            return []
        mean = sum(waiting) / len(waiting)
        if mean <= 0:
            return []
        hi, lo = mean * (1.0 + self.threshold), mean * (1.0 - self.threshold)
        donors = sorted(((g, q) for g, q in enumerate(waiting) if q > hi and q >= self.min_abs),
                        key=lambda kv: kv[1], reverse=True)
        recipients = sorted(((g, q) for g, q in enumerate(waiting) if q < lo), key=lambda kv: kv[1])
        if not donors or not recipients:
            return []
        excess = {g: int(q - mean) for g, q in donors}
        deficit = {g: int(mean - q) for g, q in recipients}
        out, r = [], 0
        ranks = [g for g, _ in recipients]
        for src, _ in donors:
            budget = min(excess[src], self.cap_per_round)
            while budget > 0 and r < len(ranks):
                dst = ranks[r]
                if deficit[dst] <= 0:
                    r += 1
                    continue
                move = min(budget, deficit[dst])
                if move <= 0:
                    break
                out.append((src, dst, move))
                budget -= move
                excess[src] -= move
                deficit[dst] -= move
            if r >= len(ranks):
                break
        return out

    def plan(self, dispatch, movable: np.ndarray) -> list[tuple[int, int]]:
        now = dispatch.state.clock
        if now - self._last < self.interval_s:
            return []
        self._last = now
        out, taken = [], set()
        for src, dst, count in self.orders(dispatch.length):
            # our reading: the newest movable requests not yet planned, kept in their order
            tail = [i for i in dispatch.queue(src) if movable[i] and i not in taken][-count:]
            taken.update(tail)
            out.extend((i, dst) for i in tail)
        return out


class BfioMoves(QueueMoves):
    """The policy's own moves (``plan_moves``, :meth:`bfio.policies.bfio.BFIO.plan_moves`)."""

    name = "bfio"

    def __init__(self, state: ClusterState, policy, budget: int = BFIO_EVALUATIONS):
        super().__init__(state, policy)
        self.budget = int(budget)

    def plan(self, dispatch, movable: np.ndarray) -> list[tuple[int, int]]:
        return self.policy.plan_moves(dispatch.dispatch_state(), movable, self.budget)


MOVES = {"sglang_balancer": SglangBalancer, "bfio": BfioMoves}
QUEUE_MOVES = ("none", *MOVES)


def check_queue_moves(queue_moves, dispatch: str, policy) -> str:
    """``queue_moves`` checked against the run: a known rule, instant dispatch
    (the only form with queues), and for ``bfio`` a policy that plans moves."""
    if queue_moves is None:
        return "none"
    if queue_moves not in QUEUE_MOVES:
        raise ConfigError(f"queue_moves: must be one of {', '.join(QUEUE_MOVES)}, got {queue_moves!r}")
    if queue_moves != "none" and dispatch != "instant":
        raise ConfigError(f"queue_moves: {queue_moves!r} moves requests between ranks' queues, which only "
                          f"dispatch 'instant' has (got dispatch {dispatch!r})")
    if queue_moves == "bfio" and not hasattr(policy, "plan_moves"):
        raise ConfigError(f"queue_moves: 'bfio' asks the policy which queued requests to move; policy "
                          f"'{policy.name}' plans no moves (use sglang_balancer, or policy bfio)")
    return queue_moves


def make_moves(queue_moves: str, state: ClusterState, policy) -> QueueMoves | None:
    """The queue-move part of a run (``None``: no moves, the loop as before issue 45)."""
    if queue_moves == "none":
        return None
    return MOVES[queue_moves](state, policy)
