"""How entered requests reach a worker's slot (``simulate(dispatch=...)``,
``docs/online.md``): the routing call of the step loop (Section 3).

- :class:`CentralDispatch`, the paper's (Section 6.2): one shared pool; at every
  routing call the policy's ``route`` picks which waiting requests each worker
  admits (:func:`bfio.kernels.admit_assigned`);
- :class:`InstantDispatch`, as vLLM / SGLang data-parallel routers: the policy's
  ``dispatch`` binds each request to one worker's FIFO queue when it enters
  (:func:`bfio.kernels.enqueue`), never moved afterwards; every worker admits
  from the head of its own queue into its free slots
  (:func:`bfio.kernels.admit_queues`, with the KV bound of
  :class:`bfio.prefill.PrefillModel` ``kv_tokens``).

Each has :meth:`waiting` (requests entered and not admitted), :meth:`enter`
(take new requests), :meth:`admit` (fill free slots) and
:meth:`routing_call`, the order of the two in one routing call.
"""

from __future__ import annotations

import numpy as np

from bfio.errors import ConfigError
from bfio.jit import run_clock
from bfio.kernels import admit_assigned, admit_queues, enqueue
from bfio.policies import Policy
from bfio.prefill import CacheView, Prefill
from bfio.routing_checks import check_assignment, check_dispatch
from bfio.sim.entry import Entry
from bfio.sim.state import ClusterState


class CentralDispatch:
    """One shared pool of waiting requests, oldest first; ``queue_worker`` stays -1
    (no request is bound before admission)."""

    def __init__(self, state: ClusterState, policy: Policy, prefill: Prefill | None, token_latency_s: float):
        self.state = state
        self.policy = policy
        self.prefill = prefill
        self.token_latency_s = token_latency_s
        self.pool = np.empty(0, dtype=np.int64)
        self.queue_worker = np.full(state.requests, -1, dtype=np.int64)
        self._no_queues = np.zeros(state.workers, dtype=np.int64)  # the prefill view's queued tokens

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
        if not free.any():
            return 0
        view = None if self.prefill is None else CacheView(self.prefill, st.slot_request, self._no_queues,
                                                           self.token_latency_s)
        rs = st.routing_state(pool, free, view)
        t0 = run_clock()
        assign = np.asarray(self.policy.route(rs))
        st.route_times.append(run_clock() - t0)
        check_assignment(assign, pool.shape[0], free, self.policy.name, st.step)
        rest = np.empty_like(pool)
        n, kept = admit_assigned(pool, assign, st.slot_request, st.workload.prefill, st.loads, st.active,
                                 st.worker_of, st.start, st.start_step, st.clock, st.step, rest)
        if n:
            if self.prefill is not None:
                self.prefill.admitted(pool[assign >= 0], st.worker_of, st.loads)
            self.pool = rest[:kept]
        return int(n)

    def routing_call(self, entry: Entry) -> int:
        """Requests due now join the pool, then the policy routes; returns the admissions."""
        new = entry.due(self.state, self.waiting())
        if new is not None:
            self.enter(new)
        return self.admit()


class InstantDispatch:
    """Per-worker FIFO queues, singly linked lists of request ids (``head[g]`` ->
    ``next[i]`` -> ... -> ``tail[g]``, -1 ends them; see :func:`bfio.kernels.enqueue`)
    with their lengths and prompt tokens; ``queue_worker[i]`` is the worker bound
    at entry."""

    def __init__(self, state: ClusterState, policy: Policy, prefill: Prefill | None, token_latency_s: float):
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
        self._admitted = np.empty(max(1, min(N, G * state.slots)), dtype=np.int64)
        self._no_memory = np.zeros(G, dtype=np.int64)  # admit_queues' KV tokens when admission is not bounded

    def waiting(self) -> int:
        return self.queued

    def enter(self, new: np.ndarray) -> None:
        """The policy's ``dispatch`` binds each new request to one worker's queue (checked)."""
        st = self.state
        view = None if self.prefill is None else CacheView(self.prefill, st.slot_request, self.tokens,
                                                           self.token_latency_s, self.head, self.next)
        ds = st.dispatch_state(self.length, self.tokens, self.head, self.next, view)
        t0 = run_clock()
        to = np.asarray(self.policy.dispatch(ds, new))
        st.route_times.append(run_clock() - t0)
        check_dispatch(to, new.shape[0], st.workers, self.policy.name, st.step)
        to = to.astype(np.int64)
        enqueue(new, to, st.workload.prefill, self.head, self.tail, self.next, self.length, self.tokens)
        self.queue_worker[new] = to
        self.queued += int(new.shape[0])

    def admit(self) -> int:
        """Every worker seats the heads of its queue in its free slots (within the
        KV bound); returns how many were admitted."""
        if self.queued == 0:
            return 0
        st = self.state
        committed = self.prefill.committed(st.loads) if self.kv_cap else self._no_memory
        n = int(admit_queues(st.slot_request, self.head, self.tail, self.next, self.length, self.tokens,
                             st.workload.prefill, st.loads, st.active, st.worker_of, self._admitted, self.kv_cap,
                             committed))
        if n:
            admitted = self._admitted[:n]
            st.start[admitted] = st.clock
            st.start_step[admitted] = st.step
            self.queued -= n
            if self.prefill is not None:
                self.prefill.admitted(admitted.copy(), st.worker_of, st.loads)
        return n

    def routing_call(self, entry: Entry) -> int:
        """Queued requests take the slots freed by the last step, then requests due
        now are bound and may start at once on workers with room; returns the admissions."""
        n = self.admit()
        new = entry.due(self.state, self.waiting())
        if new is not None:
            self.enter(new)
        return n + self.admit()


Dispatch = CentralDispatch | InstantDispatch


def make_dispatch(dispatch: str, state: ClusterState, policy: Policy, prefill: Prefill | None,
                  token_latency_s: float) -> Dispatch:
    """The dispatch part of ``simulate(dispatch=...)``; the KV bound of admission
    (``prefill.kv_tokens``) needs per-rank queues."""
    if dispatch == "central":
        if prefill is not None and prefill.kv_cap:
            raise ConfigError("prefill.kv_tokens: the KV bound of admission is modelled for dispatch='instant' "
                              "(per-rank queues); central dispatch lets the pool policy choose admissions")
        return CentralDispatch(state, policy, prefill, token_latency_s)
    return InstantDispatch(state, policy, prefill, token_latency_s)
