"""How entered requests reach a worker's slot (``simulate(dispatch=...)``,
``docs/online.md``): the routing call of the step loop (Section 3).

- :class:`CentralDispatch`, the paper's (Section 6.2): one shared pool; at every
  routing call the policy's ``route`` picks which waiting requests each worker
  admits (:func:`bfio.engine.kernels.admit_assigned`);
- :class:`InstantDispatch`, as vLLM / SGLang data-parallel routers: the policy's
  ``dispatch`` binds each request to one worker's FIFO queue when it enters
  (:func:`bfio.engine.kernels.enqueue`), never moved afterwards unless a queue-move
  rule runs (issue 45, :mod:`bfio.sim.moves`); every worker admits
  from the head of its own queue into its free slots
  (:func:`bfio.engine.kernels.admit_queues`, with the KV bound of
  :class:`bfio.engine.prefill.PrefillModel` ``kv_tokens``), but a rank a pause rule
  paused (issue 45, :mod:`bfio.sim.pause`); a migration rule may move running
  requests to other ranks' queues (issue 45, :mod:`bfio.sim.migration`).

Each has :meth:`waiting` (requests entered and not admitted), :meth:`enter`
(take new requests), :meth:`admit` (fill free slots) and
:meth:`routing_call`, the order of the two in one routing call.

Both own the KV bound of :class:`bfio.engine.prefill.PrefillModel` ``kv_tokens``: a
request is seated only while it fits its rank's memory (an idle rank seats it
anyway). With ``PrefillModel.preemption`` (issue 44, :mod:`bfio.sim.preemption`)
a routing call first evicts requests from ranks whose next step would not fit,
and puts them back with the waiting ones: instant dispatch at the front (vLLM)
or back (SGLang) of the queue of the rank they ran on (a data-parallel engine
keeps its requests: the router never sees a preemption), central dispatch at
the front or back of the shared pool (the policy may then place it on any rank,
a choice no engine has: a modelling liberty of the central form).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.errors import PolicyError
from bfio.ground.jit import run_clock
from bfio.engine.kernels import admit_assigned, admit_queues, enqueue, seat
from bfio.policies import Policy
from bfio.engine.prefill import Prefill
from bfio.sim.cache_view import CacheView
from bfio.engine.routing_checks import check_assignment, check_dispatch
from bfio.sim.entry import Entry
from bfio.sim.migration import make_migration
from bfio.sim.moves import make_moves
from bfio.sim.pause import make_pause
from bfio.sim.preemption import make_preemption
from bfio.sim.state import ClusterState


class CentralDispatch:
    """One shared pool of waiting requests, oldest first; ``queue_worker`` stays -1
    (no request is bound before admission)."""

    moves = None  # no queues, no queue moves (bfio.sim.moves)
    pause = None  # no queues of a rank's own, no pauses (bfio.sim.pause)
    migration = None  # no queues to re-queue on, no migrations (bfio.sim.migration)

    def __init__(self, state: ClusterState, policy: Policy, prefill: Prefill | None, token_latency_s: float):
        self.state = state
        self.policy = policy
        self.prefill = prefill
        self.token_latency_s = token_latency_s
        self.pool = np.empty(0, dtype=np.int64)
        self.queue_worker = np.full(state.requests, -1, dtype=np.int64)
        self._no_queues = np.zeros(state.workers, dtype=np.int64)  # the prefill view's queued tokens
        self.kv_cap = prefill.kv_cap if prefill is not None else 0
        self.preemption = make_preemption(prefill, state)

    def waiting(self) -> int:
        return int(self.pool.shape[0])

    def enter(self, new: np.ndarray) -> None:
        self.pool = np.concatenate([self.pool, new])

    def admit(self) -> int:
        """The policy's ``route`` assigns waiting requests to free slots (checked,
        then carried out in pool order); returns how many were admitted."""
        pool = self.pool
        if pool.shape[0] == 0:
            return 0
        st = self.state
        free = st.slots - st.active
        if self.kv_cap:
            free = self._memory_free(pool, free)
        if not free.any():
            return 0
        view = None if self.prefill is None else CacheView(self.prefill, st.slot_request, self._no_queues,
                                                           self.token_latency_s)
        rs = st.routing_state(pool, free, view)
        t0 = run_clock()
        assign = np.asarray(self.policy.route(rs))
        st.route_times.append(run_clock() - t0)
        check_assignment(assign, pool.shape[0], free, self.policy.name, st.step)
        if self.kv_cap:
            assign = self._within_memory(pool, assign)
        rest = np.empty_like(pool)
        n, kept = admit_assigned(pool, assign, st.slot_request, st.workload.prefill, st.loads, st.active,
                                 st.worker_of, st.start, st.start_step, st.clock, st.step, rest)
        if n:
            if self.prefill is not None:
                seated = pool[assign >= 0]
                self.prefill.admitted(seated, st.worker_of, st.loads)
                if self.preemption is not None:
                    self.preemption.readmitted(seated, st)
            self.pool = rest[:kept]
        return int(n)

    def _memory(self):
        """Each rank's committed KV tokens, each request's need and the growth of one
        step: what admission charges against ``kv_cap`` (with preemption, the
        memory a request's next step needs)."""
        st = self.state
        if self.preemption is None:
            return self.prefill.committed(st.loads), st.workload.prefill, 0
        return self.preemption.admission_memory(st), self.preemption.need(st.workload), 1

    def _memory_free(self, pool: np.ndarray, free: np.ndarray) -> np.ndarray:
        """The free slots the routing state shows under the KV bound: on each rank at
        most as many as the pool's smallest requests that fit its free memory
        together (an idle rank seats one anyway). No admission :meth:`_within_memory`
        would allow is hidden (seating k requests takes at least the k smallest
        needs), and a call where no rank can seat anything routes nothing."""
        st = self.state
        committed, need, growth = self._memory()
        smallest = np.cumsum(np.sort(need[pool].astype(np.int64) + growth))
        room = np.maximum(self.kv_cap - committed, 0)
        fit = np.searchsorted(smallest, room, side="right")
        fit = np.where(st.active == 0, np.maximum(fit, 1), fit)
        return np.minimum(free, fit)

    def _within_memory(self, pool: np.ndarray, assign: np.ndarray) -> np.ndarray:
        """The policy's assignment less what does not fit its rank's KV memory: in pool
        order, a rank seats a request while its memory holds it (an idle rank seats
        one anyway), as :func:`bfio.engine.kernels.admit_queues` does its queue; once one
        does not fit, the later ones bound to that rank wait too (vLLM's waiting loop
        stops at the first request it cannot allocate)."""
        st = self.state
        committed, need, growth = self._memory()
        seated = st.active.copy()
        stopped = np.zeros(st.workers, dtype=bool)
        out = np.array(assign, dtype=np.int64, copy=True)
        for j in np.flatnonzero(out >= 0).tolist():
            g = int(out[j])
            take = int(need[pool[j]]) + growth
            if stopped[g] or (seated[g] > 0 and committed[g] + take > self.kv_cap):
                stopped[g] = True
                out[j] = -1
                continue
            committed[g] += take
            seated[g] += 1
        return out

    def requeue(self, ids: list[int]) -> None:
        """Preempted requests rejoin the pool: at its front (vLLM's
        ``prepend_request``, one by one, so the last evicted leads) or back (SGLang)."""
        back = np.asarray(ids, dtype=np.int64)
        if self.preemption.front:
            self.pool = np.concatenate([back[::-1], self.pool])
        else:
            self.pool = np.concatenate([self.pool, back])

    def routing_call(self, entry: Entry) -> int:
        """With preemption, ranks over their KV memory evict first; then requests due
        now join the pool and the policy routes; returns the admissions."""
        if self.preemption is not None:
            evicted = self.preemption.run(self.state)
            if evicted:
                self.requeue(evicted)
        new = entry.due(self.state, self.waiting())
        if new is not None:
            self.enter(new)
        return self.admit()

    def quiet(self) -> bool:
        """Whether routing calls do nothing until the next arrival (nothing waits)."""
        return self.waiting() == 0


class InstantDispatch:
    """Per-worker FIFO queues, singly linked lists of request ids (``head[g]`` ->
    ``next[i]`` -> ... -> ``tail[g]``, -1 ends them; see :func:`bfio.engine.kernels.enqueue`)
    with their lengths and prompt tokens; ``queue_worker[i]`` is the worker bound
    at entry (or of its last move, :meth:`move`)."""

    def __init__(self, state: ClusterState, policy: Policy, prefill: Prefill | None, token_latency_s: float,
                 queue_moves: str = "none", rank_pause: str = "none", rank_pause_options: dict | None = None,
                 migration: str = "none", migration_options: dict | None = None):
        G, N = state.workers, state.requests
        self.state = state
        self.policy = policy
        self.prefill = prefill
        self.token_latency_s = token_latency_s
        self.head = np.full(G, -1, dtype=np.int64)
        self.tail = np.full(G, -1, dtype=np.int64)
        self.next = np.full(N, -1, dtype=np.int64)
        self.length = np.zeros(G, dtype=np.int64)
        self.tokens = np.zeros(G, dtype=np.int64)
        self.queue_worker = np.full(N, -1, dtype=np.int64)
        self.queued = 0
        self.kv_cap = prefill.kv_cap if prefill is not None else 0
        self.preemption = make_preemption(prefill, state)
        self._admitted = np.empty(max(1, min(N, G * state.slots)), dtype=np.int64)
        self._no_memory = np.zeros(G, dtype=np.int64)  # admit_queues' KV tokens when admission is not bounded
        #: routing calls so far: the actions' records of what they did in one call
        #: (:attr:`bfio.sim.moves.QueueMoves.moved_in`) read it
        self.calls = 0
        self.moves = make_moves(queue_moves, state, policy)
        self.pause = make_pause(rank_pause, rank_pause_options or {}, state, policy)
        self.migration = make_migration(migration, migration_options or {}, state, policy, prefill)

    def waiting(self) -> int:
        return self.queued

    def quiet(self) -> bool:
        """Whether routing calls do nothing until the next arrival: nothing waits and
        no pause or migration rule acts on running requests
        (:meth:`bfio.sim.pause.RankPause.quiet`, :meth:`bfio.sim.migration.Migration.quiet`)."""
        return self.queued == 0 and (self.pause is None or self.pause.quiet()) and \
            (self.migration is None or self.migration.quiet())

    def dispatch_state(self):
        """What the policy reads (:meth:`ClusterState.dispatch_state` with these queues)."""
        st = self.state
        view = None if self.prefill is None else CacheView(self.prefill, st.slot_request, self.tokens,
                                                           self.token_latency_s, self.head, self.next)
        return st.dispatch_state(self.length, self.tokens, self.head, self.next, view)

    def queue(self, g: int, limit: int | None = None) -> list[int]:
        """Worker ``g``'s queue, head first (its first ``limit`` only, if given)."""
        out, i = [], int(self.head[g])
        while i >= 0 and (limit is None or len(out) < limit):
            out.append(i)
            i = int(self.next[i])
        return out

    def move(self, i: int, dst: int) -> None:
        """Re-bind queued request ``i`` to the tail of worker ``dst``'s queue (issue 45):
        unlinked from its queue, its length and prompt tokens carried over. A request
        not in a queue (admitted, finished, not entered) is a :class:`PolicyError`."""
        if not 0 <= dst < self.state.workers:
            self._queued_at(i, "queue move")
            self._no_worker(i, dst, "queue move")
        self._unlink(i, "queue move")
        self._append(i, dst)

    def migrate(self, i: int, dst: int, sent: bool) -> int:
        """Running request ``i`` leaves its slot and its rank's KV and joins the tail of
        worker ``dst``'s queue, keeping its generated tokens (a migration rule's,
        :mod:`bfio.sim.migration`, which records it and brings its KV when it is seated
        again). ``sent``: its KV is transferred (:mod:`bfio.sim.transfer`): its resident
        tokens leave the rank's load (with the prefill model
        :meth:`bfio.engine.prefill_resume.Resumes.hand_over`, which keeps what it had still
        to compute); else its KV is freed and its prompt and generated tokens are
        recomputed at its next admission (:meth:`bfio.engine.prefill_resume.Resumes.evict`;
        the prefill model's). Returns the KV tokens sent (0 when recomputed)."""
        if not 0 <= dst < self.state.workers:
            self._no_worker(i, dst, "migration")
        if not sent and self.prefill is None:
            raise PolicyError(f"migration: request {i}'s KV is to be recomputed, which needs the prefill model")
        st = self.state
        g = self._unseat(i, "migration")
        tokens = 0
        if self.prefill is None:
            tokens = int(st.workload.prefill[i] + st.generated[i])
            st.loads[g] -= tokens
        elif sent:
            tokens = self.prefill.hand_over(i, g, st.loads, st.generated)
        else:
            self.prefill.evict(i, g, st.loads, st.generated)
        self._append(i, dst)
        self.queued += 1
        return tokens

    def _no_worker(self, i: int, dst: int, what: str) -> None:
        raise PolicyError(f"{what}: request {i} to worker {dst}, which does not exist (G = {self.state.workers})")

    def _append(self, i: int, g: int) -> None:
        """Put request ``i`` at the tail of worker ``g``'s queue, bound to it."""
        enqueue(np.array([i], dtype=np.int64), np.array([g], dtype=np.int64), self.state.workload.prefill,
                self.head, self.tail, self.next, self.length, self.tokens)
        self.queue_worker[i] = g

    def _queued_at(self, i: int, what: str) -> tuple[int, int]:
        """Queued request ``i``'s worker and its predecessor in that queue (-1: the
        head); a request not in a queue is a :class:`PolicyError` naming ``what``."""
        g = int(self.queue_worker[i])
        prev, j = -1, int(self.head[g]) if g >= 0 else -1
        while j >= 0 and j != i:
            prev, j = j, int(self.next[j])
        if j != i:
            raise PolicyError(f"{what}: request {i} is not queued (step {self.state.step})")
        return g, prev

    def _unlink(self, i: int, what: str) -> int:
        """Take queued request ``i`` out of its queue (its length and prompt tokens
        with it; ``queued`` is the caller's); returns its worker."""
        g, prev = self._queued_at(i, what)
        nxt = int(self.next[i])
        if prev < 0:
            self.head[g] = nxt
        else:
            self.next[prev] = nxt
        if self.tail[g] == i:
            self.tail[g] = prev
        self.length[g] -= 1
        self.tokens[g] -= self.state.workload.prefill[i]
        return g

    def _prepend(self, i: int, g: int) -> None:
        """Put request ``i`` at the head of worker ``g``'s queue."""
        self.next[i] = self.head[g]
        self.head[g] = i
        if self.tail[g] < 0:
            self.tail[g] = i
        self.length[g] += 1
        self.tokens[g] += self.state.workload.prefill[i]

    def enter(self, new: np.ndarray) -> None:
        """The policy's ``dispatch`` binds each new request to one worker's queue (checked)."""
        st = self.state
        ds = self.dispatch_state()
        t0 = run_clock()
        to = np.asarray(self.policy.dispatch(ds, new))
        st.route_times.append(run_clock() - t0)
        check_dispatch(to, new.shape[0], st.workers, self.policy.name, st.step)
        to = to.astype(np.int64)
        enqueue(new, to, st.workload.prefill, self.head, self.tail, self.next, self.length, self.tokens)
        self.queue_worker[new] = to
        self.queued += int(new.shape[0])
        if self.pause is not None:
            self.pause.entered(new, st)

    def admit(self) -> int:
        """Every worker seats the heads of its queue in its free slots (within the
        KV bound); returns how many were admitted."""
        if self.queued == 0:
            return 0
        st = self.state
        committed, need, growth = self.admission_memory()
        head, closed = self.head, None
        if self.pause is not None:  # a paused rank's queue is hidden from the kernel
            closed = self.pause.closed(st)
            head = np.where(closed, -1, self.head)
        n = int(admit_queues(st.slot_request, head, self.tail, self.next, self.length, self.tokens,
                             st.workload.prefill, st.loads, st.active, st.worker_of, self._admitted, self.kv_cap,
                             committed, need, growth))
        if closed is not None:
            self.head[~closed] = head[~closed]
        if n:
            self._seated(self._admitted[:n])
        return n

    def admission_memory(self) -> tuple[np.ndarray, np.ndarray, int]:
        """What admission reads of the KV bound (:func:`bfio.engine.kernels.admit_queues`):
        per rank the KV tokens taken, per request the tokens its admission takes, and
        the room each seated request keeps for its next token (1 with preemption)."""
        st = self.state
        if self.preemption is None:
            committed = self.prefill.committed(st.loads) if self.kv_cap else self._no_memory
            return committed, (self.prefill.need(st.workload.prefill) if self.kv_cap else st.workload.prefill), 0
        return self.preemption.admission_memory(st), self.preemption.need(st.workload), 1

    def _seated(self, admitted: np.ndarray) -> None:
        """Requests ``admitted`` took slots now, in this order: their start, the queue
        count and the parts that follow admissions (prefill, preemption, pauses)."""
        st = self.state
        st.start[admitted] = st.clock
        st.start_step[admitted] = st.step
        self.queued -= admitted.shape[0]
        if self.prefill is not None:
            self.prefill.admitted(admitted.copy(), st.worker_of, st.loads)
            if self.preemption is not None:
                self.preemption.readmitted(admitted.copy(), st)
        if self.pause is not None:
            self.pause.admitted(admitted.copy(), st)
        if self.migration is not None:
            self.migration.admitted(admitted.copy(), st)

    def admit_ids(self, ids: np.ndarray) -> int:
        """Seat queued requests ``ids``, in this order, each on the worker whose queue
        holds it (a pause rule's planned admissions, :mod:`bfio.sim.pause`); a full
        worker or a request not queued is a :class:`PolicyError`. Returns how many."""
        st = self.state
        for i in ids.tolist():
            g = int(self.queue_worker[i])
            if g >= 0 and st.active[g] >= st.slots:
                raise PolicyError(f"admission: request {i} planned onto worker {g}, which has no free slot "
                                  f"(step {st.step})")
            self._unlink(i, "admission")
            seat(st.slot_request, g, i, st.workload.prefill, st.loads, st.active, st.worker_of)
        if ids.shape[0]:
            self._seated(ids)
        return int(ids.shape[0])

    def pause_request(self, i: int) -> None:
        """Running request ``i`` leaves its slot and its rank's load (``s_i + tau_i``)
        and waits at the head of its rank's queue, keeping its generated tokens (a
        pause rule's, :mod:`bfio.sim.pause`, which records it)."""
        st = self.state
        g = self._unseat(i, "pause")
        st.loads[g] -= st.workload.prefill[i] + st.generated[i]
        self._prepend(i, g)
        self.queued += 1

    def _unseat(self, i: int, what: str) -> int:
        """Running request ``i`` leaves its slot (and its rank's count); returns its rank.
        A request not running is a :class:`PolicyError` naming ``what``."""
        st = self.state
        g = int(st.worker_of[i])
        slots = np.flatnonzero(st.slot_request[g] == i) if g >= 0 else np.empty(0, dtype=np.int64)
        if slots.size != 1 or not np.isnan(st.finish[i]):
            raise PolicyError(f"{what}: request {i} is not running (step {st.step})")
        st.slot_request[g, slots[0]] = -1
        st.active[g] -= 1
        return g

    def requeue(self, ids: list[int]) -> None:
        """Preempted requests rejoin the queue of the rank they ran on (bound at
        entry; a data-parallel engine keeps its requests): at its head (vLLM's
        ``prepend_request``, one by one, so the last evicted leads) or tail (SGLang)."""
        for i in ids:
            g = int(self.queue_worker[i])
            if self.preemption.front:
                self._prepend(i, g)
            else:
                self._append(i, g)
        self.queued += len(ids)

    def routing_call(self, entry: Entry) -> int:
        """With preemption, ranks over their KV memory evict first; then queued
        requests take the slots freed by the last step, then requests due now are
        bound and may start at once on workers with room; with a queue-move rule
        (:mod:`bfio.sim.moves`) the queues left then are rebalanced, and when
        something moved the workers admit once more; returns the admissions. With a
        pause rule (:mod:`bfio.sim.pause`) the rule acts first and paused ranks admit
        nothing. A migration rule (:mod:`bfio.sim.migration`) acts after the moves, on
        the requests no other action acted on (:meth:`bfio.sim.migration.Migration.eligible`)."""
        self.calls += 1
        if self.preemption is not None:
            evicted = self.preemption.run(self.state)
            if evicted:
                self.requeue(evicted)
        n = 0 if self.pause is None else self.pause.run(self)
        n += self.admit()
        new = entry.due(self.state, self.waiting())
        if new is not None:
            self.enter(new)
        n += self.admit()
        if self.moves is not None and self.queued and self.moves.run(self):
            n += self.admit()
        if self.migration is not None and self.migration.run(self):
            n += self.admit()
        return n


Dispatch = CentralDispatch | InstantDispatch


def make_dispatch(dispatch: str, state: ClusterState, policy: Policy, prefill: Prefill | None,
                  token_latency_s: float, queue_moves: str = "none", rank_pause: str = "none",
                  rank_pause_options: dict | None = None, migration: str = "none",
                  migration_options: dict | None = None) -> Dispatch:
    """The dispatch part of ``simulate(dispatch=...)`` (``queue_moves``, ``rank_pause``,
    ``migration``: instant only)."""
    if dispatch == "central":
        return CentralDispatch(state, policy, prefill, token_latency_s)
    return InstantDispatch(state, policy, prefill, token_latency_s, queue_moves, rank_pause, rank_pause_options,
                           migration, migration_options)
